/*
 * window.c - what happens at step and epoch boundaries: per-step rows,
 * the schedule's trace windows, memory samples, delivery to the sinks and
 * the summary at the end of the session.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "core/clock.h"
#include "core/collector_internal.h"
#include "core/gpu_session.h"
#include "core/names.h"
#include "sink/metric_fields.h"
#include "util/buf.h"
#include "util/fileio.h"

#define EACH_SINK(c, k)                                                     \
    for (int k##_i = 0; k##_i < (c)->s->n_sinks; k##_i++)                   \
        for (tpi_sink *k = (c)->s->sinks[k##_i]; k; k = NULL)               \
            if (!k->failed)

/* ---- trace budget --------------------------------------------------------
 * A trace must never take the disk space the summaries need: a window stops
 * (its remaining events dropped and counted, its files still finished
 * validly) when its files reach profiling.max_trace_mb or when less than
 * TRACE_DISK_FLOOR is free on the run directory's disk. Checked every
 * BUDGET_CHECK_EVENTS events and at every step end of the window (after the
 * sinks flushed), so the files can pass the budget by what the trace sinks
 * buffer between flushes (a few hundred KB). */
#define BUDGET_CHECK_EVENTS 1024
#define TRACE_DISK_FLOOR (512u << 10)

/* Bytes on disk of the open window's files: <stem>.<anything>. */
static uint64_t window_bytes(const tpi_collector *c)
{
    char dir[sizeof c->win.stem];
    snprintf(dir, sizeof dir, "%s", c->win.stem);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    const char *base = c->win.stem + (slash - dir) + 1;
    size_t n = strlen(base);
    DIR *d = opendir(dir);
    uint64_t total = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        struct stat st;
        if (strncmp(e->d_name, base, n) == 0 && e->d_name[n] == '.' &&
            fstatat(dirfd(d), e->d_name, &st, 0) == 0)
            total += (uint64_t)st.st_size;
    }
    if (d)
        closedir(d);
    return total;
}

static int disk_low(const tpi_collector *c)
{
    struct statvfs v;
    if (statvfs(c->s->run_dir, &v) != 0)
        return 0;
    return (uint64_t)v.f_bavail * v.f_frsize < TRACE_DISK_FLOOR;
}

static void check_trace_budget(tpi_collector *c)
{
    c->trace_budget_events = 0;
    if (c->trace_stopped || !c->window_seq)
        return;
    int64_t mb = c->s->settings.max_trace_mb;
    const char *why = NULL;
    if (mb > 0 && window_bytes(c) >= (uint64_t)mb << 20)
        why = "its files reached profiling.max_trace_mb";
    else if (disk_low(c))
        why = "less than 512 KiB is free on the disk";
    if (!why)
        return;
    c->trace_stopped = 1;
    fprintf(stderr,
            "trainprof: warning: trace %s stopped at step %llu: %s; the rest of the window is "
            "dropped and counted (training and summaries go on)\n",
            c->win.stem, (unsigned long long)c->step, why);
}

void tpi_col_deliver(tpi_collector *c, const tpi_event *e)
{
    if (c->window_seq) {
        if (c->trace_stopped) {
            c->trace_dropped++;
            return;
        }
        if (++c->trace_budget_events >= BUDGET_CHECK_EVENTS)
            check_trace_budget(c);
    }
    EACH_SINK(c, k)
    {
        if (k->ops->event)
            k->ops->event(k, e);
    }
}

tpi_step_op *tpi_col_new_step_op(tpi_collector *c, tpi_op *op, int background)
{
    uint32_t name_id = (uint32_t)(op - c->ops);
    if (tpu_reserve_items(&c->step_ops, &c->cap_step_ops, c->n_step_ops + 1, sizeof *c->step_ops,
                          16) != 0)
        return NULL;
    op->step_seq = c->step_seq + 1;
    op->step_slot = c->n_step_ops++;
    tpi_step_op *so = &c->step_ops[op->step_slot];
    memset(so, 0, sizeof *so);
    so->name_id = name_id;
    so->name = tpi_names_get(name_id);
    so->background = background;
    return so;
}

