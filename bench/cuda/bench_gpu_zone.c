/*
 * bench_gpu_zone.c - CPU cost of TP_GPU_ZONE next to TP_ZONE, side by side
 * in one run. The CUDA runtime is the one TRAINPROF_CUDART_LIB names: the
 * real libcudart.so (needs a GPU) gives the whole cost; the tests' fake
 * (build/tests/probe/fakegpu/libcudart.so, no-op events) isolates
 * trainprof's own share (event-pair pool, queue, CPU zone).
 *
 *   TRAINPROF_CUDART_LIB=... bench_gpu_zone [zones_per_step] [steps]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "trainprof.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int per_step = argc > 1 ? atoi(argv[1]) : 1000, steps = argc > 2 ? atoi(argv[2]) : 200;
    if (!getenv("TRAINPROF_CUDART_LIB")) {
        fprintf(stderr, "bench_gpu_zone: set TRAINPROF_CUDART_LIB (real or fake libcudart.so)\n");
        return 2;
    }
    char dir[] = "/tmp/trainprof_bench_gpu_zone_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    tp_config *c = tp_config_new();
    const char *kv[][2] = {{"log_dir", dir}, {"metrics", "none"}, {"trace", "false"},
                           {"memory", "false"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        tp_config_set(c, kv[i][0], kv[i][1], NULL);
    tp_session *s = tp_session_open(c, NULL);
    tp_config_free(c);
    if (!s)
        return 1;
    double gpu = 0, cpu = 0;
    for (int r = 0; r < steps; r++) {
        double t0 = now_s();
        for (int i = 0; i < per_step; i++) {
            TP_GPU_ZONE(s, 0, "gpu_zone");
        }
        double t1 = now_s();
        for (int i = 0; i < per_step; i++) {
            TP_ZONE(s, "cpu_zone");
        }
        double t2 = now_s();
        gpu += t1 - t0;
        cpu += t2 - t1;
        tp_step_end(s, 1);
        struct timespec pause = {0, 2000000}; /* the collector resolves the pairs */
        nanosleep(&pause, NULL);
    }
    tp_session_stats st;
    tp_session_get_stats(s, &st);
    double n = (double)per_step * steps;
    printf("TP_GPU_ZONE %.1f ns, TP_ZONE %.1f ns per zone (x%.2f); %llu zones lost\n",
           gpu / n * 1e9, cpu / n * 1e9, gpu / cpu, (unsigned long long)st.events_dropped);
    tp_session_close(s, NULL);
    return 0;
}
