/* view_timeline.c - the Timeline view's collector: a bounded store of the
 * events the page may draw, compacted around candidate steps when it fills
 * (see view_timeline.h), and the final choice of steps. */
#include "view_timeline.h"
#include "event_parse.h"

#include <stdlib.h>
#include <string.h>

void tpa_tl_init(tpa_tl *t, const tpa_view_input *in)
{
    memset(t, 0, sizeof *t);
    t->n_files = in && in->n_traces > 0 ? in->n_traces : 1;
    t->paths = in ? in->traces : NULL;
    t->max_end = malloc((size_t)t->n_files * sizeof *t->max_end);
    t->cut = malloc((size_t)t->n_files * sizeof *t->cut);
    if (!t->max_end || !t->cut) abort();
    t->new_sorted = true;
    for (int f = 0; f < t->n_files; f++) t->max_end[f] = t->cut[f] = INT64_MIN;
    t->new_lo = INT64_MAX;
    for (int k = 0; k < 3; k++) t->slow3[k] = INT64_MIN, t->fast3[k] = INT64_MAX;
    for (int f = 0; f < 64; f++) t->min_ts[f] = INT64_MAX;
    t->store_events = TPA_TL_STORE_EVENTS;
    t->store_bytes = TPA_TL_STORE_BYTES;
    t->carry = TPA_TL_CARRY;
}

void tpa_tl_free(tpa_tl *t)
{
    free(t->rec);
    free(t->arena);
    free(t->steps);
    free(t->meta);
    free(t->max_end);
    free(t->cut);
    memset(t, 0, sizeof *t);
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem, size_t limit)
{
    if (need <= *cap) return p;
    size_t c = *cap ? *cap * 2 : 256;
    while (c < need) c *= 2;
    if (limit && c > limit) c = limit;
    void *q = realloc(p, c * elem);
    if (!q) abort(); /* the analyzer's policy (ranks_map.c): CLI and session close only */
    *cap = c;
    return q;
}

/* ---- candidate steps ---------------------------------------------------------------- */

/* qsort_r comparators over indexes; ctx is the array they index (pages may
 * be built on several threads at once: no global base). */
static int by_dur(const void *a, const void *b, void *ctx)
{
    const tpa_tl_step *base = ctx;
    const tpa_tl_step *x = &base[*(const size_t *)a], *y = &base[*(const size_t *)b];
    if (x->dur != y->dur) return x->dur < y->dur ? -1 : 1;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    return x->num < y->num ? -1 : x->num > y->num;
}

/* Indices of the steps (all, or only intact ones) sorted by duration. */
static size_t *sorted_steps(const tpa_tl *t, bool intact_only, size_t *n)
{
    size_t *ix = malloc((t->n_steps ? t->n_steps : 1) * sizeof *ix);
    if (!ix) abort();
    *n = 0;
    for (size_t i = 0; i < t->n_steps; i++)
        if (!intact_only || t->steps[i].intact) ix[(*n)++] = i;
    if (*n) qsort_r(ix, *n, sizeof *ix, by_dur, (void *)t->steps);
    return ix;
}

enum { CAND_EDGE = 3, CAND_MID = 5, CAND_MAX = 2 * CAND_EDGE + CAND_MID };

/* The candidates kept at a compaction: the CAND_EDGE slowest and fastest
 * steps (by the ordering of by_dur) and the CAND_MID intact steps nearest
 * the median duration of all steps so far, so the kept middle follows the
 * median as it drifts. */
