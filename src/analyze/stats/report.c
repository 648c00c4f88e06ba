/* report.c - per-operation aggregates (calls, total, self, min, max), the
 * numbers behind torch's key_averages().
 *
 * Counts and totals need no ordering. Self time does: it is an op's duration
 * minus its direct children's, and a child is a span on the same thread that
 * starts at or after the parent and ends at or before it. Spans are fed per
 * thread through a small reorder window sorted by (start, longer first), then
 * through a stack of open spans, so memory is bounded by the window and the
 * nesting depth, not the file.
 *
 * A span that arrives after its window was flushed (PyTorch 1.8-1.10 write
 * ProfilerStep#N after its thousands of children) cannot be nested exactly
 * in that pass: the thread records how far out of order it came, and the
 * file is read again with that thread's window grown to fit (at most
 * MAX_WINDOW spans), so self times are exact whatever the order. Only
 * input that cannot be read twice (stdin) or a span later than MAX_WINDOW
 * keeps the approximation, counted in late_events.
 *
 * Calls follow torch's key_averages(): a span whose parent has the same
 * name and no other child is merged into it (counted once, the parent's
 * duration in the total; self times add up the same either way).
 */
#include "analyze/trace/trace.h"
#include "analyze/stats/stats.h"
#include "util/hash.h"
#include "util/adaptive_sort.h"

#include <stdlib.h>
#include <string.h>

#ifdef TP_SMALL_LIMITS
#define REORDER_WINDOW 8
#else
#define REORDER_WINDOW 4096
#endif

typedef struct op_index {
    uint32_t *slots;   /* op index + 1; 0 = empty */
    uint64_t *hashes;  /* per op */
    size_t *lens;      /* per op */
    size_t nslots, cap_ops;
} op_index;

/* Closed spans are kept (up to a budget) so that a child arriving long after
 * its parent was closed, as Kineto writes cuda_runtime events after all
 * cpu_ops, can still be subtracted from the parent's self time. */
#ifdef TP_SMALL_LIMITS
#define MAX_RECORDS 64
#else
#define MAX_RECORDS ((size_t)2 << 20)   /* 2M spans = 48 MB per thread */
#endif
#define NO_PARENT UINT64_MAX
#ifdef TP_SMALL_LIMITS
#define MAX_WINDOW ((size_t)1 << 16)    /* a grown window, in spans */
#else
#define MAX_WINDOW MAX_RECORDS
#endif
#define MAX_PASSES 3

typedef struct pending { int64_t ts, dur; uint32_t op; } pending;
/* def_dur: the call of a same-name first child, held until this span
 * closes (dropped when it stays the only child, as torch merges it). */
typedef struct open_span { int64_t end, dur, child, def_dur; uint64_t rec; uint32_t op, nchild; } open_span;
typedef struct span_rec { int64_t start, end; uint64_t parent; uint32_t op; } span_rec;
typedef struct begin_rec { int64_t ts; uint32_t op; } begin_rec;

typedef struct thread_state {
    int64_t pid, tid;
    pending *pend; size_t npend, cpend;  /* in arrival order; sorted when flushed */
    pending *pend_tmp; size_t cpend_tmp; /* the sort's scratch */
    bool pend_unsorted;   /* a span arrived before the one before it */
    int64_t pend_min_ts;  /* the earliest start in pend (npend > 0) */
    open_span *stack; size_t nstack, cstack;
    begin_rec *begins; size_t nbegins, cbegins;
    span_rec *recs; size_t nrecs, crecs;
    uint64_t rec_base;    /* absolute index of recs[0] */
    int64_t flushed_ts;   /* spans starting before this arrived too late */
    bool flushed_any;
    size_t window;        /* spans held before half are flushed */
    uint64_t late;        /* spans that arrived after their window */
    size_t need;          /* most earlier spans that sorted after a late one */
} thread_state;

