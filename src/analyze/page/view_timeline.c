/* view_timeline.c - the Timeline view's collector: a bounded store of the
 * events the page may draw, compacted around candidate steps when it fills
 * (see view_timeline.h), and the final choice of steps. */
#include "analyze/page/view_timeline.h"
#include "analyze/page/html.h"
#include "analyze/stats/stats.h"
#include "analyze/trace/trace.h"

#include <stdlib.h>
#include <string.h>

void tpa_tl_init(tpa_tl *t, const tpa_view_input *in)
{
    memset(t, 0, sizeof *t);
    t->n_files = in && in->n_traces > 0 ? in->n_traces : 1;
    t->paths = in ? in->traces : NULL;
    t->run_dir = in && in->run_dir;
    size_t nf = (size_t)t->n_files;
    t->max_end = malloc(nf * sizeof *t->max_end);
    t->cut = malloc(nf * sizeof *t->cut);
    t->ranks = calloc(nf, sizeof *t->ranks);
    t->rank_of = malloc(nf * sizeof *t->rank_of);
    t->cand_at = calloc(nf + 1, sizeof *t->cand_at);
    if (!t->max_end || !t->cut || !t->ranks || !t->rank_of || !t->cand_at) abort();
    t->new_sorted = true;
    for (int f = 0; f < t->n_files; f++) {
        t->max_end[f] = t->cut[f] = INT64_MIN;
        t->rank_of[f] = f; /* a file never begun is a rank of its own */
        t->ranks[f] = (tpa_tl_rank){.key = f, .rank = f, .n_files = 1, .first_file = f};
    }
    t->new_lo = INT64_MAX;
    for (int f = 0; f < 64; f++) t->min_ts[f] = INT64_MAX;
    t->store_events = TPA_TL_STORE_EVENTS;
    t->store_bytes = TPA_TL_STORE_BYTES;
    t->carry = TPA_TL_CARRY;
    t->max_flows = TPA_TL_FLOWS;
    t->dev = tpa_devsteps_new(); /* NULL: host spans kept */
}

void tpa_tl_free(tpa_tl *t)
{
    free(t->rec);
    free(t->arena);
    free(t->steps);
    free(t->meta);
    free(t->flows);
    free(t->max_end);
    free(t->cut);
    free(t->ranks);
    free(t->rank_of);
    free(t->cand);
    free(t->cand_at);
    tpa_devsteps_free(t->dev);
    memset(t, 0, sizeof *t);
}

/* ---- ranks -------------------------------------------------------------------------- */

/* As the Overview and Distributed views: the rank<r>/ directory of its
 * path, else the file's place; a run directory's files are one rank. The
 * files come in order, so an earlier file's rank is settled. */
void tpa_tl_file_begin(tpa_tl *t, int file, const char *path)
{
    if (t->dev) tpa_devsteps_clear(t->dev);
    t->dev_over = false;
    t->compactions_at_begin = t->compactions;
    if (file < 0 || file >= t->n_files) return;
    int64_t key = tpa_html_rank_key(t->run_dir, file, path);
    int own = t->rank_of[file];
    for (int g = 0; g < file; g++) {
        tpa_tl_rank *r = &t->ranks[g];
        if (!r->n_files || r->key != key || g == own) continue;
        t->ranks[own].n_files--;
        t->rank_of[file] = g;
        r->n_files++;
        return;
    }
    t->ranks[own].key = t->ranks[own].rank = key;
    t->ranks[own].named = !t->run_dir && path && tpa_html_rank_in_path(path) >= 0;
}

static void apply_rule(tpa_tl *t, int file);

