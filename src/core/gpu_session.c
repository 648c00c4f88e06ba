/*
 * gpu_session.c - GPU activity and GPU zones, between the probes
 * (src/probe/cupti.c, cuda_events.c) and the sinks.
 *
 * CUPTI records only around trace windows: enabled when the warmup steps
 * before a window begin (by the stepping thread in tp_step_end, from a
 * step number the collector armed in advance, or by the collector when it
 * gets there first), flushed at every step end
 * (only buffers whose records are all complete: the GPU is never waited
 * for), force-flushed and disabled when the window closes. A window has
 * the API calls made during it and the GPU work they launched (matched by
 * CUPTI correlation ids, which grow with each call; the probe delivers the
 * API records of a drain first); these become TPI_EV_GPU events for the
 * trace sinks. Warmup records are thrown away, like warmup zones. When the window
 * closes, the GPU may still run work the window launched: the collector
 * (never the training thread) keeps taking completed records until the
 * work of the window's last launch (CUPTI correlation ids grow with each
 * call) has arrived, for at most WINDOW_GRACE_MS, without synchronizing
 * anything; work launched after the window is left out. While CUPTI is on
 * the collector wakes at every step end, so it follows the schedule
 * closely.
 *
 * GPU zones are timed with CUDA events on every step, windows or not. The
 * collector polls them at each step end; their times are aggregated per
 * operation (gpu_* columns of operations.json) like the CPU zones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/collector_internal.h"
#include "core/gpu_session.h"
#include "probe/gpu.h"
#include "util/buf.h"

#define MAX_PAIRS 4096        /* GPU zones in flight */
#define MAX_CONTEXTS 64
#define CLOSE_WAIT_MS 1000    /* at close, how long unfinished GPU zones may take */
#define WINDOW_GRACE_MS 1000  /* at window end, how long queued GPU work may take */
#define MAX_DEFERRED 65536    /* records kept for a later decision */

typedef struct deferred {
    tpi_gpu_activity a;
    size_t name_at;           /* offset of the name in later_names */
} deferred;

typedef struct gpu_op {
    uint64_t count, total_ns, min_ns, max_ns;
} gpu_op;

struct tpi_gpu {
    tp_session *s;
    tpi_cupti *cupti;
    pthread_mutex_t cupti_lock; /* start/stop/flush: the collector and a stepping thread */
    int cupti_failed_start;   /* under cupti_lock */
    uint64_t start_at;        /* atomic: steps ended when CUPTI is due (UINT64_MAX: none) */
    /* the window: records from window_begin_ns on; once it is closing, API
     * calls up to window_end_ns and the GPU work they launched */
    uint64_t window_begin_ns, window_end_ns;
    int closing;
    uint32_t min_corr;        /* first API call of the window (0: none yet) */
    uint32_t max_api_corr;    /* last API call taken */
    uint32_t max_judged_corr; /* last API call taken or dropped */
    uint32_t max_launch_corr; /* last launch/copy/set call of the window */
    deferred *later;          /* records not decidable yet (judge) */
    size_t n_later, cap_later;
    tpu_buf later_names;
    uint64_t later_dropped;   /* over MAX_DEFERRED */
    uint32_t max_work_corr;   /* latest of the kernels, copies, sets delivered */
    /* GPU zones: opened on first use (any thread) */
    pthread_mutex_t lock;
    int events_state;         /* atomic: 0 not tried, 1 open, 2 unavailable */
    tpi_cuda_events *events;
    gpu_op *ops;              /* by name id; collector thread only */
    size_t ops_cap;
    /* context id -> device, learned from kernels and copies (sync records lack it) */
    uint32_t ctx_id[MAX_CONTEXTS], ctx_dev[MAX_CONTEXTS];
    int n_ctx;
};

static void forget_deferred(tpi_gpu *g)
{
    free(g->later);
    g->later = NULL;
    g->n_later = g->cap_later = 0;
    tpu_buf_free(&g->later_names);
}

