/* Log-linear histogram and running statistics (see stats.h). */
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>

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

/* The ranks (nearest rank, at least 1) are counted once, so the walk over
 * the buckets is an add and a compare per bucket (it ran a ceil() per
 * bucket: ~38,000 instructions an operation, three times at every close). */
void tpi_hist_quantiles(const tpi_hist *h, const double *q, int n, uint64_t lo, uint64_t hi,
                        double *out)
{
    uint64_t rank[8], cum = 0;
    int k = 0;
    for (int j = 0; j < n; j++)
        out[j] = 0;
    if (!h || h->count == 0)
        return;
    if (n > 8) { /* more than the callers ask: each in its own walk */
        for (int j = 0; j < n; j += 8)
            tpi_hist_quantiles(h, q + j, n - j < 8 ? n - j : 8, lo, hi, out + j);
        return;
    }
    for (int j = 0; j < n; j++) {
        double r = ceil(q[j] * (double)h->count);
        rank[j] = !(r >= 1) ? 1 : r > (double)h->count ? h->count + 1 : (uint64_t)r;
    }
    for (unsigned i = 0; i < TPI_HIST_BUCKETS && k < n; i++) {
        cum += h->b[i];
        for (; k < n && cum >= rank[k]; k++) {
            uint64_t w, low = tpi_hist_lower(i, &w);
            double v = w == 1 ? (double)low : (double)low + (double)(w - 1) / 2.0;
            if (v < (double)lo)
                v = (double)lo;
            if (v > (double)hi)
                v = (double)hi;
            out[k] = v;
        }
    }
    for (; k < n; k++)
        out[k] = (double)hi;
}

int tpi_dstat_alloc_hist(tpi_dstat *d)
{
    d->hist = calloc(1, sizeof *d->hist);
    return d->hist != NULL;
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