/* The window a thread gets on the next pass. */
typedef struct thread_window { int64_t pid, tid; size_t window; } thread_window;

/* Open async (b/e) spans, keyed by a hash of (cat, id, name, pid). Keys
 * that repeat while open pair first-in first-out. */
typedef struct async_open { uint64_t key; int64_t ts; uint32_t op; bool used; } async_open;
typedef struct async_table { async_open *v; size_t cap, n; } async_table;

typedef struct run_ctx {
    tpa_report *rep;         /* this file's own report, merged into out at the end */
    tpa_report own, *out;
    thread_window *windows; size_t nwindows;  /* this pass's grown windows */
    thread_window *next; size_t nnext;        /* the next pass's */
    bool rereadable;                          /* begin got a path other than "-" */
    async_table async;
    const tpa_report_opts *o;
    thread_state *threads; size_t nthreads, cthreads;
    size_t last_thread;
    tpa_step *steps; size_t nsteps;
} run_ctx;

#define GROW(ptr, n, cap) do { \
    if ((n) == (cap)) { size_t nc_ = (cap) ? (cap) * 2 : 16; \
        void *np_ = realloc((ptr), nc_ * sizeof *(ptr)); if (!np_) abort(); \
        (ptr) = np_; (cap) = nc_; } } while (0)

/* ---- op index ------------------------------------------------------------------ */

static uint64_t op_hash(int table, const char *p, size_t n)
{
    return tpu_hash_bytes(p, n) ^ ((uint64_t)(uint32_t)(table + 1) * 0x9E3779B97F4A7C15ULL);
}