/* Rebuilds c->totals from the op table; percentiles only when asked. */
void tpi_col_refresh_totals(tpi_collector *c, int with_percentiles)
{
    static const double q[3] = {0.50, 0.90, 0.99};
    size_t n = 0;
    for (uint32_t id = 1; id < c->ops_cap; id++) {
        tpi_op *op = &c->ops[id];
        if (!op->d.count)
            continue;
        if (n == c->cap_totals) {
            size_t cap = c->cap_totals ? c->cap_totals * 2 : 32;
            tpi_op_stat *t = realloc(c->totals, cap * sizeof *t);
            if (!t)
                break;
            memset(t + c->cap_totals, 0, (cap - c->cap_totals) * sizeof *t);
            c->totals = t;
            c->cap_totals = cap;
        }
        tpi_op_stat *o = &c->totals[n++];
        double p[3] = {0, 0, 0};
        if (with_percentiles) {
            tpi_hist_quantiles(op->d.hist, q, 3, op->d.min_ns, op->d.max_ns, p);
            p[0] /= 1e9, p[1] /= 1e9, p[2] /= 1e9; /* as min and max: n / 1e9 at the ends */
        } else if (o->name_id == id) {
            p[0] = o->p50_s, p[1] = o->p90_s, p[2] = o->p99_s; /* the last ones, as they were */
        }
        o->name_id = id;
        o->name = tpi_names_get(id);
        o->count = op->d.count;
        o->total_s = (double)op->d.total_ns / 1e9;
        o->self_s = (double)op->d.self_ns / 1e9;
        o->min_s = (double)op->d.min_ns / 1e9;
        o->max_s = (double)op->d.max_ns / 1e9;
        o->mean_s = op->d.mean / 1e9;
        o->stddev_s = tpi_dstat_stddev(&op->d) / 1e9;
        o->p50_s = p[0];
        o->p90_s = p[1];
        o->p99_s = p[2];
        o->top_level = op->top_level;
        o->gpu_count = 0;
        tpi_gpu_op_stat(c->s->gpu, id, o);
    }
    c->n_totals = n;
}

/* A window callback returned an error. A sink that already reported it
 * (tpi_sink_fail raised its io_errors during the call) is not counted
 * again; one that failed silently is reported and counted here, once. */
static void window_call_failed(tpi_sink *k, uint64_t errors_before, const char *what,
                               const char *path)
{
    int e = errno;
    if (k->io_errors == errors_before)
        tpi_sink_fail(k, what, path, e);
}

static void send_thread_names(tpi_collector *c)
{
    for (uint32_t i = 0; i < c->n_th; i++) {
        tpi_thread_state *t = c->th[i];
        const char *name = t->name_id ? tpi_names_get(t->name_id) : NULL;
        char fallback[32];
        if (!name || !*name) {
            snprintf(fallback, sizeof fallback, "thread %u", t->tid);
            name = fallback;
        }
        EACH_SINK(c, k)
        {
            if (k->ops->thread_name)
                k->ops->thread_name(k, t->tid, name);
        }
        t->named_window = c->window_seq;
    }
}

static void open_window(tpi_collector *c, int64_t cycle)
{
    tp_session *s = c->s;
    char dir[1200], stem[512];
    tpu_path_join(dir, sizeof dir, s->run_dir, "profiler_traces");
    if (tpu_mkdir_p(dir, NULL, 0) != 0)
        fprintf(stderr, "trainprof: warning: cannot create %s: %s\n", dir, strerror(errno));
    tpi_trace_stem(&s->settings, stem, sizeof stem, s->host, s->pid, s->env.rank, c->step,
                   tpi_wall_ns());
    memset(&c->win, 0, sizeof c->win);
    c->win.index = (int)c->window_count;
    c->win.capture = cycle <= -2 ? (int)(-2 - cycle) : 0; /* update_window's capture cycles */
    c->win.first_step = c->step;
    c->win.last_step = c->step;
    /* fits: tp_session_open refused paths that could not (check_trace_paths) */
    if (snprintf(c->win.stem, sizeof c->win.stem, "%s/%s", dir, stem) >= (int)sizeof c->win.stem)
        fprintf(stderr, "trainprof: warning: trace path cut to %zu bytes: %s\n",
                sizeof c->win.stem - 1, c->win.stem);
    c->window_count++;
    c->window_seq = c->window_count;
    c->trace_stopped = 0;
    c->trace_budget_events = 0;
    c->window_cycle = cycle;
    __atomic_store_n(&s->wake_each_step, 1, __ATOMIC_RELAXED); /* flush every step */
    EACH_SINK(c, k)
    {
        uint64_t before = k->io_errors;
        if (k->ops->window_begin && k->ops->window_begin(k, &c->win) != 0)
            window_call_failed(k, before, "cannot open trace", c->win.stem);
    }
    send_thread_names(c);
    tpi_gpu_window_begin(c);
}

