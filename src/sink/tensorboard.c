/*
 * tensorboard.c - events.out.tfevents.<time>.<host> in the run directory,
 * the file `tensorboard --logdir` reads: a TFRecord stream of Event protos.
 *
 * TFRecord framing, per record:
 *   uint64 length (little endian) | uint32 masked_crc32c(length bytes)
 *   data[length]                  | uint32 masked_crc32c(data)
 * Event:   wall_time = 1 (double), step = 2 (int64), file_version = 3
 *          (string, first record only: "brain.Event:2"), summary = 5.
 * Summary: value = 1 (repeated) { tag = 1 (string), simple_value = 2 (float) }.
 * One Event per due step carries every scalar of metric_fields.h as
 * profiling/... tags; each record is flushed so TensorBoard sees it live.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sink/crc32c.h"
#include "sink/metric_fields.h"
#include "sink/pbwire.h"
#include "util/fileio.h"

typedef struct tb_sink {
    tpi_sink base;
    FILE *f;
    char path[1200];
    tpu_buf event;   /* Event proto being built */
    tpu_buf frame;   /* framed record */
    tpi_mem_sample last_mem;
    int have_mem;
} tb_sink;

static void put_u32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void tpi_tfrecord_frame(tpu_buf *out, const void *data, size_t n)
{
    uint8_t head[12], tail[4];
    uint64_t len = n;
    for (int i = 0; i < 8; i++)
        head[i] = (uint8_t)(len >> (8 * i));
    put_u32le(head + 8, tpi_crc32c_mask(tpi_crc32c(head, 8)));
    put_u32le(tail, tpi_crc32c_mask(tpi_crc32c(data, n)));
    tpu_buf_append(out, head, sizeof head);
    tpu_buf_append(out, data, n);
    tpu_buf_append(out, tail, sizeof tail);
}

static void tb_write_event(tb_sink *t)
{
    if (t->base.failed || !t->f)
        return;
    tpu_buf_reset(&t->frame);
    tpi_tfrecord_frame(&t->frame, t->event.data, t->event.len);
    if (t->event.oom || t->frame.oom) {
        tpi_sink_fail(&t->base, "out of memory writing", t->path, ENOMEM);
        return;
    }
    if (fwrite(t->frame.data, 1, t->frame.len, t->f) != t->frame.len || fflush(t->f) != 0) {
        int e = errno;
        tpi_sink_fclose(t->f);
        t->f = NULL;
        tpi_sink_fail(&t->base, "cannot write", t->path, e);
    }
}

static void tb_scalar(void *ctx, const char *key, double v)
{
    tpu_buf *b = ctx;
    size_t val = tpi_pb_begin(b, 1);   /* Summary.value */
    tpi_pb_string(b, 1, key);          /* tag */
    tpi_pb_float(b, 2, (float)v);      /* simple_value */
    tpi_pb_end(b, val);
}

static void tb_row(tpi_sink *k, const tpi_step_info *si)
{
    tb_sink *t = (tb_sink *)k;
    if (k->failed)
        return;
    tpu_buf *b = &t->event;
    tpu_buf_reset(b);
    tpi_pb_double(b, 1, (double)(k->env->wall_base_ns + si->end_ns) / 1e9);
    tpi_pb_int(b, 2, (int64_t)si->step);
    size_t sum = tpi_pb_begin(b, 5);
    tpi_metric_fields(si, t->have_mem ? &t->last_mem : NULL, tb_scalar, b);
    tpi_pb_end(b, sum);
    tb_write_event(t);
}

static void tb_step(tpi_sink *k, const tpi_step_info *si)
{
    if (tpi_metric_due(k->env->settings, si))
        tb_row(k, si);
}

static void tb_memory(tpi_sink *k, const tpi_mem_sample *s)
{
    tb_sink *t = (tb_sink *)k;
    t->last_mem = *s;
    t->have_mem = 1;
}

static int tb_close(tpi_sink *k, const tpi_summary *sum)
{
    tb_sink *t = (tb_sink *)k;
    const tpi_step_info *last = tpi_metric_final_row(k->env->settings, sum);
    if (last && t->f)
        tb_row(k, last);
    if (t->f && tpi_sink_fclose(t->f) != 0 && !k->failed)
        tpi_sink_fail(k, "cannot close", t->path, errno);
    t->f = NULL;
    return k->failed ? -1 : 0;
}

static void tb_destroy(tpi_sink *k)
{
    tb_sink *t = (tb_sink *)k;
    if (t->f)
        tpi_sink_fclose(t->f);
    tpu_buf_free(&t->event);
    tpu_buf_free(&t->frame);
    free(t);
}

static const tpi_sink_ops tb_ops = {
    .name = "tensorboard", .step = tb_step, .memory = tb_memory,
    .close = tb_close, .destroy = tb_destroy,
};

static void tb_open(tb_sink *t)
{
    const tpi_sink_env *env = t->base.env;
    char name[512], host[256];
    if (env->host && env->host[0]) {
        snprintf(host, sizeof host, "%s", env->host);
        tpu_sanitize_component(host);
    } else {
        tpu_hostname(host, sizeof host);
    }
    uint64_t secs = env->wall_base_ns ? env->wall_base_ns / 1000000000ull : (uint64_t)time(NULL);
    if (env->rank >= 0)
        snprintf(name, sizeof name, "events.out.tfevents.%llu.%s.%d.%d", (unsigned long long)secs,
                 host, env->pid, env->rank);
    else
        snprintf(name, sizeof name, "events.out.tfevents.%llu.%s.%d", (unsigned long long)secs,
                 host, env->pid);
    if (tpu_path_join(t->path, sizeof t->path, env->run_dir, name) != 0) {
        tpi_sink_fail(&t->base, "path too long", name, ENAMETOOLONG);
        return;
    }
    t->f = tpi_sink_fopen(t->path, "wb");
    if (!t->f) {
        tpi_sink_fail(&t->base, "cannot open", t->path, errno);
        return;
    }
    tpi_pb_double(&t->event, 1, (double)env->wall_base_ns / 1e9);
    tpi_pb_string(&t->event, 3, "brain.Event:2");
    tb_write_event(t);
}

tpi_sink *tpi_sink_tensorboard_new(const tpi_sink_env *env)
{
    if (!env || !env->settings || !(env->settings->metrics & TPI_METRIC_TENSORBOARD))
        return NULL;
    tb_sink *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->base.ops = &tb_ops;
    t->base.env = env;
    tb_open(t);
    return &t->base;
}