void tpa_tl_file_end(tpa_tl *t, int file, const tpa_meta *meta)
{
    apply_rule(t, file);
    if (file < 0 || file >= t->n_files || !meta || !meta->has_rank || t->run_dir) return;
    tpa_tl_rank *r = &t->ranks[t->rank_of[file]];
    r->rank = meta->rank;
    r->named = true;
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

/* Orders of steps: `before(a, b, med)` is true when a comes first. Of equal
 * durations the earlier step (by file, then start, then number) comes first
 * in each, so a later step that only ties one never displaces it. */
typedef bool (*step_order)(const tpa_tl_step *a, const tpa_tl_step *b, int64_t med);

static bool earlier(const tpa_tl_step *a, const tpa_tl_step *b)
{
    if (a->file != b->file) return a->file < b->file;
    return a->start != b->start ? a->start < b->start : a->num < b->num;
}

static bool faster(const tpa_tl_step *a, const tpa_tl_step *b, int64_t med)
{
    (void)med;
    return a->dur != b->dur ? a->dur < b->dur : earlier(a, b);
}

static bool slower(const tpa_tl_step *a, const tpa_tl_step *b, int64_t med)
{
    (void)med;
    return a->dur != b->dur ? a->dur > b->dur : earlier(a, b);
}

/* Nearer the median duration med; the shorter first at equal distances. */
static bool nearer(const tpa_tl_step *a, const tpa_tl_step *b, int64_t med)
{
    int64_t da = a->dur > med ? a->dur - med : med - a->dur, db = b->dur > med ? b->dur - med : med - b->dur;
    return da != db ? da < db : faster(a, b, med);
}

/* Inserts step s into best[0..*n), the (at most k) steps first in `before`. */
static void top_k(const tpa_tl *t, size_t *best, size_t *n, size_t k, size_t s, step_order before, int64_t med)
{
    const tpa_tl_step *x = &t->steps[s];
    size_t i = *n;
    if (i == k) {
        if (!before(x, &t->steps[best[k - 1]], med)) return;
        i = k - 1;
    } else {
        (*n)++;
    }
    for (; i > 0 && before(x, &t->steps[best[i - 1]], med); i--) best[i] = best[i - 1];
    best[i] = s;
}

typedef struct rank_dur { int64_t dur; int rank; } rank_dur;

static int by_rank_dur(const void *a, const void *b)
{
    const rank_dur *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return x->dur < y->dur ? -1 : x->dur > y->dur;
}

/* Each rank's median step duration so far (the lower one of an even count)
 * into med[slot]; 0 for a rank without steps. */
static void median_durs(const tpa_tl *t, int64_t *med)
{
    for (int r = 0; r < t->n_files; r++) med[r] = 0;
    if (!t->n_steps) return;
    rank_dur *d = malloc(t->n_steps * sizeof *d);
    if (!d) abort();
    size_t n = 0; /* the steps the GPU rule left out are no steps */
    for (size_t i = 0; i < t->n_steps; i++)
        if (!t->steps[i].gone) d[n++] = (rank_dur){t->steps[i].dur, tpa_tl_rank_ix(t, t->steps[i].file)};
    qsort(d, n, sizeof *d, by_rank_dur);
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a; b < n && d[b].rank == d[a].rank; b++) {}
        med[d[a].rank] = d[a + (b - a - 1) / 2].dur;
    }
    free(d);
}

static int64_t *medians(const tpa_tl *t)
{
    int64_t *med = malloc((size_t)t->n_files * sizeof *med);
    if (!med) abort();
    median_durs(t, med);
    return med;
}

enum { CAND_EDGE = 3, CAND_MID = 5, CAND_MAX = 2 * CAND_EDGE + CAND_MID };

static void add_unique(size_t *out, size_t *k, size_t s)
{
    for (size_t c = 0; c < *k; c++)
        if (out[c] == s) return;
    out[(*k)++] = s;
}

/* The band of durations around a rank's median that a new step of the rank
 * must fall in to be kept (it may be the median shown): the middle
 * candidates' span, and at least 0.5 % of the median either side. */
static void set_band(const tpa_tl *t, tpa_tl_rank *rk, const size_t *mid, size_t n, int64_t med)
{
    int64_t lo = med, hi = med;
    for (size_t i = 0; i < n; i++) {
        int64_t d = t->steps[mid[i]].dur;
        if (d < lo) lo = d;
        if (d > hi) hi = d;
    }
    int64_t w = med / 200;
    rk->band_lo = lo < med - w ? lo : med - w;
    rk->band_hi = hi > med + w ? hi : med + w;
    rk->has_band = true;
}

typedef struct rank_cand { size_t slow[CAND_EDGE], fast[CAND_EDGE], mid[CAND_MID], ns, nf, nm; } rank_cand;

