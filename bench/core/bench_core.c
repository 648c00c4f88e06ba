/*
 * bench_core.c - cost of a zone (begin + end) in the recorder, measured side
 * by side with two raw clock reads and a naive recorder (global mutex +
 * clock_gettime + array append), with 1 and 2 threads; bytes per event in
 * memory and on disk; the memory bound under 50 M zones; the example's
 * median step time with and without profiling. Prints a table and one JSON
 * line. Usage: bench_core [zones_per_case] (default 4000000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
    double ns;
} run_arg;

static void *run_thread(void *p)
{
    run_arg *a = p;
    a->fn(a->s, a->n / 50); /* warm up: registration, first chunk, caches */
    uint64_t t0 = tpi_mono_ns();
    a->fn(a->s, a->n);
    a->ns = (double)(tpi_mono_ns() - t0) / (double)a->n;
    return NULL;
}

/* ns per iteration per thread (median of 3 runs) */
static double measure(loop_fn fn, tp_session *s, int threads)
{
    double best[3];
    for (int r = 0; r < 3; r++) {
        pthread_t th[2];
        run_arg a[2];
        for (int i = 0; i < threads; i++) {
            a[i] = (run_arg){fn, s, g_n, 0};
            pthread_create(&th[i], NULL, run_thread, &a[i]);
        }
        double sum = 0;
        for (int i = 0; i < threads; i++) {
            pthread_join(th[i], NULL);
            sum += a[i].ns;
        }
        best[r] = sum / threads;
        if (s)
            tp_step_end(s, 1);
    }
    /* median of 3 */
    double x = best[0], y = best[1], z = best[2];
    return x > y ? (y > z ? y : (x > z ? z : x)) : (x > z ? x : (y > z ? z : y));
}

