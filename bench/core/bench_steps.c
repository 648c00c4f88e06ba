/*
 * bench_steps.c - the recorder's cost in the shape of a training loop:
 * many steps of many empty zones (TP_ZONE_BEGIN/END, public API only),
 * next to two raw TSC reads in the same loop shape, run for run.
 *
 * One run (a fresh process: the slow mode seen before was per process)
 * measures, for the aggregate-only and the trace-window session:
 *   - mean: best of REPS repetitions of STEPS steps of ZONES zones; each
 *     step runs a block of ZONES two-read iterations, then ZONES zones, so
 *     both see the same neighbours; the ratio is zone mean / clock mean;
 *     "step" is the median over all steps of the same ratio per step (a
 *     step where a neighbour took the core counts once, not in the sum);
 *   - the distribution: one more repetition where every iteration is
 *     stamped (one TSC read between iterations, in both loops): p50,
 *     p99.99 and the longest single zone;
 *   - per step, the thread's context switches and page faults
 *     (getrusage(RUSAGE_THREAD), read between steps): a zone over 50 us in
 *     a step where the thread was switched out (involuntary: preempted;
 *     voluntary: it blocked) or faulted is attributed to that; one with
 *     neither is a stall the guest did not see (hypervisor). The same
 *     count over the two-read loop ("clk", no recorder code in it) is the
 *     environment's own rate of such stalls to compare with.
 * Under callgrind (valgrind --tool=callgrind --separate-threads=yes
 * bench_steps) each step's zone block is counted alone, on the recording
 * thread only, and the instructions per zone are printed with the per-step
 * spread: they do not depend on the machine's load, so regressions show
 * without noise, and equal counts per step show that a slow step did no
 * more recorder work than the others (its stall came from outside).
 *
 * Usage: bench_steps [runs] [steps] [zones] (defaults 10 60 20000).
 */
#include <glob.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h" /* tpi_counter_read: the raw TSC (virtual counter on AArch64) */
#include "trainprof.h"

#ifdef TP_HAVE_CALLGRIND_H
#include <valgrind/callgrind.h>
#endif

enum { REPS = 5, STALL_NS = 50000 };
static int g_steps = 60, g_zones = 20000;
static volatile uint64_t g_sink;
static double g_ns_per_tick = 1.0;

static inline uint64_t tsc(void) { return tpi_counter_read(); }

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void calibrate(void)
{
    uint64_t n0 = mono_ns(), t0 = tsc();
    usleep(50000);
    g_ns_per_tick = (double)(mono_ns() - n0) / (double)(tsc() - t0);
}

/* The measured blocks (noinline: callgrind counts them by name). */
__attribute__((noinline)) void bench_clock_block(int n)
{
    for (int i = 0; i < n; i++)
        g_sink += tsc() - tsc();
}

__attribute__((noinline)) void bench_zone_block(tp_session *s, int n)
{
    for (int i = 0; i < n; i++) {
        TP_ZONE_BEGIN(s, "bench_zone");
        TP_ZONE_END(s);
    }
}

/* Stamped variants: st[i] = TSC before iteration i, st[n] after the last. */
__attribute__((noinline)) static void stamped_clock_block(int n, uint64_t *st)
{
    for (int i = 0; i < n; i++) {
        st[i] = tsc();
        g_sink += tsc() - tsc();
    }
    st[n] = tsc();
}

__attribute__((noinline)) static void stamped_zone_block(tp_session *s, int n, uint64_t *st)
{
    for (int i = 0; i < n; i++) {
        st[i] = tsc();
        TP_ZONE_BEGIN(s, "bench_zone");
        TP_ZONE_END(s);
    }
    st[n] = tsc();
}

static tp_session *open_session(const char *dir, int trace)
{
    tp_config *cfg = tp_config_new();
    tp_error err;
    const char *kv[] = {"log_dir", dir, "log_every", "0", "memory", "false", "metrics", "none",
                        "trace", trace ? "true" : "false", "wait", "0", "warmup", "0",
                        "active", "1000000", NULL}; /* the default pool (64 MB), as users run */
    for (int i = 0; kv[i]; i += 2)
        if (tp_config_set(cfg, kv[i], kv[i + 1], &err) != 0)
            fprintf(stderr, "bench_steps: %s: %s\n", kv[i], err.message);
    /* TP_BENCH_CAPTURE=false|true: the flight recorder off or on (default on),
     * for side-by-side costs (bench/core/bench_flight.sh) */
    const char *capture = getenv("TP_BENCH_CAPTURE");
    if (capture && (tp_config_set(cfg, "capture", capture, &err) != 0 ||
                    tp_config_set(cfg, "capture_slow_step", "0", &err) != 0))
        fprintf(stderr, "bench_steps: capture: %s\n", err.message); /* the ring alone */
    tp_session *s = tp_session_open(cfg, &err);
    if (!s)
        fprintf(stderr, "bench_steps: session: %s\n", err.message);
    tp_config_free(cfg);
    return s;
}