/* The candidates kept at a compaction, each rank's own: its `edge` slowest
 * and fastest steps and the `mid_n` intact ones nearest the median
 * duration of its steps so far, so the kept middle follows the median as
 * it drifts; each rank's band from its middle ones. Into out (CAND_MAX a
 * rank slot at most); returns how many. */
static size_t candidates(tpa_tl *t, size_t *out, size_t edge, size_t mid_n)
{
    size_t nr = (size_t)t->n_files, k = 0;
    int64_t *med = medians(t);
    rank_cand *rc = calloc(nr, sizeof *rc);
    if (!rc) abort();
    for (size_t i = 0; i < t->n_steps; i++) {
        if (t->steps[i].gone) continue;
        int r = tpa_tl_rank_ix(t, t->steps[i].file);
        rank_cand *c = &rc[r];
        top_k(t, c->slow, &c->ns, edge, i, slower, med[r]);
        top_k(t, c->fast, &c->nf, edge, i, faster, med[r]);
        if (t->steps[i].intact) top_k(t, c->mid, &c->nm, mid_n, i, nearer, med[r]);
    }
    for (size_t r = 0; r < nr; r++) {
        const rank_cand *c = &rc[r];
        size_t *o = out + k, n = 0;
        if (!c->ns) continue;
        for (size_t i = 0; i < c->ns; i++) add_unique(o, &n, c->slow[i]);
        for (size_t i = 0; i < c->nf; i++) add_unique(o, &n, c->fast[i]);
        size_t n_edges = n;
        for (size_t i = 0; i < c->nm; i++) add_unique(o, &n, c->mid[i]);
        set_band(t, &t->ranks[r], o + n_edges, n - n_edges, med[r]);
        k += n;
    }
    free(rc);
    free(med);
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
        size_t len = tpa_tl_rec_bytes(&r);
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

/* qsort_r comparator: step indexes (size_t) by file, steps the context. */
static int by_step_file(const void *a, const void *b, void *steps)
{
    const tpa_tl_step *s = steps;
    uint16_t x = s[*(const size_t *)a].file, y = s[*(const size_t *)b].file;
    return x < y ? -1 : x > y;
}

/* Whether record r overlaps a candidate of its file. */
static bool in_candidate(const tpa_tl *t, const tpa_tl_rec *r)
{
    for (size_t c = t->cand_at[r->file]; c < t->cand_at[r->file + 1]; c++)
        if (overlaps(r, &t->steps[t->cand[c]])) return true;
    return false;
}

/* The candidates, sorted by file, as the store's (tpa_tl.cand, cand_at). */
static void set_candidates(tpa_tl *t, size_t *cand, size_t nc)
{
    qsort_r(cand, nc, sizeof *cand, by_step_file, t->steps);
    free(t->cand);
    t->cand = cand;
    t->n_cand = nc;
    memset(t->cand_at, 0, ((size_t)t->n_files + 1) * sizeof *t->cand_at);
    for (size_t c = 0; c < nc; c++) /* a file past n_files (none is fed so) has none */
        if (t->steps[cand[c]].file < t->n_files) t->cand_at[t->steps[cand[c]].file + 1]++;
    for (int f = 0; f < t->n_files; f++) t->cand_at[f + 1] += t->cand_at[f];
}

static void keep_candidates(tpa_tl *t, size_t edge, size_t mid_n)
{
    size_t *cand = malloc(((size_t)t->n_files * CAND_MAX + 1) * sizeof *cand);
    if (!cand) abort();
    size_t nc = candidates(t, cand, edge, mid_n);
    set_candidates(t, cand, nc);
    bool *is_cand = calloc(t->n_steps, sizeof *is_cand), *keep = calloc(t->n ? t->n : 1, sizeof *keep);
    if (!is_cand || !keep) abort();
    for (size_t c = 0; c < nc; c++) is_cand[cand[c]] = true;
    for (size_t i = 0; i < t->n_steps; i++)
        if (!is_cand[i]) t->steps[i].intact = false;
    for (size_t i = 0; i < t->n; i++) {
        const tpa_tl_rec *r = &t->rec[i];
        keep[i] = r->file >= t->n_files || r->ts > t->max_end[r->file] || in_candidate(t, r);
    }
    keep_only(t, keep);
    size_t w = 0; /* flow ends by the same rule (as instants) */
    for (size_t i = 0; i < t->n_flows; i++) {
        const tpa_tl_flow *f = &t->flows[i];
        tpa_tl_rec r = {.ts = f->ts, .file = f->file};
        if (f->file >= t->n_files || f->ts > t->max_end[f->file] || in_candidate(t, &r)) t->flows[w++] = *f;
    }
    t->n_flows = w;
    free(is_cand);
    free(keep);
    memcpy(t->cut, t->max_end, (size_t)t->n_files * sizeof *t->cut);
    t->new_lo = INT64_MAX;
    t->first_new = t->n_steps;
    for (int r = 0; r < t->n_files; r++) t->ranks[r].n_new_intact = 0;
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
        size_t w = 0;
        for (size_t i = 0; i < t->n_flows; i++)
            if (t->flows[i].ts <= last) t->flows[w++] = t->flows[i];
        t->n_flows = w;
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
        for (size_t i = 0; i < t->n; i++) used += tpa_tl_rec_bytes(&t->rec[i]);
        if (used > t->store_bytes / 2) keep_first(t, t->n / 4, tpa_tl_by_dur_desc, NULL);
        t->thinned += before - t->n;
    }
}

