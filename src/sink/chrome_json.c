/*
 * chrome_json.c - one Chrome trace JSON file per active cycle:
 * profiler_traces/<stem>.pt.trace.json[.gz].
 *
 * Layout: {"traceEvents":[ one event per line ... ], "trainprof":{...},
 * "baseTimeNanoseconds":N, ...}. traceEvents comes first and the file is
 * flushed at every step end, so a file cut short (kill -9) keeps a readable
 * prefix that `trainprof fix` or any lenient reader can close. Timestamps
 * are microseconds since the session base with 3 decimals (ns precision);
 * baseTimeNanoseconds is the wall clock at ts 0, as in Kineto traces.
 * Threads appear as small numbers (1, 2, ...) to keep events short (under
 * 80 bytes per zone); the OS thread id is in the thread_name metadata.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef TP_HAVE_ZLIB
#include <zlib.h>
#endif

#include "core/clock.h"
#include "probe/cupti_abi.h"
#include "sink/sink.h"
#include "util/buf.h"
#include "util/json.h"

#define MAX_TIDS 1024
#define FLUSH_AT (256 * 1024)
#define MAX_GPU_TRACKS 256
#define MAX_CACHED_NAME_ID (1u << 20)

typedef struct chrome_sink {
    tpi_sink base;
    FILE *f;
#ifdef TP_HAVE_ZLIB
    gzFile gz;
#endif
    int use_gz;
    tpu_buf buf;
    uint64_t n_events;
    char path[1200];
    uint32_t tids[MAX_TIDS]; /* OS tid of trace thread i+1 */
    int n_tids;
    uint64_t gpu_tracks[MAX_GPU_TRACKS]; /* device << 32 | stream, named in this file */
    int n_gpu_tracks;
    /* Escaped names by name id (offset + 1 into `names`, 0 = not yet), so
     * a zone's name is escaped once per session, not once per event. */
    tpu_buf names;
    uint32_t *name_at;
    size_t name_cap;
} chrome_sink;

static int is_open(const chrome_sink *c)
{
#ifdef TP_HAVE_ZLIB
    if (c->gz)
        return 1;
#endif
    return c->f != NULL;
}

static uint32_t small_tid(chrome_sink *c, uint32_t tid)
{
    for (int i = 0; i < c->n_tids; i++)
        if (c->tids[i] == tid)
            return (uint32_t)i + 1;
    if (c->n_tids == MAX_TIDS)
        return tid;
    c->tids[c->n_tids++] = tid;
    return (uint32_t)c->n_tids;
}

static int write_out(chrome_sink *c)
{
    if (c->buf.len == 0 || c->base.failed)
        return 0;
    int ok;
#ifdef TP_HAVE_ZLIB
    if (c->use_gz)
        ok = gzwrite(c->gz, c->buf.data, (unsigned)c->buf.len) == (int)c->buf.len;
    else
#endif
        ok = fwrite(c->buf.data, 1, c->buf.len, c->f) == c->buf.len;
    tpu_buf_reset(&c->buf);
    if (!ok) {
        tpi_sink_fail(&c->base, "cannot write", c->path, errno);
        return -1;
    }
    return 0;
}

/* Microseconds with 3 decimals, trailing zeros trimmed. */
/* The cache slot of name_id (grown on demand), NULL when not cached. */
static uint32_t *name_slot(chrome_sink *c, uint32_t name_id)
{
    if (name_id == 0 || name_id >= MAX_CACHED_NAME_ID)
        return NULL;
    if (tpu_reserve_index(&c->name_at, &c->name_cap, name_id, sizeof *c->name_at, 256) != 0)
        return NULL;
    return &c->name_at[name_id];
}

/* The JSON-escaped name, NUL-terminated in the cache, or escaped straight
 * into the event when it cannot be cached. */
static void put_name(chrome_sink *c, const char *name, uint32_t name_id)
{
    uint32_t *slot = name_slot(c, name_id);
    if (slot && *slot == 0 && !c->names.oom && c->names.len < UINT32_MAX / 2) {
        size_t at = c->names.len;
        tpu_json_escape(&c->names, name, strlen(name));
        tpu_buf_putc(&c->names, '\0');
        if (!c->names.oom)
            *slot = (uint32_t)at + 1;
    }
    if (slot && *slot)
        tpu_buf_puts(&c->buf, c->names.data + *slot - 1);
    else
        tpu_json_escape(&c->buf, name, strlen(name));
}