static void index_rehash(tpa_report *rep, op_index *ix)
{
    size_t ns = ix->nslots ? ix->nslots * 2 : 1024;
    uint32_t *slots = calloc(ns, sizeof *slots);
    if (!slots) abort();
    for (size_t i = 0; i < rep->n_ops; i++) {
        size_t s = ix->hashes[i] & (ns - 1);
        while (slots[s]) s = (s + 1) & (ns - 1);
        slots[s] = (uint32_t)i + 1;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->nslots = ns;
}

static uint32_t op_lookup(tpa_report *rep, int table, int kind, const char *p, size_t n)
{
    op_index *ix = rep->priv;
    if ((rep->n_ops + 1) * 2 > ix->nslots)
        index_rehash(rep, ix);
    uint64_t h = op_hash(table, p, n);
    size_t s = h & (ix->nslots - 1);
    while (ix->slots[s]) {
        uint32_t i = ix->slots[s] - 1;
        tpa_op *op = &rep->ops[i];
        if (ix->hashes[i] == h && ix->lens[i] == n && op->table == table &&
            (n == 0 || memcmp(op->name, p, n) == 0))  /* p NULL when empty */
            return i;
        s = (s + 1) & (ix->nslots - 1);
    }
    if (rep->n_ops == ix->cap_ops) {
        size_t nc = ix->cap_ops ? ix->cap_ops * 2 : 256;
        rep->ops = realloc(rep->ops, nc * sizeof *rep->ops);
        ix->hashes = realloc(ix->hashes, nc * sizeof *ix->hashes);
        ix->lens = realloc(ix->lens, nc * sizeof *ix->lens);
        if (!rep->ops || !ix->hashes || !ix->lens) abort();
        ix->cap_ops = nc;
    }
    uint32_t i = (uint32_t)rep->n_ops++;
    tpa_op *op = &rep->ops[i];
    memset(op, 0, sizeof *op);
    op->name = malloc(n + 1);
    if (!op->name) abort();
    if (n)
        memcpy(op->name, p, n); /* p is NULL for an empty name */
    op->name[n] = 0;
    op->table = table;
    op->kind = kind;
    op->min_ns = INT64_MAX;
    ix->hashes[i] = h;
    ix->lens[i] = n;
    ix->slots[s] = i + 1;
    return i;
}

static uint32_t op_for(run_ctx *c, int table, int kind, tpa_sv name)
{
    int64_t num;
    if (c->o->group_steps && tpa_step_number(name, &num))
        return op_lookup(c->rep, table, kind, "ProfilerStep*", 13);
    return op_lookup(c->rep, table, kind, name.p, name.n);
}

static void op_add_call(tpa_op *op, int64_t dur)
{
    op->count++;
    op->total_ns = tpa_sat_add(op->total_ns, dur);
    if (dur < op->min_ns) op->min_ns = dur;
    if (dur > op->max_ns) op->max_ns = dur;
}

/* ---- per-thread nesting ------------------------------------------------------------ */

static thread_state *thread_for(run_ctx *c, int64_t pid, int64_t tid)
{
    if (c->nthreads && c->threads[c->last_thread].pid == pid && c->threads[c->last_thread].tid == tid)
        return &c->threads[c->last_thread];
    for (size_t i = 0; i < c->nthreads; i++)
        if (c->threads[i].pid == pid && c->threads[i].tid == tid) {
            c->last_thread = i;
            return &c->threads[i];
        }
    GROW(c->threads, c->nthreads, c->cthreads);
    thread_state *t = &c->threads[c->nthreads];
    memset(t, 0, sizeof *t);
    t->pid = pid;
    t->tid = tid;
    t->window = REORDER_WINDOW;
    for (size_t i = 0; i < c->nwindows; i++)
        if (c->windows[i].pid == pid && c->windows[i].tid == tid) t->window = c->windows[i].window;
    c->last_thread = c->nthreads++;
    return t;
}

static void close_top(run_ctx *c, thread_state *t)
{
    open_span *s = &t->stack[--t->nstack];
    tpa_op *ops = c->rep->ops;
    ops[s->op].self_ns = tpa_sat_add(ops[s->op].self_ns, s->dur - s->child);
    if (s->def_dur >= 0 && s->nchild != 1)  /* the same-name child had siblings */
        op_add_call(&ops[s->op], s->def_dur);
    open_span *parent = t->nstack ? &t->stack[t->nstack - 1] : NULL;
    if (parent && parent->nchild == 1 && parent->op == s->op)
        parent->def_dur = s->dur;  /* merged if it stays the only child */
    else
        op_add_call(&ops[s->op], s->dur);
}

/* Appends a span record (records are in start order); drops the oldest
 * half when over budget. Returns its absolute index. */
static uint64_t add_record(thread_state *t, int64_t start, int64_t end, uint64_t parent, uint32_t op)
{
    if (t->nrecs >= MAX_RECORDS) {
        size_t drop = t->nrecs / 2;
        memmove(t->recs, t->recs + drop, (t->nrecs - drop) * sizeof *t->recs);
        t->nrecs -= drop;
        t->rec_base += drop;
    }
    GROW(t->recs, t->nrecs, t->crecs);
    t->recs[t->nrecs++] = (span_rec){ start, end, parent, op };
    return t->rec_base + t->nrecs - 1;
}

/* Spans arrive here in (start, longer-first) order. */
static void nest_span(run_ctx *c, thread_state *t, const pending *sp)
{
    int64_t end = sp->ts + sp->dur;
    while (t->nstack && (end > t->stack[t->nstack - 1].end || sp->ts >= t->stack[t->nstack - 1].end))
        close_top(c, t);  /* as torch: a child starts before its parent's end */
    uint64_t parent = NO_PARENT;
    if (t->nstack) {
        open_span *top = &t->stack[t->nstack - 1];
        top->child = tpa_sat_add(top->child, sp->dur);
        top->nchild++;
        parent = top->rec;
    }
    uint64_t rec = add_record(t, sp->ts, end, parent, sp->op);
    GROW(t->stack, t->nstack, t->cstack);
    t->stack[t->nstack++] = (open_span){ end, sp->dur, 0, -1, rec, sp->op, 0 };
}

/* A late span: find the innermost recorded span containing it and take its
 * duration off that span's op. Returns false when it is not found. */
static bool attach_late(run_ctx *c, thread_state *t, int64_t ts, int64_t dur)
{
    size_t lo = 0, hi = t->nrecs;
    while (lo < hi) {  /* last record starting at or before ts */
        size_t mid = (lo + hi) / 2;
        if (t->recs[mid].start <= ts) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return false;
    uint64_t i = t->rec_base + lo - 1;
    while (i != NO_PARENT && i >= t->rec_base) {
        const span_rec *r = &t->recs[i - t->rec_base];
        if (r->end >= ts + dur && ts < r->end) {
            c->rep->ops[r->op].self_ns -= dur;
            return true;
        }
        i = r->parent;
    }
    return false;
}

static inline bool pend_before(const pending *a, const pending *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->dur > b->dur);
}

ADAPTIVE_SORT(sort_pending, pending, pend_before)

/* pend in start order, the longer first, then arrival: the order an
 * insertion after its equals keeps (a stable sort gives it at once; the
 * insertions moved ~1,400 spans each when steps follow their children). */
static void sort_pend(thread_state *t)
{
    if (t->pend_unsorted) sort_pending_scratched(t->pend, t->npend, &t->pend_tmp, &t->cpend_tmp);
    t->pend_unsorted = false;
}

static void flush_pending(run_ctx *c, thread_state *t, size_t n)
{
    if (!n) return;  /* pend may be NULL */
    sort_pend(t);
    for (size_t i = 0; i < n; i++)
        nest_span(c, t, &t->pend[i]);
    t->flushed_ts = t->pend[n - 1].ts;
    t->flushed_any = true;
    memmove(t->pend, t->pend + n, (t->npend - n) * sizeof *t->pend);
    t->npend -= n;
    if (t->npend) t->pend_min_ts = t->pend[0].ts;
}

/* First record starting at or after ts (records are in start order). */
static size_t first_rec_from(const thread_state *t, int64_t ts)
{
    size_t lo = 0, hi = t->nrecs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->recs[mid].start < ts) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* A late span [ts, ts+dur) that holds spans already flushed or waiting
 * would have been their parent: its self time (and theirs) is off. */
static bool holds_earlier_spans(const thread_state *t, int64_t ts, int64_t dur)
{
    if (!dur) return false;
    size_t i = first_rec_from(t, ts);
    if (i < t->nrecs && t->recs[i].start < ts + dur) return true;
    if (i == 0 && t->rec_base > 0) return true;  /* dropped records: unknown */
    return t->npend && t->pend_min_ts < ts + dur;
}

/* How many spans of t that arrived before a late span starting at ts
 * start at or after it: a window of twice that would have held it. */
static size_t lateness(const thread_state *t, int64_t ts)
{
    size_t lo = first_rec_from(t, ts);
    size_t n = t->npend + t->nrecs - lo;
    return lo == 0 ? n + (size_t)t->rec_base : n;
}

static void host_span(run_ctx *c, int64_t pid, int64_t tid, int64_t ts, int64_t dur, uint32_t op)
{
    thread_state *t = thread_for(c, pid, tid);
    pending sp = { ts, dur, op };
    if (t->flushed_any && ts < t->flushed_ts) {
        /* Its parent may be closed already: count it as all-self, charge
         * the innermost recorded span holding it, and note how late it
         * came for the next pass. */
        op_add_call(&c->rep->ops[op], dur);
        c->rep->ops[op].self_ns = tpa_sat_add(c->rep->ops[op].self_ns, dur);
        bool parent_found = attach_late(c, t, ts, dur);  /* exact for a late leaf */
        if (holds_earlier_spans(t, ts, dur) || (!parent_found && t->rec_base > 0)) {
            c->rep->late_events++;
            t->late++;
            size_t need = lateness(t, ts);
            if (need > t->need) t->need = need;
        }
        return;
    }
    GROW(t->pend, t->npend, t->cpend);
    if (!t->npend || ts < t->pend_min_ts) t->pend_min_ts = ts;
    if (t->npend && pend_before(&sp, &t->pend[t->npend - 1])) t->pend_unsorted = true;
    t->pend[t->npend++] = sp;
    if (t->npend >= t->window)
        flush_pending(c, t, t->npend / 2);
}

static size_t pow2_at_least(size_t n)
{
    size_t w = 1;
    while (w < n) w *= 2;
    return w;
}

/* A thread that met late spans gets a window that holds them next pass
 * (twice the lateness: a flush keeps half), when that fits MAX_WINDOW. */
static void plan_window(run_ctx *c, const thread_state *t)
{
    if (!t->late) return;
    size_t w = pow2_at_least(2 * (t->need + 1));
    if (w <= t->window) w = t->window * 2;
    if (w > MAX_WINDOW) return;
    thread_window *nw = realloc(c->next, (c->nnext + 1) * sizeof *nw);
    if (!nw) return;
    c->next = nw;
    c->next[c->nnext++] = (thread_window){ t->pid, t->tid, w };
}

static void finish_threads(run_ctx *c)
{
    for (size_t i = 0; i < c->nthreads; i++) {
        thread_state *t = &c->threads[i];
        flush_pending(c, t, t->npend);
        while (t->nstack) close_top(c, t);
        plan_window(c, t);
        free(t->pend);
        free(t->pend_tmp);
        free(t->stack);
        free(t->begins);
        free(t->recs);
    }
    free(c->threads);
    c->threads = NULL;
    c->nthreads = c->cthreads = 0;
}

/* ---- filters --------------------------------------------------------------------- */

/* A host event is in the step whose host span it starts in (ProfilerStep#N
 * is its parent); a device event in the step whose GPU work it is (the step
 * extended to the device work it launched, as `steps` shows it). */
static bool in_selected_steps(const run_ctx *c, int64_t ts, bool device)
{
    size_t lo = 0, hi = c->nsteps;
    while (lo < hi) {  /* last step starting at or before ts */
        size_t mid = (lo + hi) / 2;
        int64_t start = device ? c->steps[mid].start_ns : c->steps[mid].host_start_ns;
        if (start <= ts) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return false;
    const tpa_step *s = &c->steps[lo - 1];
    int64_t end = device ? s->start_ns + s->dur_ns : s->host_end_ns;
    return ts <= end && s->num >= c->o->steps.lo && s->num <= c->o->steps.hi;
}

static bool keep_event(const run_ctx *c, const tpa_event *ev)
{
    const tpa_report_opts *o = c->o;
    if (o->cats && !tpa_cat_listed(o->cats, ev->cat)) return false;
    if (o->has_pid && ev->pid != o->pid) return false;
    if (o->has_tid && ev->tid != o->tid) return false;
    if (o->steps.set && ev->has_ts && !in_selected_steps(c, ev->ts_ns, tpa_kind_is_gpu(tpa_event_kind(ev)))) return false;
    return true;
}

/* ---- events ------------------------------------------------------------------------ */

static void on_begin(run_ctx *c, const tpa_event *ev, int kind)
{
    thread_state *t = thread_for(c, ev->pid, ev->tid);
    GROW(t->begins, t->nbegins, t->cbegins);
    t->begins[t->nbegins++] = (begin_rec){ ev->ts_ns, op_for(c, -1, kind, ev->name) };
}

static void note_negative(tpa_report *rep, const tpa_event *ev)
{
    if (!rep->negative_durs++) rep->negative_at = ev->offset;
}

static void on_end(run_ctx *c, const tpa_event *ev)
{
    thread_state *t = thread_for(c, ev->pid, ev->tid);
    if (!t->nbegins) { c->rep->unmatched_end++; return; }
    begin_rec b = t->begins[--t->nbegins];
    int64_t dur = ev->ts_ns - b.ts;
    if (dur < 0) { note_negative(c->rep, ev); return; }
    host_span(c, ev->pid, ev->tid, b.ts, dur, b.op);
    c->rep->spans++;
}

/* ---- async b/e ------------------------------------------------------------------ */

static uint64_t async_key(const tpa_event *ev)
{
    uint64_t h = tpu_hash_bytes(ev->cat.p, ev->cat.n);
    if (ev->v_id.len) h = h * 31 + tpu_hash_bytes(ev->raw.p + ev->v_id.off, ev->v_id.len);
    h = h * 31 + tpu_hash_bytes(ev->name.p, ev->name.n);
    return (h ^ (uint64_t)ev->pid * 0x9E3779B97F4A7C15ULL) | 1;
}

static void async_grow(async_table *t)
{
    size_t nc = t->cap ? t->cap * 2 : 256;
    async_open *nv = calloc(nc, sizeof *nv);
    if (!nv) abort();
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->v[i].used) continue;
        size_t s = t->v[i].key & (nc - 1);
        while (nv[s].used) s = (s + 1) & (nc - 1);
        nv[s] = t->v[i];
    }
    free(t->v);
    t->v = nv;
    t->cap = nc;
}

