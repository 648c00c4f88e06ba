/*
 * cmd_run.c - `trainprof run [--interval 100ms] [-o DIR] [--profiling.KEY V ...] -- CMD ARGS...`
 *
 * Zero-code profiling (docs/RUN.md): when CMD is Python, every Python
 * process it starts profiles itself (steps, phases; run_python.c), with
 * the --profiling flags given here. In every case: starts CMD directly
 * (fork + execvp, no shell), samples its whole process tree (RSS, CPU,
 * threads) and the GPUs every interval, forwards SIGINT/SIGTERM/SIGHUP/
 * SIGQUIT sent to trainprof, and
 * exits with CMD's status (128 + N when signal N killed it). Writes
 * memory_profile.json (one row per sample), trace.json (Chrome counter
 * tracks) and run_summary.json into DIR, and prints a short summary.
 * Uses the public API (tp_monitor_*) and the util layer only.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "run_python.h"
#include "trainprof.h"
#include "util/fileio.h"
#include "util/json.h"
#include "util/json_file.h"

#define MAX_GPUS 16
#define FLUSH_EVERY 10 /* samples */
#define MB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)

typedef struct run_opts {
    long interval_ms;
    char dir[1024];
    char **cmd;
    char **flags; /* the --profiling flags (and their values), in order */
    int nflags;
    tp_config *cfg; /* the flags parsed: checked before the command starts */
} run_opts;

typedef struct run_state {
    pid_t child;
    uint64_t start_mono_ns, start_wall_ns;
    tp_monitor *mon;
    tpu_json_file rows, trace;
    uint64_t samples, cpu_samples;
    uint64_t peak_rss;
    uint64_t peak_pss;              /* 0 when smaps_rollup could not be read */
    double cpu_sum;
    uint64_t gpu_peak;
    char gpu_peak_dev[32];
    int monitor_failed;
} run_state;

static const int FORWARDED[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1};
#define N_FORWARDED (int)(sizeof FORWARDED / sizeof FORWARDED[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: trainprof run [--interval 100ms] [-o DIR] [--profiling.KEY VALUE ...] -- CMD [ARGS...]\n"
               "  Runs CMD (no shell) and samples its process tree and the GPUs. When CMD is\n"
               "  Python (python, torchrun, a #!python script), every Python process it starts\n"
               "  profiles itself: steps, data loading, forward, backward, optimizer step\n"
               "  (docs/RUN.md), into profiling.log_dir; --profiling.KEY VALUE (docs/CONFIG.md)\n"
               "  applies to them.\n"
               "  --interval T   sampling period: 100ms (default), 0.5s, 2s; 10ms..3600s\n"
               "  -o DIR         output directory (default trainprof-run-<date>-<time>)\n"
               "  Writes DIR/memory_profile.json, DIR/trace.json (Chrome counters) and\n"
               "  DIR/run_summary.json. Exit status: CMD's own, 128+N if killed by signal N,\n"
               "  127 when CMD cannot be found, 2 for bad usage.\n");
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "100ms", "0.5s", "2s", "250" (ms); -1 when malformed or out of range. */
static long parse_interval(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v != v)
        return -1;
    if (strcmp(end, "s") == 0)
        v *= 1000.0;
    else if (*end && strcmp(end, "ms") != 0)
        return -1;
    return v >= 10.0 && v <= 3600000.0 ? (long)v : -1;
}

static void default_dir(char *out, size_t n)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%d-%H%M%S", &tm);
    snprintf(out, n, "trainprof-run-%s-%d", stamp, (int)getpid());
}

/* A --profiling flag at argv[*i] (and its value) into o; advances *i.
 * 0, or 2 after naming what is wrong. */
static int take_profiling_flag(int argc, char **argv, int *i, run_opts *o)
{
    tp_error err;
    if (!o->cfg && !(o->cfg = tp_config_new())) {
        fprintf(stderr, "trainprof run: out of memory\n");
        return 2;
    }
    int used = run_take_flag(o->cfg, argc, argv, *i, &err);
    if (used < 0) {
        fprintf(stderr, "trainprof run: %s\n", err.message);
        return 2;
    }
    for (int k = 0; k < used; k++)
        o->flags[o->nflags++] = argv[*i + k];
    *i += used - 1;
    return 0;
}

