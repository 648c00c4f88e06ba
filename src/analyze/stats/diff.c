/* diff.c - per-operation and per-step changes between two traces.
 * GPU ops are matched by name across devices (device numbers differ between
 * runs); host ops by name. */
#include "analyze/stats/stats.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int by_kind_name(const void *a, const void *b)
{
    const tpa_op *x = a, *y = b;
    int gx = x->table < 0 ? 0 : x->table == TPA_TABLE_ASYNC ? 2 : 1;
    int gy = y->table < 0 ? 0 : y->table == TPA_TABLE_ASYNC ? 2 : 1;
    if (gx != gy) return gx > gy ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* Sorts ops by (host/gpu, name); equal neighbours are the same diff key. */
static void prepare(tpa_report *r)
{
    if (r->n_ops) qsort(r->ops, r->n_ops, sizeof *r->ops, by_kind_name);
}

static size_t fold(const tpa_report *r, size_t i, uint64_t *count, int64_t *total)
{
    size_t j = i;
    *count = 0;
    *total = 0;
    while (j < r->n_ops && by_kind_name(&r->ops[i], &r->ops[j]) == 0) {
        *count += r->ops[j].count;
        *total = tpa_sat_add(*total, r->ops[j].total_ns);
        j++;
    }
    return j;
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

static int by_change(const void *a, const void *b)
{
    const tpa_diff_row *x = a, *y = b;
    int64_t dx = abs64(x->total_b - x->total_a), dy = abs64(y->total_b - y->total_a);
    if (dx != dy) return dx > dy ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void push(tpa_diff *d, size_t *cap, tpa_diff_row row)
{
    if (d->n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        d->rows = realloc(d->rows, *cap * sizeof *d->rows);
        if (!d->rows) abort();
    }
    d->rows[d->n++] = row;
}

static int64_t host_self_total(const tpa_report *r)
{
    int64_t s = 0;
    for (size_t i = 0; i < r->n_ops; i++)
        if (r->ops[i].table < 0) s = tpa_sat_add(s, r->ops[i].self_ns);
    return s;
}

void tpa_diff_compute(tpa_diff *d, tpa_report *a, tpa_report *b,
                      const tpa_steps_result *sa, const tpa_steps_result *sb)
{
    memset(d, 0, sizeof *d);
    prepare(a);
    prepare(b);
    size_t i = 0, j = 0, cap = 0;
    while (i < a->n_ops || j < b->n_ops) {
        int c = i >= a->n_ops ? 1 : j >= b->n_ops ? -1 : by_kind_name(&a->ops[i], &b->ops[j]);
        tpa_diff_row row = {0};
        const tpa_op *ref = c <= 0 ? &a->ops[i] : &b->ops[j];
        row.name = ref->name;
        row.gpu = ref->table >= 0 && ref->table != TPA_TABLE_ASYNC;
        if (c <= 0) i = fold(a, i, &row.count_a, &row.total_a);
        if (c >= 0) j = fold(b, j, &row.count_b, &row.total_b);
        if (ref->table != TPA_TABLE_ASYNC) push(d, &cap, row);  /* async pairs: not ops */
    }
    if (d->n) qsort(d->rows, d->n, sizeof *d->rows, by_change);
    if (sa->n && sb->n) {
        d->metric = "mean step time";
        d->metric_a = tpa_steps_mean(sa, -1);
        d->metric_b = tpa_steps_mean(sb, -1);
    } else {
        d->metric = "host self time";
        d->metric_a = host_self_total(a);
        d->metric_b = host_self_total(b);
    }
    d->change_pct = d->metric_a ? 100.0 * (double)(d->metric_b - d->metric_a) / (double)d->metric_a : 0.0;
}

void tpa_diff_free(tpa_diff *d)
{
    free(d->rows);
    memset(d, 0, sizeof *d);
}