static void async_begin(run_ctx *c, const tpa_event *ev)
{
    async_table *t = &c->async;
    if ((t->n + 1) * 2 > t->cap) async_grow(t);
    uint64_t key = async_key(ev);
    size_t s = key & (t->cap - 1);
    while (t->v[s].used) s = (s + 1) & (t->cap - 1);
    t->v[s] = (async_open){ key, ev->ts_ns, op_for(c, TPA_TABLE_ASYNC, -1, ev->name), true };
    t->n++;
}

/* Removes slot s, shifting later entries of the probe run back (no tombstones). */
static void async_remove(async_table *t, size_t s)
{
    size_t mask = t->cap - 1, j = s;
    t->v[s].used = false;
    for (;;) {
        j = (j + 1) & mask;
        if (!t->v[j].used) break;
        size_t home = t->v[j].key & mask;
        if (((j - home) & mask) >= ((j - s) & mask)) {  /* home not in (s, j] */
            t->v[s] = t->v[j];
            t->v[j].used = false;
            s = j;
        }
    }
    t->n--;
}

static void async_end(run_ctx *c, const tpa_event *ev)
{
    async_table *t = &c->async;
    uint64_t key = async_key(ev);
    if (t->cap) {
        for (size_t s = key & (t->cap - 1); t->v[s].used; s = (s + 1) & (t->cap - 1)) {
            if (t->v[s].key != key) continue;
            int64_t dur = ev->ts_ns - t->v[s].ts;
            if (dur < 0) { note_negative(c->rep, ev); async_remove(t, s); return; }
            tpa_op *op = &c->rep->ops[t->v[s].op];
            op_add_call(op, dur);
            op->self_ns = tpa_sat_add(op->self_ns, dur);
            c->rep->async_pairs++;
            async_remove(t, s);
            return;
        }
    }
    c->rep->async_unmatched++;
}

