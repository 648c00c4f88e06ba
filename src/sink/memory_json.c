/*
 * memory_json.c - the memory_profile.json sink: one row per memory sample,
 * carrying both reference layouts (flat step / batch_idx / cpu_memory_percent
 * / rss_bytes / gpu_memory_*_gb, and nested memory: {"cuda:0": {...}}).
 *
 * The file is a JSON array that is valid at every moment (util/json_file.h):
 * rows are buffered and appended every FLUSH_ROWS rows or FLUSH_NS, so a
 * crash between flushes leaves a complete file of the rows flushed so far,
 * and each flush costs the new rows only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sink/sink.h"
#include "util/json.h"
#include "util/json_file.h"

#define FLUSH_ROWS 32
#define FLUSH_NS 2000000000ull
#define GIB (1024.0 * 1024.0 * 1024.0)

typedef struct mem_sink {
    tpi_sink base;
    tpu_json_file file;
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

static void flush_rows(mem_sink *k)
{
    if (tpu_json_file_flush(&k->file) != 0)
        tpi_sink_fail(&k->base, "cannot write", k->file.path, k->file.err);
    k->last_flush_ns = mono_ns();
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

static void write_row(mem_sink *k, tpu_buf *out, const tpi_mem_sample *m)
{
    tpu_json j;
    tpu_json_init(&j, out, 0);
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
    /* the same keys in every row, GPU or not (0.0 and {} without one, as
     * the reference trainers write on a machine without CUDA) */
    const tpi_device_sample *d = main_device(m);
    tpu_json_kv_float(&j, "gpu_memory_allocated_gb", d ? d->mem.allocated_bytes / GIB : 0.0);
    tpu_json_kv_float(&j, "gpu_memory_reserved_gb", d ? d->mem.reserved_bytes / GIB : 0.0);
    tpu_json_key(&j, "memory");
    tpu_json_begin_object(&j);
    for (int i = 0; i < m->n_devices && i < TPI_MAX_DEVICES; i++)
        write_device(&j, &m->devices[i]);
    tpu_json_end_object(&j);
    tpu_json_end_object(&j);
}

static void on_memory(tpi_sink *base, const tpi_mem_sample *m)
{
    mem_sink *k = (mem_sink *)base;
    if (base->failed || !m)
        return;
    write_row(k, tpu_json_file_item(&k->file), m);
    if (k->file.pending_items >= FLUSH_ROWS || mono_ns() - k->last_flush_ns >= FLUSH_NS)
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
    if (!base->failed && tpu_json_file_close(&k->file, 1) != 0)
        tpi_sink_fail(base, "cannot write", k->file.path, k->file.err);
    return base->failed ? -1 : 0;
}

static void on_destroy(tpi_sink *base)
{
    mem_sink *k = (mem_sink *)base;
    tpu_json_file_close(&k->file, 0); /* no-op when already closed */
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
    if (tpu_json_file_open(&k->file, env->run_dir, "memory_profile.json", "[", "\n]\n") != 0) {
        tpi_sink_fail(&k->base, "cannot create", k->file.path[0] ? k->file.path : env->run_dir,
                      k->file.err);
        return &k->base;
    }
    k->last_flush_ns = mono_ns();
    return &k->base;
}
