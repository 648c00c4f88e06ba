/*
 * bench_exporters [STEPS] [ZONES_PER_STEP]: feeds the same synthetic trace
 * window (exp_synth) through one sink at a time and prints, per sink, the
 * collector-side time per slice and the bytes per slice on disk, best of 3
 * interleaved rounds. Compare the rows with each other, not across runs.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exp_synth.h"

typedef struct bench_case {
    const char *name;
    tpi_sink *(*make)(const tpi_sink_env *);
    const char *env_compress; /* TRAINPROF_PERFETTO_COMPRESS value, or NULL */
} bench_case;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t dir_bytes(const char *dir)
{
    size_t total = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    struct stat st;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            total += (size_t)st.st_size;
    }
    if (d)
        closedir(d);
    return total;
}

static void run_case(const bench_case *c, const char *root, int round, int steps, int zones,
                     double *best_s, size_t *bytes, uint64_t *slices)
{
    exp_run r;
    char dir[512], cmd[600], traces[600];
    snprintf(dir, sizeof dir, "%s/%s_%d", root, c->name, round);
    if (c->env_compress)
        setenv("TRAINPROF_PERFETTO_COMPRESS", c->env_compress, 1);
    else
        unsetenv("TRAINPROF_PERFETTO_COMPRESS");
    exp_run_init(&r, dir);
    r.settings.trace_formats = TPI_TRACE_CHROME | TPI_TRACE_PERFETTO;
    r.settings.gzip = 0;
    r.sinks[r.n_sinks++] = c->make(&r.env);
    double t0 = now_s();
    exp_run_feed(&r, steps, zones);
    exp_run_finish(&r);
    double dt = now_s() - t0;
    if (dt < *best_s)
        *best_s = dt;
    snprintf(traces, sizeof traces, "%s/profiler_traces", dir);
    *bytes = dir_bytes(traces);
    *slices = r.slices;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 200, zones = argc > 2 ? atoi(argv[2]) : 100;
    static const bench_case cases[] = {
        { "chrome_json", tpi_sink_chrome_json_new, NULL },
        { "perfetto", tpi_sink_perfetto_new, "1" },
        { "perfetto_raw", tpi_sink_perfetto_new, "0" },
        { "stacks", tpi_sink_stacks_new, NULL },
    };
    enum { N = sizeof cases / sizeof cases[0] };
    double best[N];
    size_t bytes[N] = { 0 };
    uint64_t slices = 0;
    char root[64];
    snprintf(root, sizeof root, "/tmp/tp_bench_exporters.%d", (int)getpid());
    mkdir(root, 0755);
    for (int i = 0; i < N; i++)
        best[i] = 1e30;
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < N; i++)
            run_case(&cases[i], root, round, steps, zones, &best[i], &bytes[i], &slices);
    rmdir(root);
    printf("%d steps x %d zones: %llu slices per window\n", steps, zones, (unsigned long long)slices);
    printf("%-14s %12s %12s %12s %10s\n", "sink", "ns/slice", "bytes", "B/slice", "vs chrome");
    for (int i = 0; i < N; i++)
        printf("%-14s %12.1f %12zu %12.2f %9.1fx\n", cases[i].name, best[i] * 1e9 / (double)slices,
               bytes[i], (double)bytes[i] / (double)slices,
               bytes[i] ? (double)bytes[0] / (double)bytes[i] : 0.0);
    return 0;
}
