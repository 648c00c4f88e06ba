/*
 * collector.c - drains the per-thread buffers in timestamp order and turns
 * records into slices, counters, marks and memory events (window.c then
 * handles steps, the schedule and the sinks).
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/collector_internal.h"
#include "core/gpu_session.h"
#include "core/names.h"
#include "util/json.h"

tpi_collector *tpi_collector_new(tp_session *s)
{
    tpi_collector *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->s = s;
    c->step_min = 0;
    tpi_schedule_from_settings(&c->sched, &s->settings);
    c->ctr_rss = tpi_names_intern("rss_bytes");
    c->ctr_sys = tpi_names_intern("system_memory_percent");
    c->fl = tpi_flight_new(c);
    return c;
}

static void thread_state_free(tpi_thread_state *t)
{
    if (!t)
        return;
    free(t->zs);
    free(t->ids);
    free(t);
}

void tpi_collector_free(tpi_collector *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_th; i++)
        thread_state_free(c->th[i]);
    for (uint32_t i = 0; i < c->ops_cap; i++)
        tpi_dstat_free(&c->ops[i].d);
    free(c->ops);
    free(c->step_ops);
    free(c->totals);
    free(c->ctrs);
    tpi_flight_free(c->fl, c->s->dead);
    free(c);
}

tpi_op *tpi_col_op_grow(tpi_collector *c, uint32_t id)
{
    if (tpu_reserve_index(&c->ops, &c->ops_cap, id, sizeof *c->ops, 64) != 0)
        return NULL;
    return &c->ops[id];
}

/* Picks up threads registered since the last drain. */
static void sync_threads(tpi_collector *c)
{
    uint32_t n = __atomic_load_n(&c->s->n_tbufs, __ATOMIC_ACQUIRE);
    for (; c->n_th < n; c->n_th++) {
        tpi_thread_state *t = calloc(1, sizeof *t);
        if (!t)
            return;
        tpi_tbuf *b = c->s->tbufs[c->n_th];
        t->tid = b->tid;
        t->name_id = b->name_id;
        t->is_step_thread = b->tid == c->s->opener_tid;
        c->th[c->n_th] = t;
    }
}

static int push_zone(tpi_thread_state *t, uint32_t name_id, uint32_t args_id, uint64_t ns,
                     uint64_t window)
{
    if (t->depth == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        tpi_open_zone *zs = realloc(t->zs, (size_t)cap * sizeof *zs);
        if (!zs)
            return -1;
        t->zs = zs;
        uint32_t *ids = realloc(t->ids, (size_t)cap * sizeof *ids);
        if (!ids)
            return -1;
        t->ids = ids;
        t->cap = cap;
    }
    tpi_open_zone *z = &t->zs[t->depth];
    z->name_id = name_id;
    z->args_id = args_id;
    z->begin_ns = ns;
    z->child_ns = 0;
    z->window = window;
    t->ids[t->depth] = name_id;
    t->depth++;
    return 0;
}

/* Skips a JSON array of numbers (nested arrays allowed, spaces around
 * items): the end of it, or NULL when p does not start one. */
static const char *skip_num_array(const char *p, int depth)
{
    if (*p != '[' || depth > 32)
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    if (*p == ']')
        return p + 1;
    for (;;) {
        if (*p == '[') {
            p = skip_num_array(p, depth + 1);
            if (!p)
                return NULL;
        } else {
            const char *d = p + (*p == '-');
            if (*d < '0' || *d > '9')
                return NULL;
            while (*d >= '0' && *d <= '9')
                d++;
            if (*d == '.') {
                if (d[1] < '0' || d[1] > '9')
                    return NULL;
                for (d++; *d >= '0' && *d <= '9';)
                    d++;
            }
            p = d;
        }
        while (*p == ' ')
            p++;
        if (*p == ']')
            return p + 1;
        if (*p != ',')
            return NULL;
        p++;
        while (*p == ' ')
            p++;
    }
}

/* Formats zone args (record_shapes) as a JSON object into buf. */
static const char *args_json(uint32_t args_id, char *buf, size_t n)
{
    if (!args_id)
        return NULL;
    const char *a = tpi_names_get(args_id);
    /* raw only when the whole text is a valid array (and fits in buf):
     * args cut at 240 bytes or malformed become a JSON string, escaped by
     * the JSON writer (control characters, quotes, invalid UTF-8) */
    const char *end = skip_num_array(a, 0);
    if (end && *end == '\0' && strlen(a) + 32 < n) {
        snprintf(buf, n, "{\"Input Dims\":%s}", a);
        return buf;
    }
    tpu_buf esc = {0};
    tpu_json_escape(&esc, a, strlen(a));
    if (esc.oom || esc.len + 32 >= n) {
        tpu_buf_free(&esc);
        return NULL;
    }
    snprintf(buf, n, "{\"Input Dims\":\"%s\"}", tpu_buf_cstr(&esc));
    tpu_buf_free(&esc);
    return buf;
}