static tp_session *open_session(const char *dir, int trace, const char *max_mb)
{
    tp_config *cfg = tp_config_new();
    tp_error err;
    tp_config_set(cfg, "log_dir", dir, &err);
    tp_config_set(cfg, "log_every", "0", &err);
    tp_config_set(cfg, "trace", trace ? "true" : "false", &err);
    tp_config_set(cfg, "memory", "false", &err);
    tp_config_set(cfg, "max_buffer_mb", max_mb, &err);
    if (trace)
        tp_config_set(cfg, "active", "1000000", &err);
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

/* Trace bytes on disk per zone: size of the window's file / zones in it. */
static double disk_bytes_per_zone(const char *dir)
{
    char cmd[512];
    unsigned long long zones = 0;
    snprintf(cmd, sizeof cmd, "cat %s/*/profiler_traces/*.pt.trace.json | grep -c '\"ph\":\"X\"'", dir);
    FILE *z = popen(cmd, "r");
    if (z) {
        if (fscanf(z, "%llu", &zones) != 1)
            zones = 0;
        pclose(z);
    }
    snprintf(cmd, sizeof cmd, "du -cb %s/*/profiler_traces/*.pt.trace.json | tail -1", dir);
    FILE *p = popen(cmd, "r");
    unsigned long long bytes = 0;
    if (p) {
        if (fscanf(p, "%llu", &bytes) != 1)
            bytes = 0;
        pclose(p);
    }
    return zones ? (double)bytes / (double)zones : 0;
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
        tp_session *s = open_session(dir, 0, "16");
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
        FILE *p = popen(cmd, "r");
        unsigned long long d = 0;
        if (p) {
            if (fscanf(p, "%llu", &d) != 1)
                d = 0;
            pclose(p);
        }
        r[1] = (double)d;
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

/* Median step time reported by the example, profiled or not (median of runs). */
static double example_median_us(int profiled, const char *dir)
{
#ifdef TP_EXAMPLE_PATH
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s --quiet --max_steps 2000 --profiling.enabled %s --profiling.log_dir %s "
             "--profiling.log_every 0 --profiling.wait 50 --profiling.active 50 2>/dev/null | "
             "grep -o 'median step [0-9.]*' | grep -o '[0-9.]*$'",
             TP_EXAMPLE_PATH, profiled ? "true" : "false", dir);
    FILE *p = popen(cmd, "r");
    double v = 0;
    if (p) {
        if (fscanf(p, "%lf", &v) != 1)
            v = 0;
        pclose(p);
    }
    return v;
#else
    (void)profiled;
    (void)dir;
    return 0;
#endif
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
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
    char bdir[300];
    snprintf(bdir, sizeof bdir, "%s/bounded", dir);
    mkdir(bdir, 0755);
    bounded_memory(bdir, &mem_mb, &dropped);

    static const char *names[] = {"2 raw clock_gettime", "2 raw rdtsc", "naive mutex recorder",
                                  "compiled out (TP_DISABLE)", "NULL session",
                                  "aggregate only", "trace window active"};
    double r[7][2];
    for (int t = 1; t <= 2; t++) {
        r[0][t - 1] = measure(loop_clock2, NULL, t);
        r[1][t - 1] = measure(loop_tsc2, NULL, t);
        r[2][t - 1] = measure(loop_naive, NULL, t);
        r[3][t - 1] = measure(loop_disabled, NULL, t);
        r[4][t - 1] = measure(loop_zone, NULL, t);
        char d1[300];
        snprintf(d1, sizeof d1, "%s/agg%d", dir, t);
        tp_session *s = open_session(d1, 0, "256");
        r[5][t - 1] = measure(loop_zone, s, t);
        tp_session_close(s, NULL);
    }
    double disk = 0;
    for (int t = 1; t <= 2; t++) {
        char d2[300];
        snprintf(d2, sizeof d2, "%s/trace%d", dir, t);
        tp_session *s = open_session(d2, 1, "256");
        r[6][t - 1] = measure(loop_zone, s, t);
        tp_session_close(s, NULL);
        if (t == 1)
            disk = disk_bytes_per_zone(d2);
    }
    double ex[2][5];
    for (int i = 0; i < 5; i++) {
        ex[0][i] = example_median_us(0, dir);
        ex[1][i] = example_median_us(1, dir);
    }
    qsort(ex[0], 5, sizeof(double), cmp_d);
    qsort(ex[1], 5, sizeof(double), cmp_d);

    printf("trainprof core benchmark: %ld zones per case, clock %s\n", g_n, tpi_clock_get()->source);
    printf("%-28s %12s %12s %10s\n", "case (begin+end)", "1 thread ns", "2 threads ns", "vs 2 clk");
    for (int i = 0; i < 7; i++)
        printf("%-28s %12.2f %12.2f %9.2fx\n", names[i], r[i][0], r[i][1], r[i][0] / r[0][0]);
    printf("bytes per event in memory: %zu (a zone = 2 events = %zu bytes)\n", sizeof(uint64_t) * 2,
           sizeof(uint64_t) * 4);
    printf("chrome json on disk: %.1f bytes per zone\n", disk);
    printf("max_buffer_mb=16, 50M zones: profiler memory growth %.1f MB, dropped events %llu\n",
           mem_mb, dropped);
    printf("example median step: unprofiled %.2f us, profiled %.2f us (%+.2f%%)\n", ex[0][2],
           ex[1][2], ex[0][2] > 0 ? 100.0 * (ex[1][2] / ex[0][2] - 1) : 0);
    printf("{\"bench\":\"core\",\"zones\":%ld,\"clock\":\"%s\",\"clock2_ns\":[%.2f,%.2f],"
           "\"rdtsc2_ns\":[%.2f,%.2f],\"naive_ns\":[%.2f,%.2f],\"disabled_ns\":[%.2f,%.2f],"
           "\"null_session_ns\":[%.2f,%.2f],\"aggregate_ns\":[%.2f,%.2f],\"trace_ns\":[%.2f,%.2f],"
           "\"mem_bytes_per_event\":16,\"disk_bytes_per_zone\":%.1f,\"bounded_mem_mb\":%.1f,"
           "\"bounded_dropped\":%llu,\"example_median_us\":[%.2f,%.2f]}\n",
           g_n, tpi_clock_get()->source, r[0][0], r[0][1], r[1][0], r[1][1], r[2][0], r[2][1],
           r[3][0], r[3][1], r[4][0], r[4][1], r[5][0], r[5][1], r[6][0], r[6][1], disk, mem_mb,
           dropped, ex[0][2], ex[1][2]);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench: cannot remove %s\n", dir);
    free(g_naive);
    return 0;
}
