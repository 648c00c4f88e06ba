/* steps.c - one row per ProfilerStep#N span with a breakdown of its wall time.
 *
 * Each event class (kernel, memcpy, ..., CPU execution) is kept as a set of
 * time intervals, merged as it grows. A step's window is then split by
 * priority: a class is credited only with the time no higher class already
 * covers, and "other" gets the rest, so the parts sum to the step exactly.
 */
#include "analyze/trace/trace.h"
#include "analyze/stats/stats.h"
#include "analyze/stats/steps_device.h"

#include <stdlib.h>
#include <string.h>

const char *const tpa_part_names[TPA_P_COUNT] = {
    "kernel", "memcpy", "memset", "communication", "runtime", "data_loading", "cpu", "other"
};

typedef struct iv { int64_t s, e; } iv;

/* Makes room for one more element in a growing array. */
static void *grow(void *v, size_t n, size_t *cap, size_t elem, size_t first)
{
    if (n < *cap) return v;
    size_t nc = *cap ? *cap * 2 : first;
    void *nv = realloc(v, nc * elem);
    if (!nv) abort();
    *cap = nc;
    return nv;
}
typedef struct ivset { iv *v; size_t n, cap, merged_n; } ivset;

static int iv_cmp(const void *a, const void *b)
{
    const iv *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s ? 1 : (x->e < y->e ? -1 : x->e > y->e);
}

/* Sorts v[0..n), tmp: n items of scratch. Mostly in order, with several
 * threads' or streams' spans interleaved: the ascending items are kept,
 * the others set aside, sorted the same way (in v's freed end as scratch)
 * and merged back from the end; a pass per interleaved sequence, qsort
 * past a few. */
static void iv_sort(iv *v, size_t n, iv *tmp, int depth)
{
    size_t m = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && iv_cmp(&v[i], &v[m - 1]) < 0) tmp[s++] = v[i];
        else v[m++] = v[i];
    }
    if (!s) return;
    if (depth < 8) iv_sort(tmp, s, v + m, depth + 1);
    else qsort(tmp, s, sizeof *tmp, iv_cmp);
    size_t a = m, b = s, k = n;
    while (b) v[--k] = a && iv_cmp(&tmp[b - 1], &v[a - 1]) < 0 ? v[--a] : tmp[--b];
}

/* Sorts and merges overlapping or touching intervals in place. What came
 * since the last time (mostly in time order) is sorted alone and merged
 * into the merged part from the end: no sort of all. */
static void ivset_compact(ivset *set)
{
    if (set->n == set->merged_n) return;
    size_t m = set->merged_n, nt = set->n - m;
    iv *tail = set->v + m, *t = malloc(nt * sizeof *t);
    if (!t) abort();
    iv_sort(tail, nt, t, 0);
    if (m && iv_cmp(&tail[0], &set->v[m - 1]) < 0) {
        memcpy(t, tail, nt * sizeof *t);
        size_t a = m, b = nt, k = set->n;
        while (b) set->v[--k] = a && iv_cmp(&t[b - 1], &set->v[a - 1]) < 0 ? set->v[--a] : t[--b];
    }
    free(t);
    size_t w = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (w && set->v[i].s <= set->v[w - 1].e) {
            if (set->v[i].e > set->v[w - 1].e) set->v[w - 1].e = set->v[i].e;
        } else {
            set->v[w++] = set->v[i];
        }
    }
    set->n = set->merged_n = w;
}

static void ivset_add(ivset *set, int64_t s, int64_t e)
{
    if (e <= s) return;
    if (set->n && set->n == set->merged_n && s >= set->v[set->n - 1].s) {
        iv *last = &set->v[set->n - 1];  /* in-order fast path: extend or append */
        if (s <= last->e) { if (e > last->e) last->e = e; return; }
    }
    set->v = grow(set->v, set->n, &set->cap, sizeof *set->v, 1024);
    bool in_order = set->n == set->merged_n && (!set->n || s >= set->v[set->n - 1].e);
    set->v[set->n++] = (iv){ s, e };
    if (in_order) set->merged_n = set->n;
    else if (set->n > 2 * set->merged_n + 65536) ivset_compact(set);
}

/* ---- step spans ------------------------------------------------------------------------ */

typedef struct step_list { tpa_step *v; size_t n, cap; } step_list;