typedef struct thread_use {
    long nvcsw, nivcsw, minflt;
} thread_use;

static thread_use thread_usage(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (thread_use){ru.ru_nvcsw, ru.ru_nivcsw, ru.ru_minflt};
}

typedef struct case_result {
    double clock_ns, zone_ns;        /* per iteration, best repetition */
    double step_ratio;               /* median over steps of zone / clock block */
    double p50, p9999, max;          /* stamped zone iteration, ns */
    double clock_p9999, clock_max;   /* same for the two-read loop */
    int stalls[4];                   /* zones > 50 us: preempted, blocked, faulted, unseen */
    int clock_stalls;                /* two-read iterations > 50 us: the environment's rate */
    long long dropped;               /* events dropped (pool full), from training_summary.json */
} case_result;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Distribution of the stamped iterations of one repetition (sorts d). */
static void quantiles(uint32_t *d, size_t n, double *p50, double *p9999, double *max)
{
    qsort(d, n, sizeof *d, cmp_u32);
    *p50 = d[n / 2] * g_ns_per_tick;
    *p9999 = d[(size_t)((double)(n - 1) * 0.9999)] * g_ns_per_tick;
    *max = d[n - 1] * g_ns_per_tick;
}

/* Stamped repetition: zone and clock iteration durations, stalls classified
 * by what the thread saw during the step. */