static size_t candidates(const tpa_tl *t, size_t out[CAND_MAX], size_t edge, size_t mid_n, size_t *n_edges,
                         int64_t *median)
{
    size_t n, ni, k = 0;
    size_t *all = sorted_steps(t, false, &n), *ix = sorted_steps(t, true, &ni);
    for (size_t i = 0; i < n; i++)
        if (i < edge || i + edge >= n) out[k++] = all[i];
    int64_t med = n ? t->steps[all[(n - 1) / 2]].dur : 0;
    *n_edges = k;
    *median = med;
    size_t hi = 0;
    while (hi < ni && t->steps[ix[hi]].dur < med) hi++;
    size_t lo = hi; /* take from [lo-1 down] or [hi up], nearest first */
    for (size_t m = 0; m < mid_n && (lo > 0 || hi < ni); m++) {
        bool down = hi >= ni || (lo > 0 && med - t->steps[ix[lo - 1]].dur <= t->steps[ix[hi]].dur - med);
        size_t s = down ? ix[--lo] : ix[hi++];
        bool dup = false;
        for (size_t c = 0; c < k; c++) dup |= out[c] == s;
        if (!dup) out[k++] = s;
    }
    free(all);
    free(ix);
    return k;
}

static bool overlaps(const tpa_tl_rec *r, const tpa_tl_step *s)
{
    int64_t end = tpa_sat_add(r->ts, r->dur);
    return r->file == s->file && r->ts < tpa_sat_add(s->start, s->dur) && end >= s->start;
}

/* ---- compaction --------------------------------------------------------------------- */

static void keep_only(tpa_tl *t, const bool *keep)
{
    size_t w = 0, used = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (!keep[i]) { t->dropped++; continue; }
        tpa_tl_rec r = t->rec[i];
        size_t len = (size_t)r.name_n + r.raw_n;
        memmove(t->arena + used, t->arena + r.off, len); /* records are in arena order */
        r.off = (uint32_t)used;
        used += len;
        t->rec[w++] = r;
    }
    t->n = w;
    t->used = used;
}

