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

TP_TEST(leak_found_despite_spikes)
{
    tpi_mem_summary *m = tpi_mem_summary_new();
    for (int i = 0; i < 400; i++) {
        memset(&s, 0, sizeof s);
        s.step = (uint64_t)i;
        s.ts_ns = (uint64_t)i * 100000000ull;
        s.have_process = 1;
        s.rss_bytes = (uint64_t)(500 * MB + 3.1 * MB * i);
        if (i % 37 == 0)
            s.rss_bytes += (uint64_t)(900 * MB); /* spikes do not move the slope */
        s.cpu_percent = 100;
        tpi_mem_summary_add(m, &s);
    }
    char *js = summary_json(m);
    CHECK_CONTAINS(js, "\"possible_leak\":true");
    CHECK_CONTAINS(js, "RSS grows 3.1 MB/step over 399 steps");
    CHECK_CONTAINS(js, "\"mean_cpu_percent\":100");
    free(js);
    tpi_mem_summary_print(m, stdout);
    tpi_mem_summary_free(m);
}

TP_TEST(flat_noise_no_leak)
{
    tpi_mem_summary *m = tpi_mem_summary_new();
    srand(7);
    for (int i = 0; i < 5000; i++) { /* beyond the series bound: decimated */
        memset(&s, 0, sizeof s);
        s.step = (uint64_t)i;
        s.have_process = 1;
        s.rss_bytes = (uint64_t)(800 * MB) + (uint64_t)(rand() % (int)(50 * MB));
        tpi_mem_summary_add(m, &s);
    }
    char *js = summary_json(m);
    CHECK_CONTAINS(js, "\"possible_leak\":false");
    CHECK_CONTAINS(js, "\"signals\":[]");
    CHECK_CONTAINS(js, "\"samples\":5000");
    free(js);
    tpi_mem_summary_free(m);
}

TP_TEST(gpu_gap_and_near_full)
{
    tpi_mem_summary *m = tpi_mem_summary_new();
    for (int i = 0; i < 20; i++) {
        memset(&s, 0, sizeof s);
        s.step = (uint64_t)i;
        s.n_devices = 1;
        strcpy(s.devices[0].mem.device, "cuda:0");
        strcpy(s.devices[0].source, "callback");
        s.devices[0].mem.allocated_bytes = 40 * GIB;
        s.devices[0].mem.reserved_bytes = 76 * GIB;
        s.devices[0].mem.total_bytes = 80 * GIB;
        s.callback_rejected = 2;
        tpi_mem_summary_add(m, &s);
    }
    char *js = summary_json(m);
    CHECK_CONTAINS(js, "\"max_reserved_minus_allocated_bytes\":38654705664");
    CHECK_CONTAINS(js, "\"fragmentation\":true");
    CHECK_CONTAINS(js, "cuda:0: reserved exceeds allocated by 36.00 GB (47% of reserved)");
    CHECK_CONTAINS(js, "cuda:0: peak 76.00 of 80.00 GB (95%)");
    CHECK_CONTAINS(js, "\"callback_rejected\":2");
    CHECK_CONTAINS(js, "\"peak_percent_of_total\":95");
    free(js);
    tpi_mem_summary_free(m);
}

TP_TEST(time_based_growth_without_steps)
{
    tpi_mem_summary *m = tpi_mem_summary_new();
    for (int i = 0; i < 100; i++) {
        memset(&s, 0, sizeof s);
        s.ts_ns = (uint64_t)i * 1000000000ull;
        s.have_process = 1;
        s.rss_bytes = (uint64_t)(100 * MB + 2 * MB * i);
        tpi_mem_summary_add(m, &s);
    }
    char *js = summary_json(m);
    CHECK_CONTAINS(js, "RSS grows 2.0 MB/s over 99 seconds");
    CHECK_CONTAINS(js, "\"rss_growth_bytes_per_second\":2097152");
    free(js);
    tpi_mem_summary_free(m);
}

int main(void)
{
    RUN(leak_found_despite_spikes);
    RUN(flat_noise_no_leak);
    RUN(gpu_gap_and_near_full);
    RUN(time_based_growth_without_steps);
    tpi_mem_summary_print(NULL, stdout);
    tpi_mem_summary_free(NULL);
    return tp_test_finish();
}
