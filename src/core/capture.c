/*
 * capture.c - writes a flight-recorder capture (see flight.h) on the
 * collector thread: into <run_dir>/captures/,
 *   capture_<K>_<reason>_step<S>.pt.trace.json  the ring as a Chrome trace
 *       (the same writer as the trace windows: `trainprof report` reads it),
 *       with the zones still open and the step in progress marked
 *       unterminated;
 *   ....steps.json   the ring's step rows (timing_profile.json's rows);
 *   ....memory.json  the ring's memory samples (memory_profile.json's rows);
 *   ....hang.txt     (hang only) every thread's open zones, kernel state and
 *       Python stack;
 * then appends the entry to captures.json (valid JSON at every moment:
 * util/json_file) and keeps it for training_summary.json.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/collector_internal.h"
#include "core/flight.h"
#include "sink/seed_json.h"
#include "util/fileio.h"
#include "util/json.h"
#include "util/procstat.h"


void tpi_capture_open_index(tpi_flight *f)
{
    const tp_session *s = f->c->s;
    tpu_buf pre = {0};
    tpu_json j;
    tpu_json_init(&j, &pre, 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_int(&j, "pid", s->pid);
    tpu_json_kv_string(&j, "host", s->host);
    tpu_json_kv_int(&j, "rank", s->env.rank);
    tpu_json_kv_uint(&j, "process_start", tpu_proc_start_ticks(0));
    tpu_json_kv_uint(&j, "capture_steps", f->n_steps);
    tpu_json_key(&j, "captures");
    tpu_buf_putc(&pre, '[');
    if (pre.oom ||
        tpu_json_file_open(&f->index, s->run_dir, "captures.json", tpu_buf_cstr(&pre), "\n]}\n") != 0)
        fprintf(stderr, "trainprof: warning: cannot create %s/captures.json: %s (captures are "
                        "still written, not listed)\n", s->run_dir, strerror(f->index.err));
    else
        f->index_open = 1;
    tpu_buf_free(&pre);
}

/* ---- the trace -------------------------------------------------------------- */

/* The first step the ring holds (the step in progress when it holds none). */
static uint64_t first_step(const tpi_flight *f)
{
    const tpi_fl_ring *r = &f->ring;
    return tpi_fl_ring_rows(r) ? tpi_fl_ring_row(r, 0)->step : f->c->step;
}

/* Memory samples of the ring's steps (a sample names the step it ended). */
static int sample_kept(const tpi_flight *f, const tpi_mem_sample *m)
{
    return m->step + 1 >= first_step(f);
}

static void put(tpi_sink *k, const tpi_event *e)
{
    if (!k->failed)
        k->ops->event(k, e);
}

static void step_slice(tpi_sink *k, uint32_t tid, uint64_t step, uint64_t begin, uint64_t end,
                       int open)
{
    char name[48];
    snprintf(name, sizeof name, "ProfilerStep#%llu", (unsigned long long)step);
    tpi_event e = {0};
    e.kind = TPI_EV_SLICE;
    e.tid = tid;
    e.name = name;
    e.cat = "user_annotation";
    e.ts_ns = begin;
    e.dur_ns = end > begin ? end - begin : 0;
    e.self_ns = e.dur_ns;
    e.is_step = 1;
    e.unterminated = open;
    e.step = step;
    put(k, &e);
}

static void ring_event(tpi_sink *k, const tpi_fl_ev *v)
{
    tpi_event e = {0};
    e.tid = v->tid;
    e.name_id = v->name_id;
    e.name = tpi_names_get(v->name_id);
    e.ts_ns = v->ts_ns;
    e.cat = "user_annotation";
    switch (v->kind) {
    case TPI_FL_SLICE:
        e.kind = TPI_EV_SLICE;
        e.dur_ns = v->u;
        e.self_ns = v->u;
        e.depth = v->depth;
        e.unterminated = (v->flags & TPI_FL_UNTERMINATED) != 0;
        break;
    case TPI_FL_COUNTER:
        e.kind = TPI_EV_COUNTER;
        e.cat = "counter";
        memcpy(&e.value, &v->u, sizeof e.value);
        break;
    case TPI_FL_INSTANT:
        e.kind = TPI_EV_INSTANT;
        break;
    default:
        return; /* op rows go to the steps file */
    }
    put(k, &e);
}

