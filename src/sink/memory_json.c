/*
 * memory_json.c - the memory_profile.json sink: one row per memory sample,
 * carrying both reference layouts (flat step / batch_idx / cpu_memory_percent
 * / rss_bytes / gpu_memory_*_gb, and nested memory: {"cuda:0": {...}}).
 *
 * The file is a JSON array that is valid at every moment: rows are buffered
 * and, every FLUSH_ROWS rows or FLUSH_NS, appended with one pwrite that
 * overwrites the closing "\n]\n" with ",\n<rows>\n]\n". A crash between
 * flushes leaves a complete file of the rows flushed so far; each flush costs
 * the new rows only (no rewrite of the whole file), so time stays bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sink/sink.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/json.h"

#define FLUSH_ROWS 32
#define FLUSH_NS 2000000000ull
#define TAIL "\n]\n"
#define GIB (1024.0 * 1024.0 * 1024.0)

typedef struct mem_sink {
    tpi_sink base;
    char path[1200];
    int fd;
    off_t tail;          /* offset of the closing TAIL */
    uint64_t rows_written, rows_pending;
    tpu_buf pending;
    uint64_t last_flush_ns;
    int have_step;
    uint64_t step, batch_idx; /* last step seen, for batch_idx of samples */
} mem_sink;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Appends pending rows; on a short write restores the closing bracket. */
static void flush_rows(mem_sink *k)
{
    if (k->base.failed || !k->rows_pending)
        return;
    tpu_buf_puts(&k->pending, TAIL);
    if (k->pending.oom) {
        tpi_sink_fail(&k->base, "out of memory buffering", k->path, ENOMEM);
        return;
    }
    size_t n = k->pending.len;
    ssize_t w = pwrite(k->fd, k->pending.data, n, k->tail);
    if (w != (ssize_t)n) {
        int e = w < 0 ? errno : ENOSPC;
        if (pwrite(k->fd, TAIL, 3, k->tail) == 3)
            (void)ftruncate(k->fd, k->tail + 3);
        tpi_sink_fail(&k->base, "cannot write", k->path, e);
        return;
    }
    k->tail += (off_t)(n - 3);
    k->rows_written += k->rows_pending;
    k->rows_pending = 0;
    k->last_flush_ns = mono_ns();
    tpu_buf_reset(&k->pending);
}

static void write_device(tpu_json *j, const tpi_device_sample *d)
{
    tpu_json_key(j, d->mem.device);
    tpu_json_begin_object(j);
    tpu_json_kv_uint(j, "bytes_in_use", d->mem.allocated_bytes);
    tpu_json_kv_uint(j, "peak_bytes_in_use", d->mem.peak_bytes);
    tpu_json_kv_uint(j, "bytes_reserved", d->mem.reserved_bytes);
    if (d->mem.total_bytes)
        tpu_json_kv_uint(j, "bytes_limit", d->mem.total_bytes);
    if (d->have_utilization)
        tpu_json_kv_double(j, "utilization_percent", d->utilization_percent);
    if (d->have_process_used)
        tpu_json_kv_uint(j, "process_used_bytes", d->process_used_bytes);
    tpu_json_kv_string(j, "source", d->source);
    tpu_json_end_object(j);
}

/* The device the flat gpu_* fields describe: the first one the framework
 * allocator reported (torch's current device), else the first device. */
static const tpi_device_sample *main_device(const tpi_mem_sample *m)
{
    for (int i = 0; i < m->n_devices; i++)
        if (strcmp(m->devices[i].source, "callback") == 0)
            return &m->devices[i];
    return m->n_devices > 0 ? &m->devices[0] : NULL;
}

static uint64_t batch_of(const mem_sink *k, uint64_t step)
{
    if (!k->have_step)
        return step;
    if (step >= k->step)
        return k->batch_idx + (step - k->step);
    return step <= k->step - k->batch_idx ? step : step - (k->step - k->batch_idx);
}