/* 0 ok, 1 help shown, 2 usage error (message printed). */
static int parse_args(int argc, char **argv, run_opts *o)
{
    o->interval_ms = 100;
    default_dir(o->dir, sizeof o->dir);
    o->cmd = NULL;
    o->nflags = 0;
    o->cfg = NULL;
    if (!(o->flags = calloc((size_t)argc + 1, sizeof *o->flags))) {
        fprintf(stderr, "trainprof run: out of memory\n");
        return 2;
    }
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--interval") || !strcmp(a, "-o")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "trainprof run: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (a[1] == 'o') {
                if (!*v || strlen(v) >= sizeof o->dir) { /* cut, it would name another dir */
                    fprintf(stderr, "trainprof run: -o: %s directory name (%zu bytes at most)\n",
                            *v ? "too long a" : "empty", sizeof o->dir - 1);
                    return 2;
                }
                snprintf(o->dir, sizeof o->dir, "%s", v);
            } else if ((o->interval_ms = parse_interval(v)) < 0) {
                fprintf(stderr, "trainprof run: bad --interval '%s': use e.g. 100ms, 0.5s or 2s "
                        "(10ms to 3600s)\n", v);
                return 2;
            }
        } else if (run_is_profiling_flag(a)) {
            if (take_profiling_flag(argc, argv, &i, o) != 0)
                return 2;
        } else if (a[0] == '-') {
            fprintf(stderr, "trainprof run: unknown option '%s' (put the command after --)\n", a);
            return 2;
        } else {
            break; /* the command starts here */
        }
    }
    if (i >= argc) {
        fprintf(stderr, "trainprof run: no command given\n");
        usage(stderr);
        return 2;
    }
    o->cmd = argv + i;
    return 0;
}

/* Starts the command with the signal mask and dispositions restored. Returns
 * the pid, or -1 after printing why (exec failure reported through a pipe). */