/* ---- the GPU step rule ------------------------------------------------------------- */

static int by_step_start(const void *a, const void *b, void *steps)
{
    const tpa_tl_step *s = steps, *x = &s[*(const size_t *)a], *y = &s[*(const size_t *)b];
    return x->start != y->start ? (x->start < y->start ? -1 : 1) : (x->num > y->num) - (x->num < y->num);
}

/* A rank's 3 slowest and fastest steps again (durations changed); its
 * band is dropped, so no new step is left out on arrival until the next
 * compaction makes it again. */
static void rerank(tpa_tl *t, int r)
{
    tpa_tl_rank *rk = &t->ranks[r];
    rk->n_top3 = 0;
    rk->has_band = false;
    for (size_t i = 0; i < t->n_steps; i++) {
        if (t->steps[i].gone || tpa_tl_rank_ix(t, t->steps[i].file) != r) continue;
        size_t n_fast = rk->n_top3;
        top_k(t, rk->slow3, &rk->n_top3, 3, i, slower, 0);
        top_k(t, rk->fast3, &n_fast, 3, i, faster, 0);
    }
}

/* At a file's end: its steps (the last ones read) get the plugin's spans
 * when they launched device work (stats' rule, as `trainprof steps`). */
static void apply_rule(tpa_tl *t, int file)
{
    if (!t->dev || file < 0 || file >= t->n_files) return;
    size_t a = t->n_steps;
    while (a > 0 && t->steps[a - 1].file == file) a--;
    size_t n = t->n_steps - a;
    if (!n) { tpa_devsteps_clear(t->dev); t->dev_over = false; return; }
    if (t->dev_over) { t->files_over++; t->dev_over = false; return; }
    size_t *ix = malloc(n * sizeof *ix);
    tpa_step *st = malloc(n * sizeof *st);
    if (!ix || !st) abort();
    for (size_t k = 0; k < n; k++) ix[k] = a + k;
    qsort_r(ix, n, sizeof *ix, by_step_start, t->steps);
    for (size_t k = 0; k < n; k++) {
        const tpa_tl_step *s = &t->steps[ix[k]];
        st[k] = (tpa_step){.num = s->num, .start_ns = s->start, .dur_ns = s->dur};
    }
    bool applied = false;
    size_t dropped = 0, keep = tpa_devsteps_apply(t->dev, st, n, &applied, &dropped);
    if (!applied) {
        t->files_host++;
    } else {
        t->files_rule++;
        t->rule_dropped += dropped;
        t->chose_by_host |= t->compactions > t->compactions_at_begin;
        for (size_t k = 0; k < n; k++) {
            tpa_tl_step *s = &t->steps[ix[k]];
            s->start = st[k].start_ns;
            s->dur = st[k].dur_ns;
            if (k >= keep) s->gone = true, s->intact = false;
        }
        rerank(t, tpa_tl_rank_ix(t, file));
    }
    free(ix);
    free(st);
}

