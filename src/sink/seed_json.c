/*
 * seed_json.c - the JSON files users of the reference guides already parse:
 *   timing_profile.json    one row per step (rewritten atomically every few
 *                          seconds by the collector, so a crash leaves it)
 *   training_summary.json  totals, throughput, counts, memory signals
 *   operations.json        the per-operation table the console prints
 * All three are written with tpu_write_file_atomic: a reader sees a whole
 * file or the previous one, never half of one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "sink/seed_json.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/json.h"

#define REWRITE_NS (5ull * 1000000000ull)

typedef struct seed_sink {
    tpi_sink base;
    tpu_buf rows;         /* ",\n{row}" fragments */
    uint64_t n_rows;
    uint64_t last_write_ns;
} seed_sink;

static const char *phase_name(tpi_phase p)
{
    static const char *names[] = {"skip", "wait", "warmup", "active", "done"};
    return (unsigned)p < 5 ? names[p] : "unknown";
}

void tpi_seed_iso_time(char *out, size_t n, uint64_t wall_ns)
{
    time_t t = (time_t)(wall_ns / 1000000000ull);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t k = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + k, n - k, ".%03uZ", (unsigned)(wall_ns / 1000000ull % 1000));
}

static void write_ops_object(tpu_json *j, const tpi_step_info *si, int background)
{
    tpu_json_begin_object(j);
    for (size_t i = 0; i < si->n_ops; i++) {
        if (si->ops[i].background != background)
            continue;
        tpu_json_key(j, si->ops[i].name);
        tpu_json_begin_object(j);
        tpu_json_kv_double(j, "time", si->ops[i].total_s);
        tpu_json_kv_uint(j, "count", si->ops[i].count);
        tpu_json_end_object(j);
    }
    tpu_json_end_object(j);
}

static void row(seed_sink *k, const tpi_step_info *si)
{
    tpu_json j;
    tpu_buf_puts(&k->rows, k->n_rows++ ? ",\n" : "\n");
    tpu_json_init(&j, &k->rows, 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_uint(&j, "step", si->step);
    tpu_json_kv_uint(&j, "batch_idx", si->batch_idx);
    tpu_json_kv_uint(&j, "epoch", si->epoch);
    tpu_json_kv_double(&j, "total_batch_time", si->step_time_s);
    tpu_json_kv_double(&j, "samples_per_second", si->samples_per_second);
    tpu_json_kv_uint(&j, "samples", si->samples);
    tpu_json_kv_string(&j, "phase", phase_name(si->phase));
    for (size_t i = 0; i < si->n_ops; i++) {
        char key[300];
        if (si->ops[i].background)
            continue;
        snprintf(key, sizeof key, "%s_time", si->ops[i].name);
        tpu_json_kv_double(&j, key, si->ops[i].total_s);
    }
    tpu_json_key(&j, "operations");
    write_ops_object(&j, si, 0);
    tpu_json_key(&j, "background_operations");
    write_ops_object(&j, si, 1);
    tpu_json_end_object(&j);
}

static int write_json_file(seed_sink *k, const char *name, tpu_buf *b)
{
    char path[1200], err[512];
    if (b->oom) {
        tpi_sink_fail(&k->base, "out of memory writing", name, ENOMEM);
        return -1;
    }
    tpu_path_join(path, sizeof path, k->base.env->run_dir, name);
    if (tpu_write_file_atomic(path, b->data ? b->data : "", b->len, err, sizeof err) != 0) {
        k->base.io_errors++;
        if (!k->base.failed)
            fprintf(stderr, "trainprof: warning: %s (training goes on)\n", err);
        return -1;
    }
    return 0;
}

static int write_timing(seed_sink *k)
{
    tpu_buf out = {0};
    tpu_buf_puts(&out, "[");
    tpu_buf_append(&out, k->rows.data ? k->rows.data : "", k->rows.len);
    tpu_buf_puts(&out, "\n]\n");
    int rc = write_json_file(k, "timing_profile.json", &out);
    tpu_buf_free(&out);
    return rc;
}

static void sj_step(tpi_sink *base, const tpi_step_info *si)
{
    seed_sink *k = (seed_sink *)base;
    row(k, si);
    uint64_t now = tpi_mono_ns();
    if (now - k->last_write_ns >= REWRITE_NS) {
        k->last_write_ns = now;
        write_timing(k);
    }
}

static int sj_close(tpi_sink *base, const tpi_summary *sum)
{
    seed_sink *k = (seed_sink *)base;
    tpu_buf b = {0};
    int rc = write_timing(k);
    tpi_seed_write_summary(&b, base->env, sum);
    rc |= write_json_file(k, "training_summary.json", &b);
    tpu_buf_reset(&b);
    tpi_seed_write_operations(&b, sum);
    rc |= write_json_file(k, "operations.json", &b);
    tpu_buf_free(&b);
    return rc ? -1 : 0;
}

static void sj_destroy(tpi_sink *base)
{
    seed_sink *k = (seed_sink *)base;
    tpu_buf_free(&k->rows);
    free(k);
}

static const tpi_sink_ops sj_ops = {
    .name = "seed_json",
    .step = sj_step,
    .close = sj_close,
    .destroy = sj_destroy,
};

tpi_sink *tpi_sink_seed_json_new(const tpi_sink_env *env)
{
    if (!env->settings->timing)
        return NULL;
    seed_sink *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->base.ops = &sj_ops;
    k->base.env = env;
    k->last_write_ns = tpi_mono_ns();
    return &k->base;
}