static void write_row(mem_sink *k, const tpi_mem_sample *m)
{
    tpu_json j;
    tpu_json_init(&j, &k->pending, 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_uint(&j, "step", m->step);
    tpu_json_kv_uint(&j, "batch_idx", batch_of(k, m->step));
    tpu_json_kv_double(&j, "time_s", (double)m->ts_ns / 1e9);
    tpu_json_kv_double(&j, "timestamp", (double)(k->base.env->wall_base_ns + m->ts_ns) / 1e9);
    if (m->have_system) {
        tpu_json_kv_double(&j, "cpu_memory_percent", m->system_memory_percent);
        tpu_json_kv_uint(&j, "system_available_bytes", m->system_available_bytes);
    }
    if (m->have_process) {
        tpu_json_kv_uint(&j, "rss_bytes", m->rss_bytes);
        tpu_json_kv_uint(&j, "peak_rss_bytes", m->peak_rss_bytes);
        tpu_json_kv_double(&j, "process_cpu_percent", m->cpu_percent);
        tpu_json_kv_int(&j, "threads", m->threads);
    }
    const tpi_device_sample *d = main_device(m);
    if (d) {
        tpu_json_kv_double(&j, "gpu_memory_allocated_gb", d->mem.allocated_bytes / GIB);
        tpu_json_kv_double(&j, "gpu_memory_reserved_gb", d->mem.reserved_bytes / GIB);
        tpu_json_key(&j, "memory");
        tpu_json_begin_object(&j);
        for (int i = 0; i < m->n_devices && i < TPI_MAX_DEVICES; i++)
            write_device(&j, &m->devices[i]);
        tpu_json_end_object(&j);
    }
    tpu_json_end_object(&j);
}

static void on_memory(tpi_sink *base, const tpi_mem_sample *m)
{
    mem_sink *k = (mem_sink *)base;
    if (base->failed || !m)
        return;
    tpu_buf_puts(&k->pending, k->rows_written || k->rows_pending ? ",\n" : "\n");
    write_row(k, m);
    k->rows_pending++;
    if (k->rows_pending >= FLUSH_ROWS || mono_ns() - k->last_flush_ns >= FLUSH_NS)
        flush_rows(k);
}

static void on_step(tpi_sink *base, const tpi_step_info *si)
{
    mem_sink *k = (mem_sink *)base;
    k->have_step = 1;
    k->step = si->step;
    k->batch_idx = si->batch_idx;
}

static int on_close(tpi_sink *base, const tpi_summary *sum)
{
    mem_sink *k = (mem_sink *)base;
    flush_rows(k);
    if (k->fd >= 0 && !base->failed && fsync(k->fd) != 0 && errno != EINVAL)
        tpi_sink_fail(base, "cannot sync", k->path, errno);
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    return base->failed ? -1 : 0;
}

static void on_destroy(tpi_sink *base)
{
    mem_sink *k = (mem_sink *)base;
    if (k->fd >= 0)
        close(k->fd);
    tpu_buf_free(&k->pending);
    free(k);
}

static const tpi_sink_ops MEMORY_JSON_OPS = {
    .name = "memory_profile.json",
    .step = on_step,
    .memory = on_memory,
    .close = on_close,
    .destroy = on_destroy,
};

tpi_sink *tpi_sink_memory_json_new(const tpi_sink_env *env)
{
    if (!env || !env->settings || !env->settings->memory || !env->run_dir)
        return NULL;
    mem_sink *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->base.ops = &MEMORY_JSON_OPS;
    k->base.env = env;
    k->fd = -1;
    if (tpu_path_join(k->path, sizeof k->path, env->run_dir, "memory_profile.json") != 0) {
        tpi_sink_fail(&k->base, "path too long", env->run_dir, ENAMETOOLONG);
        return &k->base;
    }
    k->fd = open(k->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (k->fd < 0 || pwrite(k->fd, "[" TAIL, 4, 0) != 4) {
        tpi_sink_fail(&k->base, "cannot create", k->path, errno);
        return &k->base;
    }
    k->tail = 1;
    k->last_flush_ns = mono_ns();
    return &k->base;
}