static void add_step(step_list *l, int64_t num, int64_t ts, int64_t dur)
{
    for (size_t i = l->n; i-- > 0 && i + 8 > l->n;)  /* duplicates are near the end */
        if (l->v[i].num == num && l->v[i].start_ns == ts) return;
    l->v = grow(l->v, l->n, &l->cap, sizeof *l->v, 64);
    l->v[l->n++] = (tpa_step){ num, ts, dur, 0, 0 };
}

static int step_cmp(const void *a, const void *b)
{
    const tpa_step *x = a, *y = b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* ---- B/E pairing: one stack of open begins per thread ------------------------------------ */

#define BE_STEP (-2)  /* the open span is a step marker */
typedef struct be_open { int64_t ts, num; int part, cand; } be_open;
typedef struct be_thread { int64_t pid, tid; be_open *v; size_t n, cap; } be_thread;
typedef struct be_pairs { be_thread *t; size_t n, cap, last; uint64_t unmatched_end; } be_pairs;

static be_thread *be_thread_for(be_pairs *b, int64_t pid, int64_t tid)
{
    if (b->n && b->t[b->last].pid == pid && b->t[b->last].tid == tid) return &b->t[b->last];
    for (size_t i = 0; i < b->n; i++)
        if (b->t[i].pid == pid && b->t[i].tid == tid) { b->last = i; return &b->t[i]; }
    b->t = grow(b->t, b->n, &b->cap, sizeof *b->t, 16);
    b->t[b->n] = (be_thread){ pid, tid, NULL, 0, 0 };
    b->last = b->n;
    return &b->t[b->n++];
}

static void be_push(be_pairs *b, const tpa_event *ev, int part, int64_t num, int cand)
{
    be_thread *t = be_thread_for(b, ev->pid, ev->tid);
    t->v = grow(t->v, t->n, &t->cap, sizeof *t->v, 16);
    t->v[t->n++] = (be_open){ ev->ts_ns, num, part, cand };
}

/* Pops the begin an E closes; false when there is none. */
static bool be_pop(be_pairs *b, const tpa_event *ev, be_open *out)
{
    be_thread *t = be_thread_for(b, ev->pid, ev->tid);
    if (!t->n) { b->unmatched_end++; return false; }
    *out = t->v[--t->n];
    return true;
}

static void be_free(be_pairs *b)
{
    for (size_t i = 0; i < b->n; i++) free(b->t[i].v);
    free(b->t);
    memset(b, 0, sizeof *b);
}

const char *const tpa_step_source_names[4] = { "none", "ProfilerStep", "step_num", "annotation" };

/* A step marker on the host: ProfilerStep#N in any category, or args.step_num. */
static bool host_step(const tpa_event *ev, int kind, int64_t *num)
{
    return tpa_event_step(ev, kind, num);
}

/* ---- steps from annotations, for traces without step markers ----------------------------
 *
 * Every repeated user annotation (and every step-like name in any host
 * category) is a candidate; when the trace marks no steps, the candidate
 * with the largest total time (the outermost one when they nest) becomes
 * the steps. Bounded: CAND_MAX names, CAND_SPANS spans in all. */

#define CAND_MAX 32
#define CAND_SPANS ((size_t)1 << 20)
typedef struct cand { char *name; size_t len; step_list spans; int64_t total; } cand;
typedef struct cands { cand v[CAND_MAX]; size_t n, spans; } cands;

static int cand_index(cands *cs, const tpa_event *ev, int kind)
{
    if (kind != TPA_K_ANNOTATION && !(kind == TPA_K_CPU && tpa_name_is_step_like(ev->name)))
        return -1;
    for (size_t i = 0; i < cs->n; i++)
        if (cs->v[i].len == ev->name.n && memcmp(cs->v[i].name, ev->name.p, ev->name.n) == 0)
            return (int)i;
    if (cs->n == CAND_MAX || !ev->name.n) return -1;
    cand *c = &cs->v[cs->n];
    if (!(c->name = malloc(ev->name.n))) abort();
    memcpy(c->name, ev->name.p, ev->name.n);
    c->len = ev->name.n;
    return (int)cs->n++;
}

static void cand_add(cands *cs, int i, int64_t ts, int64_t dur)
{
    if (i < 0 || cs->spans >= CAND_SPANS) return;
    cand *c = &cs->v[i];
    c->spans.v = grow(c->spans.v, c->spans.n, &c->spans.cap, sizeof *c->spans.v, 16);
    c->spans.v[c->spans.n++] = (tpa_step){ (int64_t)c->spans.n, ts, dur, 0, 0 };
    c->total = tpa_sat_add(c->total, dur);
    cs->spans++;
}

/* The repeated candidate with the most time, or NULL. */
static cand *cand_pick(cands *cs)
{
    cand *best = NULL;
    for (size_t i = 0; i < cs->n; i++)
        if (cs->v[i].spans.n >= 2 && (!best || cs->v[i].total > best->total)) best = &cs->v[i];
    return best;
}

static void cands_free(cands *cs)
{
    for (size_t i = 0; i < cs->n; i++) { free(cs->v[i].name); free(cs->v[i].spans.v); }
    cs->n = cs->spans = 0;
}

static int find_steps(const char *path, tpa_step **steps, size_t *n, int64_t *min_ts, bool device, tpa_error *err)
{
    tpa_reader *r = tpa_reader_open(path, err);
    if (!r) return -1;
    step_list l = {0};
    be_pairs be = {0};
    tpa_devsteps ds = {0};
    int64_t lo = INT64_MAX;
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) {
        if (ev.has_ts && ev.ph != 'M' && ev.ts_ns < lo) lo = ev.ts_ns;
        if (device) tpa__ds_note(&ds, &ev, tpa_event_kind(&ev));
        int64_t num = 0;
        if (ev.ph == 'X' && !(ev.has_dur && ev.dur_ns < 0) && host_step(&ev, tpa_event_kind(&ev), &num))
            add_step(&l, num, ev.ts_ns, ev.has_dur ? ev.dur_ns : 0);  /* negative: in no step */
        else if (ev.ph == 'B' && ev.has_ts)
            be_push(&be, &ev, host_step(&ev, tpa_event_kind(&ev), &num) ? BE_STEP : -1, num, -1);
        else if (ev.ph == 'E' && ev.has_ts) {
            be_open b;
            if (be_pop(&be, &ev, &b) && b.part == BE_STEP && ev.ts_ns >= b.ts)
                add_step(&l, b.num, b.ts, ev.ts_ns - b.ts);
        }
    }
    tpa_reader_close(r);
    be_free(&be);
    if (rc < 0) { free(l.v); tpa__ds_free(&ds); return -1; }
    if (l.n) qsort(l.v, l.n, sizeof *l.v, step_cmp);
    for (size_t i = 0; i < l.n; i++) {
        l.v[i].host_start_ns = l.v[i].start_ns;
        l.v[i].host_end_ns = l.v[i].start_ns + l.v[i].dur_ns;
    }
    bool applied;
    size_t dropped;
    if (device) tpa__ds_apply(&ds, l.v, l.n, &applied, &dropped);  /* every step kept: a filter names them */
    tpa__ds_free(&ds);
    *steps = l.v;
    *n = l.n;
    *min_ts = lo == INT64_MAX ? 0 : lo;
    return 0;
}