/* ---- feed --------------------------------------------------------------------------- */

static bool named(const tpa_event *ev, const char *s)
{
    size_t n = strlen(s);
    return ev->name.n == n && memcmp(ev->name.p, s, n) == 0;
}

/* process_name, thread_name (args.name) and process_labels (args.labels:
 * Kineto's "CPU", "GPU 0"), the rows' and groups' names. */
static void add_meta(tpa_tl *t, int file, const tpa_event *ev)
{
    int what = named(ev, "thread_name") ? TPA_TL_THREAD_NAME : named(ev, "process_name") ? TPA_TL_PROCESS_NAME
             : named(ev, "process_labels") ? TPA_TL_PROCESS_LABELS : -1;
    if (what < 0 || t->n_meta >= TPA_TL_META_MAX) return;
    char labels[96] = "";
    if (what == TPA_TL_PROCESS_LABELS) {
        size_t an = 0;
        const char *a = tpa_event_args(ev, &an), *v = a ? tpa_obj_find(a, a + an, "labels") : NULL;
        if (!v || !tpa_value_str(v, a + an, labels, sizeof labels) || !labels[0]) return;
    } else if (!ev->arg_name.n) {
        return;
    }
    t->meta = grow(t->meta, &t->meta_cap, t->n_meta + 1, sizeof *t->meta, 0);
    tpa_tl_meta *m = &t->meta[t->n_meta++];
    m->file = (uint16_t)file;
    m->what = (uint8_t)what;
    m->pid = ev->pid;
    m->tid = ev->tid;
    if (what == TPA_TL_PROCESS_LABELS) { memcpy(m->name, labels, sizeof m->name); return; }
    size_t n = ev->arg_name.n < sizeof m->name - 1 ? ev->arg_name.n : sizeof m->name - 1;
    memcpy(m->name, ev->arg_name.p, n);
    m->name[n] = '\0';
}

static bool doomed(const tpa_tl *t, int file, int64_t ts, int64_t dur);

/* A flow end of Kineto's forward-to-backward flows ("cat": "fwdbwd"), kept
 * while the store would keep an instant at its time. */
static void add_flow(tpa_tl *t, int file, const tpa_event *ev)
{
    if (!ev->has_ts || !(ev->cat.n == 6 && memcmp(ev->cat.p, "fwdbwd", 6) == 0)) return;
    const char *v = ev->v_id.len ? ev->raw.p + ev->v_id.off : tpa_obj_find(ev->raw.p, ev->raw.p + ev->raw.n, "id");
    int64_t id;
    if (!v || !tpa_value_i64(v, ev->raw.p + ev->raw.n, &id)) return;
    if (t->no_steps_cut && t->n_steps == 0 && ev->ts_ns > t->cutoff) return;
    if (doomed(t, file, ev->ts_ns, 0)) return;
    if (t->n_flows >= t->max_flows) { t->flows_lost++; return; }
    t->flows = grow(t->flows, &t->flows_cap, t->n_flows + 1, sizeof *t->flows, 0);
    t->flows[t->n_flows++] = (tpa_tl_flow){id, ev->ts_ns, ev->pid, ev->tid, (uint16_t)file, ev->ph};
}

/* Whether step x can be no candidate at the next compaction: 3 known steps
 * of its rank come before it in each of slower and faster, and it is no
 * middle one: its duration is outside its rank's band, or CAND_MID intact
 * steps of its rank (candidates, or read since) of the same duration come
 * before it: they stay intact until then, and are nearer any median than x. */
static bool never_candidate(const tpa_tl *t, const tpa_tl_step *x)
{
    int rx = tpa_tl_rank_ix(t, x->file);
    const tpa_tl_rank *rk = &t->ranks[rx];
    if (!rk->has_band || rk->n_top3 < 3) return false;
    if (!slower(&t->steps[rk->slow3[2]], x, 0) || !faster(&t->steps[rk->fast3[2]], x, 0)) return false;
    if (x->dur < rk->band_lo || x->dur > rk->band_hi) return true;
    size_t tied = 0;
    for (size_t c = 0; c < t->n_cand + rk->n_new_intact && tied < CAND_MID; c++) {
        const tpa_tl_step *s = &t->steps[c < t->n_cand ? t->cand[c] : rk->new_intact[c - t->n_cand]];
        tied += s->intact && s->dur == x->dur && earlier(s, x) && tpa_tl_rank_ix(t, s->file) == rx;
    }
    return tied >= CAND_MID;
}