/* Closes open zone k of t (the innermost is depth - 1); the zones above
 * it stay open and move down one. */
static void close_frame(tpi_collector *c, tpi_thread_state *t, int k, uint64_t end_ns,
                        int unterminated)
{
    tpi_open_zone zone = t->zs[k], *z = &zone;
    uint64_t dur = end_ns > z->begin_ns ? end_ns - z->begin_ns : 0;
    uint64_t self = dur > z->child_ns ? dur - z->child_ns : 0;
    if (k > 0)
        t->zs[k - 1].child_ns += dur;
    tpi_op *op = tpi_col_op(c, z->name_id);
    if (op) {
        tpi_dstat_add(&op->d, dur, self);
        if (k == 0 && t->is_step_thread)
            op->top_level = 1;
    }
    if (k == 0 && op)
        tpi_col_add_step_op(c, op, dur, !t->is_step_thread);
    if (c->fl)
        tpi_flight_slice(c->fl, t->tid, z->name_id, z->begin_ns, dur, k, unterminated);
    if (z->window && z->window == c->window_seq) {
        char abuf[1600]; /* 240 bytes of args, each escaped to at most 6 */
        tpi_event e = {0};
        e.kind = TPI_EV_SLICE;
        e.tid = t->tid;
        e.name_id = z->name_id;
        e.name = tpi_names_get(z->name_id);
        e.cat = "user_annotation";
        e.ts_ns = z->begin_ns;
        e.dur_ns = dur;
        e.self_ns = self;
        e.depth = (uint32_t)k;
        e.stack = t->ids;
        e.unterminated = unterminated;
        e.step = c->step;
        e.args_json = args_json(z->args_id, abuf, sizeof abuf);
        tpi_col_deliver(c, &e);
    }
    int above = t->depth - 1 - k;
    memmove(&t->zs[k], &t->zs[k + 1], (size_t)above * sizeof t->zs[0]);
    memmove(&t->ids[k], &t->ids[k + 1], (size_t)above * sizeof t->ids[0]);
    t->depth--;
}

void tpi_col_close_zone(tpi_collector *c, tpi_thread_state *t, uint64_t end_ns, int unterminated)
{
    close_frame(c, t, t->depth - 1, end_ns, unterminated);
}

/* An END with no open zone to end: one left over from a zone a step end
 * closed, or an unbalanced one. */
static void count_stray_end(tpi_collector *c, tpi_thread_state *t)
{
    if (t->orphan_ends)
        t->orphan_ends--; /* END of a zone closed at a step end */
    else
        c->unbalanced++;
}

/* A named END (tp_zone_end_site) of a zone that is not the innermost: it
 * ends its own interval, the zones begun inside it stay open. */
static void end_out_of_order(tpi_collector *c, tpi_thread_state *t, uint32_t name, uint64_t ns)
{
    int k = t->depth - 1;
    while (k >= 0 && t->zs[k].name_id != name)
        k--;
    if (k < 0) {
        count_stray_end(c, t);
        return;
    }
    c->unbalanced++;
    if (!c->overlap_warned) {
        c->overlap_warned = 1;
        fprintf(stderr, "trainprof: warning: zone '%s' ended before '%s', which began inside it: "
                "each keeps its own interval (counted in unbalanced_zones; warned once)\n",
                tpi_names_get(name), tpi_names_get(t->zs[t->depth - 1].name_id));
    }
    close_frame(c, t, k, ns, 0);
}

static void on_end(tpi_collector *c, tpi_thread_state *t, uint32_t name, uint64_t ns)
{
    if (t->depth == 0) {
        count_stray_end(c, t);
        return;
    }
    if (name && t->zs[t->depth - 1].name_id != name) {
        end_out_of_order(c, t, name, ns);
        return;
    }
    tpi_col_close_zone(c, t, ns, 0);
}

static void simple_event(tpi_collector *c, tpi_thread_state *t, tpi_event_kind kind,
                         uint32_t name_id, uint64_t ns, double value)
{
    if (c->fl)
        tpi_flight_point(c->fl, kind == TPI_EV_COUNTER ? TPI_FL_COUNTER : TPI_FL_INSTANT, t->tid,
                         name_id, ns, value);
    if (!c->window_seq)
        return;
    tpi_event e = {0};
    e.kind = kind;
    e.tid = t->tid;
    e.name_id = name_id;
    e.name = tpi_names_get(name_id);
    e.cat = kind == TPI_EV_COUNTER ? "counter" : "user_annotation";
    e.ts_ns = ns;
    e.step = c->step;
    e.value = value;
    tpi_col_deliver(c, &e);
}

