/*
 * bench_cuda.cu - GPU-only targets of issue 13, measured side by side in
 * one process (ratios, rounds interleaved so machine noise hits all modes):
 *   1. kernel capture overhead: a step of LAUNCHES tiny kernels + one stream
 *      synchronize, with no session / a session without CUPTI / CUPTI on but
 *      outside trace windows (must cost nothing) / CUPTI in an active window;
 *   2. TP_GPU_ZONE CPU cost per zone (begin + end), next to TP_ZONE's;
 *   3. memory bound: a window with max_buffer_mb=1 drops and counts.
 * Without a GPU it says so and exits 0 (nothing to measure).
 *
 *   bench_cuda [--steps N] [--launches N] [--rounds N]
 * CUPTI must be loadable: LD_LIBRARY_PATH with the toolkit's lib64, or
 * TRAINPROF_CUPTI_LIB=/usr/local/cuda/lib64/libcupti.so.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainprof.h"

__global__ void tiny(float *x) { x[threadIdx.x] += 1.0f; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum mode { NO_SESSION, NO_CUPTI, CUPTI_OUTSIDE, CUPTI_WINDOW, NMODES };
static const char *const MODE_NAMES[NMODES] = {"no session", "session, cuda off",
                                               "CUPTI on, outside windows", "CUPTI in window"};

static tp_session *open_mode(enum mode m, const char *dir, int max_mb)
{
    if (m == NO_SESSION)
        return NULL;
    tp_config *c = tp_config_new();
    char mb[32];
    snprintf(mb, sizeof mb, "%d", max_mb);
    const char *kv[][2] = {{"log_dir", dir}, {"metrics", "none"}, {"memory", "false"},
                           {"cuda", m == NO_CUPTI ? "false" : "true"}, {"max_buffer_mb", mb},
                           {"skip_first", m == CUPTI_OUTSIDE ? "1000000000" : "0"},
                           {"wait", "0"}, {"warmup", "0"}, {"active", "1000000"}};
    tp_error e;
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (tp_config_set(c, kv[i][0], kv[i][1], &e) != 0)
            fprintf(stderr, "bench_cuda: %s\n", e.message);
    tp_session *s = tp_session_open(c, &e);
    tp_config_free(c);
    if (!s)
        fprintf(stderr, "bench_cuda: %s\n", e.message);
    return s;
}

/* Seconds per step of `steps` steps of `launches` kernels. */
static double run_steps(tp_session *s, cudaStream_t st, float *x, int steps, int launches)
{
    double t0 = now_s();
    for (int i = 0; i < steps; i++) {
        tp_step_begin(s);
        {
            TP_ZONE(s, "launches");
            for (int k = 0; k < launches; k++)
                tiny<<<1, 32, 0, st>>>(x);
        }
        cudaStreamSynchronize(st);
        tp_step_end(s, 1);
    }
    return (now_s() - t0) / steps;
}

static void zone_cost(cudaStream_t st, const char *dir)
{
    enum { N = 200000 };
    tp_session *s = open_mode(NO_CUPTI, dir, 64);
    double t0 = now_s();
    for (int i = 0; i < N; i++) {
        TP_GPU_ZONE(s, st, "gpu_zone");
    }
    double gz = (now_s() - t0) / N;
    t0 = now_s();
    for (int i = 0; i < N; i++) {
        TP_ZONE(s, "cpu_zone");
    }
    double cz = (now_s() - t0) / N;
    cudaStreamSynchronize(st);
    tp_session_close(s, NULL);
    printf("TP_GPU_ZONE CPU cost: %.3f us per zone (target <= 2 us); TP_ZONE: %.3f us\n",
           gz * 1e6, cz * 1e6);
}

static void bound(cudaStream_t st, float *x, const char *dir)
{
    tp_session *s = open_mode(CUPTI_WINDOW, dir, 1);
    run_steps(s, st, x, 2, 200000);
    tp_session_stats stats;
    tp_session_get_stats(s, &stats);
    tp_session_close(s, NULL);
    printf("max_buffer_mb=1, 400000 launches in a window: %llu events dropped and counted\n",
           (unsigned long long)stats.events_dropped);
}

int main(int argc, char **argv)
{
    int steps = 50, launches = 200, rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--launches"))
            launches = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
    }
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("bench_cuda: no GPU (%s): nothing measured\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 0;
    }
    char dir[] = "/tmp/trainprof_bench_cuda_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    cudaStream_t st;
    float *x;
    cudaStreamCreate(&st);
    cudaMalloc(&x, 32 * sizeof(float));
    run_steps(NULL, st, x, 10, launches); /* warm the GPU and the driver */
    double sum[NMODES] = {0};
    for (int r = 0; r < rounds; r++) {
        for (int m = 0; m < NMODES; m++) {
            tp_session *s = open_mode((enum mode)m, dir, 64);
            sum[m] += run_steps(s, st, x, steps, launches);
            tp_session_close(s, NULL);
        }
    }
    printf("%d rounds x %d steps x %d kernel launches + 1 sync per step\n", rounds, steps, launches);
    for (int m = 0; m < NMODES; m++)
        printf("  %-28s %9.3f us/step  x%.3f\n", MODE_NAMES[m], sum[m] / rounds * 1e6,
               sum[m] / sum[NO_SESSION]);
    zone_cost(st, dir);
    bound(st, x, dir);
    cudaFree(x);
    cudaStreamDestroy(st);
    printf("traces in %s\n", dir);
    return 0;
}
