/* bench_flight - costs of the flight recorder (issue 34, docs/CAPTURES.md):
 *   1. the ring's memory after 10 steps of 100 zones (target < 4 MB);
 *   2. a capture's cost on the training thread: tp_session_capture's call
 *      and the steps around a capture the collector writes, against steps
 *      without one (target <= 5 ms; the collector does the writing);
 *   3. the hang dump's latency: from the timeout (last step end +
 *      hang_timeout) to the capture written (target <= 2 s).
 * The always-on cost per zone and per step is measured side by side with
 * bench_steps and callgrind (bench/core/bench_flight.py).
 * usage: bench_flight [steps_between_captures=50] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/collector_internal.h"
#include "trainprof.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static volatile double g_sink;

static tp_session *open_session(const char *dir, const char *hang)
{
    tp_config *cfg = tp_config_new();
    tp_error err;
    const char *kv[] = {"log_dir", dir, "log_every", "0", "memory", "true", "metrics", "none",
                        "trace", "false", "html_report", "false", "capture_slow_step", "0",
                        "captures_max", "1000", "hang_timeout", hang, NULL};
    for (int i = 0; kv[i]; i += 2)
        if (tp_config_set(cfg, kv[i], kv[i + 1], &err) != 0)
            fprintf(stderr, "bench_flight: %s: %s\n", kv[i], err.message);
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!s)
        fprintf(stderr, "bench_flight: %s\n", err.message);
    return s;
}

/* One step of 100 zones, each ~10 us of work: ~1 ms. Returns its time (us). */
static double step(tp_session *s)
{
    double t0 = now_us();
    for (int z = 0; z < 100; z++) {
        TP_ZONE(s, "bench_zone");
        double t = now_us();
        while (now_us() - t < 10)
            g_sink += 1;
    }
    tp_step_end(s, 1);
    return now_us() - t0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int every = argc > 1 ? atoi(argv[1]) : 50;
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/bench_flight_%d", (int)getpid());
    tp_session *s = open_session(dir, "0");
    if (!s)
        return 1;
    for (int k = 0; k < 10; k++)
        step(s);
    usleep(50000); /* the collector drains */
    pthread_mutex_lock(&s->col_lock);
    uint64_t bytes = s->col->fl ? tpi_fl_ring_bytes(&s->col->fl->ring) : 0;
    pthread_mutex_unlock(&s->col_lock);
    printf("ring after 10 steps x 100 zones: %llu bytes (%.3f MB; target < 4 MB)\n",
           (unsigned long long)bytes, (double)bytes / (1 << 20));

    /* captures every `every` steps; the steps after each against the others */
    enum { CAPTURES = 20 };
    double call[CAPTURES], after[CAPTURES * 3], plain[2000];
    int n_after = 0, n_plain = 0;
    for (int c = 0; c < CAPTURES; c++) {
        for (int k = 0; k < every; k++) {
            double t = step(s);
            if (k > 5 && n_plain < 2000)
                plain[n_plain++] = t;
        }
        double t0 = now_us();
        tp_session_capture(s, "user", "bench");
        call[c] = now_us() - t0;
        for (int k = 0; k < 3; k++) /* the collector writes meanwhile */
            after[n_after++] = step(s);
    }
    double med_call = median(call, CAPTURES), med_after = median(after, n_after),
           med_plain = median(plain, n_plain);
    qsort(after, (size_t)n_after, sizeof *after, cmp);
    printf("capture: tp_session_capture call median %.2f us (max %.2f us)\n", med_call,
           call[CAPTURES - 1] > call[0] ? call[CAPTURES - 1] : call[0]);
    printf("capture: steps while the collector writes: median %.1f us, max %.1f us; other steps "
           "median %.1f us: +%.1f us (target <= 5000 us)\n",
           med_after, after[n_after - 1], med_plain, med_after - med_plain);
    printf("captures written: %llu\n", (unsigned long long)tp_session_captures(s));
    tp_session_close(s, NULL);

    /* hang latency: the timeout is 1 s after the last step end */
    double lat[5];
    for (int r = 0; r < 5; r++) {
        tp_session *h = open_session(dir, "1s");
        for (int k = 0; k < 20; k++)
            step(h);
        double end = now_us();
        while (tp_session_captures(h) == 0 && now_us() - end < 10e6)
            usleep(1000);
        lat[r] = (now_us() - end) / 1e3 - 1000.0;
        tp_session_close(h, NULL);
    }
    double mx = lat[0];
    for (int r = 1; r < 5; r++)
        mx = lat[r] > mx ? lat[r] : mx;
    printf("hang dump: written %.1f ms after the timeout (median of 5; max %.1f ms; target <= 2000 "
           "ms; includes up to 1 ms of polling here)\n", median(lat, 5), mx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_flight: could not remove %s\n", dir);
    return 0;
}
