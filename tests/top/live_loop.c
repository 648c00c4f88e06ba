/* live_loop.c - a training loop with a known step time, for `trainprof top`'s
 * tests and benchmark (public API only).
 *
 *   live_loop [--steps N] [--step_ms MS | --work ITERS] [--stall_at K --stall_s S]
 *             [--samples B] [--times] [--profiling.KEY VALUE ...]
 *
 * Each step: data_wait (10 % of the step), forward (50 %), backward (40 %),
 * each a zone, slept (--step_ms) or computed (--work: ITERS iterations of a
 * dependent multiply-add split the same way); B samples per step. With
 * --stall_at K, step K sleeps S seconds in a zone all_reduce inside
 * backward (no step ends meanwhile).
 * --steps 0 runs until killed. Prints "dir RUN_DIR" once the session is
 * open and "step K" after every 50th step; with --times, each step's own
 * wall time and the training thread's CPU time (ns), "WALL CPU" one step a
 * line after "times". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainprof.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static volatile double g_sink;

static void spend(uint64_t ns, long iters)
{
    if (iters <= 0) {
        sleep_ns(ns);
        return;
    }
    double x = 1.0;
    for (long i = 0; i < iters; i++)
        x = x * 1.0000001 + 1e-9;
    g_sink = x;
}

int main(int argc, char **argv)
{
    tp_config *cfg = tp_config_new();
    tp_error err;
    if (!cfg || tp_config_parse_args(cfg, &argc, argv, &err) != 0) {
        fprintf(stderr, "live_loop: %s\n", cfg ? err.message : "out of memory");
        return 2;
    }
    long steps = 100, stall_at = -1, work = 0, samples = 32;
    double step_ms = 10, stall_s = 0;
    int times = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--times")) {
            times = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "live_loop: unknown or incomplete option '%s'\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--steps")) steps = atol(v);
        else if (!strcmp(a, "--step_ms")) step_ms = atof(v);
        else if (!strcmp(a, "--work")) work = atol(v);
        else if (!strcmp(a, "--stall_at")) stall_at = atol(v);
        else if (!strcmp(a, "--stall_s")) stall_s = atof(v);
        else if (!strcmp(a, "--samples")) samples = atol(v);
        else {
            fprintf(stderr, "live_loop: unknown option '%s'\n", a);
            return 2;
        }
    }
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!s && err.code != TP_OK) {
        fprintf(stderr, "live_loop: %s\n", err.message);
        return 1;
    }
    printf("dir %s\n", s ? tp_session_dir(s) : "-");
    fflush(stdout);
    uint64_t step_ns = (uint64_t)(step_ms * 1e6);
    uint64_t *durs = times && steps > 0 ? calloc((size_t)steps * 2, sizeof *durs) : NULL;
    for (long k = 0; steps == 0 || k < steps; k++) {
        uint64_t t0 = now_ns(), c0 = durs ? thread_cpu_ns() : 0;
        tp_step_begin(s);
        {
            TP_ZONE(s, "data_wait");
            spend(step_ns / 10, work / 10);
        }
        {
            TP_ZONE(s, "forward");
            spend(step_ns / 2, work / 2);
        }
        {
            TP_ZONE(s, "backward");
            spend(step_ns * 2 / 5, work * 2 / 5);
            if (k == stall_at) { /* a hung collective, as top should show it */
                TP_ZONE(s, "all_reduce");
                sleep_ns((uint64_t)(stall_s * 1e9));
            }
        }
        tp_step_end(s, (uint64_t)samples);
        if (durs) {
            durs[2 * k] = now_ns() - t0;
            durs[2 * k + 1] = thread_cpu_ns() - c0;
        }
        if ((k + 1) % 50 == 0) {
            printf("step %ld\n", k + 1);
            fflush(stdout);
        }
    }
    if (durs) {
        printf("times\n");
        for (long k = 0; k < steps; k++)
            printf("%llu %llu\n", (unsigned long long)durs[2 * k], (unsigned long long)durs[2 * k + 1]);
        free(durs);
    }
    int rc = tp_session_close(s, &err);
    if (rc != 0)
        fprintf(stderr, "live_loop: close: %s\n", err.message);
    return rc ? 1 : 0;
}