static void memory_event(tpi_collector *c, tpi_thread_state *t, const tpi_rec *r,
                         const tpi_rec *x1, const tpi_rec *x2, uint64_t ns)
{
    if (!c->window_seq)
        return;
    const char *pool = tpi_names_get(TPI_REC_NAME(r->e.hdr));
    tpi_event e = {0};
    e.kind = TPI_EV_MEMORY;
    e.tid = t->tid;
    e.name = "[memory]";
    e.cat = "cpu_instant_event";
    e.ts_ns = ns;
    e.step = c->step;
    e.addr = x1->x.a;
    e.bytes = (int64_t)x1->x.b;
    e.total_allocated = x2->x.a;
    e.total_reserved = x2->x.b;
    e.device_type = strncmp(pool, "cuda", 4) == 0 ? 1 : 0;
    e.device_id = -1;
    if (e.device_type == 1) {
        const char *colon = strchr(pool, ':');
        e.device_id = colon ? atoi(colon + 1) : 0;
    }
    tpi_col_deliver(c, &e);
}

/* A zone recorded whole at its end (tp_zone_complete): not on the zone
 * stack, its own self time. */
static void complete_zone(tpi_collector *c, tpi_thread_state *t, uint32_t name_id,
                          uint64_t begin_ticks, uint64_t end_ticks, uint64_t end_ns)
{
    uint64_t begin_ns = end_ns;
    if (begin_ticks > end_ticks)
        c->unbalanced++;
    else
        begin_ns = end_ns - (tpi_session_ns(c->s, end_ticks) - tpi_session_ns(c->s, begin_ticks));
    uint64_t dur = end_ns - begin_ns;
    tpi_op *op = tpi_col_op(c, name_id);
    if (op)
        tpi_dstat_add(&op->d, dur, dur);
    if (t->depth == 0 && op)
        tpi_col_add_step_op(c, op, dur, !t->is_step_thread);
    if (c->fl)
        tpi_flight_slice(c->fl, t->tid, name_id, begin_ns, dur, t->depth, 0);
    if (!c->window_seq)
        return;
    tpi_event e = {0};
    e.kind = TPI_EV_SLICE;
    e.tid = t->tid;
    e.name_id = name_id;
    e.name = tpi_names_get(name_id);
    e.cat = "user_annotation";
    e.ts_ns = begin_ns;
    e.dur_ns = dur;
    e.self_ns = dur;
    e.depth = t->depth;
    e.stack = t->ids;
    e.step = c->step;
    tpi_col_deliver(c, &e);
}

static void thread_named(tpi_collector *c, tpi_thread_state *t, uint32_t name_id)
{
    t->name_id = name_id;
    t->named_window = 0;
    if (c->window_seq) {
        for (int i = 0; i < c->s->n_sinks; i++) {
            tpi_sink *k = c->s->sinks[i];
            if (!k->failed && k->ops->thread_name)
                k->ops->thread_name(k, t->tid, tpi_names_get(name_id));
        }
        t->named_window = c->window_seq;
    }
}

/* Handles one record; returns the slots it used. */
static uint32_t process(tpi_collector *c, tpi_thread_state *t, tpi_cursor *cur, const tpi_rec *r)
{
    uint64_t ns = tpi_session_ns(c->s, r->e.ts);
    uint32_t name = TPI_REC_NAME(r->e.hdr);
    if (ns < c->last_ns)
        ns = c->last_ns; /* committed late across threads: keep time monotonic */
    c->last_ns = ns;
    c->events++;
    switch (TPI_REC_KIND(r->e.hdr)) {
    case TPI_REC_BEGIN:
        push_zone(t, name, r->e.arg, ns, c->window_seq);
        return 1;
    case TPI_REC_END:
        on_end(c, t, name, ns);
        return 1;
    case TPI_REC_STEP_BEGIN:
        t->is_step_thread = 1;
        c->step_begin_ns = ns;
        return 1;
    case TPI_REC_STEP_END:
        t->is_step_thread = 1;
        tpi_col_step_end(c, t, ns, tpi_cursor_slot(cur, 1)->x.a);
        return 2;
    case TPI_REC_COUNTER: {
        double v;
        uint64_t bits = tpi_cursor_slot(cur, 1)->x.a;
        memcpy(&v, &bits, sizeof v);
        tpi_col_counter_value(c, name, v);
        simple_event(c, t, TPI_EV_COUNTER, name, ns, v);
        return 2;
    }
    case TPI_REC_MARK:
        simple_event(c, t, TPI_EV_INSTANT, name, ns, 0);
        return 1;
    case TPI_REC_THREAD:
        thread_named(c, t, name);
        return 1;
    case TPI_REC_EPOCH:
        tpi_col_epoch_end(c);
        return 1;
    case TPI_REC_MEMORY:
        memory_event(c, t, r, tpi_cursor_slot(cur, 1), tpi_cursor_slot(cur, 2), ns);
        return 3;
    case TPI_REC_COMPLETE:
        complete_zone(c, t, name, tpi_cursor_slot(cur, 1)->x.a, r->e.ts, ns);
        return 2;
    default:
        return 1;
    }
}