tpi_gpu *tpi_gpu_open(tp_session *s)
{
    tpi_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->s = s;
    pthread_mutex_init(&g->lock, NULL);
    pthread_mutex_init(&g->cupti_lock, NULL);
    g->start_at = UINT64_MAX;
    if (s->settings.cuda && s->settings.trace) {
        char why[256] = "";
        uint64_t bound = (uint64_t)s->settings.max_buffer_mb << 20;
        g->cupti = tpi_cupti_open(bound / 2, s->env.mono_base_ns, why, sizeof why);
        if (!g->cupti)
            fprintf(stderr, "trainprof: info: profiling.cuda: no GPU activity in traces: %s\n",
                    why);
    }
    return g;
}

void tpi_gpu_close(tpi_gpu *g)
{
    if (!g)
        return;
    tpi_cupti_close(g->cupti);
    tpi_cuda_events_close(g->events);
    forget_deferred(g);
    pthread_mutex_destroy(&g->lock);
    pthread_mutex_destroy(&g->cupti_lock);
    free(g->ops);
    free(g);
}

/* ---- CUPTI records -> sinks ------------------------------------------------------ */

static uint32_t device_of_context(tpi_gpu *g, uint32_t ctx, uint32_t dev, int learn)
{
    for (int i = 0; i < g->n_ctx; i++)
        if (g->ctx_id[i] == ctx)
            return learn ? (g->ctx_dev[i] = dev) : g->ctx_dev[i];
    if (learn && g->n_ctx < MAX_CONTEXTS) {
        g->ctx_id[g->n_ctx] = ctx;
        g->ctx_dev[g->n_ctx++] = dev;
    }
    return learn ? dev : 0;
}

static const char *category(tpi_gpu_kind k)
{
    switch (k) {
    case TPI_GPU_KERNEL: return "kernel";
    case TPI_GPU_MEMCPY: return "gpu_memcpy";
    case TPI_GPU_MEMSET: return "gpu_memset";
    case TPI_GPU_SYNC: return "cuda_sync";
    case TPI_GPU_RUNTIME: return "cuda_runtime";
    default: return "cuda_driver";
    }
}

typedef enum verdict { TAKE, DROP, LATER } verdict;

/* Whether a record belongs to the open window (see the top of the file).
 * LATER: not decidable yet: the collector has not yet reached the time of
 * an API call (it may lag behind the training thread, and the call may
 * belong to a window it has not opened yet), or the call that launched a
 * GPU record has not been judged yet. */
static verdict judge(const tpi_collector *c, const tpi_gpu *g, const tpi_gpu_activity *a)
{
    if (a->kind == TPI_GPU_RUNTIME || a->kind == TPI_GPU_DRIVER) {
        if (!c->window_seq)
            return a->start_ns > c->last_ns ? LATER : DROP;
        if (a->start_ns < g->window_begin_ns)
            return DROP; /* warmup */
        if (g->closing)
            return a->start_ns > g->window_end_ns ? DROP : TAKE;
        return a->start_ns > c->last_ns ? LATER : TAKE;
    }
    if (a->correlation > g->max_judged_corr)
        return LATER; /* its call is not judged yet (after the window, when closing) */
    /* the window's calls, judged in time order, are the range [min_corr, max_api_corr] */
    return c->window_seq && g->min_corr && a->correlation >= g->min_corr &&
                   a->correlation <= g->max_api_corr
               ? TAKE
               : DROP;
}

