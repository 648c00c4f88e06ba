/* Background sampler: cadence, prompt stop. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "probe/probe.h"
#include "tp_test.h"

static atomic_int samples;
static atomic_int with_rss;

static void on_sample(void *ctx, tpi_mem_sample *s)
{
    (void)ctx;
    atomic_fetch_add(&samples, 1);
    if (s->have_process && s->rss_bytes > 0)
        atomic_fetch_add(&with_rss, 1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

TP_TEST(cadence_and_stop)
{
    tpi_probe_set *p = tpi_probes_open(NULL, NULL);
    CHECK(tpi_sampler_start(p, 0, on_sample, NULL) == NULL);
    CHECK(tpi_sampler_start(NULL, 10, on_sample, NULL) == NULL);
    tpi_sampler *s = tpi_sampler_start(p, 10, on_sample, NULL);
    CHECK(s != NULL);
    usleep(200000);
    double t0 = now_s();
    tpi_sampler_stop(s);
    CHECK(now_s() - t0 < 0.05);
    int n = atomic_load(&samples);
    CHECK(n >= 8 && n <= 25);
    CHECK_EQ_INT(atomic_load(&with_rss), n);
    /* a long interval still stops at once */
    s = tpi_sampler_start(p, 60000, on_sample, NULL);
    t0 = now_s();
    tpi_sampler_stop(s);
    CHECK(now_s() - t0 < 0.05);
    tpi_sampler_stop(NULL);
    tpi_probes_close(p);
}

int main(void)
{
    setenv("TRAINPROF_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
    RUN(cadence_and_stop);
    return tp_test_finish();
}