int tpa_find_steps(const char *path, tpa_step **steps, size_t *n, int64_t *min_ts, tpa_error *err)
{
    return find_steps(path, steps, n, min_ts, false, err);
}

int tpa_find_gpu_steps(const char *path, tpa_step **steps, size_t *n, int64_t *min_ts, tpa_error *err)
{
    return find_steps(path, steps, n, min_ts, true, err);
}

/* ---- breakdown ---------------------------------------------------------------------------- */

typedef struct ivbuf { iv *v; size_t n, cap; } ivbuf;

static void ivbuf_push(ivbuf *b, int64_t s, int64_t e)
{
    b->v = grow(b->v, b->n, &b->cap, sizeof *b->v, 256);
    b->v[b->n++] = (iv){ s, e };
}

/* First interval of a merged set that ends after t. */
static size_t first_ending_after(const ivset *set, int64_t t)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (set->v[mid].e <= t) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* out = acc ∪ (set ∩ [a,b)); returns the covered length of out. */
static int64_t union_clipped(const ivbuf *acc, const ivset *set, int64_t a, int64_t b, ivbuf *out)
{
    out->n = 0;
    size_t i = 0, j = first_ending_after(set, a);
    int64_t covered = 0;
    for (;;) {
        iv next;
        bool have_acc = i < acc->n;
        bool have_set = j < set->n && set->v[j].s < b;
        if (!have_acc && !have_set) break;
        if (have_set && (!have_acc || set->v[j].s < acc->v[i].s)) {
            next = set->v[j++];
            if (next.s < a) next.s = a;
            if (next.e > b) next.e = b;
        } else {
            next = acc->v[i++];
        }
        if (out->n && next.s <= out->v[out->n - 1].e) {
            if (next.e > out->v[out->n - 1].e) {
                covered += next.e - out->v[out->n - 1].e;
                out->v[out->n - 1].e = next.e;
            }
        } else {
            ivbuf_push(out, next.s, next.e);
            covered += next.e - next.s;
        }
    }
    return covered;
}

