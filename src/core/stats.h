/*
 * stats.h - streaming statistics of durations (nanoseconds).
 *
 * tpi_hist is a log-linear histogram: values below 64 ns are exact, above
 * that each power of two is split into 32 buckets, so a percentile read from
 * it is within 1/64 (1.6 %) of the true sample value (clamped to [min, max]).
 * Values above 2^45 ns (~9.8 h) share the last bucket. tpi_dstat adds count,
 * total, min, max and Welford mean/variance.
 */
#ifndef TP_CORE_STATS_H
#define TP_CORE_STATS_H

#include <stdint.h>

#define TPI_HIST_SUB_BITS 5
#define TPI_HIST_SUB (1u << TPI_HIST_SUB_BITS)
#define TPI_HIST_MAX_MSB 45
#define TPI_HIST_BUCKETS ((TPI_HIST_MAX_MSB - TPI_HIST_SUB_BITS + 2) * TPI_HIST_SUB)

typedef struct tpi_hist {
    uint64_t count;
    uint64_t b[TPI_HIST_BUCKETS];
} tpi_hist;

unsigned tpi_hist_index(uint64_t v);
/* Lowest value of bucket i and its width. */
uint64_t tpi_hist_lower(unsigned i, uint64_t *width);
void tpi_hist_add(tpi_hist *h, uint64_t v);
/* Values at quantiles q[0..n-1] (ascending, in [0,1]) into out. Nearest rank. */
void tpi_hist_quantiles(const tpi_hist *h, const double *q, int n, uint64_t lo, uint64_t hi,
                        double *out);

typedef struct tpi_dstat {
    uint64_t count;
    uint64_t total_ns, self_ns, min_ns, max_ns;
    double mean, m2;           /* Welford, ns */
    tpi_hist *hist;            /* allocated on first value; NULL on OOM */
} tpi_dstat;

void tpi_dstat_add(tpi_dstat *d, uint64_t dur_ns, uint64_t self_ns);
double tpi_dstat_stddev(const tpi_dstat *d); /* population, ns */
void tpi_dstat_free(tpi_dstat *d);

#endif
