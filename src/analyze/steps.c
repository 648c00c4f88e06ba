/* steps.c - one row per ProfilerStep#N span with a breakdown of its wall time.
 *
 * Each event class (kernel, memcpy, ..., CPU execution) is kept as a set of
 * time intervals, merged as it grows. A step's window is then split by
 * priority: a class is credited only with the time no higher class already
 * covers, and "other" gets the rest, so the parts sum to the step exactly.
 */
#include "analyze.h"

#include <stdlib.h>
#include <string.h>

const char *const tpa_part_names[TPA_P_COUNT] = {
    "kernel", "memcpy", "memset", "communication", "runtime", "data_loading", "cpu", "other"
};

typedef struct iv { int64_t s, e; } iv;
typedef struct ivset { iv *v; size_t n, cap, merged_n; } ivset;

static int iv_cmp(const void *a, const void *b)
{
    const iv *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s ? 1 : (x->e < y->e ? -1 : x->e > y->e);
}

/* Sorts and merges overlapping or touching intervals in place. */
static void ivset_compact(ivset *set)
{
    if (set->n == set->merged_n) return;
    qsort(set->v, set->n, sizeof *set->v, iv_cmp);
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
    if (set->n == set->cap) {
        size_t nc = set->cap ? set->cap * 2 : 1024;
        iv *nv = realloc(set->v, nc * sizeof *nv);
        if (!nv) abort();
        set->v = nv;
        set->cap = nc;
    }
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
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        tpa_step *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) abort();
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = (tpa_step){ num, ts, dur };
}

static int step_cmp(const void *a, const void *b)
{
    const tpa_step *x = a, *y = b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static bool host_step(const tpa_event *ev, int kind, int64_t *num)
{
    return ev->ph == 'X' && kind == TPA_K_STEP && ev->has_ts && tpa_step_number(ev->name, num);
}

int tpa_find_steps(const char *path, tpa_step **steps, size_t *n, int64_t *min_ts, tpa_error *err)
{
    tpa_reader *r = tpa_reader_open(path, err);
    if (!r) return -1;
    step_list l = {0};
    int64_t lo = INT64_MAX;
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) {
        if (ev.has_ts && ev.ph != 'M' && ev.ts_ns < lo) lo = ev.ts_ns;
        int64_t num;
        if (ev.ph == 'X' && host_step(&ev, tpa_classify(&ev), &num))
            add_step(&l, num, ev.ts_ns, ev.has_dur ? ev.dur_ns : 0);
    }
    tpa_reader_close(r);
    if (rc < 0) { free(l.v); return -1; }
    qsort(l.v, l.n, sizeof *l.v, step_cmp);
    *steps = l.v;
    *n = l.n;
    *min_ts = lo == INT64_MAX ? 0 : lo;
    return 0;
}

/* ---- breakdown ---------------------------------------------------------------------------- */

typedef struct ivbuf { iv *v; size_t n, cap; } ivbuf;

static void ivbuf_push(ivbuf *b, int64_t s, int64_t e)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        iv *nv = realloc(b->v, nc * sizeof *nv);
        if (!nv) abort();
        b->v = nv;
        b->cap = nc;
    }
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

int tpa_steps_file(const char *path, tpa_steps_result *res, tpa_error *err)
{
    memset(res, 0, sizeof *res);
    tpa_reader *r = tpa_reader_open(path, err);
    if (!r) return -1;
    ivset sets[TPA_P_COUNT] = {{0}};
    step_list l = {0};
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) {
        if (ev.ph != 'X' || !ev.has_ts) continue;
        int kind = tpa_classify(&ev);
        int64_t num, dur = ev.has_dur && ev.dur_ns > 0 ? ev.dur_ns : 0;
        if (host_step(&ev, kind, &num)) { add_step(&l, num, ev.ts_ns, dur); continue; }
        int part = part_of(&ev, kind);
        if (part < 0) continue;
        if (part <= TPA_P_COMM) res->has_gpu = true;
        ivset_add(&sets[part], ev.ts_ns, ev.ts_ns + dur);
    }
    res->truncated = tpa_reader_meta(r)->truncated;
    tpa_reader_close(r);
    if (rc >= 0) {
        qsort(l.v, l.n, sizeof *l.v, step_cmp);
        res->rows = calloc(l.n ? l.n : 1, sizeof *res->rows);
        if (!res->rows) abort();
        ivbuf tmp[2] = {{0}};
        for (int p = 0; p < TPA_P_COUNT; p++) ivset_compact(&sets[p]);
        for (size_t i = 0; i < l.n; i++) {
            tpa_step_row *row = &res->rows[res->n++];
            row->num = l.v[i].num;
            row->start_ns = l.v[i].start_ns;
            row->dur_ns = l.v[i].dur_ns;
            breakdown(row, sets, tmp);
        }
        free(tmp[0].v);
        free(tmp[1].v);
    }
    for (int p = 0; p < TPA_P_COUNT; p++) free(sets[p].v);
    free(l.v);
    return rc < 0 ? -1 : 0;
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

int64_t tpa_steps_mean(const tpa_steps_result *res, int part)
{
    if (!res->n) return 0;
    __int128 sum = 0;
    for (size_t i = 0; i < res->n; i++) sum += row_value(&res->rows[i], part);
    return (int64_t)(sum / (__int128)res->n);
}