static void breakdown(tpa_step_row *row, ivset sets[TPA_P_COUNT], ivbuf tmp[2])
{
    int64_t a = row->start_ns, b = row->start_ns + row->dur_ns, covered = 0;
    int cur = 0;
    tmp[0].n = 0;
    for (int p = 0; p < TPA_P_OTHER; p++) {
        int64_t now = union_clipped(&tmp[cur], &sets[p], a, b, &tmp[cur ^ 1]);
        row->part_ns[p] = now - covered;
        covered = now;
        cur ^= 1;
        if (p == TPA_P_COMM) row->gpu_busy_ns = now;  /* kernel..comm are the GPU parts */
    }
    row->part_ns[TPA_P_OTHER] = row->dur_ns - covered;
}

static int part_of(const tpa_event *ev, int kind)
{
    switch (kind) {
    case TPA_K_KERNEL: return TPA_P_KERNEL;
    case TPA_K_COMM: return TPA_P_COMM;
    case TPA_K_MEMCPY: return TPA_P_MEMCPY;
    case TPA_K_MEMSET: return TPA_P_MEMSET;
    case TPA_K_RUNTIME: return TPA_P_RUNTIME;
    case TPA_K_STEP: case TPA_K_GPU_ANNOTATION: return -1;
    case TPA_K_ANNOTATION:
        return tpa_name_is_data_loading(ev->name) ? TPA_P_DATALOAD : TPA_P_CPU;
    default:  /* aten:: ops are never data loading; skip the name search */
        if (ev->name.n > 6 && memcmp(ev->name.p, "aten::", 6) == 0) return TPA_P_CPU;
        return tpa_name_is_data_loading(ev->name) ? TPA_P_DATALOAD : TPA_P_CPU;
    }
}

/* ---- streaming context --------------------------------------------------------------------
 *
 * Memory bound: the interval sets hold at most `budget` intervals in all.
 * When they outgrow it, the window [lo, hi) that intervals are clipped to
 * shrinks: intervals starting at or after the new hi are dropped. Steps lying
 * wholly inside the window are split exactly at the end of the pass; the
 * others are done by further passes over the file, each starting at the
 * first step not done yet. A pass keeps at least one step, so memory is the
 * larger of the budget and one step's intervals. Input that cannot be read
 * twice (stdin) keeps everything in one pass instead. */

#ifdef TP_SMALL_LIMITS
#define DEFAULT_BUDGET 16
#else
#define DEFAULT_BUDGET ((size_t)1 << 21)   /* 2M intervals, 32 MB */
#endif
static size_t g_budget;

void tpa_steps_set_budget(size_t intervals) { g_budget = intervals; }

struct tpa_steps_ctx {
    ivset sets[TPA_P_COUNT];
    step_list steps;
    cands cands;             /* annotation spans, in case there are no steps */
    bool step_num_seen;      /* steps came from args.step_num */
    char step_num_name[128];
    be_pairs be;
    const char *path;        /* re-read for later passes; NULL: cannot */
    bool can_shrink, first_pass, has_gpu;
    int64_t lo, hi;          /* window of this pass */
    size_t budget, peak;
    int64_t span_lo, span_hi;
    int passes;
    uint64_t negative, negative_at;  /* spans with dur < 0 (first pass) */
    uint64_t clamped, clamped_at;    /* spans ending past TPA_MAX_TIME_NS (first pass) */
    uint64_t negative_device;        /* of them, device records */
    tpa_devsteps ds;         /* runtime calls and device records (first pass) */
};

