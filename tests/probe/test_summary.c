/* Memory signals: robust growth slope, fragmentation, peak vs total. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"
#include "tp_test.h"
#include "util/json.h"

#define MB (1024.0 * 1024.0)
#define GIB (1ull << 30)

static char *summary_json(tpi_mem_summary *m)
{
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    tpu_json_begin_object(&j);
    tpi_mem_summary_write_json(m, &j);
    tpu_json_end_object(&j);
    return tpu_buf_detach(&b);
}

static tpi_mem_sample s;

/* Summary JSON of n samples, sample i zeroed then set by fill(i); the
 * console lines too when print. */
static char *series_json(int n, void (*fill)(int i), int print)
{
    tpi_mem_summary *m = tpi_mem_summary_new();
    for (int i = 0; i < n; i++) {
        memset(&s, 0, sizeof s);
        fill(i);
        tpi_mem_summary_add(m, &s);
    }
    char *js = summary_json(m);
    if (print)
        tpi_mem_summary_print(m, stdout);
    tpi_mem_summary_free(m);
    return js;
}

static void leak_with_spikes(int i)
{
    s.step = (uint64_t)i;
    s.ts_ns = (uint64_t)i * 100000000ull;
    s.have_process = 1;
    s.rss_bytes = (uint64_t)(500 * MB + 3.1 * MB * i);
    if (i % 37 == 0)
        s.rss_bytes += (uint64_t)(900 * MB); /* spikes do not move the slope */
    s.cpu_percent = 100;
}

TP_TEST(leak_found_despite_spikes)
{
    char *js = series_json(400, leak_with_spikes, 1);
    CHECK_CONTAINS(js, "\"possible_leak\":true");
    CHECK_CONTAINS(js, "RSS grows 3.1 MB/step over 399 steps");
    CHECK_CONTAINS(js, "\"mean_cpu_percent\":100");
    free(js);
}

/* Issue 33: the example CNN's RSS grows ~0.1 MB/step, then drops at step
 * 250 (its caches released): the slope is positive, the growth comes back. */
static void grows_then_given_back(int i)
{
    s.step = (uint64_t)i;
    s.have_process = 1;
    s.rss_bytes = (uint64_t)(300 * MB + (i < 250 ? 0.12 * MB * i : 2 * MB));
}

TP_TEST(growth_that_comes_back_is_no_leak)
{
    char *js = series_json(320, grows_then_given_back, 0);
    CHECK_CONTAINS(js, "\"possible_leak\":false");
    CHECK_CONTAINS(js, "\"signals\":[]");
    free(js);
}

/* the same rise, kept to the end: still a leak */
static void grows_and_stays(int i)
{
    s.step = (uint64_t)i;
    s.have_process = 1;
    s.rss_bytes = (uint64_t)(300 * MB + 0.12 * MB * (i < 250 ? i : 250));
}

TP_TEST(growth_kept_to_the_end_is_a_leak)
{
    char *js = series_json(320, grows_and_stays, 0);
    CHECK_CONTAINS(js, "\"possible_leak\":true");
    free(js);
}

static void flat_noise(int i)
{
    s.step = (uint64_t)i;
    s.have_process = 1;
    s.rss_bytes = (uint64_t)(800 * MB) + (uint64_t)(rand() % (int)(50 * MB));
}

TP_TEST(flat_noise_no_leak)
{
    srand(7);
    char *js = series_json(5000, flat_noise, 0); /* beyond the series bound: decimated */
    CHECK_CONTAINS(js, "\"possible_leak\":false");
    CHECK_CONTAINS(js, "\"signals\":[]");
    CHECK_CONTAINS(js, "\"samples\":5000");
    free(js);
}

static void gpu_gap(int i)
{
    s.step = (uint64_t)i;
    s.n_devices = 1;
    strcpy(s.devices[0].mem.device, "cuda:0");
    strcpy(s.devices[0].source, "callback");
    s.devices[0].mem.allocated_bytes = 40 * GIB;
    s.devices[0].mem.reserved_bytes = 76 * GIB;
    s.devices[0].mem.total_bytes = 80 * GIB;
    s.callback_rejected = 2;
}

TP_TEST(gpu_gap_and_near_full)
{
    char *js = series_json(20, gpu_gap, 0);
    CHECK_CONTAINS(js, "\"max_reserved_minus_allocated_bytes\":38654705664");
    CHECK_CONTAINS(js, "\"fragmentation\":true");
    CHECK_CONTAINS(js, "cuda:0: reserved exceeds allocated by 36.00 GB (47% of reserved)");
    CHECK_CONTAINS(js, "cuda:0: peak 76.00 of 80.00 GB (95%)");
    CHECK_CONTAINS(js, "\"callback_rejected\":2");
    CHECK_CONTAINS(js, "\"peak_percent_of_total\":95");
    free(js);
}

static void growth_in_time(int i)
{
    s.ts_ns = (uint64_t)i * 1000000000ull;
    s.have_process = 1;
    s.rss_bytes = (uint64_t)(100 * MB + 2 * MB * i);
}

TP_TEST(time_based_growth_without_steps)
{
    char *js = series_json(100, growth_in_time, 0);
    CHECK_CONTAINS(js, "RSS grows 2.0 MB/s over 99 seconds");
    CHECK_CONTAINS(js, "\"rss_growth_bytes_per_second\":2097152");
    free(js);
}

/* Four steps: six pairwise slopes 12, 6, 16, 0, 18, 36 (MB/step), an even
 * count with the middle two 12 and 16: the median is their mean, 14. */
static void even_pairs(int i)
{
    static const int mb[4] = {0, 12, 12, 48};
    s.step = (uint64_t)i;
    s.ts_ns = (uint64_t)i * 1000000000ull;
    s.have_process = 1;
    s.rss_bytes = (uint64_t)((100 + mb[i]) * MB);
}

