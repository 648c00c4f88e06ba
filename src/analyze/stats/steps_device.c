/* steps_device.c - steps extended to the end of the device work they
 * launched (the TensorBoard plugin's rule; see steps_device.h).
 *
 * A step's host span ends when its last kernel is launched, not when it
 * ran: on a GPU trace the host span alone cuts the GPU's work of one step
 * in two, counts the first step's queue-filling as a short step and leaves
 * the last step's kernels outside every step. */
#include "analyze/stats/steps_device.h"

#include "util/adaptive_sort.h"

#include <stdlib.h>
#include <string.h>

static void *grow(void *v, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap) return v;
    size_t nc = *cap ? *cap * 2 : 1024;
    void *nv = realloc(v, nc * elem);
    if (!nv) abort();
    *cap = nc;
    return nv;
}

/* A runtime call that launches device work: Launch, Memcpy or Memset in its name. */
static bool launches(tpa_sv n)
{
    for (size_t i = 0; i + 6 <= n.n; i++) {
        const char *p = n.p + i;
        if ((p[0] == 'L' && memcmp(p, "Launch", 6) == 0) ||
            (p[0] == 'M' && (memcmp(p, "Memcpy", 6) == 0 || memcmp(p, "Memset", 6) == 0))) return true;
    }
    return false;
}

void tpa__ds_note(tpa_devsteps *d, const tpa_event *ev, int kind)
{
    bool rt = kind == TPA_K_RUNTIME;
    if (!rt && kind != TPA_K_KERNEL && kind != TPA_K_COMM && kind != TPA_K_MEMCPY && kind != TPA_K_MEMSET)
        return;
    if (rt && !launches(ev->name)) return;
    if (ev->ph != 'X' || !ev->has_ts || (ev->has_dur && ev->dur_ns < 0)) return;
    /* the number scanner needs the text past the value to see it end */
    const char *v = tpa_event_arg(ev, TPA_ARG_CORRELATION, NULL);
    int64_t corr;
    if (!v || !tpa_value_i64(v, ev->raw.p + ev->raw.n, &corr)) return;
    int64_t end = ev->ts_ns + (ev->has_dur ? ev->dur_ns : 0);
    if (rt) {
        d->rt = grow(d->rt, d->n_rt, &d->cap_rt, sizeof *d->rt);
        d->rt[d->n_rt++] = (tpa_ds_rt){ corr, ev->ts_ns, end };
    } else {
        d->dev = grow(d->dev, d->n_dev, &d->cap_dev, sizeof *d->dev);
        d->dev[d->n_dev++] = (tpa_ds_dev){ corr, ev->ts_ns, end };
    }
}

void tpa__ds_free(tpa_devsteps *d)
{
    free(d->rt);
    free(d->dev);
    memset(d, 0, sizeof *d);
}

/* By correlation id, then start: Kineto writes a thread's runtime calls in
 * order, so the ids mostly come sorted (one pass). */
static inline bool rt_before(const tpa_ds_rt *x, const tpa_ds_rt *y)
{
    return x->corr != y->corr ? x->corr < y->corr : x->ts < y->ts;
}

ADAPTIVE_SORT(sort_rt, tpa_ds_rt, rt_before)

static inline bool dev_before(const tpa_ds_dev *x, const tpa_ds_dev *y)
{
    return x->corr != y->corr ? x->corr < y->corr : x->ts < y->ts;
}

ADAPTIVE_SORT(sort_dev, tpa_ds_dev, dev_before)

/* The step whose host span holds [ts, end] wholly, or -1. */
static int32_t step_of(const tpa_step *steps, size_t n, int64_t ts, int64_t end)
{
    size_t lo = 0, hi = n;  /* first step starting after ts */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (steps[mid].start_ns <= ts) lo = mid + 1; else hi = mid;
    }
    if (!lo) return -1;
    const tpa_step *s = &steps[lo - 1];
    return end <= s->start_ns + s->dur_ns ? (int32_t)(lo - 1) : -1;
}

typedef struct dev_span { int64_t lo, hi; size_t count; } dev_span;

/* Per step: first start, last end and count of the device records its
 * runtime calls launched; a record launched in no step gets
 * unmatched[i] = true. Returns whether any record was launched in a step. */