tpa_steps_ctx *tpa_steps_begin(const char *path)
{
    tpa_steps_ctx *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->path = path && strcmp(path, "-") != 0 ? path : NULL;
    c->can_shrink = c->path != NULL;
    c->first_pass = true;
    c->lo = INT64_MIN;
    c->hi = INT64_MAX;
    c->budget = g_budget ? g_budget : DEFAULT_BUDGET;
    c->span_lo = INT64_MAX;
    c->span_hi = INT64_MIN;
    c->passes = 1;
    return c;
}

static size_t total_intervals(const tpa_steps_ctx *c)
{
    size_t n = 0;
    for (int p = 0; p < TPA_P_COUNT; p++) n += c->sets[p].n;
    return n;
}

/* Intervals (of merged sets) starting before t. */
static size_t count_before(const tpa_steps_ctx *c, int64_t t)
{
    size_t n = 0;
    for (int p = 0; p < TPA_P_COUNT; p++) {
        const ivset *set = &c->sets[p];
        size_t lo = 0, hi = set->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (set->v[mid].s < t) lo = mid + 1; else hi = mid;
        }
        n += lo;
    }
    return n;
}

/* Halves the window's contents, never below the end of the first step not done. */
static void shrink_window(tpa_steps_ctx *c)
{
    for (int p = 0; p < TPA_P_COUNT; p++) ivset_compact(&c->sets[p]);
    size_t total = total_intervals(c);
    if (total > c->peak) c->peak = total;
    if (total <= c->budget / 2) return;
    int64_t a = INT64_MAX, b = INT64_MIN;  /* first start, last end held */
    for (int p = 0; p < TPA_P_COUNT; p++) {
        const ivset *set = &c->sets[p];
        if (!set->n) continue;
        if (set->v[0].s < a) a = set->v[0].s;
        if (set->v[set->n - 1].e > b) b = set->v[set->n - 1].e;
    }
    while (a < b) {  /* smallest t with count_before(t) >= total / 2 */
        int64_t mid = a + (b - a) / 2;
        if (count_before(c, mid) >= total / 2) b = mid; else a = mid + 1;
    }
    int64_t t = a, first = INT64_MAX, keep = INT64_MIN;
    for (size_t i = 0; i < c->steps.n; i++)  /* a pass always finishes the first step left */
        if (c->steps.v[i].start_ns >= c->lo && c->steps.v[i].start_ns < first) first = c->steps.v[i].start_ns;
    for (size_t i = 0; i < c->steps.n; i++) {
        const tpa_step *st = &c->steps.v[i];
        if (st->start_ns == first && st->start_ns + st->dur_ns > keep) keep = st->start_ns + st->dur_ns;
    }
    if (t < keep) t = keep;
    if (t >= c->hi) { c->budget *= 2; return; }  /* cannot cut: let it grow */
    for (int p = 0; p < TPA_P_COUNT; p++) {
        ivset *set = &c->sets[p];
        while (set->n && set->v[set->n - 1].s >= t) set->n--;
        if (set->n && set->v[set->n - 1].e > t) set->v[set->n - 1].e = t;
        set->merged_n = set->n;
    }
    c->hi = t;
}

static void add_interval(tpa_steps_ctx *c, int part, int64_t s, int64_t e)
{
    if (part <= TPA_P_COMM) c->has_gpu = true;
    if (s < c->lo) s = c->lo;
    if (e > c->hi) e = c->hi;
    if (e <= s) return;
    ivset_add(&c->sets[part], s, e);
    if (c->can_shrink && total_intervals(c) > c->budget) shrink_window(c);
}

static void note_step(tpa_steps_ctx *c, const tpa_event *ev, int kind, int64_t num, int64_t ts, int64_t dur)
{
    if (!c->first_pass) return;
    if (kind != TPA_K_STEP && !c->step_num_seen) {
        c->step_num_seen = true;
        size_t n = ev->name.n < sizeof c->step_num_name - 1 ? ev->name.n : sizeof c->step_num_name - 1;
        if (n) memcpy(c->step_num_name, ev->name.p, n);
        c->step_num_name[n] = 0;
    }
    add_step(&c->steps, num, ts, dur);
}

static void note_negative(tpa_steps_ctx *c, const tpa_event *ev)
{
    if (c->first_pass && !c->negative++) c->negative_at = ev->offset;
}