static void add_step(tpa_tl *t, int file, int64_t num, const tpa_event *ev)
{
    if (t->n_steps >= TPA_TL_MAX_STEPS) { t->steps_lost++; return; }
    t->steps = grow(t->steps, &t->steps_cap, t->n_steps + 1, sizeof *t->steps, 0);
    size_t i = t->n_steps++;
    tpa_tl_step *x = &t->steps[i];
    *x = (tpa_tl_step){num, ev->ts_ns, ev->dur_ns, (uint16_t)file, true, false};
    tpa_tl_rank *rk = &t->ranks[tpa_tl_rank_ix(t, file)];
    x->intact = !never_candidate(t, x);
    t->early += !x->intact;
    if (x->intact && rk->n_new_intact < TPA_TL_NEW_INTACT) rk->new_intact[rk->n_new_intact++] = i;
    if (i > t->first_new) {
        const tpa_tl_step *prev = &t->steps[i - 1];
        if (prev->file > file || (prev->file == file && prev->start > ev->ts_ns)) t->new_sorted = false;
    }
    size_t n_fast = rk->n_top3;
    top_k(t, rk->slow3, &rk->n_top3, 3, i, slower, 0);
    top_k(t, rk->fast3, &n_fast, 3, i, faster, 0);
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
    for (size_t c = t->cand_at[file]; c < t->cand_at[file + 1]; c++) {
        const tpa_tl_step *s = &t->steps[t->cand[c]];
        if (ts < tpa_sat_add(s->start, s->dur) && end >= s->start) return false;
    }
    return true;
}

void tpa_tl_feed(tpa_tl *t, int file, const tpa_event *ev, int kind)
{
    if (ev->ph == 'M') { add_meta(t, file, ev); return; }
    if (kind >= TPA_K_RUNTIME && kind != TPA_K_GPU_ANNOTATION && t->dev && !t->dev_over) {
        tpa_devsteps_note(t->dev, ev, kind); /* the GPU step rule's (stats'), kept to a cap */
        if (tpa_devsteps_records(t->dev) > TPA_TL_DEV_RECORDS) { t->dev_over = true; tpa_devsteps_clear(t->dev); }
    }
    if (ev->ph == 's' || ev->ph == 'f') { add_flow(t, file, ev); return; }
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
    size_t name_n = ev->name.n < TPA_TL_NAME_MAX ? ev->name.n : TPA_TL_NAME_MAX, args_n = 0;
    const char *args = ev->raw.n <= TPA_TL_RAW_MAX ? tpa_event_args(ev, &args_n) : NULL;
    if (!args || args_n <= 2) args_n = 0; /* "{}" is written as no args */
    int64_t corr = 0;  /* read here, where the parser noted where it is */
    const char *cv = args_n ? tpa_event_arg(ev, TPA_ARG_CORRELATION, NULL) : NULL;
    if (cv && !tpa_value_i64(cv, ev->raw.p + ev->raw.n, &corr)) corr = 0;
    size_t pid_n = ev->pid_str.n < TPA_TL_ID_MAX ? ev->pid_str.n : TPA_TL_ID_MAX;
    size_t tid_n = ev->tid_str.n < TPA_TL_ID_MAX ? ev->tid_str.n : TPA_TL_ID_MAX;
    size_t bytes = name_n + args_n + pid_n + tid_n;
    if (t->n >= t->store_events || t->used + bytes > t->store_bytes) compact(t);
    if (t->no_steps_cut && t->n_steps == 0 && ev->ts_ns > t->cutoff) { t->dropped++; return; }
    if (t->n == t->cap) t->rec = grow(t->rec, &t->cap, t->n + 1, sizeof *t->rec, t->store_events);
    /* never NULL once an event is in: every record's text is at arena + off */
    if (t->used + bytes >= t->arena_cap) t->arena = grow(t->arena, &t->arena_cap, t->used + bytes + 1, 1, 0);
    char *w = t->arena + t->used;
    if (name_n) memcpy(w, ev->name.p, name_n);  /* a nameless event: name.p is NULL */
    if (args_n) memcpy(w + name_n, args, args_n);
    if (pid_n) memcpy(w + name_n + args_n, ev->pid_str.p, pid_n);
    if (tid_n) memcpy(w + name_n + args_n + pid_n, ev->tid_str.p, tid_n);
    tpa_tl_rec *r = &t->rec[t->n++]; /* field by field: no struct copy per event */
    r->ts = ev->ts_ns;
    r->dur = dur;
    r->pid = ev->pid;
    r->tid = ev->tid;
    r->corr = corr;
    r->off = (uint32_t)t->used;
    r->name_n = (uint16_t)name_n;
    r->args_n = (uint16_t)args_n;
    r->pid_n = (uint8_t)pid_n;
    r->tid_n = (uint8_t)tid_n;
    r->file = (uint16_t)file;
    r->ph = ph;
    r->kind = (uint8_t)kind;
    t->used += bytes;
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
    tl_view *v = state;
    v->file = file;
    tpa_tl_file_begin(&v->t, file, path);
}