static void counter(tpi_sink *k, uint32_t tid, const char *name, uint64_t ts, double v)
{
    tpi_event e = {0};
    e.kind = TPI_EV_COUNTER;
    e.tid = tid;
    e.name = name;
    e.cat = "counter";
    e.ts_ns = ts;
    e.value = v;
    put(k, &e);
}

/* Zones open now on every thread, and the step in progress: unterminated
 * slices up to now (for a hang: where each thread is). */
static void open_zones(tpi_collector *c, const tpi_fl_ring *r, tpi_sink *k, uint64_t now)
{
    uint32_t rows = tpi_fl_ring_rows(r);
    if (!rows || tpi_fl_ring_row(r, rows - 1)->step != c->step) /* not at its end (slow step) */
        step_slice(k, c->s->opener_tid, c->step, c->step_begin_ns, now, 1);
    for (uint32_t i = 0; i < c->n_th; i++) {
        tpi_thread_state *t = c->th[i];
        for (int d = 0; d < t->depth; d++) {
            tpi_event e = {0};
            e.kind = TPI_EV_SLICE;
            e.tid = t->tid;
            e.name_id = t->zs[d].name_id;
            e.name = tpi_names_get(t->zs[d].name_id);
            e.cat = "user_annotation";
            e.ts_ns = t->zs[d].begin_ns;
            e.dur_ns = now > e.ts_ns ? now - e.ts_ns : 0;
            e.self_ns = e.dur_ns;
            e.depth = d;
            e.unterminated = 1;
            put(k, &e);
        }
    }
}

static int write_trace(tpi_flight *f, const char stem[1000], uint64_t now)
{
    tpi_collector *c = f->c;
    tpi_settings st = c->s->settings;
    st.trace = 1;
    st.trace_formats = TPI_TRACE_CHROME;
    st.gzip = 0;
    tpi_sink_env env = c->s->env;
    env.settings = &st;
    tpi_sink *k = tpi_sink_chrome_json_new(&env);
    if (!k)
        return -1;
    const tpi_fl_ring *r = &f->ring;
    tpi_window w;
    memset(&w, 0, sizeof w);
    w.first_step = first_step(f);
    w.last_step = c->step;
    snprintf(w.stem, sizeof w.stem, "%s", stem);
    int rc = k->ops->window_begin(k, &w);
    for (uint32_t i = 0; rc == 0 && i < c->n_th; i++) {
        const char *name = c->th[i]->name_id ? tpi_names_get(c->th[i]->name_id) : "";
        char fallback[32];
        if (!*name) {
            snprintf(fallback, sizeof fallback, "thread %u", c->th[i]->tid);
            name = fallback;
        }
        k->ops->thread_name(k, c->th[i]->tid, name);
    }
    for (uint32_t i = 0; rc == 0 && i < tpi_fl_ring_rows(r); i++) {
        const tpi_fl_step *row = tpi_fl_ring_row(r, i);
        step_slice(k, c->s->opener_tid, row->step, row->begin_ns, row->end_ns, 0);
    }
    for (uint64_t p = r->tail; rc == 0 && p < r->head; p++)
        ring_event(k, tpi_fl_ring_at(r, p));
    if (rc == 0)
        open_zones(c, r, k, now);
    for (uint32_t i = 0; rc == 0 && i < tpi_fl_ring_samples(r); i++) {
        const tpi_mem_sample *m = tpi_fl_ring_sample_at(r, i);
        if (!sample_kept(f, m))
            continue;
        if (m->have_process)
            counter(k, c->s->opener_tid, "rss_bytes", m->ts_ns, (double)m->rss_bytes);
        if (m->have_system)
            counter(k, c->s->opener_tid, "system_memory_percent", m->ts_ns,
                    m->system_memory_percent);
        for (int d = 0; d < m->n_devices && d < TPI_MAX_DEVICES; d++) {
            char name[96];
            snprintf(name, sizeof name, "%s allocated_bytes", m->devices[d].mem.device);
            counter(k, c->s->opener_tid, name, m->ts_ns, (double)m->devices[d].mem.allocated_bytes);
        }
    }
    if (rc == 0 && k->ops->window_end(k, &w, r->dropped) != 0)
        rc = -1;
    if (k->failed)
        rc = -1;
    k->ops->destroy(k);
    return rc;
}