void tpa_steps_feed(tpa_steps_ctx *c, const tpa_event *ev) { tpa_steps_feed_kind(c, ev, -1); }

void tpa_steps_feed_kind(tpa_steps_ctx *c, const tpa_event *ev, int kind)
{
    if (!ev->has_ts || (ev->ph != 'X' && ev->ph != 'B' && ev->ph != 'E')) return;
    if (ev->ph == 'X' && ev->has_dur && ev->dur_ns < 0) {
        note_negative(c, ev);
        if (c->first_pass && tpa_kind_is_gpu(kind < 0 ? tpa_event_kind(ev) : kind)) c->negative_device++;
        return;
    }
    int64_t num = 0;
    if (ev->ph == 'E') {
        be_open b;
        if (!be_pop(&c->be, ev, &b)) return;
        if (ev->ts_ns < b.ts) { note_negative(c, ev); return; }
        int64_t dur = ev->ts_ns - b.ts;
        if (b.part == BE_STEP) { if (c->first_pass) add_step(&c->steps, b.num, b.ts, dur); }
        else if (b.part >= 0) add_interval(c, b.part, b.ts, b.ts + dur);
        if (c->first_pass) cand_add(&c->cands, b.cand, b.ts, dur);
        if (b.ts < c->span_lo) c->span_lo = b.ts;
        if (ev->ts_ns > c->span_hi) c->span_hi = ev->ts_ns;
        return;
    }
    if (kind < 0) kind = tpa_event_kind(ev);
    if (c->first_pass && kind >= TPA_K_RUNTIME) tpa__ds_note(&c->ds, ev, kind);
    bool step = host_step(ev, kind, &num);
    int ci = !step && c->first_pass ? cand_index(&c->cands, ev, kind) : -1;
    if (ev->ph == 'B') { be_push(&c->be, ev, step ? BE_STEP : part_of(ev, kind), num, ci); return; }
    int64_t dur = ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0;
    if (dur > TPA_MAX_TIME_NS - ev->ts_ns) {  /* every point within ±4e18: differences fit int64 */
        dur = TPA_MAX_TIME_NS - ev->ts_ns;
        if (c->first_pass && !c->clamped++) c->clamped_at = ev->offset;
    }
    if (ev->ts_ns < c->span_lo) c->span_lo = ev->ts_ns;
    if (ev->ts_ns + dur > c->span_hi) c->span_hi = ev->ts_ns + dur;
    if (step) { note_step(c, ev, kind, num, ev->ts_ns, dur); return; }
    cand_add(&c->cands, ci, ev->ts_ns, dur);
    int part = part_of(ev, kind);
    if (part >= 0) add_interval(c, part, ev->ts_ns, ev->ts_ns + dur);
}

/* Without step markers, the outermost repeated annotation becomes the steps. */
static void choose_steps(tpa_steps_ctx *c, tpa_steps_result *res)
{
    if (c->steps.n) {
        res->step_source = c->step_num_seen ? TPA_STEPS_STEP_NUM : TPA_STEPS_PROFILER;
        if (c->step_num_seen) snprintf(res->step_name, sizeof res->step_name, "%s", c->step_num_name);
        else snprintf(res->step_name, sizeof res->step_name, "ProfilerStep#N");
        return;
    }
    cand *best = cand_pick(&c->cands);
    if (!best) return;
    res->step_source = TPA_STEPS_ANNOTATION;
    snprintf(res->step_name, sizeof res->step_name, "%.*s", (int)best->len, best->name);
    free(c->steps.v);
    c->steps = best->spans;
    best->spans = (step_list){0};
}

static void push_row(tpa_steps_result *res, size_t *cap, const tpa_step *st, ivset *sets, ivbuf tmp[2])
{
    res->rows = grow(res->rows, res->n, cap, sizeof *res->rows, 64);
    tpa_step_row *row = &res->rows[res->n++];
    memset(row, 0, sizeof *row);
    row->num = st->num;
    row->start_ns = st->start_ns;
    row->dur_ns = st->dur_ns;
    row->host_start_ns = st->host_start_ns;
    row->host_end_ns = st->host_end_ns;
    breakdown(row, sets, tmp);
}