static uint64_t total_dropped(tpi_collector *c)
{
    uint64_t d = __atomic_load_n(&c->s->dropped_unregistered, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < c->n_th; i++)
        d += __atomic_load_n(&c->s->tbufs[i]->dropped, __ATOMIC_RELAXED);
    return d + tpi_gpu_dropped(c->s->gpu);
}

void tpi_col_close_window(tpi_collector *c)
{
    if (!c->window_seq)
        return;
    c->win.last_step = c->step > c->win.first_step ? c->step - 1 : c->win.first_step;
    tpi_gpu_window_end(c);
    uint64_t dropped = total_dropped(c);
    EACH_SINK(c, k)
    {
        uint64_t before = k->io_errors;
        if (k->ops->window_end && k->ops->window_end(k, &c->win, dropped + c->trace_dropped) != 0)
            window_call_failed(k, before, "cannot finish trace", c->win.stem);
    }
    c->window_seq = 0;
    __atomic_store_n(&c->s->wake_each_step, 0, __ATOMIC_RELAXED);
}

/* Opens or closes the trace window for the unit the next step belongs to. */
void tpi_col_update_window(tpi_collector *c, uint64_t ts)
{
    (void)ts;
    uint64_t k = c->s->settings.unit == TPI_UNIT_EPOCH ? c->epoch : c->step;
    int64_t cycle;
    tpi_phase ph = tpi_schedule_phase(&c->sched, k, &cycle);
    int want = ph == TPI_PHASE_ACTIVE;
    if (!want && tpi_flight_wants_window(c->fl, c->step)) {
        want = 1; /* a capture's window (flight.c), a cycle of its own */
        cycle = -2 - (int64_t)c->fl->window_capture;
    }
    if (c->window_seq && (!want || cycle != c->window_cycle))
        tpi_col_close_window(c);
    if (want && !c->window_seq)
        open_window(c, cycle);
    tpi_gpu_arm(c, k, ph);
}

static void step_slice(tpi_collector *c, tpi_thread_state *t, uint64_t end_ns)
{
    char name[48];
    snprintf(name, sizeof name, "ProfilerStep#%llu", (unsigned long long)c->step);
    tpi_event e = {0};
    e.kind = TPI_EV_SLICE;
    e.tid = t->tid;
    e.name = name;
    e.cat = "user_annotation";
    e.ts_ns = c->step_begin_ns;
    e.dur_ns = end_ns - c->step_begin_ns;
    e.self_ns = e.dur_ns;
    e.is_step = 1;
    e.step = c->step;
    tpi_col_deliver(c, &e);
}

static int sample_due(tpi_collector *c)
{
    int64_t n = c->s->settings.memory_every_n_steps;
    return c->s->probes && c->s->settings.memory && n > 0 && (c->step + 1) % (uint64_t)n == 0;
}

/* At most this many counters reach the metrics rows (every one still goes
 * to the traces): a name made per step (f"loss_{i}") must not grow each
 * row without bound. */
#define TPI_MAX_METRIC_COUNTERS 256