/* ---- steps and memory --------------------------------------------------------- */

static void ops_object(tpu_json *j, const tpi_fl_ring *r, uint64_t from, uint64_t to, int bg)
{
    tpu_json_begin_object(j);
    for (uint64_t p = from; p < to; p++) {
        const tpi_fl_ev *v = tpi_fl_ring_at(r, p);
        if (v->kind != TPI_FL_OP || ((v->flags & TPI_FL_BACKGROUND) != 0) != bg)
            continue;
        tpu_json_key(j, tpi_names_get(v->name_id));
        tpu_json_begin_object(j);
        tpu_json_kv_double(j, "time", (double)v->u / 1e9);
        tpu_json_kv_uint(j, "count", v->count);
        tpu_json_end_object(j);
    }
    tpu_json_end_object(j);
}

static void steps_json(const tpi_flight *f, tpu_buf *b)
{
    const tpi_fl_ring *r = &f->ring;
    tpu_json j;
    tpu_json_init(&j, b, 0);
    tpu_json_begin_array(&j);
    uint32_t n = tpi_fl_ring_rows(r);
    for (uint32_t i = 0; i < n; i++) {
        const tpi_fl_step *row = tpi_fl_ring_row(r, i);
        uint64_t from = row->ev_begin > r->tail ? row->ev_begin : r->tail;
        uint64_t to = i + 1 < n ? tpi_fl_ring_row(r, i + 1)->ev_begin : r->step_begin;
        double dt = (double)(row->end_ns - row->begin_ns) / 1e9;
        tpu_buf_putc(b, '\n');
        tpu_json_begin_object(&j);
        tpu_json_kv_uint(&j, "step", row->step);
        tpu_json_kv_uint(&j, "batch_idx", row->batch_idx);
        tpu_json_kv_uint(&j, "epoch", row->epoch);
        tpu_json_kv_double(&j, "total_batch_time", dt);
        tpu_json_kv_uint(&j, "samples", row->samples);
        tpu_json_kv_double(&j, "samples_per_second", dt > 0 ? (double)row->samples / dt : 0);
        tpu_json_kv_double(&j, "begin_s", (double)row->begin_ns / 1e9);
        for (uint64_t p = from; p < to; p++) {
            const tpi_fl_ev *v = tpi_fl_ring_at(r, p);
            if (v->kind != TPI_FL_OP || (v->flags & TPI_FL_BACKGROUND))
                continue;
            char key[300];
            snprintf(key, sizeof key, "%s_time", tpi_names_get(v->name_id));
            tpu_json_kv_double(&j, key, (double)v->u / 1e9);
        }
        tpu_json_key(&j, "operations");
        ops_object(&j, r, from, to, 0);
        tpu_json_key(&j, "background_operations");
        ops_object(&j, r, from, to, 1);
        tpu_json_end_object(&j);
    }
    tpu_json_end_array(&j);
    tpu_buf_putc(b, '\n');
}