static int row_cmp(const void *a, const void *b)
{
    const tpa_step_row *x = a, *y = b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* One more pass over the file for the window starting at lo. */
static int reread(tpa_steps_ctx *c, int64_t lo, tpa_error *err)
{
    tpa_reader *r = tpa_reader_open(c->path, err);
    if (!r) return -1;
    be_free(&c->be);
    c->first_pass = false;
    c->lo = lo;
    c->hi = INT64_MAX;
    c->passes++;
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) tpa_steps_feed(c, &ev);
    tpa_reader_close(r);
    return rc < 0 ? -1 : 0;
}

static void steps_ctx_free(tpa_steps_ctx *c)
{
    for (int p = 0; p < TPA_P_COUNT; p++) free(c->sets[p].v);
    be_free(&c->be);
    free(c->steps.v);
    cands_free(&c->cands);
    tpa__ds_free(&c->ds);
    free(c);
}

/* No steps: the trace's span cut in WHOLE_PIECES pieces, done like steps
 * (so the passes that bound memory apply), then added into one row. */
#define WHOLE_PIECES 64
static bool tile_span(tpa_steps_ctx *c)
{
    if (c->steps.n || c->span_lo >= c->span_hi) return false;
    int64_t len = c->span_hi - c->span_lo, at = c->span_lo;
    for (int i = 0; i < WHOLE_PIECES; i++) {
        int64_t end = i + 1 == WHOLE_PIECES ? c->span_hi : c->span_lo + (int64_t)((__int128)len * (i + 1) / WHOLE_PIECES);
        if (end > at) add_step(&c->steps, i, at, end - at);
        at = end;
    }
    return true;
}

static void fold_whole(tpa_steps_result *res)
{
    tpa_step_row *w = &res->whole;
    memset(w, 0, sizeof *w);
    w->num = -1;
    w->start_ns = res->n ? res->rows[0].start_ns : 0;
    for (size_t i = 0; i < res->n; i++) {
        const tpa_step_row *r = &res->rows[i];
        w->dur_ns = tpa_sat_add(w->dur_ns, r->dur_ns);
        w->gpu_busy_ns = tpa_sat_add(w->gpu_busy_ns, r->gpu_busy_ns);
        for (int p = 0; p < TPA_P_COUNT; p++) w->part_ns[p] = tpa_sat_add(w->part_ns[p], r->part_ns[p]);
    }
    res->has_whole = res->n > 0;
    res->n = 0;
}

int tpa_steps_finish(tpa_steps_ctx *c, bool truncated, tpa_steps_result *res, tpa_error *err)
{
    memset(res, 0, sizeof *res);
    res->truncated = truncated;
    res->unmatched_end = c->be.unmatched_end;
    choose_steps(c, res);
    bool whole = tile_span(c);
    if (c->steps.n) qsort(c->steps.v, c->steps.n, sizeof *c->steps.v, step_cmp);
    for (size_t i = 0; i < c->steps.n; i++) {
        c->steps.v[i].host_start_ns = c->steps.v[i].start_ns;
        c->steps.v[i].host_end_ns = c->steps.v[i].start_ns + c->steps.v[i].dur_ns;
    }
    if (!whole)  /* GPU work: each step to the end of the device work it launched */
        c->steps.n = tpa__ds_apply(&c->ds, c->steps.v, c->steps.n, &res->device_rule, &res->tail_dropped);
    ivbuf tmp[2] = {{0}};
    size_t cap = 0, next = 0;  /* steps before `next` are done */
    int rc = 0;
    for (;;) {
        for (int p = 0; p < TPA_P_COUNT; p++) ivset_compact(&c->sets[p]);
        size_t total = total_intervals(c);
        if (total > c->peak) c->peak = total;
        size_t i = next;
        while (i < c->steps.n && c->steps.v[i].start_ns + c->steps.v[i].dur_ns <= c->hi) {
            if (c->steps.v[i].start_ns >= c->lo) push_row(res, &cap, &c->steps.v[i], c->sets, tmp);
            i++;
        }
        if (i == next && c->passes > 1) c->can_shrink = false;  /* overlapping steps stalled: keep all */
        next = i;
        if (next >= c->steps.n || c->hi == INT64_MAX) break;
        for (int p = 0; p < TPA_P_COUNT; p++) c->sets[p].n = c->sets[p].merged_n = 0;
        if ((rc = reread(c, c->steps.v[next].start_ns, err)) != 0) break;
    }
    free(tmp[0].v);
    free(tmp[1].v);
    if (res->n) qsort(res->rows, res->n, sizeof *res->rows, row_cmp);
    if (whole) fold_whole(res);
    if (!res->rows && !(res->rows = calloc(1, sizeof *res->rows))) abort();
    res->has_gpu = c->has_gpu;
    res->passes = c->passes;
    res->peak_intervals = c->peak;
    res->negative_durs = c->negative;
    res->negative_at = c->negative_at;
    res->negative_device = c->negative_device;
    res->span_start_ns = c->span_lo == INT64_MAX ? 0 : c->span_lo;
    res->span_end_ns = c->span_hi == INT64_MIN ? 0 : c->span_hi;
    if (c->clamped)
        fprintf(stderr, "trainprof: warning: %s: %llu span(s) end past 4e18 ns (the year 2096 as epoch ns), "
                "the first at byte %llu: cut there\n", c->path ? c->path : "-",
                (unsigned long long)c->clamped, (unsigned long long)c->clamped_at);
    steps_ctx_free(c);
    return rc;
}