static int by_ts_rec(const void *a, const void *b, void *ctx)
{
    const tpa_tl_rec *rec = ctx;
    const tpa_tl_rec *x = &rec[*(const size_t *)a], *y = &rec[*(const size_t *)b];
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

int tpa_tl_by_dur_desc(const void *a, const void *b, void *rec_array)
{
    const tpa_tl_rec *rec = rec_array;
    const tpa_tl_rec *x = &rec[*(const size_t *)a], *y = &rec[*(const size_t *)b];
    return x->dur > y->dur ? -1 : x->dur < y->dur;
}

/* Keeps the `limit` records first in the order cmp (ts or longest first). */
static void keep_first(tpa_tl *t, size_t limit, int (*cmp)(const void *, const void *, void *), int64_t *last_ts)
{
    size_t *ix = malloc(t->n * sizeof *ix);
    bool *keep = calloc(t->n ? t->n : 1, sizeof *keep);
    if (!ix || !keep) abort();
    for (size_t i = 0; i < t->n; i++) ix[i] = i;
    qsort_r(ix, t->n, sizeof *ix, cmp, t->rec);
    for (size_t i = 0; i < t->n && i < limit; i++) {
        keep[ix[i]] = true;
        if (last_ts) *last_ts = t->rec[ix[i]].ts;
    }
    keep_only(t, keep);
    free(ix);
    free(keep);
}

static bool too_full(const tpa_tl *t) { return t->n > t->store_events / 2 || t->used > t->store_bytes / 2; }

/* The band of durations around the median that a new step must fall in
 * to be kept (it may be the median shown): the middle candidates' span,
 * and at least 0.5 % of the median either side. */
static void set_band(tpa_tl *t, const size_t *mid, size_t n, int64_t med)
{
    int64_t lo = med, hi = med;
    for (size_t i = 0; i < n; i++) {
        int64_t d = t->steps[mid[i]].dur;
        if (d < lo) lo = d;
        if (d > hi) hi = d;
    }
    int64_t w = med / 200;
    t->band_lo = lo < med - w ? lo : med - w;
    t->band_hi = hi > med + w ? hi : med + w;
    t->has_band = true;
}

static void keep_candidates(tpa_tl *t, size_t edge, size_t mid_n)
{
    size_t cand[CAND_MAX], n_edges;
    int64_t med;
    size_t nc = candidates(t, cand, edge, mid_n, &n_edges, &med);
    set_band(t, cand + n_edges, nc - n_edges, med);
    bool *is_cand = calloc(t->n_steps, sizeof *is_cand), *keep = calloc(t->n ? t->n : 1, sizeof *keep);
    if (!is_cand || !keep) abort();
    for (size_t c = 0; c < nc; c++) is_cand[cand[c]] = true;
    for (size_t i = 0; i < t->n_steps; i++)
        if (!is_cand[i]) t->steps[i].intact = false;
    for (size_t i = 0; i < t->n; i++) {
        const tpa_tl_rec *r = &t->rec[i];
        keep[i] = r->file >= t->n_files || r->ts > t->max_end[r->file];
        for (size_t c = 0; c < nc && !keep[i]; c++) keep[i] = overlaps(r, &t->steps[cand[c]]);
    }
    keep_only(t, keep);
    free(is_cand);
    free(keep);
    memcpy(t->cand, cand, nc * sizeof *cand);
    t->n_cand = nc;
    memcpy(t->cut, t->max_end, (size_t)t->n_files * sizeof *t->cut);
    t->new_lo = INT64_MAX;
    t->first_new = t->n_steps;
    t->new_sorted = true;
}

static void compact(tpa_tl *t)
{
    t->compactions++;
    if (t->n_steps == 0) {
        /* no steps yet: the earliest events, up to what the page carries */
        int64_t last = INT64_MAX;
        keep_first(t, t->carry, by_ts_rec, &last);
        t->no_steps_cut = true;
        t->cutoff = last;
        return;
    }
    /* the candidates; when their events still fill half the store, only
     * the slowest, the fastest and the one nearest the median */
    keep_candidates(t, CAND_EDGE, CAND_MID);
    if (too_full(t)) keep_candidates(t, 1, 1);
    /* still more than half full (one giant step): its longest events only */
    if (too_full(t)) {
        size_t before = t->n;
        keep_first(t, t->store_events / 4, tpa_tl_by_dur_desc, NULL);
        size_t used = 0;
        for (size_t i = 0; i < t->n; i++) used += (size_t)t->rec[i].name_n + t->rec[i].raw_n;
        if (used > t->store_bytes / 2) keep_first(t, t->n / 4, tpa_tl_by_dur_desc, NULL);
        t->thinned += before - t->n;
    }
}

/* ---- feed --------------------------------------------------------------------------- */

static void add_meta(tpa_tl *t, int file, const tpa_event *ev)
{
    bool thread = ev->name.n == 11 && memcmp(ev->name.p, "thread_name", 11) == 0;
    bool process = ev->name.n == 12 && memcmp(ev->name.p, "process_name", 12) == 0;
    if ((!thread && !process) || !ev->arg_name.n || t->n_meta >= TPA_TL_META_MAX) return;
    t->meta = grow(t->meta, &t->meta_cap, t->n_meta + 1, sizeof *t->meta, 0);
    tpa_tl_meta *m = &t->meta[t->n_meta++];
    m->file = (uint16_t)file;
    m->thread = thread;
    m->pid = ev->pid;
    m->tid = ev->tid;
    size_t n = ev->arg_name.n < sizeof m->name - 1 ? ev->arg_name.n : sizeof m->name - 1;
    memcpy(m->name, ev->arg_name.p, n);
    m->name[n] = '\0';
}

static void add_step(tpa_tl *t, int file, int64_t num, const tpa_event *ev)
{
    if (t->n_steps >= TPA_TL_MAX_STEPS) { t->steps_lost++; return; }
    t->steps = grow(t->steps, &t->steps_cap, t->n_steps + 1, sizeof *t->steps, 0);
    int64_t d = ev->dur_ns;
    bool never = t->has_band && d < t->slow3[2] && d > t->fast3[2] && (d < t->band_lo || d > t->band_hi);
    t->steps[t->n_steps++] = (tpa_tl_step){num, ev->ts_ns, d, (uint16_t)file, !never};
    t->early += never;
    if (t->n_steps - 1 > t->first_new) {
        const tpa_tl_step *prev = &t->steps[t->n_steps - 2];
        if (prev->file > file || (prev->file == file && prev->start > ev->ts_ns)) t->new_sorted = false;
    }
    for (int k = 0; k < 3; k++) /* insert d into the 3 longest and the 3 shortest */
        if (d > t->slow3[k]) { for (int m = 2; m > k; m--) t->slow3[m] = t->slow3[m - 1]; t->slow3[k] = d; break; }
    for (int k = 0; k < 3; k++)
        if (d < t->fast3[k]) { for (int m = 2; m > k; m--) t->fast3[m] = t->fast3[m - 1]; t->fast3[k] = d; break; }
    int64_t end = tpa_sat_add(ev->ts_ns, ev->dur_ns);
    if (file < t->n_files && end > t->max_end[file]) t->max_end[file] = end;
    if (ev->ts_ns < t->new_lo) t->new_lo = ev->ts_ns;
}

/* Whether [ts, end] lies inside a step read since the last compaction and
 * left out on arrival (bisection over those steps, in start order). */
static bool left_out_step(const tpa_tl *t, int file, int64_t ts, int64_t end)
{
    size_t lo = t->first_new, hi = t->n_steps;
    if (lo == hi) return false;
    if (!t->new_sorted) lo = hi - 1; /* out of order: the latest step only */
    while (hi - lo > 1) { /* last step starting at or before (file, ts) */
        size_t mid = lo + (hi - lo) / 2;
        const tpa_tl_step *m = &t->steps[mid];
        if (m->file < file || (m->file == file && m->start <= ts)) lo = mid;
        else hi = mid;
    }
    const tpa_tl_step *s = &t->steps[lo];
    return !s->intact && s->file == file && ts >= s->start && end <= tpa_sat_add(s->start, s->dur);
}

/* What the next compaction would drop (see tpa_tl.cut). */
static bool doomed(const tpa_tl *t, int file, int64_t ts, int64_t dur)
{
    if (file >= t->n_files) return false;
    int64_t end = tpa_sat_add(ts, dur);
    if (left_out_step(t, file, ts, end)) return true;
    if (ts > t->cut[file]) return false;
    if (end >= t->new_lo) return false;
    for (size_t c = 0; c < t->n_cand; c++) {
        const tpa_tl_step *s = &t->steps[t->cand[c]];
        if (s->file == file && ts < tpa_sat_add(s->start, s->dur) && end >= s->start) return false;
    }
    return true;
}

void tpa_tl_feed(tpa_tl *t, int file, const tpa_event *ev, int kind)
{
    if (ev->ph == 'M') { add_meta(t, file, ev); return; }
    char ph = ev->ph == 'I' ? 'i' : ev->ph;
    if (!ev->has_ts || (ph != 'X' && ph != 'i' && ph != 'C')) return;
    if (ph == 'X' && (!ev->has_dur || ev->dur_ns < 0)) return;
    t->seen++;
    if (file < 64 && ev->ts_ns < t->min_ts[file]) t->min_ts[file] = ev->ts_ns;
    int64_t num;
    if (ph == 'X' && tpa_event_step(ev, kind, &num)) add_step(t, file, num, ev);
    if (t->no_steps_cut && t->n_steps == 0 && ev->ts_ns > t->cutoff) { t->dropped++; return; }
    int64_t dur = ph == 'X' ? ev->dur_ns : 0;
    if (doomed(t, file, ev->ts_ns, dur)) { t->dropped++; return; }
    size_t name_n = ev->name.n < TPA_TL_NAME_MAX ? ev->name.n : TPA_TL_NAME_MAX;
    size_t raw_n = ev->raw.n <= TPA_TL_RAW_MAX ? ev->raw.n : 0;
    if (t->n >= t->store_events || t->used + name_n + raw_n > t->store_bytes) compact(t);
    if (t->no_steps_cut && t->n_steps == 0 && ev->ts_ns > t->cutoff) { t->dropped++; return; }
    if (t->n == t->cap) t->rec = grow(t->rec, &t->cap, t->n + 1, sizeof *t->rec, t->store_events);
    if (t->used + name_n + raw_n > t->arena_cap) t->arena = grow(t->arena, &t->arena_cap, t->used + name_n + raw_n, 1, 0);
    memcpy(t->arena + t->used, ev->name.p, name_n);
    if (raw_n) memcpy(t->arena + t->used + name_n, ev->raw.p, raw_n);
    tpa_tl_rec *r = &t->rec[t->n++]; /* field by field: no struct copy per event */
    r->ts = ev->ts_ns;
    r->dur = dur;
    r->pid = ev->pid;
    r->tid = ev->tid;
    r->off = (uint32_t)t->used;
    r->name_n = (uint16_t)name_n;
    r->raw_n = (uint16_t)raw_n;
    size_t args_n = 0;
    const char *args = raw_n ? tpa_event_args(ev, &args_n) : NULL;
    r->args_at = args ? (uint16_t)(args - ev->raw.p) : 0;
    r->args_n = args ? (uint16_t)args_n : 0;
    r->file = (uint16_t)file;
    r->ph = ph;
    r->kind = (uint8_t)kind;
    t->used += name_n + raw_n;
}

/* ---- the final choice --------------------------------------------------------------- */

int tpa_tl_pick(const tpa_tl *t, long idx[3])
{
    idx[0] = idx[1] = idx[2] = -1;
    size_t n_all, n;
    size_t *all = sorted_steps(t, false, &n_all), *ix = sorted_steps(t, true, &n);
    if (n) {
        idx[0] = (long)ix[n - 1];
        idx[2] = (long)ix[0];
        int64_t med = t->steps[all[(n_all - 1) / 2]].dur, best = -1;
        for (size_t i = 0; i < n; i++) {
            int64_t d = t->steps[ix[i]].dur - med;
            if (d < 0) d = -d;
            if (best < 0 || d < best) { best = d; idx[1] = (long)ix[i]; }
        }
    }
    free(all);
    free(ix);
    int distinct = 0;
    for (int k = 0; k < 3; k++) {
        bool dup = false;
        for (int m = 0; m < k; m++) dup |= idx[m] == idx[k];
        if (idx[k] >= 0 && !dup) distinct++;
        else if (dup) idx[k] = -1;
    }
    return distinct;
}

/* ---- the view ----------------------------------------------------------------------- */

typedef struct tl_view { tpa_tl t; int file; } tl_view;

static void *tl_begin(const tpa_view_input *in)
{
    tl_view *v = calloc(1, sizeof *v);
    if (v) tpa_tl_init(&v->t, in);
    return v;
}

static void tl_file_begin(void *state, int file, const char *path)
{
    (void)path;
    ((tl_view *)state)->file = file;
}

static void tl_feed(void *state, const tpa_event *ev, int kind)
{
    tl_view *v = state;
    tpa_tl_feed(&v->t, v->file, ev, kind);
}

static void tl_json(void *state, tpu_json *j) { tpa_tl_json(&((tl_view *)state)->t, j); }

static void tl_free(void *state)
{
    tl_view *v = state;
    if (!v) return;
    tpa_tl_free(&v->t);
    free(v);
}

const tpa_view_class tpa_view_timeline = {"timeline", tl_begin, tl_file_begin, tl_feed, NULL, tl_json, tl_free, 1 /* lane: beside the attributor (view.h) */};