static void memory_json(const tpi_flight *f, tpu_buf *b)
{
    const tpi_fl_ring *r = &f->ring;
    uint64_t wall0 = f->c->s->env.wall_base_ns;
    tpu_json j;
    tpu_json_init(&j, b, 0);
    tpu_json_begin_array(&j);
    for (uint32_t i = 0; i < tpi_fl_ring_samples(r); i++) {
        const tpi_mem_sample *m = tpi_fl_ring_sample_at(r, i);
        if (!sample_kept(f, m))
            continue;
        tpu_buf_putc(b, '\n');
        tpu_json_begin_object(&j);
        tpu_json_kv_uint(&j, "step", m->step);
        tpu_json_kv_double(&j, "time_s", (double)m->ts_ns / 1e9);
        tpu_json_kv_double(&j, "timestamp", (double)(wall0 + m->ts_ns) / 1e9);
        if (m->have_system)
            tpu_json_kv_double(&j, "cpu_memory_percent", m->system_memory_percent);
        if (m->have_process) {
            tpu_json_kv_uint(&j, "rss_bytes", m->rss_bytes);
            tpu_json_kv_uint(&j, "peak_rss_bytes", m->peak_rss_bytes);
            tpu_json_kv_double(&j, "process_cpu_percent", m->cpu_percent);
        }
        tpu_json_key(&j, "memory");
        tpu_json_begin_object(&j);
        for (int d = 0; d < m->n_devices && d < TPI_MAX_DEVICES; d++) {
            tpu_json_key(&j, m->devices[d].mem.device);
            tpu_json_begin_object(&j);
            tpu_json_kv_uint(&j, "bytes_in_use", m->devices[d].mem.allocated_bytes);
            tpu_json_kv_uint(&j, "peak_bytes_in_use", m->devices[d].mem.peak_bytes);
            tpu_json_kv_uint(&j, "bytes_reserved", m->devices[d].mem.reserved_bytes);
            tpu_json_end_object(&j);
        }
        tpu_json_end_object(&j);
        tpu_json_end_object(&j);
    }
    tpu_json_end_array(&j);
    tpu_buf_putc(b, '\n');
}

static int write_json(const char *path, tpu_buf *b)
{
    char err[512];
    if (b->oom) {
        errno = ENOMEM;
        return -1;
    }
    if (tpu_write_file_atomic(path, b->data, b->len, err, sizeof err) != 0) {
        fprintf(stderr, "trainprof: warning: %s\n", err);
        return -1;
    }
    return 0;
}

/* ---- the entry ------------------------------------------------------------------- */