void tpi_col_counter_value(tpi_collector *c, uint32_t name_id, double v)
{
    size_t i = c->ctr_hint; /* usually the counter after the previous one */
    if (i >= c->n_ctrs || c->ctrs[i].name_id != name_id)
        for (i = 0; i < c->n_ctrs && c->ctrs[i].name_id != name_id; i++)
            ;
    if (i == c->n_ctrs) {
        if (i >= TPI_MAX_METRIC_COUNTERS ||
            tpu_reserve_items(&c->ctrs, &c->cap_ctrs, i + 1, sizeof *c->ctrs, 8) != 0)
            return;
        c->ctrs[i] = (tpi_counter_stat){.name_id = name_id, .name = tpi_names_get(name_id)};
        c->n_ctrs++;
    }
    c->ctrs[i].last = v;
    c->ctrs[i].sum += v;
    c->ctrs[i].n++;
    c->ctr_hint = i + 1;
}

/* After a metrics row: the next row's means start afresh. */
static void counters_row_written(tpi_collector *c, const tpi_step_info *si)
{
    if (!tpi_metric_due(&c->s->settings, si))
        return;
    for (size_t i = 0; i < c->n_ctrs; i++) {
        c->ctrs[i].sum = 0;
        c->ctrs[i].n = 0;
    }
}

void tpi_col_step_end(tpi_collector *c, tpi_thread_state *t, uint64_t ts, uint64_t samples)
{
    /* zones left open on the stepping thread are unbalanced */
    while (t->depth > 0) {
        c->unbalanced++;
        t->orphan_ends++;
        tpi_col_close_zone(c, t, ts, 1);
    }
    if (c->window_seq)
        step_slice(c, t, ts);
    c->have_sample_this_step = 0;
    if (sample_due(c)) {
        tpi_mem_sample m;
        if (tpi_probes_sample(c->s->probes, &m) == 0) {
            m.ts_ns = ts;
            m.step = c->step;
            tpi_col_memory(c, &m);
            c->have_sample_this_step = 1;
        }
    }
    double dt = (double)(ts - c->step_begin_ns) / 1e9; /* the double nearest the decimal */
    tpi_hist_add(&c->step_hist, ts - c->step_begin_ns);
    if (c->step == 0 || dt < c->step_min)
        c->step_min = dt;
    if (dt > c->step_max)
        c->step_max = dt;
    c->step_time_sum += dt;
    /* saturates: a count that wraps to a small number would be a lie */
    if (__builtin_add_overflow(c->total_samples, samples, &c->total_samples))
        c->total_samples = UINT64_MAX;
    tpi_gpu_step_end(c);

    uint64_t now = tpi_mono_ns();
    int64_t every = c->s->settings.log_every;
    int pct = now - c->pct_refresh_ns > 200000000ull ||
              (every > 0 && (c->step + 1) % (uint64_t)every == 0);
    if (pct)
        c->pct_refresh_ns = now;
    tpi_col_refresh_totals(c, pct);

    int64_t cycle;
    tpi_step_info si = {0};
    si.step = c->step;
    si.batch_idx = c->batch_idx;
    si.epoch = c->epoch;
    si.begin_ns = c->step_begin_ns;
    si.end_ns = ts;
    si.step_time_s = dt;
    si.samples = samples;
    si.samples_per_second = dt > 0 ? (double)samples / dt : 0;
    si.phase = tpi_schedule_phase(&c->sched,
                                  c->s->settings.unit == TPI_UNIT_EPOCH ? c->epoch : c->step,
                                  &cycle);
    si.ops = c->step_ops;
    si.n_ops = c->n_step_ops;
    si.totals = c->totals;
    si.n_totals = c->n_totals;
    si.mem = c->have_sample_this_step ? &c->last_sample : NULL;
    si.counters = c->ctrs;
    si.n_counters = c->n_ctrs;
    EACH_SINK(c, k)
    {
        if (k->ops->step)
            k->ops->step(k, &si);
    }
    counters_row_written(c, &si);
    if (c->window_seq) {
        EACH_SINK(c, k)
        {
            if (k->ops->flush)
                k->ops->flush(k);
        }
        check_trace_budget(c);
    }
    if (c->fl)
        tpi_flight_step_end(c->fl, &si);
    c->last_si = si; /* scalars only: the pointers are not kept */
    c->last_si.ops = NULL;
    c->last_si.n_ops = 0;
    c->last_si.totals = NULL;
    c->last_si.n_totals = 0;
    c->last_si.mem = NULL;
    c->last_si.counters = NULL;
    c->last_si.n_counters = 0;
    /* next step */
    c->step++;
    c->batch_idx++;
    c->step_seq++;
    c->n_step_ops = 0;
    c->step_begin_ns = ts;
    if (c->s->settings.unit == TPI_UNIT_STEP)
        tpi_col_update_window(c, ts);
}

