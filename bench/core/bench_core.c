/*
 * bench_core.c - cost of a zone (begin + end) in the recorder, measured side
 * by side with two raw clock reads and a naive recorder (global mutex +
 * clock_gettime + array append), with 1 and 2 threads; bytes per event in
 * memory and on disk; the memory bound under 50 M zones; the worst step at
 * the end of a trace window (when the file is finished) vs other steps; the
 * example's median step time with and without profiling. Prints a table
 * and one JSON line. Usage: bench_core [zones_per_case] (default 4000000);
 * TP_BENCH_EXAMPLE=path overrides the example binary.
 *
 * The 2-thread column is judged against the same ratio of the raw clock
 * loops: on a 2-core VM two threads reading the clock already slow each
 * other down, and the recorder's collector thread is a third runnable
 * thread. Per-thread CPU time (CLOCK_THREAD_CPUTIME_ID) is printed beside
 * the wall time: wall > CPU means the thread waited for a core.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "trainprof.h"

void bench_disabled_loop(tp_session *s, long n, volatile long *sink);

static long g_n = 4000000;
static volatile long g_sink;
static pthread_mutex_t g_naive_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *g_naive;
static size_t g_naive_len, g_naive_cap;

typedef void (*loop_fn)(tp_session *s, long n);

static void loop_clock2(tp_session *s, long n)
{
    (void)s;
    for (long i = 0; i < n; i++)
        g_sink += (long)(tpi_mono_ns() - tpi_mono_ns());
}

static void loop_tsc2(tp_session *s, long n)
{
    (void)s;
    for (long i = 0; i < n; i++)
        g_sink += (long)(tpi_counter_read() - tpi_counter_read());
}

static void naive_event(void)
{
    uint64_t t = tpi_mono_ns();
    pthread_mutex_lock(&g_naive_lock);
    if (g_naive_len == g_naive_cap) { /* reuse the array: bounded */
        g_naive_len = 0;
    }
    g_naive[g_naive_len++] = t;
    pthread_mutex_unlock(&g_naive_lock);
}

static void loop_naive(tp_session *s, long n)
{
    (void)s;
    for (long i = 0; i < n; i++) {
        naive_event();
        g_sink += i;
        naive_event();
    }
}

static void loop_zone(tp_session *s, long n)
{
    for (long i = 0; i < n; i++) {
        TP_ZONE(s, "zone");
        g_sink += i;
    }
}

static void loop_disabled(tp_session *s, long n)
{
    bench_disabled_loop(s, n, &g_sink);
}

typedef struct run_arg {
    loop_fn fn;
    tp_session *s;
    long n;
    double ns, cpu_ns;
} run_arg;

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *run_thread(void *p)
{
    run_arg *a = p;
    a->fn(a->s, a->n / 50); /* warm up: registration, first chunk, caches */
    uint64_t t0 = tpi_mono_ns(), c0 = thread_cpu_ns();
    a->fn(a->s, a->n);
    a->cpu_ns = (double)(thread_cpu_ns() - c0) / (double)a->n;
    a->ns = (double)(tpi_mono_ns() - t0) / (double)a->n;
    return NULL;
}

static double median3(const double v[3])
{
    double x = v[0], y = v[1], z = v[2];
    return x > y ? (y > z ? y : (x > z ? z : x)) : (x > z ? x : (y > z ? z : y));
}

typedef struct cost {
    double wall, cpu; /* ns per iteration per thread (median of 3 runs) */
} cost;

static cost measure(loop_fn fn, tp_session *s, int threads)
{
    double wall[3], cpu[3];
    for (int r = 0; r < 3; r++) {
        pthread_t th[2];
        run_arg a[2];
        for (int i = 0; i < threads; i++) {
            a[i] = (run_arg){fn, s, g_n, 0, 0};
            pthread_create(&th[i], NULL, run_thread, &a[i]);
        }
        wall[r] = cpu[r] = 0;
        for (int i = 0; i < threads; i++) {
            pthread_join(th[i], NULL);
            wall[r] += a[i].ns / threads;
            cpu[r] += a[i].cpu_ns / threads;
        }
        if (s)
            tp_step_end(s, 1);
    }
    return (cost){median3(wall), median3(cpu)};
}

