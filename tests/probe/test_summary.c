/* Memory signals: robust growth slope, fragmentation, peak vs total. */
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

int main(void)
{
    RUN(growth_is_the_median_of_pairwise_slopes);
    RUN(leak_found_despite_spikes);
    RUN(flat_noise_no_leak);
    RUN(gpu_gap_and_near_full);
    RUN(time_based_growth_without_steps);
    tpi_mem_summary_print(NULL, stdout);
    tpi_mem_summary_free(NULL);
    return tp_test_finish();
}