static void begin_event_id(chrome_sink *c, const char *ph, const char *name, uint32_t name_id,
                           uint32_t tid)
{
    tpu_buf *b = &c->buf;
    uint32_t t = tid ? small_tid(c, tid) : 0;
    tpu_buf_puts(b, c->n_events++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
    tpu_buf_puts(b, ph);
    tpu_buf_puts(b, "\",\"name\":\"");
    put_name(c, name, name_id);
    tpu_buf_puts(b, "\",\"pid\":");
    tpu_buf_put_i64(b, c->base.env->pid);
    tpu_buf_puts(b, ",\"tid\":");
    tpu_buf_put_u64(b, t);
}

static void begin_event(chrome_sink *c, const char *ph, const char *name, uint32_t tid)
{
    begin_event_id(c, ph, name, 0, tid);
}

static void meta(chrome_sink *c, const char *what, uint32_t tid, const char *name, uint32_t os_tid)
{
    begin_event(c, "M", what, tid);
    tpu_buf_puts(&c->buf, ",\"args\":{\"name\":\"");
    tpu_json_escape(&c->buf, name, strlen(name));
    tpu_buf_putc(&c->buf, '"');
    if (os_tid)
        tpu_buf_printf(&c->buf, ",\"os_tid\":%u", os_tid);
    tpu_buf_puts(&c->buf, "}}");
}

static int cj_window_begin(tpi_sink *k, const tpi_window *w)
{
    chrome_sink *c = (chrome_sink *)k;
    const tpi_sink_env *env = k->env;
#ifdef TP_HAVE_ZLIB
    c->use_gz = env->settings->gzip;
#else
    c->use_gz = 0;
#endif
    snprintf(c->path, sizeof c->path, "%s.pt.trace.json%s", w->stem, c->use_gz ? ".gz" : "");
#ifdef TP_HAVE_ZLIB
    if (c->use_gz)
        c->gz = gzopen(c->path, "wb6");
    else
#endif
        c->f = tpi_sink_fopen(c->path, "w");
    if (!is_open(c))
        return -1;
    c->n_events = 0;
    c->n_tids = 0;
    c->n_gpu_tracks = 0;
    tpu_buf_reset(&c->buf);
    tpu_buf_puts(&c->buf, "{\"traceEvents\":[");
    char pname[320];
    if (env->rank >= 0)
        snprintf(pname, sizeof pname, "trainprof %s rank %d", env->host, env->rank);
    else
        snprintf(pname, sizeof pname, "trainprof %s", env->host);
    meta(c, "process_name", 0, pname, 0);
    return write_out(c);
}

static void cj_thread_name(tpi_sink *k, uint32_t tid, const char *name)
{
    chrome_sink *c = (chrome_sink *)k;
    if (!is_open(c))
        return;
    meta(c, "thread_name", tid, name, tid);
}

static void slice(chrome_sink *c, const tpi_event *e)
{
    tpu_buf *b = &c->buf;
    begin_event_id(c, "X", e->name ? e->name : "", e->name ? e->name_id : 0, e->tid);
    tpu_buf_puts(b, ",\"ts\":");
    tpu_buf_put_us(b, e->ts_ns);
    tpu_buf_puts(b, ",\"dur\":");
    tpu_buf_put_us(b, e->dur_ns);
    if (e->is_step)
        tpu_buf_puts(b, ",\"cat\":\"user_annotation\"");
    if (e->unterminated || e->args_json) {
        tpu_buf_puts(b, ",\"args\":");
        if (e->args_json && !e->unterminated) {
            tpu_buf_puts(b, e->args_json);
        } else if (e->args_json) {
            /* merge: {"unterminated":true, <args fields>} */
            tpu_buf_puts(b, "{\"unterminated\":true,");
            tpu_buf_puts(b, e->args_json + 1);
        } else {
            tpu_buf_puts(b, "{\"unterminated\":true}");
        }
    }
    tpu_buf_putc(b, '}');
}

/* ---- GPU activity (CUPTI), laid out as Kineto writes it ----------------------
 * Kernels, copies, sets and syncs on pid = device, tid = stream; runtime and
 * driver calls on the calling thread; an "ac2g" flow (s at the call, f at
 * the GPU activity, id = correlation) from each launch or copy call to
 * what it started. */

static void gpu_begin(chrome_sink *c, const char *ph, const char *name, uint32_t pid,
                      uint32_t tid)
{
    tpu_buf *b = &c->buf;
    tpu_buf_puts(b, c->n_events++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
    tpu_buf_puts(b, ph);
    tpu_buf_puts(b, "\",\"name\":\"");
    tpu_json_escape(b, name, strlen(name));
    tpu_buf_printf(b, "\",\"pid\":%u,\"tid\":%u", pid, tid);
}

static uint32_t gpu_stream_tid(uint32_t stream)
{
    return stream == TPI_CUPTI_INVALID_STREAM ? 0 : stream;
}

/* Names the GPU's process and the stream's thread the first time they appear. */
static void gpu_track(chrome_sink *c, uint32_t device, uint32_t stream)
{
    uint64_t key = (uint64_t)device << 32 | stream;
    int device_seen = 0;
    for (int i = 0; i < c->n_gpu_tracks; i++) {
        if (c->gpu_tracks[i] == key)
            return;
        device_seen |= (uint32_t)(c->gpu_tracks[i] >> 32) == device;
    }
    if (c->n_gpu_tracks == MAX_GPU_TRACKS)
        return;
    c->gpu_tracks[c->n_gpu_tracks++] = key;
    char name[48];
    if (!device_seen) {
        snprintf(name, sizeof name, "GPU %u", device);
        gpu_begin(c, "M", "process_name", device, 0);
        tpu_buf_printf(&c->buf, ",\"args\":{\"name\":\"%s\"}}", name);
        gpu_begin(c, "M", "process_labels", device, 0);
        tpu_buf_puts(&c->buf, ",\"args\":{\"labels\":\"GPU\"}}");
    }
    if (stream == TPI_CUPTI_INVALID_STREAM)
        snprintf(name, sizeof name, "sync (all streams)");
    else
        snprintf(name, sizeof name, "stream %u", stream);
    gpu_begin(c, "M", "thread_name", device, gpu_stream_tid(stream));
    tpu_buf_printf(&c->buf, ",\"args\":{\"name\":\"%s\"}}", name);
}

static void gpu_times(tpu_buf *b, const tpi_event *e)
{
    tpu_buf_puts(b, ",\"ts\":");
    tpu_buf_put_us(b, e->ts_ns);
    tpu_buf_puts(b, ",\"dur\":");
    tpu_buf_put_us(b, e->dur_ns);
}

static void gpu_flow(chrome_sink *c, const char *ph, uint32_t pid, uint32_t tid, uint64_t ts,
                     uint32_t id)
{
    gpu_begin(c, ph, "ac2g", pid, tid);
    tpu_buf_printf(&c->buf, ",\"id\":%u,\"cat\":\"ac2g\",\"ts\":", id);
    tpu_buf_put_us(&c->buf, ts);
    tpu_buf_puts(&c->buf, ph[0] == 'f' ? ",\"bp\":\"e\"}" : "}");
}

/* API calls that start GPU work: they get the flow's start. */
static int launches_work(const char *name)
{
    return strstr(name, "Launch") || strstr(name, "Memcpy") || strstr(name, "Memset");
}

static void gpu_event(chrome_sink *c, const tpi_event *e)
{
    const tpi_gpu_activity *a = e->gpu;
    tpu_buf *b = &c->buf;
    if (a->kind == TPI_GPU_RUNTIME || a->kind == TPI_GPU_DRIVER) {
        int known = c->n_tids;
        uint32_t tid = a->tid ? small_tid(c, a->tid) : 0;
        if (c->n_tids > known) { /* a thread that only calls CUDA: name its track */
            char tname[48];
            snprintf(tname, sizeof tname, "CUDA thread %u", a->tid);
            meta(c, "thread_name", a->tid, tname, a->tid);
        }
        gpu_begin(c, "X", e->name, (uint32_t)c->base.env->pid, tid);
        tpu_buf_printf(b, ",\"cat\":\"%s\"", e->cat);
        gpu_times(b, e);
        tpu_buf_printf(b, ",\"args\":{\"cbid\":%u,\"correlation\":%u}}", a->cbid, a->correlation);
        if (launches_work(e->name))
            gpu_flow(c, "s", (uint32_t)c->base.env->pid, tid, e->ts_ns, a->correlation);
        return;
    }
    uint32_t tid = gpu_stream_tid(a->stream);
    gpu_track(c, a->device, a->stream);
    gpu_begin(c, "X", e->name, a->device, tid);
    tpu_buf_printf(b, ",\"cat\":\"%s\"", e->cat);
    gpu_times(b, e);
    tpu_buf_printf(b, ",\"args\":{\"device\":%u,\"context\":%u,\"stream\":%d,\"correlation\":%u",
                   a->device, a->context, a->stream == TPI_CUPTI_INVALID_STREAM ? -1 : (int)a->stream,
                   a->correlation);
    if (a->kind == TPI_GPU_KERNEL) {
        tpu_buf_printf(b,
                       ",\"registers per thread\":%u,\"shared memory\":%u,"
                       "\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d]",
                       a->registers, a->shared_bytes, a->grid[0], a->grid[1], a->grid[2],
                       a->block[0], a->block[1], a->block[2]);
    } else if (a->kind == TPI_GPU_MEMCPY || a->kind == TPI_GPU_MEMSET) {
        tpu_buf_printf(b, ",\"bytes\":%llu,\"memory bandwidth (GB/s)\":",
                       (unsigned long long)a->bytes);
        tpu_json_format_double(b, e->dur_ns ? (double)a->bytes / (double)e->dur_ns : 0);
    } else if (a->kind == TPI_GPU_SYNC) {
        tpu_buf_printf(b, ",\"cuda_sync_kind\":\"%s\"", a->sync_kind ? a->sync_kind : "");
    }
    tpu_buf_putc(b, '}');
    tpu_buf_putc(b, '}');
    if (a->kind != TPI_GPU_SYNC)
        gpu_flow(c, "f", a->device, tid, e->ts_ns, a->correlation);
}

static void cj_event(tpi_sink *k, const tpi_event *e)
{
    chrome_sink *c = (chrome_sink *)k;
    tpu_buf *b = &c->buf;
    if (k->failed || !is_open(c))
        return;
    switch (e->kind) {
    case TPI_EV_SLICE:
        slice(c, e);
        break;
    case TPI_EV_COUNTER:
        begin_event_id(c, "C", e->name ? e->name : "", e->name ? e->name_id : 0, e->tid);
        tpu_buf_puts(b, ",\"ts\":");
        tpu_buf_put_us(b, e->ts_ns);
        tpu_buf_puts(b, ",\"args\":{\"value\":");
        tpu_json_format_double(b, e->value);
        tpu_buf_puts(b, "}}");
        break;
    case TPI_EV_INSTANT:
        begin_event_id(c, "i", e->name ? e->name : "", e->name ? e->name_id : 0, e->tid);
        tpu_buf_puts(b, ",\"s\":\"t\",\"ts\":");
        tpu_buf_put_us(b, e->ts_ns);
        tpu_buf_putc(b, '}');
        break;
    case TPI_EV_MEMORY:
        begin_event(c, "i", "[memory]", e->tid);
        tpu_buf_puts(b, ",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"ts\":");
        tpu_buf_put_us(b, e->ts_ns);
        tpu_buf_printf(b,
                       ",\"args\":{\"Total Reserved\":%llu,\"Total Allocated\":%llu,"
                       "\"Bytes\":%lld,\"Addr\":%llu,\"Device Type\":%d,\"Device Id\":%d}}",
                       (unsigned long long)e->total_reserved,
                       (unsigned long long)e->total_allocated, (long long)e->bytes,
                       (unsigned long long)e->addr, e->device_type, e->device_id);
        break;
    case TPI_EV_GPU:
        gpu_event(c, e);
        break;
    }
    if (b->len >= FLUSH_AT)
        write_out(c);
}

static void cj_flush(tpi_sink *k)
{
    chrome_sink *c = (chrome_sink *)k;
    if (write_out(c) != 0)
        return;
#ifdef TP_HAVE_ZLIB
    if (c->use_gz && c->gz) {
        gzflush(c->gz, Z_SYNC_FLUSH);
        return;
    }
#endif
    if (c->f && fflush(c->f) != 0)
        tpi_sink_fail(k, "cannot write", c->path, errno);
}

static void metadata(chrome_sink *c, const tpi_window *w, uint64_t dropped)
{
    const tpi_sink_env *env = c->base.env;
    const tpi_settings *st = env->settings;
    tpu_json j;
    tpu_buf_puts(&c->buf, "\n],\n\"trainprof\":");
    tpu_json_init(&j, &c->buf, 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_string(&j, "version", tp_version());
    tpu_json_kv_string(&j, "host", env->host);
    tpu_json_kv_int(&j, "pid", env->pid);
    tpu_json_kv_int(&j, "rank", env->rank);
    uint64_t base = tpi_sink_aligned_base(env);
    tpu_json_kv_uint(&j, "base_time_ns", base);
    tpu_json_kv_uint(&j, "monotonic_base_ns", env->mono_base_ns);
    tpi_sink_job_json(&j, env);
    tpu_json_kv_string(&j, "clock", tpi_clock_get()->source);
    tpu_json_kv_uint(&j, "dropped_events", dropped);
    tpu_json_kv_int(&j, "window", w->index);
    if (w->capture > 0)
        tpu_json_kv_int(&j, "capture", w->capture); /* a capture's window, not the schedule's */
    tpu_json_kv_uint(&j, "first_step", w->first_step);
    tpu_json_kv_uint(&j, "last_step", w->last_step);
    tpu_json_key(&j, "schedule");
    tpu_json_begin_object(&j);
    tpu_json_kv_int(&j, "skip_first", st->skip_first);
    tpu_json_kv_int(&j, "wait", st->wait);
    tpu_json_kv_int(&j, "warmup", st->warmup);
    tpu_json_kv_int(&j, "active", st->active);
    tpu_json_kv_int(&j, "repeat", st->repeat);
    tpu_json_kv_string(&j, "unit", st->unit == TPI_UNIT_EPOCH ? "epoch" : "step");
    tpu_json_end_object(&j);
    tpu_json_key(&j, "threads");
    tpu_json_begin_object(&j);
    for (int i = 0; i < c->n_tids; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", i + 1);
        tpu_json_kv_uint(&j, key, c->tids[i]);
    }
    tpu_json_end_object(&j);
    tpu_json_end_object(&j);
    tpu_buf_printf(&c->buf,
                   ",\n\"distributedInfo\":{\"rank\":%d},\n\"displayTimeUnit\":\"ms\","
                   "\n\"baseTimeNanoseconds\":%llu}\n",
                   env->rank < 0 ? 0 : env->rank, (unsigned long long)base);
}

static int cj_window_end(tpi_sink *k, const tpi_window *w, uint64_t dropped)
{
    chrome_sink *c = (chrome_sink *)k;
    int rc = 0;
    if (!k->failed)
        metadata(c, w, dropped);
    if (write_out(c) != 0)
        rc = -1;
#ifdef TP_HAVE_ZLIB
    if (c->gz) {
        if (gzclose(c->gz) != Z_OK && !k->failed)
            tpi_sink_fail(k, "cannot close", c->path, errno);
        c->gz = NULL;
    }
#endif
    if (c->f) {
        if (tpi_sink_fclose(c->f) != 0 && !k->failed)
            tpi_sink_fail(k, "cannot close", c->path, errno);
        c->f = NULL;
    }
    return k->failed ? 0 : rc; /* failure already reported */
}

static void cj_destroy(tpi_sink *k)
{
    chrome_sink *c = (chrome_sink *)k;
    if (c->f)
        tpi_sink_fclose(c->f);
#ifdef TP_HAVE_ZLIB
    if (c->gz)
        gzclose(c->gz);
#endif
    tpu_buf_free(&c->buf);
    tpu_buf_free(&c->names);
    free(c->name_at);
    free(c);
}

static const tpi_sink_ops cj_ops = {
    .name = "chrome_json",
    .window_begin = cj_window_begin,
    .thread_name = cj_thread_name,
    .event = cj_event,
    .flush = cj_flush,
    .window_end = cj_window_end,
    .destroy = cj_destroy,
};

tpi_sink *tpi_sink_chrome_json_new(const tpi_sink_env *env)
{
    const tpi_settings *st = env->settings;
    if (!st->trace || !(st->trace_formats & TPI_TRACE_CHROME))
        return NULL;
    chrome_sink *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base.ops = &cj_ops;
    c->base.env = env;
    return &c->base;
}
