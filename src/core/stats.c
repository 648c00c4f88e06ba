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