static void stamped_rep(tp_session *s, case_result *r)
{
    size_t n = (size_t)g_steps * (size_t)g_zones;
    uint32_t *dz = malloc(n * sizeof *dz), *dc = malloc(n * sizeof *dc);
    uint64_t *st = malloc(((size_t)g_zones + 1) * sizeof *st);
    if (!dz || !dc || !st)
        goto out;
    uint64_t stall_ticks = (uint64_t)(STALL_NS / g_ns_per_tick);
    for (int k = 0; k < g_steps; k++) {
        stamped_clock_block(g_zones, st);
        for (int i = 0; i < g_zones; i++) {
            uint64_t d = st[i + 1] - st[i];
            dc[(size_t)k * g_zones + i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
            r->clock_stalls += d > stall_ticks;
        }
        thread_use u0 = thread_usage();
        stamped_zone_block(s, g_zones, st);
        thread_use u1 = thread_usage();
        tp_step_end(s, 1);
        for (int i = 0; i < g_zones; i++) {
            uint64_t d = st[i + 1] - st[i];
            dz[(size_t)k * g_zones + i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
            if (d <= stall_ticks)
                continue;
            int cls = u1.nivcsw > u0.nivcsw ? 0
                      : u1.nvcsw > u0.nvcsw ? 1
                      : u1.minflt > u0.minflt ? 2 : 3;
            r->stalls[cls]++;
        }
    }
    quantiles(dz, n, &r->p50, &r->p9999, &r->max);
    double c50;
    quantiles(dc, n, &c50, &r->clock_p9999, &r->clock_max);
out:
    free(dz);
    free(dc);
    free(st);
}

static void run_case(tp_session *s, case_result *r)
{
    double best_c = 1e300, best_z = 1e300;
    double *ratios = malloc((size_t)REPS * g_steps * sizeof *ratios);
    if (!ratios)
        exit(1);
    for (int rep = 0; rep < REPS; rep++) {
        uint64_t c = 0, z = 0;
        for (int k = 0; k < g_steps; k++) {
            uint64_t t0 = tsc();
            bench_clock_block(g_zones);
            uint64_t t1 = tsc();
            bench_zone_block(s, g_zones);
            uint64_t t2 = tsc();
            tp_step_end(s, 1);
            c += t1 - t0;
            z += t2 - t1;
            ratios[rep * g_steps + k] = (double)(t2 - t1) / (double)(t1 - t0);
        }
        if ((double)c < best_c)
            best_c = (double)c;
        if ((double)z < best_z)
            best_z = (double)z;
    }
    qsort(ratios, (size_t)REPS * g_steps, sizeof *ratios, cmp_double);
    r->step_ratio = ratios[REPS * g_steps / 2];
    free(ratios);
    double iters = (double)g_steps * g_zones;
    r->clock_ns = best_c * g_ns_per_tick / iters;
    r->zone_ns = best_z * g_ns_per_tick / iters;
    stamped_rep(s, r);
}

/* dropped_events of the run under dir (-1 when unreadable). */
static long long dropped_events(const char *dir)
{
    char pat[400], line[256];
    long long n = -1;
    glob_t g;
    snprintf(pat, sizeof pat, "%s/*/training_summary.json", dir);
    if (glob(pat, 0, NULL, &g) != 0)
        return -1;
    FILE *f = g.gl_pathc ? fopen(g.gl_pathv[0], "r") : NULL;
    while (f && fgets(line, sizeof line, f)) {
        const char *k = strstr(line, "\"dropped_events\":");
        if (k)
            n = atoll(k + strlen("\"dropped_events\":"));
    }
    if (f)
        fclose(f);
    globfree(&g);
    return n;
}

static double loadavg1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

static const char *const CASES[2] = {"aggregate", "trace"};

/* The session of case t (0 aggregate-only, 1 trace window) logging under
 * dir/<case>, that directory in sub; exits when it cannot open. */
static tp_session *open_case(const char *dir, int t, char *sub, size_t n)
{
    snprintf(sub, n, "%s/%s", dir, CASES[t]);
    tp_session *s = open_session(sub, t);
    if (!s)
        exit(1);
    return s;
}

/* One run: both cases, one line each, into `out` (a pipe to the parent). */
static void one_run(const char *dir, FILE *out)
{
    for (int t = 0; t < 2; t++) {
        char sub[300];
        tp_session *s = open_case(dir, t, sub, sizeof sub);
        case_result r = {0};
        run_case(s, &r);
        tp_session_close(s, NULL);
        r.dropped = dropped_events(sub);
        fprintf(out, "%s %.3f %.3f %.3f %.1f %.1f %.1f %.1f %.1f %d %d %d %d %d %lld\n", CASES[t],
                r.clock_ns, r.zone_ns, r.step_ratio, r.p50, r.p9999, r.max, r.clock_p9999, r.clock_max,
                r.stalls[0], r.stalls[1], r.stalls[2], r.stalls[3], r.clock_stalls, r.dropped);
    }
}

#ifdef TP_HAVE_CALLGRIND_H
/* Under callgrind: instructions of the zone and clock blocks, per
 * iteration, from callgrind's own dump files (totals line; with
 * --separate-threads=yes the main thread's file, "-01", alone). */
static double dump_totals(const char *tag)
{
    static int dumps;
    char path[256], line[512];
    CALLGRIND_DUMP_STATS_AT(tag);
    dumps++;
    double v = -1;
    snprintf(path, sizeof path, "callgrind.out.%d.%d-01", (int)getpid(), dumps);
    if (access(path, R_OK) != 0)
        snprintf(path, sizeof path, "callgrind.out.%d.%d", (int)getpid(), dumps);
    {
        FILE *f = fopen(path, "r");
        if (!f)
            return -1;
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "totals:", 7) == 0)
                v = atof(line + 7);
        fclose(f);
    }
    return v;
}

static void drain_now(tp_session *s)
{
    tp_op_stat *ops = NULL;
    if (tp_session_operations(s, &ops, NULL) >= 0)
        tp_free(ops);
}

/* The collector's cost of a step: the median of the drains that did a
 * step's work. A drain is less when the collector thread took part of the
 * step first (nothing at all when it took the whole step), and more now and
 * then (the totals' periodic refresh, a memory sample): the maximum of ten
 * ranged from 338 to 6,299 instructions a zone between runs of one binary,
 * the median from 334 to 336. -1: fewer than three drains did a step's work. */
static double median_drain(double *d, int n, double whole)
{
    qsort(d, (size_t)n, sizeof *d, cmp_double);
    int lo = 0;
    while (lo < n && d[lo] < whole)
        lo++;
    if (n - lo < 3)
        return -1;
    int m = n - lo;
    return m % 2 ? d[lo + m / 2] : (d[lo + m / 2 - 1] + d[lo + m / 2]) / 2;
}