static void tl_file_end(void *state, int file, const tpa_meta *meta)
{
    tpa_tl_file_end(&((tl_view *)state)->t, file, meta);
}

static void tl_feed(void *state, const tpa_event *ev, int kind)
{
    tl_view *v = state;
    tpa_tl_feed(&v->t, v->file, ev, kind);
}

/* ---- the final choice --------------------------------------------------------------- */

int tpa_tl_pick(const tpa_tl *t, long *idx)
{
    size_t nr = (size_t)t->n_files;
    size_t *best = malloc(3 * nr * sizeof *best), *cnt = calloc(3 * nr, sizeof *cnt);
    int64_t *med = medians(t);
    if (!best || !cnt) abort();
    for (size_t i = 0; i < t->n_steps; i++)
        if (t->steps[i].intact) {
            size_t r = (size_t)tpa_tl_rank_ix(t, t->steps[i].file);
            top_k(t, &best[3 * r], &cnt[3 * r], 1, i, slower, med[r]);
            top_k(t, &best[3 * r + 1], &cnt[3 * r + 1], 1, i, nearer, med[r]);
            top_k(t, &best[3 * r + 2], &cnt[3 * r + 2], 1, i, faster, med[r]);
        }
    int distinct = 0;
    for (size_t r = 0; r < nr; r++) {
        long *p = &idx[3 * r];
        for (int k = 0; k < 3; k++) p[k] = cnt[3 * r] ? (long)best[3 * r + (size_t)k] : -1;
        for (int k = 0; k < 3; k++) {
            bool dup = false;
            for (int m = 0; m < k; m++) dup |= p[m] == p[k];
            if (p[k] >= 0 && !dup) distinct++;
            else if (dup) p[k] = -1;
        }
    }
    free(best);
    free(cnt);
    free(med);
    return distinct;
}

static void tl_json(void *state, tpu_json *j)
{
    tpa_tl *t = &((tl_view *)state)->t;
    long *pick = malloc(3 * (size_t)t->n_files * sizeof *pick);
    if (!pick) abort();
    for (int k = 0; k < 3 * t->n_files; k++) pick[k] = -1;
    int np = t->seen ? tpa_tl_pick(t, pick) : 0;
    tpa_tl_json(t, pick, np, j);
    free(pick);
}

static void tl_free(void *state)
{
    tl_view *v = state;
    if (!v) return;
    tpa_tl_free(&v->t);
    free(v);
}

const tpa_view_class tpa_view_timeline = {
    .key = "timeline",
    .begin = tl_begin,
    .file_begin = tl_file_begin,
    .feed = tl_feed,
    .file_end = tl_file_end,
    .json = tl_json,
    .free = tl_free,
    .lane = 1,            /* fed beside the attributor (view.h) */
    .end_on_lane0 = true, /* its JSON beside the attributor's last nesting */
};
