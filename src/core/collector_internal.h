/*
 * collector_internal.h - state of the collector, shared by collector.c
 * (draining + zone matching) and window.c (steps, schedule, sinks, summary).
 * Only the collector thread (or the closing thread after it stopped)
 * touches it.
 */
#ifndef TP_CORE_COLLECTOR_INTERNAL_H
#define TP_CORE_COLLECTOR_INTERNAL_H

#include "core/flight.h"
#include "core/schedule.h"
#include "core/session_internal.h"
#include "core/stats.h"

typedef struct tpi_open_zone {
    uint32_t name_id, args_id;
    uint64_t begin_ns, child_ns;
    uint64_t window;              /* window sequence at begin, 0 = none */
} tpi_open_zone;

typedef struct tpi_thread_state {
    tpi_cursor cur;
    uint32_t tid;
    uint32_t name_id;
    int is_step_thread;
    int idle;                     /* nothing more to merge in this drain pass */
    tpi_open_zone *zs;
    uint32_t *ids;                /* name ids of zs, for tpi_event.stack */
    int depth, cap;
    uint64_t orphan_ends;         /* ENDs expected for zones we force-closed */
    uint64_t named_window;        /* window the thread name was sent to */
} tpi_thread_state;

typedef struct tpi_op {
    tpi_dstat d;
    int top_level;
    uint64_t step_seq;            /* step whose op row it has in step_ops */
    size_t step_slot;
} tpi_op;

struct tpi_collector {
    tp_session *s;
    tpi_thread_state *th[TPI_MAX_THREADS];
    uint32_t n_th;
    tpi_op *ops;                  /* indexed by name id */
    size_t ops_cap;

    /* current step */
    uint64_t step, epoch, batch_idx;
    uint64_t step_begin_ns;
    uint64_t last_ns;             /* latest timestamp processed */
    tpi_step_op *step_ops;
    size_t n_step_ops, cap_step_ops;
    uint64_t step_seq;

    /* step statistics */
    tpi_hist step_hist;
    uint64_t total_samples;
    double step_time_sum, step_min, step_max;

    /* schedule and windows */
    tpi_schedule sched;
    uint64_t window_seq;          /* current open window, 0 = none */
    uint64_t window_count;
    int64_t window_cycle;
    tpi_window win;

    /* totals for sinks */
    tpi_op_stat *totals;
    size_t n_totals, cap_totals;
    uint64_t pct_refresh_ns;      /* mono time of the last percentile refresh */

    /* memory */
    tpi_mem_sample last_sample;
    int have_sample_this_step;
    uint32_t ctr_rss, ctr_sys;

    /* counters (tp_counter) for the metrics rows, first seen first */
    tpi_counter_stat *ctrs;
    size_t n_ctrs, cap_ctrs, ctr_hint;

    /* counts */
    uint64_t events, unbalanced;
    int overlap_warned;           /* zones ended out of order: warned once */

    /* issue 12: the last step (scalars only) for the metrics' final row */
    tpi_step_info last_si;
    int gpu_seen;                 /* a memory sample had a device */
    /* trace budget (profiling.max_trace_mb and the disk's free space) */
    int trace_stopped;            /* this window's events are dropped */
    uint64_t trace_budget_events; /* events delivered since the last check */
    uint64_t trace_dropped;       /* events dropped by the budget, all windows */
    tpi_flight *fl;               /* the flight recorder (flight.h), NULL when off */
    uint64_t lost_traces;         /* files lost at close (window.c): trace windows gone from
                                     disk, at least 1 when the run directory was removed */
};

/* window.c */
void tpi_col_deliver(tpi_collector *c, const tpi_event *e);
void tpi_col_step_end(tpi_collector *c, tpi_thread_state *t, uint64_t ts, uint64_t samples);
void tpi_col_epoch_end(tpi_collector *c);
/* A counter value for the metrics rows (its last value and running mean). */
void tpi_col_counter_value(tpi_collector *c, uint32_t name_id, double v);
void tpi_col_update_window(tpi_collector *c, uint64_t ts);
void tpi_col_close_window(tpi_collector *c);
/* The row of `op` (an entry of c->ops, so its name id is its index) in
 * this step's table, added on its first top-level zone of the step; NULL
 * on OOM. */
tpi_step_op *tpi_col_new_step_op(tpi_collector *c, tpi_op *op, int background);

/* Adds a top-level zone of `op` to this step's rows. */
static inline void tpi_col_add_step_op(tpi_collector *c, tpi_op *op, uint64_t dur_ns,
                                       int background)
{
    tpi_step_op *so = __builtin_expect(op->step_seq == c->step_seq + 1, 1)
                          ? &c->step_ops[op->step_slot]
                          : tpi_col_new_step_op(c, op, background);
    if (so) {
        so->count++;
        so->total_ns += dur_ns;
    }
}
void tpi_col_refresh_totals(tpi_collector *c, int with_percentiles);
void tpi_col_memory(tpi_collector *c, tpi_mem_sample *m);
/* The op table entry of name_id (NULL on OOM). */
tpi_op *tpi_col_op_grow(tpi_collector *c, uint32_t name_id);
static inline tpi_op *tpi_col_op(tpi_collector *c, uint32_t name_id)
{
    return __builtin_expect(name_id < c->ops_cap, 1) ? &c->ops[name_id] : tpi_col_op_grow(c, name_id);
}

void tpi_col_drained(tpi_collector *c);

/* collector.c */
void tpi_col_close_zone(tpi_collector *c, tpi_thread_state *t, uint64_t end_ns, int unterminated);
void tpi_col_close_all_open(tpi_collector *c, uint64_t end_ns);

#endif