static pid_t spawn(char **cmd, const sigset_t *old_mask, const struct sigaction *old_chld,
                   int *exec_errno)
{
    int p[2];
    *exec_errno = 0;
    if (pipe2(p, O_CLOEXEC) != 0) {
        *exec_errno = errno;
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* dispositions stay as trainprof got them (nohup's ignored SIGHUP,
         * a background job's ignored SIGINT): trainprof installs no handler,
         * it only blocks; SIGCHLD gets back what the caller gave */
        sigaction(SIGCHLD, old_chld, NULL);
        sigprocmask(SIG_SETMASK, old_mask, NULL);
        close(p[0]);
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t w = write(p[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        *exec_errno = errno;
        close(p[0]);
        return -1;
    }
    int e = 0;
    ssize_t r;
    while ((r = read(p[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(p[0]);
    if (r == (ssize_t)sizeof e) {
        *exec_errno = e;
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

/* Output files, valid JSON at every moment (util/json_file.h); a write
 * error is reported once and that file stops growing, the run goes on. */
static int open_output(tpu_json_file *f, const char *dir, const char *name, const char *prefix,
                       const char *suffix)
{
    if (tpu_json_file_open(f, dir, name, prefix, suffix) == 0)
        return 0;
    fprintf(stderr, "trainprof run: cannot write %s/%s: %s\n", dir, name, strerror(f->err));
    tpu_json_file_close(f, 0);
    return -1;
}

static void check_written(const tpu_json_file *f, int rc)
{
    if (rc != 0)
        fprintf(stderr, "trainprof run: warning: cannot write %s: %s (stopped writing it)\n",
                f->path, strerror(f->err));
}

static void close_output(tpu_json_file *f)
{
    check_written(f, tpu_json_file_close(f, 0));
}

static void write_row(run_state *st, const tp_proc_sample *ps, const tp_device_memory *g, int ng,
                      double t)
{
    tpu_json j;
    tpu_json_init(&j, tpu_json_file_item(&st->rows), 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_uint(&j, "step", st->samples);     /* sample number: no steps seen from outside */
    tpu_json_kv_uint(&j, "batch_idx", st->samples);
    tpu_json_kv_double(&j, "time_s", t);
    tpu_json_kv_double(&j, "timestamp", (double)st->start_wall_ns / 1e9 + t);
    tpu_json_kv_double(&j, "cpu_memory_percent", ps->system_memory_percent);
    tpu_json_kv_uint(&j, "system_available_bytes", ps->system_available_bytes);
    tpu_json_kv_uint(&j, "rss_bytes", ps->rss_bytes);
    if (ps->pss_bytes)
        tpu_json_kv_uint(&j, "pss_bytes", ps->pss_bytes);
    tpu_json_kv_double(&j, "process_cpu_percent", ps->cpu_percent);
    tpu_json_kv_int(&j, "processes", ps->processes);
    tpu_json_kv_int(&j, "threads", ps->threads);
    if (ng > 0) {
        tpu_json_kv_double(&j, "gpu_memory_allocated_gb", g[0].allocated_bytes / GIB);
        tpu_json_kv_double(&j, "gpu_memory_reserved_gb", g[0].reserved_bytes / GIB);
        tpu_json_key(&j, "memory");
        tpu_json_begin_object(&j);
        for (int i = 0; i < ng; i++) {
            tpu_json_key(&j, g[i].device);
            tpu_json_begin_object(&j);
            tpu_json_kv_uint(&j, "bytes_in_use", g[i].allocated_bytes);
            tpu_json_kv_uint(&j, "peak_bytes_in_use", g[i].peak_bytes);
            tpu_json_kv_uint(&j, "bytes_reserved", g[i].reserved_bytes);
            if (g[i].total_bytes)
                tpu_json_kv_uint(&j, "bytes_limit", g[i].total_bytes);
            tpu_json_end_object(&j);
        }
        tpu_json_end_object(&j);
    }
    tpu_json_end_object(&j);
}

static void counter(run_state *st, const char *name, const char *arg, double v, double ts_us)
{
    tpu_json j;
    tpu_json_init(&j, tpu_json_file_item(&st->trace), 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_string(&j, "ph", "C");
    tpu_json_kv_string(&j, "name", name);
    tpu_json_kv_int(&j, "pid", st->child);
    tpu_json_kv_int(&j, "tid", 0);
    tpu_json_kv_double(&j, "ts", ts_us);
    tpu_json_key(&j, "args");
    tpu_json_begin_object(&j);
    tpu_json_kv_double(&j, arg, v);
    tpu_json_end_object(&j);
    tpu_json_end_object(&j);
}

static void take_sample(run_state *st)
{
    tp_proc_sample ps;
    tp_error err;
    if (!st->mon || tp_monitor_sample(st->mon, &ps, &err) != 0) {
        if (st->mon && !st->monitor_failed && err.code != TP_ERR_STATE)
            fprintf(stderr, "trainprof run: warning: %s (sampling stops)\n", err.message);
        st->monitor_failed = 1;
        return;
    }
    tp_device_memory g[MAX_GPUS];
    int ng = tp_monitor_gpus(st->mon, g, MAX_GPUS);
    double t = (double)(clock_ns(CLOCK_MONOTONIC) - st->start_mono_ns) / 1e9;
    write_row(st, &ps, g, ng, t);
    counter(st, "RSS (MB)", "rss_mb", ps.rss_bytes / MB, t * 1e6);
    counter(st, "CPU (%)", "cpu_percent", ps.cpu_percent, t * 1e6);
    counter(st, "System memory (%)", "used_percent", ps.system_memory_percent, t * 1e6);
    for (int i = 0; i < ng; i++) {
        char name[64];
        snprintf(name, sizeof name, "GPU memory %.31s (MB)", g[i].device);
        counter(st, name, "used_mb", g[i].allocated_bytes / MB, t * 1e6);
        if (g[i].allocated_bytes > st->gpu_peak || !st->gpu_peak_dev[0]) {
            st->gpu_peak = g[i].allocated_bytes;
            snprintf(st->gpu_peak_dev, sizeof st->gpu_peak_dev, "%.31s", g[i].device);
        }
    }
    if (ps.rss_bytes > st->peak_rss)
        st->peak_rss = ps.rss_bytes;
    if (ps.pss_bytes > st->peak_pss)
        st->peak_pss = ps.pss_bytes;
    if (st->samples > 0) { /* the first sample has no CPU interval before it */
        st->cpu_sum += ps.cpu_percent;
        st->cpu_samples++;
    }
    if (++st->samples % FLUSH_EVERY == 0) {
        check_written(&st->rows, tpu_json_file_flush(&st->rows));
        check_written(&st->trace, tpu_json_file_flush(&st->trace));
    }
}

/* Waits for the child, sampling every interval and forwarding signals sent
 * to trainprof itself (a terminal's Ctrl-C already reached the whole group:
 * si_code SI_KERNEL, so it is not sent twice). Returns the wait status. */
static int supervise(run_state *st, long interval_ms, const sigset_t *set)
{
    uint64_t next = clock_ns(CLOCK_MONOTONIC);
    for (;;) {
        int status;
        pid_t r = waitpid(st->child, &status, WNOHANG);
        if (r == st->child)
            return status;
        if (r < 0 && errno == ECHILD) /* reaped behind our back: status unknown */
            return 1 << 8;
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        if (now >= next) {
            take_sample(st);
            next += (uint64_t)interval_ms * 1000000ull;
            if (next < now)
                next = now + (uint64_t)interval_ms * 1000000ull;
            continue;
        }
        uint64_t wait = next - now;
        struct timespec ts = {(time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull)};
        siginfo_t si;
        int sig = sigtimedwait(set, &si, &ts);
        if (sig > 0 && sig != SIGCHLD && si.si_code != SI_KERNEL)
            kill(st->child, sig);
    }
}

static void write_summary(run_state *st, run_opts *o, int status, double secs)
{
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 1);
    tpu_json_begin_object(&j);
    tpu_json_key(&j, "command");
    tpu_json_begin_array(&j);
    for (char **a = o->cmd; *a; a++)
        tpu_json_string(&j, *a);
    tpu_json_end_array(&j);
    tpu_json_kv_int(&j, "pid", st->child);
    tpu_json_kv_int(&j, "exit_status", status);
    tpu_json_kv_double(&j, "duration_seconds", secs);
    tpu_json_kv_int(&j, "interval_ms", o->interval_ms);
    tpu_json_kv_uint(&j, "samples", st->samples);
    tpu_json_kv_uint(&j, "peak_rss_bytes", st->peak_rss);
    /* the tree's own memory: a page shared by k processes (forked DataLoader
     * workers, libraries) counts 1/k in each; RSS counts it in every one */
    if (st->peak_pss)
        tpu_json_kv_uint(&j, "peak_pss_bytes", st->peak_pss);
    tpu_json_kv_string(&j, "peak_memory_measure", st->peak_pss ? "pss" : "rss");
    tpu_json_kv_double(&j, "average_cpu_percent", st->cpu_samples ? st->cpu_sum / st->cpu_samples : 0);
    if (st->gpu_peak_dev[0]) {
        tpu_json_kv_uint(&j, "peak_gpu_memory_bytes", st->gpu_peak);
        tpu_json_kv_string(&j, "peak_gpu_device", st->gpu_peak_dev);
    }
    tpu_json_end_object(&j);
    tpu_buf_putc(&b, '\n');
    char path[1200], msg[256];
    if (tpu_path_join(path, sizeof path, o->dir, "run_summary.json") != 0 ||
        tpu_write_file_atomic(path, b.data, b.len, msg, sizeof msg) != 0)
        fprintf(stderr, "trainprof run: warning: cannot write run_summary.json in %s\n", o->dir);
    tpu_buf_free(&b);
    fprintf(stderr, "trainprof run: %s %s %d after %.1f s; ", o->cmd[0],
            status >= 128 ? "killed, status" : "exited with status", status, secs);
    if (st->peak_pss) /* shared pages once: the sum of RSS counts them per process */
        fprintf(stderr, "peak memory %.1f MB (PSS: shared pages counted once; RSS summed %.1f MB), ",
                st->peak_pss / MB, st->peak_rss / MB);
    else
        fprintf(stderr, "peak RSS %.1f MB (summed over the processes), ", st->peak_rss / MB);
    if (st->gpu_peak_dev[0])
        fprintf(stderr, "peak GPU memory %.2f GB (%s), ", st->gpu_peak / GIB, st->gpu_peak_dev);
    fprintf(stderr, "average CPU %.1f%%; %llu samples in %s\n",
            st->cpu_samples ? st->cpu_sum / st->cpu_samples : 0.0,
            (unsigned long long)st->samples, o->dir);
}

static int exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

static int open_outputs(run_state *st, const run_opts *o)
{
    char msg[512];
    if (tpu_mkdir_p(o->dir, msg, sizeof msg) != 0) {
        fprintf(stderr, "trainprof run: cannot create output directory: %s\n", msg);
        return -1;
    }
    if (open_output(&st->rows, o->dir, "memory_profile.json", "[", "\n]\n") != 0 ||
        open_output(&st->trace, o->dir, "trace.json", "{\"traceEvents\":[",
                    "\n],\"displayTimeUnit\":\"ms\"}\n") != 0)
        return -1;
    return 0;
}

/* A Python command: its Python processes profile themselves (run_python.c).
 * Says once what is profiled. 0, or 2 after naming a bad TRAINPROF_*
 * variable (each process would refuse it). */
static int prepare_python(run_opts *o)
{
    if (!run_is_python(o->cmd)) {
        fprintf(stderr, "trainprof run: '%s' is not a Python program: only the memory of its "
                "process tree is sampled (steps and phases need a Python training script)%s\n",
                o->cmd[0], o->nflags ? "; the --profiling flags are not used" : "");
        return 0;
    }
    char boot[4096];
    int found = run_find_bootstrap(NULL, boot, sizeof boot);
    if (found != 0) {
        fprintf(stderr, "trainprof run: %s: only the memory of the process tree is sampled%s\n",
                found == -2 ? "this CLI was built with a sanitizer, its Python package cannot be "
                              "loaded by python"
                            : "the trainprof Python package was not found beside this CLI or on "
                              "PYTHONPATH",
                found == -2 ? "" : " (install the package, or put its parent directory on "
                                   "PYTHONPATH)");
        return 0;
    }
    tp_error err;
    if (!o->cfg && !(o->cfg = tp_config_new()))
        return 2;
    if (tp_config_load_env(o->cfg, &err) != 0) {
        fprintf(stderr, "trainprof run: %s\n", err.message);
        return 2;
    }
    if (run_python_env(boot, o->flags, o->nflags) != 0) {
        fprintf(stderr, "trainprof run: cannot set the environment of the command\n");
        return 2;
    }
    fprintf(stderr, "trainprof run: profiling the Python processes of the command: run "
            "directories under %s/ (memory of the process tree in %s)\n",
            tp_config_get(o->cfg, "log_dir"), o->dir);
    return 0;
}

static int run_command(run_opts *o);

int cmd_run(int argc, char **argv)
{
    run_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc == 0)
        rc = prepare_python(&o);
    if (rc == 0)
        rc = run_command(&o);
    else if (rc == 1) /* help */
        rc = 0;
    free(o.flags);
    tp_config_free(o.cfg);
    return rc;
}

static int run_command(run_opts *op)
{
    run_opts o = *op;
    int rc;
    run_state st;
    memset(&st, 0, sizeof st);
    if (open_outputs(&st, &o) != 0)
        return 2;
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    for (int i = 0; i < N_FORWARDED; i++)
        sigaddset(&set, FORWARDED[i]);
    sigprocmask(SIG_BLOCK, &set, &old);
    /* SIGCHLD ignored by our caller would reap the child without a status
     * (waitpid: ECHILD) */
    struct sigaction dfl, old_chld;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGCHLD, &dfl, &old_chld);
    st.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
    st.start_wall_ns = clock_ns(CLOCK_REALTIME);
    int e;
    st.child = spawn(o.cmd, &old, &old_chld, &e);
    if (st.child < 0) {
        fprintf(stderr, "trainprof run: cannot run '%s': %s\n", o.cmd[0], strerror(e));
        close_output(&st.rows);
        close_output(&st.trace);
        return e == ENOENT ? 127 : 126;
    }
    tp_error err;
    st.mon = tp_monitor_new(st.child, &err);
    if (!st.mon)
        fprintf(stderr, "trainprof run: warning: cannot monitor pid %d: %s\n", (int)st.child,
                err.message);
    int status = supervise(&st, o.interval_ms, &set);
    double secs = (double)(clock_ns(CLOCK_MONOTONIC) - st.start_mono_ns) / 1e9;
    close_output(&st.rows);
    close_output(&st.trace);
    tp_monitor_free(st.mon);
    sigprocmask(SIG_SETMASK, &old, NULL);
    rc = exit_code(status);
    write_summary(&st, &o, rc, secs);
    return rc;
}
