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
    /* Margins hold on a loaded CI machine: wait for 8 samples (at most 5 s),
     * then the count must not exceed what a 10 ms cadence allows in the time
     * that passed, and stopping must not wait for the next tick. */
    double start = now_s();
    tpi_sampler *s = tpi_sampler_start(p, 10, on_sample, NULL);
    CHECK(s != NULL);
    while (atomic_load(&samples) < 8 && now_s() - start < 5.0)
        usleep(10000);
    double t0 = now_s();
    tpi_sampler_stop(s);
    double stop_s = now_s() - t0;
    CHECK(stop_s < 0.5);
    int n = atomic_load(&samples);
    CHECK(n >= 8);
    CHECK(n <= (int)((now_s() - start) / 0.010) + 3);
    CHECK_EQ_INT(atomic_load(&with_rss), n);
    /* a 60 s interval still stops at once, not at its next tick */
    s = tpi_sampler_start(p, 60000, on_sample, NULL);
    t0 = now_s();
    tpi_sampler_stop(s);
    CHECK(now_s() - t0 < 1.0);
    tpi_sampler_stop(NULL);
    tpi_probes_close(p);
}

int main(void)
{
    setenv("TRAINPROF_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
    RUN(cadence_and_stop);
    return tp_test_finish();
}