static void emit(tpi_collector *c, tpi_gpu *g, const tpi_gpu_activity *a)
{
    int api = a->kind == TPI_GPU_RUNTIME || a->kind == TPI_GPU_DRIVER;
    if (api) {
        if (!g->min_corr || a->correlation < g->min_corr)
            g->min_corr = a->correlation;
        if (a->correlation > g->max_api_corr)
            g->max_api_corr = a->correlation;
        if ((strstr(a->name, "Launch") || strstr(a->name, "Memcpy") || strstr(a->name, "Memset")) &&
            a->correlation > g->max_launch_corr)
            g->max_launch_corr = a->correlation;
    } else if (a->kind != TPI_GPU_SYNC && a->correlation > g->max_work_corr) {
        g->max_work_corr = a->correlation;
    }
    tpi_gpu_activity copy = *a;
    if (a->kind == TPI_GPU_SYNC)
        copy.device = device_of_context(g, a->context, 0, 0);
    else if (a->kind <= TPI_GPU_MEMSET)
        device_of_context(g, a->context, a->device, 1);
    tpi_event e = {0};
    e.kind = TPI_EV_GPU;
    e.gpu = &copy;
    e.tid = a->tid;
    e.name = a->name;
    e.cat = category(a->kind);
    e.ts_ns = a->start_ns;
    e.dur_ns = a->end_ns - a->start_ns;
    e.self_ns = e.dur_ns;
    e.step = c->step;
    tpi_col_deliver(c, &e);
}

/* Keeps a record for a later decision (its name copied); bounded. */
static void defer(tpi_gpu *g, const tpi_gpu_activity *a)
{
    if (g->n_later == MAX_DEFERRED) {
        g->later_dropped++;
        return;
    }
    if (g->n_later == g->cap_later) {
        size_t cap = g->cap_later ? g->cap_later * 2 : 256;
        deferred *n = realloc(g->later, cap * sizeof *n);
        if (!n) {
            g->later_dropped++;
            return;
        }
        g->later = n;
        g->cap_later = cap;
    }
    deferred *d = &g->later[g->n_later++];
    d->a = *a;
    d->name_at = g->later_names.len;
    tpu_buf_append(&g->later_names, a->name, strlen(a->name) + 1);
}

static void deliver(void *ctx, const tpi_gpu_activity *a)
{
    tpi_collector *c = ctx;
    tpi_gpu *g = c->s->gpu;
    verdict v = judge(c, g, a);
    if (v != LATER && (a->kind == TPI_GPU_RUNTIME || a->kind == TPI_GPU_DRIVER) &&
        a->correlation > g->max_judged_corr)
        g->max_judged_corr = a->correlation;
    switch (v) {
    case TAKE:
        emit(c, g, a);
        break;
    case LATER:
        defer(g, a);
        break;
    case DROP:
        break;
    }
}

/* Decides the deferred records again: API calls first, as the probe does. */
static void redeliver(tpi_collector *c, tpi_gpu *g)
{
    deferred *list = g->later;
    size_t n = g->n_later;
    tpu_buf names = g->later_names;
    g->later = NULL;
    g->n_later = g->cap_later = 0;
    memset(&g->later_names, 0, sizeof g->later_names);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            tpi_gpu_activity a = list[i].a;
            int api = a.kind == TPI_GPU_RUNTIME || a.kind == TPI_GPU_DRIVER;
            if (api != (pass == 0))
                continue;
            a.name = names.oom ? "?" : names.data + list[i].name_at;
            deliver(c, &a);
        }
    }
    free(list);
    tpu_buf_free(&names);
}

static void start_cupti(tpi_gpu *g)
{
    char why[256] = "";
    pthread_mutex_lock(&g->cupti_lock);
    if (tpi_cupti_start(g->cupti, why, sizeof why) != 0 && !g->cupti_failed_start++)
        fprintf(stderr, "trainprof: warning: profiling.cuda: %s\n", why);
    pthread_mutex_unlock(&g->cupti_lock);
}

static void cupti_flush(tpi_gpu *g)
{
    pthread_mutex_lock(&g->cupti_lock);
    tpi_cupti_flush(g->cupti);
    pthread_mutex_unlock(&g->cupti_lock);
}

