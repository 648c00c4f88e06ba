/* html_ds.c - streaming min/max/mean downsampler for the HTML report.
 *
 * Columns cover `width` consecutive points each. When all `cap` columns
 * are used, neighbours merge in pairs and the width doubles, so memory stays
 * at cap columns for any number of points and every column covers the same
 * number of points (the last may be partly filled). */
#include "analyze/page/html.h"

#include "util/dfmt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) abort();
    return p;
}

void tpa_ds_init(tpa_ds *d, int nv, size_t cap)
{
    memset(d, 0, sizeof *d);
    d->nv = nv;
    d->cap = cap < 2 ? 2 : cap + (cap & 1);
    d->width = 1;
    size_t cells = d->cap * (size_t)nv;
    d->x0 = xcalloc(d->cap, sizeof *d->x0);
    d->x1 = xcalloc(d->cap, sizeof *d->x1);
    d->filled = xcalloc(d->cap, sizeof *d->filled);
    d->min = xcalloc(cells, sizeof *d->min);
    d->max = xcalloc(cells, sizeof *d->max);
    d->sum = xcalloc(cells, sizeof *d->sum);
    d->cnt = xcalloc(cells, sizeof *d->cnt);
}

void tpa_ds_free(tpa_ds *d)
{
    free(d->x0); free(d->x1); free(d->filled);
    free(d->min); free(d->max); free(d->sum); free(d->cnt);
    memset(d, 0, sizeof *d);
}

/* Folds column src into column dst (dst < src). */
static void fold(tpa_ds *d, size_t dst, size_t src)
{
    d->x1[dst] = d->x1[src];
    d->filled[dst] += d->filled[src];
    for (int v = 0; v < d->nv; v++) {
        size_t a = dst * (size_t)d->nv + (size_t)v, b = src * (size_t)d->nv + (size_t)v;
        if (!d->cnt[b]) continue;
        if (!d->cnt[a] || d->min[b] < d->min[a]) d->min[a] = d->min[b];
        if (!d->cnt[a] || d->max[b] > d->max[a]) d->max[a] = d->max[b];
        d->sum[a] += d->sum[b];
        d->cnt[a] += d->cnt[b];
    }
}

static void merge_pairs(tpa_ds *d)
{
    size_t w = 0;
    for (size_t i = 0; i < d->n; i += 2, w++) {
        if (w != i) {
            d->x0[w] = d->x0[i];
            d->x1[w] = d->x1[i];
            d->filled[w] = d->filled[i];
            memcpy(&d->min[w * (size_t)d->nv], &d->min[i * (size_t)d->nv], (size_t)d->nv * sizeof *d->min);
            memcpy(&d->max[w * (size_t)d->nv], &d->max[i * (size_t)d->nv], (size_t)d->nv * sizeof *d->max);
            memcpy(&d->sum[w * (size_t)d->nv], &d->sum[i * (size_t)d->nv], (size_t)d->nv * sizeof *d->sum);
            memcpy(&d->cnt[w * (size_t)d->nv], &d->cnt[i * (size_t)d->nv], (size_t)d->nv * sizeof *d->cnt);
        }
        if (i + 1 < d->n) fold(d, w, i + 1);
    }
    d->n = w;
    d->width *= 2;
}

void tpa_ds_add(tpa_ds *d, int64_t x, const double *v)
{
    if (!d->n || d->filled[d->n - 1] >= (uint64_t)d->width) {
        if (d->n == d->cap) merge_pairs(d);
        if (!d->n || d->filled[d->n - 1] >= (uint64_t)d->width) {
            size_t c = d->n++;
            d->x0[c] = x;
            d->filled[c] = 0;
            memset(&d->cnt[c * (size_t)d->nv], 0, (size_t)d->nv * sizeof *d->cnt);
            memset(&d->sum[c * (size_t)d->nv], 0, (size_t)d->nv * sizeof *d->sum);
        }
    }
    size_t c = d->n - 1;
    d->x1[c] = x;
    d->filled[c]++;
    d->points++;
    for (int i = 0; i < d->nv; i++) {
        if (isnan(v[i]) || isinf(v[i])) continue;
        size_t k = c * (size_t)d->nv + (size_t)i;
        if (!d->cnt[k] || v[i] < d->min[k]) d->min[k] = v[i];
        if (!d->cnt[k] || v[i] > d->max[k]) d->max[k] = v[i];
        d->sum[k] += v[i];
        d->cnt[k]++;
    }
}

static void put_num(tpu_buf *b, double v, bool present)
{
    if (!present || !isfinite(v)) { tpu_buf_puts(b, "null"); return; }
    char text[TPU_DFMT_MAX];
    tpu_buf_append(b, text, (size_t)tpu_dfmt_g(text, v, 12)); /* "%.12g" without printf */
}

static void value_rows(const tpa_ds *d, int nv, tpu_buf *b, int which)
{
    tpu_buf_putc(b, '[');
    for (int v = 0; v < nv && v < d->nv; v++) {
        tpu_buf_puts(b, v ? ",[" : "[");
        for (size_t c = 0; c < d->n; c++) {
            size_t k = c * (size_t)d->nv + (size_t)v;
            if (c) tpu_buf_putc(b, ',');
            double x = which == 0 ? d->min[k] : which == 1 ? d->max[k] : d->cnt[k] ? d->sum[k] / d->cnt[k] : 0;
            put_num(b, x, d->cnt[k] != 0);
        }
        tpu_buf_putc(b, ']');
    }
    tpu_buf_putc(b, ']');
}

void tpa_ds_json(const tpa_ds *d, int nv, tpu_buf *b)
{
    tpu_buf_printf(b, "{\"points\":%llu,\"width\":%lld,\"x0\":[", (unsigned long long)d->points, (long long)d->width);
    for (size_t c = 0; c < d->n; c++) { if (c) tpu_buf_putc(b, ','); tpu_buf_put_i64(b, (long long)d->x0[c]); }
    tpu_buf_puts(b, "],\"x1\":[");
    for (size_t c = 0; c < d->n; c++) { if (c) tpu_buf_putc(b, ','); tpu_buf_put_i64(b, (long long)d->x1[c]); }
    tpu_buf_puts(b, "],\"min\":");
    value_rows(d, nv, b, 0);
    tpu_buf_puts(b, ",\"max\":");
    value_rows(d, nv, b, 1);
    tpu_buf_puts(b, ",\"mean\":");
    value_rows(d, nv, b, 2);
    tpu_buf_putc(b, '}');
}
