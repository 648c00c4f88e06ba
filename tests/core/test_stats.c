/* histogram percentiles against a sorted reference; Welford mean/stddev. */
#include <math.h>
#include <stdlib.h>

#include "core/stats.h"
#include "tp_test.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t nearest_rank(const uint64_t *sorted, size_t n, double q)
{
    size_t r = (size_t)ceil(q * (double)n);
    if (r < 1)
        r = 1;
    return sorted[r - 1];
}

TP_TEST(bucket_bounds)
{
    for (uint64_t v = 0; v < 5000000; v += 1 + v / 7) {
        uint64_t w, lo = tpi_hist_lower(tpi_hist_index(v), &w);
        CHECK(lo <= v && v < lo + w);
        CHECK(w == 1 || (double)w / (double)lo <= 1.0 / 32 + 1e-12);
    }
    CHECK(tpi_hist_index(UINT64_MAX) == TPI_HIST_BUCKETS - 1);
}

static void check_distribution(uint64_t (*gen)(unsigned *), const char *what)
{
    enum { N = 20000 };
    static uint64_t v[N];
    tpi_dstat d = {0};
    unsigned seed = 99;
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++) {
        v[i] = gen(&seed);
        tpi_dstat_add(&d, v[i], v[i] / 2);
        sum += (double)v[i];
    }
    double mean = sum / N;
    for (int i = 0; i < N; i++)
        sq += ((double)v[i] - mean) * ((double)v[i] - mean);
    qsort(v, N, sizeof v[0], cmp_u64);
    static const double q[5] = {0.01, 0.5, 0.9, 0.99, 1.0};
    double got[5];
    tpi_hist_quantiles(d.hist, q, 5, d.min_ns, d.max_ns, got);
    for (int k = 0; k < 5; k++) {
        double ref = (double)nearest_rank(v, N, q[k]);
        if (fabs(got[k] - ref) > ref / 64 + 0.5)
            fprintf(stderr, "%s q=%.2f got %.1f ref %.1f\n", what, q[k], got[k], ref);
        CHECK(fabs(got[k] - ref) <= ref / 64 + 0.5);
    }
    CHECK_EQ_INT(d.count, N);
    CHECK_EQ_INT(d.min_ns, v[0]);
    CHECK_EQ_INT(d.max_ns, v[N - 1]);
    CHECK_NEAR(d.mean, mean, mean * 1e-9);
    CHECK_NEAR(tpi_dstat_stddev(&d), sqrt(sq / N), sqrt(sq / N) * 1e-6 + 1e-9);
    tpi_dstat_free(&d);
}

static unsigned rnd(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}
static uint64_t gen_uniform(unsigned *s) { return 1000 + rnd(s) % 100000; }
static uint64_t gen_small(unsigned *s) { return rnd(s) % 200; }
static uint64_t gen_lognormal(unsigned *s)
{
    double u = (rnd(s) + 1.0) / 16777217.0, w = (rnd(s) + 1.0) / 16777217.0;
    double z = sqrt(-2 * log(u)) * cos(6.283185307 * w);
    return (uint64_t)exp(10 + 2 * z);
}
static uint64_t gen_bimodal(unsigned *s) { return rnd(s) % 10 ? 5000 + rnd(s) % 50 : 4000000 + rnd(s) % 1000; }

TP_TEST(percentiles_vs_sorted)
{
    check_distribution(gen_uniform, "uniform");
    check_distribution(gen_small, "small");
    check_distribution(gen_lognormal, "lognormal");
    check_distribution(gen_bimodal, "bimodal");
}

TP_TEST(single_value)
{
    tpi_dstat d = {0};
    tpi_dstat_add(&d, 1234567, 1234567);
    static const double q[3] = {0.5, 0.9, 0.99};
    double got[3];
    tpi_hist_quantiles(d.hist, q, 3, d.min_ns, d.max_ns, got);
    for (int k = 0; k < 3; k++)
        CHECK_NEAR(got[k], 1234567, 0.5);
    CHECK_NEAR(tpi_dstat_stddev(&d), 0, 1e-9);
    tpi_dstat_free(&d);
}

/* The bucket walk as it was first written (a ceil() per bucket): the
 * reference the counted ranks must match exactly. */
static void walk_reference(const tpi_hist *h, const double *q, int n, uint64_t lo, uint64_t hi,
                           double *out)
{
    uint64_t cum = 0;
    int k = 0;
    for (int j = 0; j < n; j++)
        out[j] = 0;
    if (h->count == 0)
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
            out[k++] = v < (double)lo ? (double)lo : v > (double)hi ? (double)hi : v;
        }
    }
    for (; k < n; k++)
        out[k] = (double)hi;
}

/* Random histograms (1 to 5,000 values, spread from nanoseconds to hours,
 * many in one bucket), every quantile set the collector asks and others
 * (0, 1, ties, more than 8): the same doubles as the reference walk. */
TP_TEST(quantiles_match_the_reference_walk)
{
    static const double sets[][10] = {{0.5, 0.9, 0.99}, {0.5, 0.9}, {0, 0.001, 1},
                                      {0.25, 0.25, 0.5, 0.75, 0.75},
                                      {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}};
    static const int sizes[] = {3, 2, 3, 5, 10};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int bad = 0;
    for (int round = 0; round < 2000; round++) {
        tpi_dstat d = {0};
        int n = 1 + (int)(x % 5000);
        for (int i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint64_t v = round % 4 == 0 ? x % 100 : round % 4 == 1 ? 1000 + x % 50
                       : (x >> 20) % (1ull << (x % 50));
            tpi_dstat_add(&d, v, v);
        }
        for (int s = 0; s < 5; s++) {
            double got[10], want[10];
            tpi_hist_quantiles(d.hist, sets[s], sizes[s], d.min_ns, d.max_ns, got);
            walk_reference(d.hist, sets[s], sizes[s], d.min_ns, d.max_ns, want);
            for (int k = 0; k < sizes[s]; k++)
                bad += got[k] != want[k];
        }
        tpi_dstat_free(&d);
    }
    CHECK_EQ_INT(bad, 0);
}

int main(void)
{
    RUN(bucket_bounds);
    RUN(percentiles_vs_sorted);
    RUN(single_value);
    RUN(quantiles_match_the_reference_walk);
    return tp_test_finish();
}