/* kind: tpa_classify(ev), or -1 when the caller has not classified it. */
static void on_event(run_ctx *c, const tpa_event *ev, int kind)
{
    tpa_report *rep = c->rep;
    rep->events++;
    rep->per_ph[(unsigned char)ev->ph & 127]++;
    if (!keep_event(c, ev)) return;
    switch (ev->ph) {
    case 'X': {
        if (!ev->has_ts) { rep->skipped_unknown++; return; }
        if (ev->has_dur && ev->dur_ns < 0) { note_negative(rep, ev); return; }
        int64_t dur = ev->has_dur ? ev->dur_ns : 0;
        if (kind < 0) kind = tpa_event_kind(ev);
        rep->spans++;
        if (tpa_kind_is_gpu(kind)) {
            if (kind == TPA_K_GPU_ANNOTATION && !c->o->cats) return;  /* would double count */
            int table = (int)(ev->device >= 0 ? ev->device : (ev->pid >= 0 && ev->pid < 1 << 20 ? ev->pid : 0));
            uint32_t idx = op_for(c, table, kind, ev->name);  /* may move rep->ops */
            tpa_op *op = &rep->ops[idx];
            op_add_call(op, dur);
            op->self_ns = tpa_sat_add(op->self_ns, dur);
            return;
        }
        if (ev->cat.n == 5 && memcmp(ev->cat.p, "Trace", 5) == 0 && !c->o->cats)
            return;  /* Kineto's whole-profile span on a pseudo process */
        host_span(c, ev->pid, ev->tid, ev->ts_ns, dur, op_for(c, -1, kind, ev->name));
        return;
    }
    case 'B': if (ev->has_ts) on_begin(c, ev, kind < 0 ? tpa_event_kind(ev) : kind); return;
    case 'E': if (ev->has_ts) on_end(c, ev); return;
    case 'b': if (ev->has_ts) async_begin(c, ev); return;
    case 'e': if (ev->has_ts) async_end(c, ev); return;
    case 'i': case 'I': case 'C': case 'M': case 's': case 't': case 'f':
    case 'n': case 'P': case 'O': case 'N': case 'D':
        return;  /* understood, not part of the op table */
    default:
        rep->skipped_unknown++;
    }
}