/* First unit >= k that is recorded (WARMUP or ACTIVE); UINT64_MAX if none. */
static uint64_t next_recorded(const tpi_schedule *sc, uint64_t k)
{
    if (!sc->enabled)
        return UINT64_MAX;
    if (k < (uint64_t)sc->skip_first)
        k = (uint64_t)sc->skip_first;
    tpi_phase ph = tpi_schedule_phase(sc, k, NULL);
    if (ph == TPI_PHASE_WAIT) {
        uint64_t n = (uint64_t)(sc->wait + sc->warmup + sc->active);
        k += (uint64_t)sc->wait - (k - (uint64_t)sc->skip_first) % n;
        ph = tpi_schedule_phase(sc, k, NULL);
    }
    return ph == TPI_PHASE_WARMUP || ph == TPI_PHASE_ACTIVE ? k : UINT64_MAX;
}

void tpi_gpu_arm(tpi_collector *c, uint64_t unit, int phase)
{
    tpi_gpu *g = c->s->gpu;
    if (!g)
        return;
    /* CUPTI buffers and GPU-zone event pairs come back at step ends */
    if (g->cupti || __atomic_load_n(&g->events_state, __ATOMIC_ACQUIRE) == 1)
        __atomic_store_n(&c->s->wake_each_step, 1, __ATOMIC_RELAXED);
    if (!g->cupti)
        return;
    if (phase == TPI_PHASE_WARMUP || phase == TPI_PHASE_ACTIVE) {
        start_cupti(g);
        return;
    }
    /* the stepping thread starts CUPTI right at that step (tpi_gpu_steps_ended):
     * the collector may be steps behind */
    uint64_t at = c->s->settings.unit == TPI_UNIT_STEP ? next_recorded(&c->sched, unit) : UINT64_MAX;
    __atomic_store_n(&g->start_at, at, __ATOMIC_RELAXED);
}

void tpi_gpu_steps_ended(tpi_gpu *g, uint64_t steps)
{
    if (g && __atomic_load_n(&g->start_at, __ATOMIC_RELAXED) == steps) {
        __atomic_store_n(&g->start_at, UINT64_MAX, __ATOMIC_RELAXED);
        start_cupti(g);
    }
}

void tpi_gpu_window_begin(tpi_collector *c)
{
    tpi_gpu *g = c->s->gpu;
    if (!g || !g->cupti)
        return;
    g->window_begin_ns = c->step_begin_ns;
    g->max_launch_corr = g->max_work_corr = g->min_corr = g->max_api_corr = 0;
    start_cupti(g); /* no warmup: from now */
}

void tpi_gpu_window_end(tpi_collector *c)
{
    tpi_gpu *g = c->s->gpu;
    if (!g || !g->cupti)
        return;
    g->closing = 1;
    g->window_end_ns = c->last_ns;
    /* API records are complete at once: after the first pass the window's
     * last launch is known */
    for (int waited = 0;; waited++) {
        cupti_flush(g);
        tpi_cupti_drain(g->cupti, deliver, c);
        redeliver(c, g);
        if (g->max_work_corr >= g->max_launch_corr || waited >= WINDOW_GRACE_MS)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&g->cupti_lock);
    tpi_cupti_stop(g->cupti);
    pthread_mutex_unlock(&g->cupti_lock);
    tpi_cupti_drain(g->cupti, deliver, c);
    redeliver(c, g);
    g->closing = 0;
    forget_deferred(g); /* what is still undecided was launched after the window */
}

/* ---- GPU zones ------------------------------------------------------------------- */

static void zone_time(void *ctx, uint32_t name_id, uint64_t step, uint64_t gpu_ns)
{
    tpi_gpu *g = ctx;
    (void)step;
    if (name_id >= g->ops_cap) {
        if (tpu_reserve_index(&g->ops, &g->ops_cap, name_id, sizeof *g->ops, 64) != 0)
            return;
    }
    gpu_op *o = &g->ops[name_id];
    if (!o->count || gpu_ns < o->min_ns)
        o->min_ns = gpu_ns;
    if (gpu_ns > o->max_ns)
        o->max_ns = gpu_ns;
    o->count++;
    o->total_ns += gpu_ns;
}