/* Processes `t`'s records in order while they come before `bound` (the
 * oldest head record of the other threads, or the pass limit): no other
 * thread needs a look meanwhile. Ties go to the lower thread index, as in
 * a record-by-record merge. */
static void merge_run(tpi_collector *c, tpi_thread_state *t, tpi_tbuf *b, uint32_t t_index,
                      const tpi_rec *r, uint64_t bound, uint32_t bound_index)
{
    do {
        tpi_cursor_advance(&t->cur, process(c, t, &t->cur, r));
        if ((c->events & 1023) == 0) /* a long pass: keep chunks ready meanwhile */
            tpi_pool_fill(&c->s->pool);
        r = tpi_cursor_peek(&t->cur, b);
    } while (r && (r->e.ts < bound || (r->e.ts == bound && t_index < bound_index)));
}

/* Merges the threads' records by timestamp, up to limit ticks.
 *
 * A thread found caught up (nothing committed) or past `limit` is skipped
 * for the rest of the pass: re-reading its chunk's `committed` for every
 * record merged from the other threads would pull that cache line away
 * from its writer once per event. Anything it commits meanwhile carries a
 * clock value read after the look (so normally > limit) and is merged by
 * the next pass. */
void tpi_collector_drain(tpi_collector *c, uint64_t limit)
{
    sync_threads(c);
    for (uint32_t i = 0; i < c->n_th; i++)
        c->th[i]->idle = 0;
    for (;;) {
        tpi_thread_state *best = NULL;
        const tpi_rec *best_r = NULL;
        uint32_t best_i = 0, bound_i = UINT32_MAX; /* UINT32_MAX: the limit, inclusive */
        uint64_t bound = limit;
        for (uint32_t i = 0; i < c->n_th; i++) {
            tpi_thread_state *t = c->th[i];
            if (t->idle)
                continue;
            const tpi_rec *r = tpi_cursor_peek(&t->cur, c->s->tbufs[i]);
            if (!r || r->e.ts > limit) {
                t->idle = 1;
                continue;
            }
            if (!best_r || r->e.ts < best_r->e.ts) {
                if (best_r) { /* the previous oldest is now the second */
                    bound = best_r->e.ts;
                    bound_i = best_i;
                }
                best = t;
                best_r = r;
                best_i = i;
            } else if (r->e.ts < bound || (r->e.ts == bound && i < bound_i)) {
                bound = r->e.ts;
                bound_i = i;
            }
        }
        if (!best)
            break;
        merge_run(c, best, c->s->tbufs[best_i], best_i, best_r, bound, bound_i);
    }
    tpi_col_drained(c);
}

/* Closes zones still open on every thread at the end of the session. */
void tpi_col_close_all_open(tpi_collector *c, uint64_t end_ns)
{
    for (uint32_t i = 0; i < c->n_th; i++) {
        tpi_thread_state *t = c->th[i];
        while (t->depth > 0) {
            c->unbalanced++;
            tpi_col_close_zone(c, t, end_ns, 1);
        }
    }
}

void tpi_collector_samples(tpi_collector *c)
{
    tpi_mem_sample m;
    while (tpi_session_pop_sample(c->s, &m))
        tpi_col_memory(c, &m);
}

void tpi_collector_publish_stats(tpi_collector *c)
{
    tp_session *s = c->s;
    uint64_t dropped = __atomic_load_n(&s->dropped_unregistered, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < __atomic_load_n(&s->n_tbufs, __ATOMIC_ACQUIRE); i++)
        dropped += __atomic_load_n(&s->tbufs[i]->dropped, __ATOMIC_RELAXED);
    dropped += tpi_gpu_dropped(s->gpu);
    uint64_t io = 0;
    for (int i = 0; i < s->n_sinks; i++)
        io += s->sinks[i]->io_errors;
    pthread_mutex_lock(&s->stats_lock);
    s->stats.steps = c->step;
    s->stats.events_recorded = c->events;
    s->stats.events_dropped = dropped;
    s->stats.unbalanced_zones = c->unbalanced;
    s->stats.io_errors = io + c->lost_traces;
    s->stats.trace_files = c->window_count - (c->window_seq ? 1 : 0) - c->lost_traces;
    s->stats.mean_step_seconds = c->step ? c->step_time_sum / (double)c->step : 0;
    pthread_mutex_unlock(&s->stats_lock);
}