tpa_report_run *tpa_report_begin(tpa_report *rep, const char *path, const tpa_report_opts *o,
                                 tpa_error *err)
{
    if (!rep->priv && !(rep->priv = calloc(1, sizeof(op_index)))) abort();
    run_ctx *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->out = rep;
    c->rep = &c->own;
    c->rereadable = path && strcmp(path, "-") != 0;
    if (!(c->own.priv = calloc(1, sizeof(op_index)))) abort();
    c->o = o;
    if (o->steps.set) {
        int64_t min_ts;
        if (tpa_find_gpu_steps(path, &c->steps, &c->nsteps, &min_ts, err) != 0) { free(c); return NULL; }
    }
    return (tpa_report_run *)c;
}

void tpa_report_feed(tpa_report_run *run, const tpa_event *ev)
{
    on_event((run_ctx *)run, ev, -1);
}

void tpa_report_feed_kind(tpa_report_run *run, const tpa_event *ev, int kind)
{
    on_event((run_ctx *)run, ev, kind);
}

static void end_pass(run_ctx *c)
{
    finish_threads(c);
    c->rep->async_unmatched += c->async.n;  /* b without e */
    free(c->async.v);
    memset(&c->async, 0, sizeof c->async);
}

/* Reads path again with the windows the last pass asked for; the new
 * tables replace the old ones unless the read fails. */