/* A session writing into dir: no console log, no memory probes; with
 * `trace`, every step from the first one is in the trace window. `kv`:
 * more "key", "value" pairs (NULL-terminated) or NULL. */
static tp_session *open_session(const char *dir, int trace, const char *max_mb,
                                const char *const *kv)
{
    tp_config *cfg = tp_config_new();
    tp_error err;
    tp_config_set(cfg, "log_dir", dir, &err);
    tp_config_set(cfg, "log_every", "0", &err);
    tp_config_set(cfg, "trace", trace ? "true" : "false", &err);
    tp_config_set(cfg, "memory", "false", &err);
    tp_config_set(cfg, "max_buffer_mb", max_mb, &err);
    if (trace) {
        tp_config_set(cfg, "wait", "0", &err);
        tp_config_set(cfg, "warmup", "0", &err);
        tp_config_set(cfg, "active", "1000000", &err);
    }
    for (; kv && kv[0] && kv[1]; kv += 2)
        if (tp_config_set(cfg, kv[0], kv[1], &err) != 0)
            fprintf(stderr, "bench: %s: %s\n", kv[0], err.message);
    tp_session *s = tp_session_open(cfg, &err);
    if (!s)
        fprintf(stderr, "bench: session: %s\n", err.message);
    tp_config_free(cfg);
    return s;
}