void tpi_gpu_step_end(tpi_collector *c)
{
    tpi_gpu *g = c->s->gpu;
    if (!g)
        return;
    if (g->cupti) {
        redeliver(c, g);
        cupti_flush(g);
        tpi_cupti_drain(g->cupti, deliver, c);
    }
    if (__atomic_load_n(&g->events_state, __ATOMIC_ACQUIRE) == 1)
        tpi_cuda_events_poll(g->events, zone_time, g);
}

void tpi_gpu_finish(tpi_collector *c)
{
    tpi_gpu *g = c->s->gpu;
    if (!g || __atomic_load_n(&g->events_state, __ATOMIC_ACQUIRE) != 1)
        return;
    /* the last zones may still run: poll (never synchronize) for a while */
    for (int waited = 0; tpi_cuda_events_poll(g->events, zone_time, g) > 0; waited++) {
        if (waited * 5 >= CLOSE_WAIT_MS)
            break;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

uint64_t tpi_gpu_dropped(tpi_gpu *g)
{
    if (!g)
        return 0;
    tpi_cupti_counts n;
    tpi_cupti_get_counts(g->cupti, &n);
    uint64_t lost = 0;
    if (__atomic_load_n(&g->events_state, __ATOMIC_ACQUIRE) == 1)
        lost = tpi_cuda_events_lost(g->events);
    return n.dropped + lost + g->later_dropped;
}

void tpi_gpu_op_stat(tpi_gpu *g, uint32_t name_id, tpi_op_stat *o)
{
    if (!g || name_id >= g->ops_cap || !g->ops[name_id].count)
        return;
    const gpu_op *op = &g->ops[name_id];
    o->gpu_count = op->count;
    o->gpu_total_s = (double)op->total_ns * 1e-9;
    o->gpu_min_s = (double)op->min_ns * 1e-9;
    o->gpu_max_s = (double)op->max_ns * 1e-9;
    o->gpu_mean_s = o->gpu_total_s / (double)op->count;
}

/* ---- public API ------------------------------------------------------------------- */

static tpi_cuda_events *zone_events(tpi_gpu *g)
{
    int st = __atomic_load_n(&g->events_state, __ATOMIC_ACQUIRE);
    if (st == 1)
        return g->events;
    if (st == 2)
        return NULL;
    pthread_mutex_lock(&g->lock);
    if (!g->events_state) {
        char why[256] = "";
        g->events = tpi_cuda_events_open(MAX_PAIRS, why, sizeof why);
        if (!g->events)
            fprintf(stderr, "trainprof: info: TP_GPU_ZONE: GPU times unavailable: %s\n", why);
        __atomic_store_n(&g->events_state, g->events ? 1 : 2, __ATOMIC_RELEASE);
        if (g->events) /* pairs are resolved at step ends: wake the collector for each */
            __atomic_store_n(&g->s->wake_each_step, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&g->lock);
    return g->events;
}

void *tp_gpu_zone_begin(tp_session *s, void *stream, tp_site *site)
{
    if (!s || !site)
        return NULL;
    tp_zone_begin_site(s, site);
    if (s->dead || !s->gpu)
        return NULL;
    tpi_cuda_events *e = zone_events(s->gpu);
    return e ? tpi_cuda_events_begin(e, stream, site->id) : NULL;
}

void tp_gpu_zone_end(tp_session *s, void *token)
{
    if (!s)
        return;
    if (token && s->gpu && s->gpu->events) {
        tpi_cuda_events_end(s->gpu->events, token,
                            __atomic_load_n(&s->steps_ended, __ATOMIC_RELAXED));
    }
    tp_zone_end(s);
}