static bool reread(run_ctx *c, const char *path)
{
    tpa_error err;
    tpa_reader *r = tpa_reader_open(path, &err);
    if (!r) return false;
    tpa_report old = c->own;
    memset(&c->own, 0, sizeof c->own);
    if (!(c->own.priv = calloc(1, sizeof(op_index)))) abort();
    free(c->windows);
    c->windows = c->next;
    c->nwindows = c->nnext;
    c->next = NULL;
    c->nnext = 0;
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, &err)) > 0)
        on_event(c, &ev, -1);
    tpa_reader_close(r);
    end_pass(c);
    if (rc < 0) {  /* the last pass's tables stand */
        tpa_report_free(&c->own);
        c->own = old;
        return false;
    }
    tpa_report_free(&old);
    return true;
}

void tpa_report_end(tpa_report_run *run, const tpa_meta *m, const char *path)
{
    run_ctx *c = (run_ctx *)run;
    end_pass(c);
    bool rereadable = c->rereadable && path && strcmp(path, "-") != 0;
    for (int pass = 1; pass < MAX_PASSES && c->own.late_events && c->nnext && rereadable; pass++)
        if (!reread(c, path)) break;
    free(c->windows);
    free(c->next);
    tpa_report *rep = c->out;
    if (c->own.negative_durs && !c->o->quiet) tpa_warn_negative(path, c->own.negative_durs, c->own.negative_at);
    tpa_report_merge(rep, &c->own);
    tpa_report_free(&c->own);
    rep->bytes += m->bytes;
    rep->n_files++;
    if (m->truncated) {
        rep->truncated_files++;
        if (!c->o->quiet) tpa_report_warn_truncated(path, m);
    }

    free(c->steps);
    free(c);
}