static bool attribute(tpa_devsteps *d, const tpa_step *steps, size_t n, dev_span *sp, bool *unmatched)
{
    tpa_ds_rt *rt_tmp = NULL;
    tpa_ds_dev *dev_tmp = NULL;
    size_t cap = 0, cap_b = 0;
    sort_rt_scratched(d->rt, d->n_rt, &rt_tmp, &cap);
    free(rt_tmp);
    sort_dev_scratched(d->dev, d->n_dev, &dev_tmp, &cap_b);
    free(dev_tmp);
    bool any = false;
    size_t j = 0;  /* both sorted by correlation id: one merge (the last call of an id, as the plugin keeps) */
    for (size_t i = 0; i < d->n_dev; i++) {
        int64_t corr = d->dev[i].corr;
        while (j < d->n_rt && (d->rt[j].corr < corr || (j + 1 < d->n_rt && d->rt[j + 1].corr == corr))) j++;
        const tpa_ds_rt *r = j < d->n_rt && d->rt[j].corr == corr ? &d->rt[j] : NULL;
        int32_t step = r ? step_of(steps, n, r->ts, r->end) : -1;
        unmatched[i] = step < 0;
        if (unmatched[i]) continue;
        dev_span *s = &sp[step];
        if (d->dev[i].ts < s->lo) s->lo = d->dev[i].ts;
        if (d->dev[i].end > s->hi) s->hi = d->dev[i].end;
        s->count++;
        any = true;
    }
    return any;
}

size_t tpa__ds_apply(tpa_devsteps *d, tpa_step *steps, size_t n, bool *applied, size_t *n_dropped)
{
    *applied = false;
    *n_dropped = 0;
    if (!n || !d->n_dev || !d->n_rt) { tpa__ds_free(d); return n; }
    dev_span *sp = malloc(n * sizeof *sp);
    bool *unmatched = malloc(d->n_dev * sizeof *unmatched);
    if (!sp || !unmatched) abort();
    for (size_t i = 0; i < n; i++) sp[i] = (dev_span){ INT64_MAX, INT64_MIN, 0 };
    if (!attribute(d, steps, n, sp, unmatched)) {
        free(sp);
        free(unmatched);
        tpa__ds_free(d);
        return n;
    }
    int64_t prev = steps[0].start_ns;
    if (sp[0].count)
        for (size_t i = 0; i < d->n_dev; i++)
            if (unmatched[i] && d->dev[i].end < sp[0].lo && d->dev[i].end > prev) prev = d->dev[i].end;
    for (size_t i = 0; i < n; i++) {
        int64_t start = steps[i].start_ns > prev ? steps[i].start_ns : prev;
        int64_t end = steps[i].start_ns + steps[i].dur_ns;
        if (!sp[i].count) { if (end < start) end = start; }
        else {
            if (sp[i].hi > end) end = sp[i].hi;
            if (end < start) end = start;
        }
        steps[i].start_ns = start;
        steps[i].dur_ns = end - start;
        prev = end;
    }
    size_t keep = n;
    if (n > 1) {
        size_t last = n;
        while (last > 0 && !sp[last - 1].count) last--;
        if (last > 0) {
            keep = last;
            if (last > 1 && (double)sp[last - 2].count * 0.8 > (double)sp[last - 1].count) keep = last - 1;
        }
    }
    *applied = true;
    *n_dropped = n - keep;
    free(sp);
    free(unmatched);
    tpa__ds_free(d);
    return keep;
}

/* ---- the same for a caller outside stats (stats.h) ------------------------- */

tpa_devsteps *tpa_devsteps_new(void)
{
    return calloc(1, sizeof(tpa_devsteps));
}

void tpa_devsteps_note(tpa_devsteps *d, const tpa_event *ev, int kind) { tpa__ds_note(d, ev, kind); }

size_t tpa_devsteps_records(const tpa_devsteps *d) { return d->n_rt + d->n_dev; }

size_t tpa_devsteps_apply(tpa_devsteps *d, tpa_step *steps, size_t n, bool *applied, size_t *n_dropped)
{
    return tpa__ds_apply(d, steps, n, applied, n_dropped);
}

void tpa_devsteps_clear(tpa_devsteps *d) { tpa__ds_free(d); }

void tpa_devsteps_free(tpa_devsteps *d)
{
    if (!d) return;
    tpa__ds_free(d);
    free(d);
}