/* Many equal slopes (a flat run with one step up): the median is one of
 * the ties, found without sorting. */
static void ties(int i)
{
    s.step = (uint64_t)i;
    s.ts_ns = (uint64_t)i * 1000000000ull;
    s.have_process = 1;
    s.rss_bytes = (uint64_t)((100 + (i >= 300 ? 64 : 0)) * MB);
}

TP_TEST(growth_is_the_median_of_pairwise_slopes)
{
    char *js = series_json(4, even_pairs, 0);
    CHECK_CONTAINS(js, "\"rss_growth_bytes_per_step\":14680064");
    free(js);
    js = series_json(512, ties, 0);
    CHECK_CONTAINS(js, "\"rss_growth_bytes_per_step\":0");
    free(js);
}

/* The exact median of the pairwise slopes, by sorting them all. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double reference_median(const double *x, const double *y, int n)
{
    double *v = malloc(sizeof *v * (size_t)n * (size_t)n);
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (x[j] != x[i])
                v[k++] = (y[j] - y[i]) / (x[j] - x[i]);
    qsort(v, k, sizeof *v, cmp_double);
    double med = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
    free(v);
    return med;
}

/* Series of every size up to the 512 kept (the larger ones take the
 * sampled bracket, the smaller all pairs), linear, noisy, spiky, stepped
 * (many equal slopes), flat, with repeated steps: the slope written is the
 * median of all pairwise slopes, to the last bit. */
TP_TEST(growth_is_the_exact_median_for_every_shape)
{
    static double x[512], y[512];
    uint64_t r = 0x2545f4914f6cdd1dull;
    int bad = 0;
    for (int round = 0; round < 140 && bad < 5; round++) {
        int n = 2 + (int)(r % 511);
        int shape = round % 7;
        tpi_mem_summary *m = tpi_mem_summary_new();
        uint64_t step = 0;
        for (int i = 0; i < n; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            double noise = (double)(r % 1000003) - 500000.0;
            double v = shape == 0 ? 1e8 + 3e6 * i + noise
                     : shape == 1 ? 1e8 + noise * 50
                     : shape == 2 ? 1e8 + 1e6 * i + (r % 9 == 0 ? 9e8 : 0)
                     : shape == 3 ? 1e8 + (i >= n / 2 ? 64e6 : 0)
                     : shape == 4 ? 2e8
                     : shape == 5 ? 1e8 + 4096.0 * (double)(r % 5) * i
                     : 1e8 + 1e6 * (double)(r % 4) + 1e6 * (i / 64); /* ties at the bracket's ends */
            step += shape == 5 && r % 3 == 0 ? 0 : 1; /* repeated steps: pairs left out */
            memset(&s, 0, sizeof s);
            s.step = step;
            s.ts_ns = (uint64_t)i * 1000000ull;
            s.have_process = 1;
            s.rss_bytes = (uint64_t)v;
            tpi_mem_summary_add(m, &s);
            x[i] = (double)step;
            y[i] = (double)s.rss_bytes;
        }
        char *js = summary_json(m);
        tpi_mem_summary_free(m);
        const char *at = strstr(js, "\"rss_growth_bytes_per_step\":");
        if (x[n - 1] - x[0] >= 1) {
            double want = reference_median(x, y, n);
            double got = at ? strtod(at + strlen("\"rss_growth_bytes_per_step\":"), NULL) : -1;
            if (got != want && bad++ < 5)
                fprintf(stderr, "  n=%d shape %d: slope %.17g, median of all pairs %.17g\n", n,
                        shape, got, want);
        }
        free(js);
    }
    CHECK_EQ_INT(bad, 0);
}

/* 120 steps, the first 85 on one line: 85 * 84 / 2 = 3570 of the 7140
 * slopes are equal (half of them), the others all steeper (or, with
 * sign -1, all less steep). The median is the mean of the tie and the
 * nearest slope past it, found at the end of the sampled bracket. */
static int half_ties_sign = 1;
static void half_ties(int i)
{
    s.step = (uint64_t)i;
    s.ts_ns = (uint64_t)i * 1000000000ull;
    s.have_process = 1;
    double y = 1e6 * i + (i > 84 ? 3e5 * (i - 84) : 0);
    s.rss_bytes = (uint64_t)(4e8 + half_ties_sign * y);
}

TP_TEST(growth_median_next_to_half_ties)
{
    static double x[120], y[120];
    for (int sign = -1; sign <= 1; sign += 2) {
        half_ties_sign = sign;
        for (int i = 0; i < 120; i++) {
            half_ties(i);
            x[i] = (double)s.step;
            y[i] = (double)s.rss_bytes;
        }
        char *js = series_json(120, half_ties, 0);
        const char *key = "\"rss_growth_bytes_per_step\":", *at = strstr(js, key);
        CHECK(at != NULL);
        double got = at ? strtod(at + strlen(key), NULL) : 0, want = reference_median(x, y, 120);
        CHECK(got == want);
        CHECK(got != sign * 1e6); /* not the tie itself */
        free(js);
    }
}

int main(void)
{
    RUN(growth_is_the_median_of_pairwise_slopes);
    RUN(growth_is_the_exact_median_for_every_shape);
    RUN(growth_median_next_to_half_ties);
    RUN(leak_found_despite_spikes);
    RUN(flat_noise_no_leak);
    RUN(growth_that_comes_back_is_no_leak);
    RUN(growth_kept_to_the_end_is_a_leak);
    RUN(gpu_gap_and_near_full);
    RUN(time_based_growth_without_steps);
    tpi_mem_summary_print(NULL, stdout);
    tpi_mem_summary_free(NULL);
    return tp_test_finish();
}
