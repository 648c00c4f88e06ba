/*
 * seed_json.c - the JSON files users of the reference guides already parse:
 *   timing_profile.json    one row per step, appended (util/json_file): a
 *                          valid array at every moment, written after each
 *                          pass of the collector (every <= 20 ms), so a
 *                          kill -9 leaves every step processed before it;
 *                          memory stays constant however long the run
 *   training_summary.json  totals, throughput, counts, memory signals
 *   operations.json        the per-operation table the console prints
 * The last two are written at close with tpu_write_file_atomic: a reader
 * sees a whole file or none. Their disk space is reserved when the session
 * opens (RESERVE_NAME, released just before they are written), so a disk
 * filled by traces or by the program still has room for them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "sink/seed_json.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/json.h"
#include "util/json_file.h"

#define RESERVE_NAME ".trainprof_reserve"
#define RESERVE_BYTES (512u << 10)

typedef struct seed_sink {
    tpi_sink base;
    tpu_json_file timing;
    int timing_failed;    /* reported once */
    char reserve[1200];   /* path of the reserve file, "" when none */
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
        tpu_json_kv_double(j, "time", tpi_step_op_seconds(&si->ops[i]));
        tpu_json_kv_uint(j, "count", si->ops[i].count);
        tpu_json_end_object(j);
    }
    tpu_json_end_object(j);
}

static void row(seed_sink *k, const tpi_step_info *si)
{
    tpu_json j;
    tpu_json_init(&j, tpu_json_file_item(&k->timing), 0);
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
        tpu_json_kv_double(&j, key, tpi_step_op_seconds(&si->ops[i]));
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

/* timing_profile.json could not be written: reported and counted once. The
 * sink is not marked failed, so the summaries are still written at close;
 * the file keeps its last valid content. */
static void timing_error(seed_sink *k, const char *what)
{
    if (k->timing_failed)
        return;
    k->timing_failed = 1;
    k->base.io_errors++;
    fprintf(stderr, "trainprof: warning: %s %s: %s (training goes on)\n", what, k->timing.path,
            strerror(k->timing.err));
}

static void flush_timing(seed_sink *k)
{
    if (tpu_json_file_flush(&k->timing) != 0)
        timing_error(k, "cannot write");
}

#define TIMING_MAX_PENDING 256 /* rows buffered at most, whatever the collector's pace */

static void sj_step(tpi_sink *base, const tpi_step_info *si)
{
    seed_sink *k = (seed_sink *)base;
    row(k, si);
    if (k->timing.pending_items >= TIMING_MAX_PENDING)
        flush_timing(k);
}

static void sj_drained(tpi_sink *base)
{
    flush_timing((seed_sink *)base);
}

/* Holds RESERVE_BYTES of disk for the summaries (blocks really allocated,
 * not a sparse file). Without it the summaries are written as before. */
static void reserve_space(seed_sink *k)
{
    if (tpu_path_join(k->reserve, sizeof k->reserve, k->base.env->run_dir, RESERVE_NAME) != 0) {
        k->reserve[0] = '\0';
        return;
    }
    int fd = open(k->reserve, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || posix_fallocate(fd, 0, RESERVE_BYTES) != 0) {
        if (fd >= 0)
            close(fd);
        unlink(k->reserve);
        k->reserve[0] = '\0';
        return;
    }
    close(fd);
}

static void release_space(seed_sink *k)
{
    if (k->reserve[0])
        unlink(k->reserve);
    k->reserve[0] = '\0';
}

static int sj_close(tpi_sink *base, const tpi_summary *sum)
{
    seed_sink *k = (seed_sink *)base;
    release_space(k);
    int rc = 0;
    if (tpu_json_file_close(&k->timing, 1) != 0) {
        timing_error(k, "cannot write");
        rc = -1;
    }
    tpu_buf b = {0};
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
    tpu_json_file_close(&k->timing, 0); /* no-op when already closed */
    release_space(k);
    free(k);
}

static const tpi_sink_ops sj_ops = {
    .name = "seed_json",
    .step = sj_step,
    .drained = sj_drained,
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
    if (tpu_json_file_open(&k->timing, env->run_dir, "timing_profile.json", "[", "\n]\n") != 0)
        timing_error(k, "cannot create");
    reserve_space(k);
    return &k->base;
}
