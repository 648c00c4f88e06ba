/*
 * bench_probe - costs of the memory probes, side by side in one run:
 *   one process+system sample (target <= 50 us),
 *   CPU added by a 100 ms background sampler (target <= 0.2 %),
 *   tp_mem_alloc+tp_mem_free pair through the tracker (target <= 60 ns),
 * next to the cost of reading the clock. Prints a table and one JSON line.
 * Usage: bench_probe [seconds_for_sampler=3]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "probe/probe.h"

static double now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double clock_read_ns(void)
{
    enum { N = 2000000 };
    volatile double sink = 0;
    double t0 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < N; i++)
        sink += now_ns(CLOCK_MONOTONIC);
    return (now_ns(CLOCK_MONOTONIC) - t0) / N;
}

/* Median of 2000 single samples (the noisy machine makes the mean jumpy). */
static double sample_us(tpi_probe_set *p, double *p90)
{
    enum { N = 2000 };
    static double t[N];
    static tpi_mem_sample s;
    for (int i = 0; i < N; i++) {
        double t0 = now_ns(CLOCK_MONOTONIC);
        tpi_probes_sample(p, &s);
        t[i] = (now_ns(CLOCK_MONOTONIC) - t0) / 1e3;
    }
    qsort(t, N, sizeof *t, cmp);
    *p90 = t[N * 9 / 10];
    return t[N / 2];
}

static void on_sample(void *ctx, tpi_mem_sample *s)
{
    (void)s;
    ++*(int *)ctx;
}

/* Process CPU while the main thread sleeps = the sampler thread's CPU. */
static double sampler_cpu_percent(tpi_probe_set *p, double secs, int *n)
{
    double c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
    tpi_sampler *s = tpi_sampler_start(p, 100, on_sample, n);
    usleep((useconds_t)(secs * 1e6));
    tpi_sampler_stop(s);
    return 100.0 * (now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / (now_ns(CLOCK_MONOTONIC) - w0);
}

static double alloc_pair_ns(void)
{
    enum { LIVE = 1024, N = 5000000 };
    tpi_alloc_tracker *t = tpi_alloc_tracker_new();
    char *base = malloc(LIVE * 64);
    uint64_t live;
    for (int i = 0; i < LIVE; i++) /* a working set of live blocks */
        tpi_alloc_record(t, base + i * 64, 64, "weights", 1, &live);
    char *mem = malloc(4096 * 64);
    double t0 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < N; i++) {
        char *p = mem + (i & 4095) * 64;
        tpi_alloc_record(t, p, 64, "activations", 2, &live);
        tpi_alloc_release(t, p, "activations", &live);
    }
    double ns = (now_ns(CLOCK_MONOTONIC) - t0) / N;
    tpi_alloc_tracker_free(t);
    free(base);
    free(mem);
    return ns;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 3.0;
    tpi_probe_set *p = tpi_probes_open(NULL, NULL);
    double clk = clock_read_ns(), p90 = 0;
    double us = sample_us(p, &p90);
    int n = 0;
    double cpu = sampler_cpu_percent(p, secs, &n);
    double pair = alloc_pair_ns();
    printf("%-34s %12s %10s %8s\n", "measure", "value", "target", "ok");
    printf("%-34s %9.2f us %7.0f us %8s\n", "process+system sample (median)", us, 50.0,
           us <= 50 ? "yes" : "NO");
    printf("%-34s %9.2f us %10s %8s\n", "process+system sample (p90)", p90, "", "");
    printf("%-34s %10.3f %% %8.1f %% %8s\n", "100 ms sampler CPU", cpu, 0.2, cpu <= 0.2 ? "yes" : "NO");
    printf("%-34s %9.1f ns %7.0f ns %8s\n", "alloc+free pair (tracked)", pair, 60.0,
           pair <= 60 ? "yes" : "NO");
    printf("%-34s %9.1f ns %10s %8s\n", "clock read (reference)", clk, "", "");
    printf("{\"bench\":\"probe\",\"probes\":\"%s\",\"sample_us_median\":%.3f,\"sample_us_p90\":%.3f,"
           "\"sampler_cpu_percent\":%.4f,\"sampler_samples\":%d,\"alloc_free_pair_ns\":%.2f,"
           "\"clock_read_ns\":%.2f,\"pair_over_clock\":%.2f}\n",
           tpi_probes_describe(p), us, p90, cpu, n, pair, clk, pair / clk);
    tpi_probes_close(p);
    return 0;
}