static void entry_json(tpi_flight *f, tpu_buf *b, const char *reason, uint64_t step,
                       uint64_t now_ns, char files[][1200], int n_files, const char *detail)
{
    const tpi_collector *c = f->c;
    char iso[64];
    tpi_seed_iso_time(iso, sizeof iso, c->s->env.wall_base_ns + now_ns);
    size_t dir_len = strlen(c->s->run_dir) + 1;
    tpu_json j;
    tpu_json_init(&j, b, 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_uint(&j, "index", f->n_captures + 1);
    tpu_json_kv_string(&j, "reason", reason);
    tpu_json_kv_uint(&j, "step", step);
    tpu_json_kv_string(&j, "time", iso);
    tpu_json_kv_double(&j, "session_time_s", (double)now_ns / 1e9);
    tpu_json_key(&j, "files");
    tpu_json_begin_array(&j);
    for (int i = 0; i < n_files; i++)
        tpu_json_string(&j, files[i] + dir_len); /* relative to the run directory */
    tpu_json_end_array(&j);
    tpu_json_kv_string(&j, "detail", detail);
    const tpi_fl_ring *r = &f->ring;
    tpu_json_kv_uint(&j, "first_step", first_step(f));
    tpu_json_kv_uint(&j, "last_step", c->step);
    tpu_json_kv_uint(&j, "events", r->head - r->tail);
    tpu_json_kv_uint(&j, "events_dropped", r->dropped);
    /* where the stepping thread is: its open zones, outermost first (what
     * `trainprof ranks` compares across ranks: the ones that wait in a
     * collective and the one that is elsewhere) */
    tpu_json_key(&j, "open_zones");
    tpu_json_begin_array(&j);
    for (uint32_t i = 0; i < c->n_th; i++) {
        const tpi_thread_state *t = c->th[i];
        for (int d = 0; t->tid == c->s->opener_tid && d < t->depth; d++)
            tpu_json_string(&j, tpi_names_get(t->zs[d].name_id));
    }
    tpu_json_end_array(&j);
    tpu_json_kv_double(&j, "step_elapsed_s",
                       now_ns > c->step_begin_ns ? (double)(now_ns - c->step_begin_ns) / 1e9 : 0);
    tpu_json_end_object(&j);
}

static void add_entry(tpi_flight *f, tpu_buf *entry)
{
    if (f->index_open) {
        tpu_buf_append(tpu_json_file_item(&f->index), entry->data, entry->len);
        if (tpu_json_file_flush(&f->index) != 0) {
            fprintf(stderr, "trainprof: warning: cannot write %s: %s\n", f->index.path,
                    strerror(f->index.err));
            tpu_json_file_close(&f->index, 0);
            f->index_open = 0;
        }
    }
    if (f->entries.len)
        tpu_buf_puts(&f->entries, ",\n");
    tpu_buf_append(&f->entries, entry->data, entry->len);
}

int tpi_capture_write(tpi_flight *f, const char *reason, const char *detail, int hang)
{
    tpi_collector *c = f->c;
    tp_session *s = c->s;
    uint64_t t0 = tpi_mono_ns();
    uint64_t now = tpi_session_ns(s, tpi_ticks());
    if (now < c->last_ns)
        now = c->last_ns;
    char dir[1200], stem[1000], files[4][1200];
    tpu_path_join(dir, sizeof dir, s->run_dir, "captures");
    if (tpu_mkdir_p(dir, NULL, 0) != 0) {
        fprintf(stderr, "trainprof: warning: capture not written: cannot create %s: %s\n", dir,
                strerror(errno));
        return -1;
    }
    if (snprintf(stem, sizeof stem, "%s/capture_%u_%s_step%llu", dir, f->n_captures + 1, reason,
                 (unsigned long long)c->step) >= (int)sizeof stem - 16) {
        fprintf(stderr, "trainprof: warning: capture not written: path too long in %s\n", dir);
        return -1;
    }
    int n = 0, rc = 0;
    snprintf(files[n], sizeof files[n], "%s.pt.trace.json", stem);
    if (write_trace(f, stem, now) == 0)
        n++;
    else
        rc = -1;
    tpu_buf b = {0};
    steps_json(f, &b);
    snprintf(files[n], sizeof files[n], "%s.steps.json", stem);
    if (write_json(files[n], &b) == 0)
        n++;
    tpu_buf_reset(&b);
    memory_json(f, &b);
    snprintf(files[n], sizeof files[n], "%s.memory.json", stem);
    if (write_json(files[n], &b) == 0)
        n++;
    tpu_buf_reset(&b);
    if (hang) {
        snprintf(files[n], sizeof files[n], "%s.hang.txt", stem);
        if (tpi_capture_hang_dump(f, files[n], detail, now) == 0)
            n++;
    }
    entry_json(f, &b, reason, c->step, now, files, n, detail);
    add_entry(f, &b);
    tpu_buf_free(&b);
    __atomic_store_n(&f->n_captures, f->n_captures + 1, __ATOMIC_RELAXED);
    fprintf(stderr, "trainprof: capture %u (%s) at step %llu: %s.* (%.0f ms)\n", f->n_captures,
            reason, (unsigned long long)c->step, stem, (double)(tpi_mono_ns() - t0) / 1e6);
    return rc;
}
