/* Log-linear histogram and running statistics (see stats.h). */
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>

unsigned tpi_hist_index(uint64_t v)
{
    if (v < 2 * TPI_HIST_SUB)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    if (msb > TPI_HIST_MAX_MSB)
        return TPI_HIST_BUCKETS - 1;
    unsigned shift = msb - TPI_HIST_SUB_BITS;
    return (shift + 1) * TPI_HIST_SUB + (unsigned)((v >> shift) - TPI_HIST_SUB);
}

uint64_t tpi_hist_lower(unsigned i, uint64_t *width)
{
    if (i < 2 * TPI_HIST_SUB) {
        *width = 1;
        return i;
    }
    unsigned shift = i / TPI_HIST_SUB - 1;
    *width = 1ull << shift;
    return ((uint64_t)(i % TPI_HIST_SUB) + TPI_HIST_SUB) << shift;
}

void tpi_hist_add(tpi_hist *h, uint64_t v)
{
    h->b[tpi_hist_index(v)]++;
    h->count++;
}

void tpi_hist_quantiles(const tpi_hist *h, const double *q, int n, uint64_t lo, uint64_t hi,
                        double *out)
{
    uint64_t cum = 0;
    int k = 0;
    for (int j = 0; j < n; j++)
        out[j] = 0;
    if (!h || h->count == 0)
        return;
    for (unsigned i = 0; i < TPI_HIST_BUCKETS && k < n; i++) {
        cum += h->b[i];
        while (k < n) {
            double rank = ceil(q[k] * (double)h->count);
            if (rank < 1)
                rank = 1;
            if ((double)cum < rank)
                break;
            uint64_t w, low = tpi_hist_lower(i, &w);
            double v = w == 1 ? (double)low : (double)low + (double)(w - 1) / 2.0;
            if (v < (double)lo)
                v = (double)lo;
            if (v > (double)hi)
                v = (double)hi;
            out[k++] = v;
        }
    }
    for (; k < n; k++)
        out[k] = (double)hi;
}

void tpi_dstat_add(tpi_dstat *d, uint64_t dur_ns, uint64_t self_ns)
{
    if (d->count == 0 || dur_ns < d->min_ns)
        d->min_ns = dur_ns;
    if (dur_ns > d->max_ns)
        d->max_ns = dur_ns;
    d->count++;
    d->total_ns += dur_ns;
    d->self_ns += self_ns;
    double x = (double)dur_ns, delta = x - d->mean;
    d->mean += delta / (double)d->count;
    d->m2 += delta * (x - d->mean);
    if (!d->hist)
        d->hist = calloc(1, sizeof *d->hist);
    if (d->hist)
        tpi_hist_add(d->hist, dur_ns);
}

double tpi_dstat_stddev(const tpi_dstat *d)
{
    return d->count ? sqrt(d->m2 / (double)d->count) : 0.0;
}

void tpi_dstat_free(tpi_dstat *d)
{
    free(d->hist);
    d->hist = NULL;
}