void tpi_col_epoch_end(tpi_collector *c)
{
    c->epoch++;
    c->batch_idx = 0;
    if (c->s->settings.unit == TPI_UNIT_EPOCH)
        tpi_col_update_window(c, c->last_ns);
}

static void counter_event(tpi_collector *c, uint32_t name_id, const char *name, uint64_t ts,
                          double v)
{
    tpi_event e = {0};
    e.kind = TPI_EV_COUNTER;
    e.tid = c->s->opener_tid;
    e.name_id = name_id;
    e.name = name;
    e.cat = "counter";
    e.ts_ns = ts;
    e.step = c->step;
    e.value = v;
    tpi_col_deliver(c, &e);
}

void tpi_col_drained(tpi_collector *c)
{
    EACH_SINK(c, k)
    {
        if (k->ops->drained)
            k->ops->drained(k);
    }
}

void tpi_col_memory(tpi_collector *c, tpi_mem_sample *m)
{
    if (m->n_devices > 0)
        c->gpu_seen = 1;
    if (m != &c->last_sample)
        c->last_sample = *m;
    if (c->s->mem_summary)
        tpi_mem_summary_add(c->s->mem_summary, m);
    if (c->fl)
        tpi_flight_memory(c->fl, m);
    EACH_SINK(c, k)
    {
        if (k->ops->memory)
            k->ops->memory(k, m);
    }
    if (!c->window_seq)
        return;
    if (m->have_process)
        counter_event(c, c->ctr_rss, "rss_bytes", m->ts_ns, (double)m->rss_bytes);
    if (m->have_system)
        counter_event(c, c->ctr_sys, "system_memory_percent", m->ts_ns, m->system_memory_percent);
    for (int i = 0; i < m->n_devices && i < TPI_MAX_DEVICES; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s allocated_bytes", m->devices[i].mem.device);
        counter_event(c, tpi_names_intern(name), tpi_names_get(tpi_names_intern(name)), m->ts_ns,
                      (double)m->devices[i].mem.allocated_bytes);
        snprintf(name, sizeof name, "%s reserved_bytes", m->devices[i].mem.device);
        counter_event(c, tpi_names_intern(name), tpi_names_get(tpi_names_intern(name)), m->ts_ns,
                      (double)m->devices[i].mem.reserved_bytes);
        if (m->devices[i].have_utilization) {
            snprintf(name, sizeof name, "%s utilization_percent", m->devices[i].mem.device);
            counter_event(c, tpi_names_intern(name), tpi_names_get(tpi_names_intern(name)),
                          m->ts_ns, m->devices[i].utilization_percent);
        }
        if (m->devices[i].have_power) {
            snprintf(name, sizeof name, "%s power_watts", m->devices[i].mem.device);
            counter_event(c, tpi_names_intern(name), tpi_names_get(tpi_names_intern(name)),
                          m->ts_ns, m->devices[i].power_watts);
        }
    }
}

/* Trace files are counted as they are on disk at close, not as written: a
 * file (or the whole run directory) removed during the run is a loss the
 * summary says (trace_files, io_errors) and close() reports, once. */
