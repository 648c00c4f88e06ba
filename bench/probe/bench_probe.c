/*
 * bench_probe - costs of the memory probes, side by side in one run:
 *   one process+system sample (target <= 50 us),
 *   CPU added by a 100 ms background sampler (target <= 0.2 %),
 *   tp_mem_alloc+tp_mem_free pair through the tracker (target <= 60 ns),
 *   the same pair through the public API (a session with memory on, then
 *   with profile_memory on: one [memory] trace record per call more), and
 *   through the tracker with 2 threads at once (each its own blocks),
 * next to the cost of reading the clock, each measured 5 times interleaved
 * (medians: the shared VM is noisy). Prints a table and one JSON line.
 * Usage: bench_probe [seconds_for_sampler=3]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "probe/probe.h"
#include "trainprof.h"

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

enum { PAIRS = 2000000, LIVE = 1024 };

/* PAIRS alloc+free pairs of 64-byte blocks over a 4096-block ring, with
 * LIVE other blocks live (a working set), straight into the tracker. */
static double tracker_pairs_ns(tpi_alloc_tracker *t, char *mem)
{
    uint64_t live;
    double t0 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < PAIRS; i++) {
        char *p = mem + (i & 4095) * 64;
        tpi_alloc_record(t, p, 64, "activations", 2, &live);
        tpi_alloc_release(t, p, "activations", &live);
    }
    return (now_ns(CLOCK_MONOTONIC) - t0) / PAIRS;
}

static double alloc_pair_ns(void)
{
    tpi_alloc_tracker *t = tpi_alloc_tracker_new();
    char *base = malloc(LIVE * 64), *mem = malloc(4096 * 64);
    uint64_t live;
    for (int i = 0; i < LIVE; i++)
        tpi_alloc_record(t, base + i * 64, 64, "weights", 1, &live);
    double ns = tracker_pairs_ns(t, mem);
    tpi_alloc_tracker_free(t);
    free(base);
    free(mem);
    return ns;
}

typedef struct mt_arg {
    tpi_alloc_tracker *t;
    char *mem;
    double ns;
} mt_arg;

static void *mt_worker(void *a)
{
    mt_arg *m = a;
    m->ns = tracker_pairs_ns(m->t, m->mem);
    return NULL;
}

/* Two threads on one tracker at once: ns per pair per thread (mean). */
static double alloc_pair_2threads_ns(void)
{
    tpi_alloc_tracker *t = tpi_alloc_tracker_new();
    mt_arg a[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        a[i] = (mt_arg){t, malloc(4096 * 64), 0};
        pthread_create(&th[i], NULL, mt_worker, &a[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        free(a[i].mem);
    }
    tpi_alloc_tracker_free(t);
    return (a[0].ns + a[1].ns) / 2;
}

/* tp_mem_alloc + tp_mem_free through a session (memory probes on, sampled
 * never; trace and console off). */
static double api_pair_ns(int profile_memory)
{
    char dir[] = "/tmp/tp_bench_probe_XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    tp_config *cfg = tp_config_new();
    tp_error err;
    tp_config_set(cfg, "log_dir", dir, &err);
    tp_config_set(cfg, "trace", "false", &err);
    tp_config_set(cfg, "metrics", "", &err);
    tp_config_set(cfg, "log_every", "0", &err);
    tp_config_set(cfg, "memory_every_n_steps", "0", &err);
    tp_config_set(cfg, "profile_memory", profile_memory ? "true" : "false", &err);
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!s) {
        fprintf(stderr, "bench_probe: session: %s\n", err.message);
        return -1;
    }
    char *mem = malloc(4096 * 64);
    enum { N = PAIRS / 4 }; /* profile_memory: 3 records per call fill buffers */
    double t0 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < N; i++) {
        char *p = mem + (i & 4095) * 64;
        tp_mem_alloc(s, p, 64, "activations");
        tp_mem_free(s, p, "activations");
    }
    double ns = (now_ns(CLOCK_MONOTONIC) - t0) / N;
    tp_session_close(s, NULL);
    free(mem);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_probe: cannot remove %s\n", dir);
    return ns;
}

static double median5(double v[5])
{
    qsort(v, 5, sizeof *v, cmp);
    return v[2];
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 3.0;
    tpi_probe_set *p = tpi_probes_open(NULL, NULL);
    double clk, p90 = 0;
    double us = sample_us(p, &p90);
    int n = 0;
    double cpu = sampler_cpu_percent(p, secs, &n);
    double vc[5], vp[5], vm[5], va[5], vq[5];
    for (int r = 0; r < 5; r++) { /* interleaved, so drifts of the VM hit all alike */
        vc[r] = clock_read_ns();
        vp[r] = alloc_pair_ns();
        vm[r] = alloc_pair_2threads_ns();
        va[r] = api_pair_ns(0);
        vq[r] = api_pair_ns(1);
    }
    clk = median5(vc);
    double pair = median5(vp), pair2 = median5(vm), api = median5(va), apim = median5(vq);
    printf("%-34s %12s %10s %8s\n", "measure", "value", "target", "ok");
    printf("%-34s %9.2f us %7.0f us %8s\n", "process+system sample (median)", us, 50.0,
           us <= 50 ? "yes" : "NO");
    printf("%-34s %9.2f us %10s %8s\n", "process+system sample (p90)", p90, "", "");
    printf("%-34s %10.3f %% %8.1f %% %8s\n", "100 ms sampler CPU", cpu, 0.2, cpu <= 0.2 ? "yes" : "NO");
    printf("%-34s %9.1f ns %7.0f ns %8s\n", "alloc+free pair (tracked)", pair, 60.0,
           pair <= 60 ? "yes" : "NO");
    printf("%-34s %9.1f ns %10s %8s\n", "  same, 2 threads at once", pair2, "", "");
    printf("%-34s %9.1f ns %7.0f ns %8s\n", "tp_mem_alloc+tp_mem_free (API)", api, 60.0,
           api <= 60 ? "yes" : "NO");
    printf("%-34s %9.1f ns %10s %8s\n", "  same, profile_memory on", apim, "", "");
    printf("%-34s %9.1f ns %10s %8s\n", "clock read (reference)", clk, "", "");
    printf("{\"bench\":\"probe\",\"probes\":\"%s\",\"sample_us_median\":%.3f,\"sample_us_p90\":%.3f,"
           "\"sampler_cpu_percent\":%.4f,\"sampler_samples\":%d,\"alloc_free_pair_ns\":%.2f,"
           "\"alloc_free_pair_2threads_ns\":%.2f,\"api_pair_ns\":%.2f,"
           "\"api_pair_profile_memory_ns\":%.2f,\"clock_read_ns\":%.2f,\"pair_over_clock\":%.2f,"
           "\"api_pair_over_clock\":%.2f}\n",
           tpi_probes_describe(p), us, p90, cpu, n, pair, pair2, api, apim, clk, pair / clk,
           api / clk);
    tpi_probes_close(p);
    return 0;
}