int tpa_report_file(tpa_report *rep, const char *path, const tpa_report_opts *o, tpa_error *err)
{
    tpa_reader *r = tpa_reader_open(path, err);
    if (!r) return -1;
    tpa_report_run *run = tpa_report_begin(rep, path, o, err);
    if (!run) { tpa_reader_close(r); return -1; }
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0)
        tpa_report_feed(run, &ev);
    tpa_report_end(run, tpa_reader_meta(r), path);
    tpa_reader_close(r);
    return rc < 0 ? -1 : 0;
}

void tpa_warn_negative(const char *path, uint64_t n, uint64_t first_at)
{
    fprintf(stderr, "trainprof: warning: %s: %llu event(s) with a negative duration (the first at byte %llu) "
            "left out of every statistic\n", path, (unsigned long long)n, (unsigned long long)first_at);
}

void tpa_report_warn_truncated(const char *path, const tpa_meta *m)
{
    fprintf(stderr, "trainprof: warning: %s: trace is truncated at byte %llu; "
            "reporting the %llu events before it\n", path,
            (unsigned long long)m->truncated_at, (unsigned long long)m->events);
}

void tpa_report_merge(tpa_report *dst, const tpa_report *src)
{
    if (!dst->priv && !(dst->priv = calloc(1, sizeof(op_index)))) abort();
    for (size_t i = 0; i < src->n_ops; i++) {
        const tpa_op *s = &src->ops[i];
        size_t n_before = dst->n_ops;
        size_t len = ((const op_index *)src->priv)->lens[i];  /* names may hold a NUL */
        uint32_t at = op_lookup(dst, s->table, s->kind, s->name, len);  /* may move dst->ops */
        tpa_op *d = &dst->ops[at];
        if (dst->n_ops > n_before) {  /* new here: taken whole, its kind included */
            char *name = d->name;
            *d = *s;
            d->name = name;
            continue;
        }
        d->count += s->count;
        d->total_ns = tpa_sat_add(d->total_ns, s->total_ns);
        d->self_ns = tpa_sat_add(d->self_ns, s->self_ns);
        if (s->min_ns < d->min_ns) d->min_ns = s->min_ns;
        if (s->max_ns > d->max_ns) d->max_ns = s->max_ns;
    }
    dst->events += src->events;
    dst->spans += src->spans;
    dst->skipped_unknown += src->skipped_unknown;
    dst->late_events += src->late_events;
    dst->unmatched_end += src->unmatched_end;
    dst->async_pairs += src->async_pairs;
    dst->async_unmatched += src->async_unmatched;
    if (!dst->negative_durs) dst->negative_at = src->negative_at;
    dst->negative_durs += src->negative_durs;
    dst->bytes += src->bytes;
    for (int i = 0; i < 128; i++) dst->per_ph[i] += src->per_ph[i];
    dst->n_files += src->n_files;
    dst->truncated_files += src->truncated_files;
}

void tpa_report_free(tpa_report *rep)
{
    for (size_t i = 0; i < rep->n_ops; i++) free(rep->ops[i].name);
    free(rep->ops);
    op_index *ix = rep->priv;
    if (ix) { free(ix->slots); free(ix->hashes); free(ix->lens); free(ix); }
    memset(rep, 0, sizeof *rep);
}