static void count_lost_traces(tpi_collector *c, tpi_summary *sum)
{
    const tpi_settings *st = &c->s->settings;
    int files = (st->trace && (st->trace_formats & TPI_TRACE_CHROME)) || (st->trace_formats & TPI_TRACE_PERFETTO);
    if (tpi_sink_run_dir_gone(&c->s->env) && !sum->io_errors)
        c->lost_traces = 1;  /* at least: whatever was written before is gone */
    if (!c->window_count || !files)
        return;
    char dir[1200];
    uint64_t on_disk = 0;
    tpu_path_join(dir, sizeof dir, c->s->run_dir, "profiler_traces");
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        if (strstr(de->d_name, ".pt.trace.json") || strstr(de->d_name, ".perfetto-trace"))
            on_disk++;
    if (d)
        closedir(d);
    if (on_disk >= c->window_count)
        return;
    sum->trace_files = on_disk;
    if (sum->io_errors)  /* the failed writes were counted and reported already */
        return;
    c->lost_traces = c->window_count - on_disk > c->lost_traces ? c->window_count - on_disk : c->lost_traces;
    fprintf(stderr, "trainprof: warning: %llu of %llu trace file(s) are missing from %s (removed during "
            "the run?)\n", (unsigned long long)c->lost_traces, (unsigned long long)c->window_count, dir);
}

int tpi_collector_finish(tpi_collector *c, uint64_t end_ticks)
{
    tp_session *s = c->s;
    uint64_t end_ns = tpi_session_ns(s, end_ticks);
    if (end_ns < c->last_ns)
        end_ns = c->last_ns;
    tpi_col_close_all_open(c, end_ns);
    tpi_col_close_window(c);
    tpi_gpu_finish(c);
    tpi_col_refresh_totals(c, 1);
    if (c->step == 0 && c->n_totals > 0) /* zones but no step: say once how to mark them */
        fprintf(stderr, "trainprof: warning: no step was marked, so the per-step files "
                        "(timing_profile.json, metrics, traces) are empty: end each training step "
                        "with prof.step() (C: tp_step_end), or iterate with "
                        "trainprof.profile_data_loader(loader)\n");
    static const double q[2] = {0.5, 0.9};
    double p[2];
    uint64_t lo = (uint64_t)(c->step_min * 1e9 + 0.5), hi = (uint64_t)(c->step_max * 1e9 + 0.5);
    tpi_hist_quantiles(&c->step_hist, q, 2, lo, hi, p);
    tpi_summary sum = {0};
    sum.total_steps = c->step;
    sum.total_samples = c->total_samples;
    sum.total_time_s = (double)end_ns / 1e9;
    sum.step_time_total_s = c->step_time_sum;
    sum.mean_step_s = c->step ? c->step_time_sum / (double)c->step : 0;
    sum.median_step_s = p[0] / 1e9;
    sum.p90_step_s = p[1] / 1e9;
    sum.min_step_s = c->step_min;
    sum.max_step_s = c->step_max;
    sum.wall_start_ns = s->env.wall_base_ns;
    sum.wall_end_ns = s->env.wall_base_ns + end_ns;
    sum.ops = c->totals;
    sum.n_ops = c->n_totals;
    sum.events_recorded = c->events;
    sum.events_dropped = total_dropped(c);
    sum.unbalanced_zones = c->unbalanced;
    sum.trace_files = c->window_count;
    uint64_t called = tp_session_steps(s);  /* every step(); c->step: those whose record arrived */
    sum.steps_dropped = called > c->step ? called - c->step : 0;
    sum.mem = s->mem_summary;
    sum.alloc = s->alloc;
    tpi_step_info last = c->last_si; /* the last step, with the final totals */
    last.totals = c->totals;
    last.n_totals = c->n_totals;
    last.counters = c->ctrs;
    last.n_counters = c->n_ctrs;
    sum.last_step = c->step ? &last : NULL;
    sum.gpu_found = s->probes && s->settings.memory ? c->gpu_seen : -1;
    sum.gpu_probe_note = s->probes ? tpi_probes_gpu_note(s->probes) : NULL;
    sum.trace_events_dropped = c->trace_dropped;
    sum.captures_json = tpi_flight_entries(c->fl);
    sum.capture_on = c->fl != NULL;
    for (int i = 0; i < s->n_sinks; i++)
        sum.io_errors += s->sinks[i]->io_errors;
    count_lost_traces(c, &sum);
    sum.io_errors += c->lost_traces;
    int rc = 0;
    EACH_SINK(c, k)
    {
        if (k->ops->close && k->ops->close(k, &sum) != 0)
            rc = -1;
    }
    tpi_collector_publish_stats(c);
    return rc;
}