static uint64_t status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t v = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            v = strtoull(line + strlen(key) + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

/* First number a shell command prints (0 when none). */
static double popen_number(const char *cmd)
{
    double v = 0;
    FILE *p = popen(cmd, "r");
    if (p) {
        if (fscanf(p, "%lf", &v) != 1)
            v = 0;
        pclose(p);
    }
    return v;
}

/* Trace bytes on disk per zone: size of the window's file / zones in it. */
static double disk_bytes_per_zone(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cat %s/*/profiler_traces/*.pt.trace.json | grep -c '\"ph\":\"X\"'", dir);
    double zones = popen_number(cmd);
    snprintf(cmd, sizeof cmd, "du -cb %s/*/profiler_traces/*.pt.trace.json | tail -1", dir);
    double bytes = popen_number(cmd);
    return zones > 0 ? bytes / zones : 0;
}

/* 50 M zones with max_buffer_mb=16, in a child: memory growth and drops. */
static void bounded_memory(const char *dir, double *mb, unsigned long long *dropped)
{
    int fd[2];
    if (pipe(fd) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t before = status_kb("VmRSS");
        tp_session *s = open_session(dir, 0, "16", NULL);
        for (int k = 0; k < 50; k++) {
            loop_zone(s, 1000000);
            tp_step_end(s, 1);
        }
        uint64_t peak = status_kb("VmHWM");
        tp_session_close(s, NULL);
        double r[2] = {(double)(peak - before) / 1024.0, 0};
        /* dropped: from the summary file */
        char cmd[600];
        snprintf(cmd, sizeof cmd, "grep -ho '\"dropped_events\": [0-9]*' %s/*/training_summary.json | tail -1 | grep -o '[0-9]*$'", dir);
        r[1] = popen_number(cmd);
        if (write(fd[1], r, sizeof r) != sizeof r)
            _exit(1);
        _exit(0);
    }
    close(fd[1]);
    double r[2] = {0, 0};
    if (read(fd[0], r, sizeof r) != sizeof r)
        r[0] = -1;
    close(fd[0]);
    waitpid(pid, NULL, 0);
    *mb = r[0];
    *dropped = (unsigned long long)r[1];
}

/* Median step time reported by the example, profiled or not. */
static double example_median_us(int profiled, const char *dir)
{
    const char *exe = getenv("TP_BENCH_EXAMPLE");
#ifdef TP_EXAMPLE_PATH
    if (!exe || !*exe)
        exe = TP_EXAMPLE_PATH;
#endif
    if (!exe || !*exe)
        return 0;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s --quiet --max_steps 2000 --profiling.enabled %s --profiling.log_dir %s "
             "--profiling.log_every 0 --profiling.wait 50 --profiling.active 50 2>/dev/null | "
             "grep -o 'median step [0-9.]*' | grep -o '[0-9.]*$'",
             exe, profiled ? "true" : "false", dir);
    return popen_number(cmd);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median and maximum of v[0..n-1] (sorts v). */
static void med_max(double *v, int n, double *med, double *max)
{
    *med = *max = 0;
    if (n <= 0)
        return;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    *med = v[n / 2];
    *max = v[n - 1];
}

/* Step time on the training thread around trace-window ends. Cycles of
 * WE_WAIT wait + WE_ACTIVE active steps: the window's file is finished
 * (metadata, close) by the collector right after the last active step, so
 * that step's tp_step_end and the step after it are where writing could
 * stall training. [0]: closing steps, [1]: the step after, [2]: all others;
 * median and max in microseconds. */
enum { WE_STEPS = 400, WE_ZONES = 2000, WE_WORK = 20000, WE_WAIT = 3, WE_ACTIVE = 2 };

static void window_end_steps(const char *dir, double med[3], double max[3])
{
    static const char *const kv[] = {"wait", "3", "active", "2", "repeat", "0", NULL};
    tp_session *s = open_session(dir, 1, "256", kv);
    double *v[3];
    int n[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        v[i] = calloc(WE_STEPS, sizeof(double));
    for (int k = 0; k < WE_STEPS && v[0] && v[1] && v[2]; k++) {
        uint64_t t0 = tpi_mono_ns();
        for (int z = 0; z < WE_ZONES; z++) {
            TP_ZONE(s, "we_zone");
            g_sink += z;
        }
        for (int w = 0; w < WE_WORK; w++) /* the step's own compute */
            g_sink += w;
        tp_step_end(s, 1);
        double us = (double)(tpi_mono_ns() - t0) / 1e3;
        int j = k % (WE_WAIT + WE_ACTIVE);
        int cls = j == WE_WAIT + WE_ACTIVE - 1 ? 0 : (j == 0 && k > 0 ? 1 : 2);
        v[cls][n[cls]++] = us;
    }
    tp_session_close(s, NULL);
    for (int i = 0; i < 3; i++) {
        med_max(v[i], n[i], &med[i], &max[i]);
        free(v[i]);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_n = atol(argv[1]);
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/tp_bench_core_%d", (int)getpid());
    mkdir(dir, 0755);
    tpi_clock_init();
    g_naive_cap = 1 << 20;
    g_naive = malloc(g_naive_cap * sizeof *g_naive);

    double mem_mb = 0;
    unsigned long long dropped = 0;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/bounded", dir);
    mkdir(sub, 0755);
    bounded_memory(sub, &mem_mb, &dropped);

    enum { CLK, TSC, NAIVE, OFF, NUL, AGG, TRACE, NCASE };
    static const char *names[NCASE] = {"2 raw clock_gettime", "2 raw rdtsc", "naive mutex recorder",
                                       "compiled out (TP_DISABLE)", "NULL session",
                                       "aggregate only", "trace window active"};
    static const loop_fn fns[NCASE] = {loop_clock2, loop_tsc2, loop_naive, loop_disabled,
                                       loop_zone, loop_zone, loop_zone};
    cost r[NCASE][2];
    for (int t = 1; t <= 2; t++) {
        for (int i = 0; i < NCASE; i++) {
            tp_session *s = NULL;
            if (i == AGG || i == TRACE) {
                snprintf(sub, sizeof sub, "%s/%s%d", dir, i == AGG ? "agg" : "trace", t);
                s = open_session(sub, i == TRACE, "256", NULL);
            }
            r[i][t - 1] = measure(fns[i], s, t);
            tp_session_close(s, NULL);
        }
    }
    snprintf(sub, sizeof sub, "%s/trace1", dir);
    double disk = disk_bytes_per_zone(sub);
    double we_med[3], we_max[3];
    snprintf(sub, sizeof sub, "%s/winend", dir);
    window_end_steps(sub, we_med, we_max);
    double ex[2][5];
    for (int i = 0; i < 5; i++) {
        ex[0][i] = example_median_us(0, dir);
        ex[1][i] = example_median_us(1, dir);
    }
    qsort(ex[0], 5, sizeof(double), cmp_d);
    qsort(ex[1], 5, sizeof(double), cmp_d);

    /* the recorder reads the TSC when the clock is "tsc", else clock_gettime */
    int base = tpi_clock_get()->use_counter ? TSC : CLK;
    double ratio[NCASE];
    for (int i = 0; i < NCASE; i++)
        ratio[i] = r[i][0].wall > 0 ? r[i][1].wall / r[i][0].wall : 0;
    printf("trainprof core benchmark: %ld zones per case, clock %s\n", g_n, tpi_clock_get()->source);
    printf("%-27s %9s %9s %6s %9s %9s %8s\n", "case (begin+end), ns", "1 thread", "2 threads",
           "2t/1t", "cpu 1t", "cpu 2t", "vs 2 clk");
    for (int i = 0; i < NCASE; i++)
        printf("%-27s %9.2f %9.2f %6.2f %9.2f %9.2f %7.2fx\n", names[i], r[i][0].wall,
               r[i][1].wall, ratio[i], r[i][0].cpu, r[i][1].cpu, r[i][0].wall / r[CLK][0].wall);
    printf("2 threads / 1 thread, wall: trace %.2f, aggregate %.2f; the raw clock it reads (%s) "
           "%.2f -> relative to that: trace %.2f, aggregate %.2f (1.00 = slowed exactly like "
           "the bare clock)\n",
           ratio[TRACE], ratio[AGG], names[base], ratio[base], ratio[TRACE] / ratio[base],
           ratio[AGG] / ratio[base]);
    printf("bytes per event in memory: %zu (a zone = 2 events = %zu bytes)\n", sizeof(uint64_t) * 2,
           sizeof(uint64_t) * 4);
    printf("chrome json on disk: %.1f bytes per zone\n", disk);
    printf("max_buffer_mb=16, 50M zones: profiler memory growth %.1f MB, dropped events %llu\n",
           mem_mb, dropped);
    printf("step time around trace-window ends (%d zones + work per step, us): closing step "
           "median %.1f max %.1f; step after median %.1f max %.1f; other steps median %.1f "
           "max %.1f\n",
           WE_ZONES, we_med[0], we_max[0], we_med[1], we_max[1], we_med[2], we_max[2]);
    printf("example median step: unprofiled %.2f us, profiled %.2f us (%+.2f%%)\n", ex[0][2],
           ex[1][2], ex[0][2] > 0 ? 100.0 * (ex[1][2] / ex[0][2] - 1) : 0);
    printf("{\"bench\":\"core\",\"zones\":%ld,\"clock\":\"%s\"", g_n, tpi_clock_get()->source);
    static const char *keys[NCASE] = {"clock2", "rdtsc2", "naive", "disabled", "null_session",
                                      "aggregate", "trace"};
    for (int i = 0; i < NCASE; i++)
        printf(",\"%s_ns\":[%.2f,%.2f],\"%s_cpu_ns\":[%.2f,%.2f]", keys[i], r[i][0].wall,
               r[i][1].wall, keys[i], r[i][0].cpu, r[i][1].cpu);
    printf(",\"ratio_2t\":{\"clock\":%.3f,\"trace\":%.3f,\"aggregate\":%.3f,"
           "\"trace_vs_clock\":%.3f,\"aggregate_vs_clock\":%.3f}",
           ratio[base], ratio[TRACE], ratio[AGG], ratio[TRACE] / ratio[base],
           ratio[AGG] / ratio[base]);
    printf(",\"mem_bytes_per_event\":16,\"disk_bytes_per_zone\":%.1f,\"bounded_mem_mb\":%.1f,"
           "\"bounded_dropped\":%llu,\"window_end_step_us\":{\"closing\":[%.1f,%.1f],"
           "\"after\":[%.1f,%.1f],\"other\":[%.1f,%.1f]},\"example_median_us\":[%.2f,%.2f]}\n",
           disk, mem_mb, dropped, we_med[0], we_max[0], we_med[1], we_max[1], we_med[2],
           we_max[2], ex[0][2], ex[1][2]);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench: cannot remove %s\n", dir);
    free(g_naive);
    return 0;
}