static void callgrind_counts(const char *dir)
{
    int steps = g_steps < 10 ? g_steps : 10;
    for (int t = 0; t < 2; t++) {
        char sub[300];
        tp_session *s = open_case(dir, t, sub, sizeof sub);
        bench_zone_block(s, g_zones); /* registration and first chunk */
        tp_step_end(s, 1);
        drain_now(s);
        double zmin = 1e300, zmax = 0, cmin = 1e300, dmin = 1e300, dmax = 0, drains[10];
        for (int k = 0; k < steps; k++) {
            CALLGRIND_ZERO_STATS;
            bench_clock_block(g_zones);
            double c = dump_totals("clock");
            CALLGRIND_ZERO_STATS;
            bench_zone_block(s, g_zones);
            double z = dump_totals("zones");
            /* the collector's share: tp_session_operations drains what is
             * pending in this thread (the collector thread may have taken
             * part of it first: median_drain) */
            CALLGRIND_ZERO_STATS;
            drain_now(s);
            double d = dump_totals("drain");
            tp_step_end(s, 1);
            cmin = c < cmin ? c : cmin;
            zmin = z < zmin ? z : zmin;
            zmax = z > zmax ? z : zmax;
            dmin = d < dmin ? d : dmin;
            dmax = d > dmax ? d : dmax;
            drains[k] = d;
        }
        double dmed = median_drain(drains, steps, 50.0 * g_zones);
        tp_session_close(s, NULL);
        printf("callgrind %s: instructions per zone %.2f (per step of %d zones: min %.0f max "
               "%.0f), per two clock reads %.2f; collector per zone %.2f (min %.2f) max %.2f\n",
               CASES[t], zmin / g_zones, g_zones, zmin, zmax, cmin / g_zones,
               dmed < 0 ? 0.0 : dmed / g_zones, dmin / g_zones, dmax / g_zones);
    }
}
#endif

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 10;
    if (argc > 2)
        g_steps = atoi(argv[2]);
    if (argc > 3)
        g_zones = atoi(argv[3]);
    if (runs < 1 || g_steps < 1 || g_zones < 1)
        return 2;
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/tp_bench_steps_%d", (int)getpid());
    mkdir(dir, 0755);
    calibrate();
#ifdef TP_HAVE_CALLGRIND_H
    if (RUNNING_ON_VALGRIND) {
        callgrind_counts(dir);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s callgrind.out.%d.[0-9]*", dir, (int)getpid());
        return system(cmd) == 0 ? 0 : 1;
    }
#endif
    printf("bench_steps: %d runs (one process each) of %d x %d steps of %d zones; "
           "ratio = zone / two TSC reads, best repetition; ns\n",
           runs, REPS, g_steps, g_zones);
    printf("%3s %-9s %7s %7s %6s %6s %7s %8s %9s %8s %9s %s %5s\n", "run", "case", "2 reads",
           "zone", "ratio", "step", "p50", "p99.99", "max", "clk p99.99", "clk max",
           ">50us: preempt/block/fault/unseen clk", "load  dropped");
    int worst_ok = 1, worst_step_ok = 1;
    for (int run = 0; run < runs; run++) {
        int fd[2];
        fflush(stdout);
        if (pipe(fd) != 0)
            return 1;
        pid_t pid = fork();
        if (pid == 0) {
            close(fd[0]);
            FILE *out = fdopen(fd[1], "w");
            one_run(dir, out);
            fclose(out);
            _exit(0);
        }
        close(fd[1]);
        FILE *in = fdopen(fd[0], "r");
        char name[32];
        double c, z, sr, p50, p9999, max, cp, cmax;
        int st[5];
        long long dropped;
        while (in && fscanf(in, "%31s %lf %lf %lf %lf %lf %lf %lf %lf %d %d %d %d %d %lld", name,
                            &c, &z, &sr, &p50, &p9999, &max, &cp, &cmax, &st[0], &st[1], &st[2],
                            &st[3], &st[4], &dropped) == 15) {
            double ratio = z / c;
            worst_ok &= ratio <= 1.2;
            worst_step_ok &= sr <= 1.2;
            printf("%3d %-9s %7.2f %7.2f %6.2f %6.2f %7.1f %8.1f %9.1f %10.1f %9.1f %8d/%d/%d/%d "
                   "%4d %10.2f %8lld\n",
                   run + 1, name, c, z, ratio, sr, p50, p9999, max, cp, cmax, st[0], st[1], st[2],
                   st[3], st[4], loadavg1(), dropped);
        }
        if (in)
            fclose(in);
        waitpid(pid, NULL, 0);
    }
    printf("all ratios <= 1.2: %s; all median step ratios <= 1.2: %s\n", worst_ok ? "yes" : "no",
           worst_step_ok ? "yes" : "no");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
