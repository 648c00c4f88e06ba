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

#include <stddef.h>
#include <stdint.h>

#define TPI_HIST_SUB_BITS 5
#define TPI_HIST_SUB (1u << TPI_HIST_SUB_BITS)
#define TPI_HIST_MAX_MSB 45
#define TPI_HIST_BUCKETS ((TPI_HIST_MAX_MSB - TPI_HIST_SUB_BITS + 2) * TPI_HIST_SUB)

typedef struct tpi_hist {
    uint64_t count;
    uint64_t b[TPI_HIST_BUCKETS];
} tpi_hist;

/* Inline: the collector adds one value per closed zone (bench_steps'
 * callgrind count: the calls cost as much as the work). */
static inline unsigned tpi_hist_index(uint64_t v)
{
    if (v < 2 * TPI_HIST_SUB)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    if (msb > TPI_HIST_MAX_MSB)
        return TPI_HIST_BUCKETS - 1;
    unsigned shift = msb - TPI_HIST_SUB_BITS;
    return (shift + 1) * TPI_HIST_SUB + (unsigned)((v >> shift) - TPI_HIST_SUB);
}

/* Lowest value of bucket i and its width. */
uint64_t tpi_hist_lower(unsigned i, uint64_t *width);

static inline void tpi_hist_add(tpi_hist *h, uint64_t v)
{
    h->b[tpi_hist_index(v)]++;
    h->count++;
}
/* Values at quantiles q[0..n-1] (ascending, in [0,1]) into out. Nearest rank. */
void tpi_hist_quantiles(const tpi_hist *h, const double *q, int n, uint64_t lo, uint64_t hi,
                        double *out);

typedef struct tpi_dstat {
    uint64_t count;
    uint64_t total_ns, self_ns, min_ns, max_ns;
    double mean, m2;           /* Welford, ns */
    tpi_hist *hist;            /* allocated on first value; NULL on OOM */
} tpi_dstat;

/* Allocates d->hist (first value); 0 on OOM (the value is then kept in
 * the scalars only). */
int tpi_dstat_alloc_hist(tpi_dstat *d);

static inline void tpi_dstat_add(tpi_dstat *d, uint64_t dur_ns, uint64_t self_ns)
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
    if (__builtin_expect(d->hist != NULL, 1) || tpi_dstat_alloc_hist(d))
        tpi_hist_add(d->hist, dur_ns);
}
double tpi_dstat_stddev(const tpi_dstat *d); /* population, ns */
void tpi_dstat_free(tpi_dstat *d);

#endif