int tpa_steps_file(const char *path, tpa_steps_result *res, tpa_error *err)
{
    tpa_reader *r = tpa_reader_open(path, err);
    if (!r) { memset(res, 0, sizeof *res); return -1; }
    tpa_steps_ctx *c = tpa_steps_begin(path);
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) tpa_steps_feed(c, &ev);
    bool truncated = tpa_reader_meta(r)->truncated;
    tpa_reader_close(r);
    if (rc < 0) {
        tpa_steps_result tmp;
        tpa_error ignore;
        tpa_steps_finish(c, false, &tmp, &ignore);
        tpa_steps_free(&tmp);
        memset(res, 0, sizeof *res);
        return -1;
    }
    return tpa_steps_finish(c, truncated, res, err);
}

void tpa_steps_free(tpa_steps_result *res)
{
    free(res->rows);
    memset(res, 0, sizeof *res);
}

static int64_t row_value(const tpa_step_row *row, int part)
{
    return part < 0 ? row->dur_ns : part == TPA_P_COUNT ? row->gpu_busy_ns : row->part_ns[part];
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t tpa_steps_quantile(const tpa_steps_result *res, int part, double q)
{
    if (!res->n) return 0;
    int64_t *v = malloc(res->n * sizeof *v);
    if (!v) abort();
    for (size_t i = 0; i < res->n; i++) v[i] = row_value(&res->rows[i], part);
    qsort(v, res->n, sizeof *v, i64_cmp);
    double pos = q * (double)(res->n - 1);
    size_t lo = (size_t)pos;
    double frac = pos - (double)lo;
    int64_t out = lo + 1 < res->n ? v[lo] + (int64_t)((double)(v[lo + 1] - v[lo]) * frac + 0.5) : v[lo];
    free(v);
    return out;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double tpa_steps_util_stat(const tpa_steps_result *res, int stat)
{
    if (!res->has_gpu || !res->n) return -1;
    double *v = malloc(res->n * sizeof *v), sum = 0;
    if (!v) abort();
    size_t n = 0;
    for (size_t i = 0; i < res->n; i++)
        if (res->rows[i].dur_ns > 0) {
            v[n] = 100.0 * (double)res->rows[i].gpu_busy_ns / (double)res->rows[i].dur_ns;
            sum += v[n++];
        }
    double out = -1;
    if (n && stat == 0) out = sum / (double)n;
    else if (n) {  /* the same interpolation as tpa_steps_quantile */
        qsort(v, n, sizeof *v, dbl_cmp);
        double pos = (stat == 1 ? 0.5 : 0.9) * (double)(n - 1);
        size_t lo = (size_t)pos;
        out = lo + 1 < n ? v[lo] + (v[lo + 1] - v[lo]) * (pos - (double)lo) : v[lo];
    }
    free(v);
    return out;
}

int64_t tpa_steps_mean(const tpa_steps_result *res, int part)
{
    if (!res->n) return 0;
    __int128 sum = 0;
    for (size_t i = 0; i < res->n; i++) sum += row_value(&res->rows[i], part);
    return (int64_t)(sum / (__int128)res->n);
}
