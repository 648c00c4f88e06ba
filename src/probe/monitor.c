/*
 * monitor.c - tp_monitor_*: RSS, CPU and threads of a whole process tree
 * (the root pid and every descendant, found through the ppid field of
 * /proc/<pid>/stat), and the GPUs through NVML. Used by `trainprof run`.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe/probe_internal.h"

#define MON_MAX_TREE 4096

typedef struct cpu_mark {
    int pid;
    uint64_t start, ticks; /* starttime tells a reused pid apart */
} cpu_mark;

struct tp_monitor {
    int root;
    long hz, page;
    uint64_t last_wall_ns;
    cpu_mark *marks; /* tree members at the previous sample */
    int n_marks;
    int tree[MON_MAX_TREE];
    int idx[MON_MAX_TREE]; /* scratch of measure() */
    int n_tree;
    tpi_nvml *nvml;
    int nvml_tried;
    uint64_t gpu_peak[TPI_MAX_DEVICES];
    uint64_t pss_bytes, pss_at_ns;  /* the last PSS sum and when it was read */
};

#define PSS_EVERY_NS 1000000000ull

/* "Pss:" of /proc/<pid>/smaps_rollup in bytes; 0 when unreadable (an old
 * kernel, another user's process, a process gone meanwhile). */
static uint64_t read_pss(int pid)
{
    char path[64];
    snprintf(path, sizeof path, "%s/%d/smaps_rollup", tpi_proc_root(), pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Pss: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

static void set_err(tp_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(tp_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Every process's stat; *n entries in a malloc'd array, NULL on error. */
static tpi_proc_stat *scan_all(int *n)
{
    DIR *d = opendir(tpi_proc_root());
    if (!d)
        return NULL;
    int cap = 256, k = 0;
    tpi_proc_stat *all = malloc((size_t)cap * sizeof *all);
    struct dirent *e;
    while (all && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        if (k == cap) {
            tpi_proc_stat *na = realloc(all, (size_t)(cap *= 2) * sizeof *all);
            if (!na)
                break;
            all = na;
        }
        if (tpi_proc_read_stat(atoi(e->d_name), &all[k]) == 0)
            k++; /* a process that exited meanwhile is skipped */
    }
    closedir(d);
    *n = k;
    return all;
}

/* Indices of the tree rooted at root in all[] (parents before children). */
static int build_tree(const tpi_proc_stat *all, int n, int root, int *idx, int max)
{
    int k = 0;
    for (int i = 0; i < n && k < max; i++)
        if (all[i].pid == root)
            idx[k++] = i;
    for (int head = 0; head < k; head++)
        for (int i = 0; i < n && k < max; i++)
            if (all[i].ppid == all[idx[head]].pid && all[i].pid != root)
                idx[k++] = i;
    return k;
}

static uint64_t prev_ticks(const tp_monitor *m, const tpi_proc_stat *s, int *known)
{
    for (int i = 0; i < m->n_marks; i++)
        if (m->marks[i].pid == s->pid && m->marks[i].start == s->starttime_ticks) {
            *known = 1;
            return m->marks[i].ticks;
        }
    *known = 0;
    return 0;
}

/* Sums the tree into out and remembers the CPU ticks for the next delta. */
static int measure(tp_monitor *m, tp_proc_sample *out, int first, tp_error *err)
{
    int n = 0;
    tpi_proc_stat *all = scan_all(&n);
    if (!all) {
        set_err(err, TP_ERR_IO, "cannot list %s: %s", tpi_proc_root(), strerror(errno));
        return TP_ERR_IO;
    }
    int *idx = m->idx; /* per monitor, not TLS: keeps the library's TLS small */
    int k = build_tree(all, n, m->root, idx, MON_MAX_TREE);
    if (k == 0) {
        free(all);
        set_err(err, TP_ERR_STATE, "process %d is gone", m->root);
        return TP_ERR_STATE;
    }
    cpu_mark *marks = malloc((size_t)k * sizeof *marks);
    uint64_t dticks = 0;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < k; i++) {
        const tpi_proc_stat *s = &all[idx[i]];
        int known;
        uint64_t ticks = s->utime_ticks + s->stime_ticks, before = prev_ticks(m, s, &known);
        /* a process born since the last sample counts all its CPU time */
        if (!first && ticks > before)
            dticks += ticks - before;
        out->rss_bytes += s->rss_pages * (uint64_t)m->page;
        out->threads += s->threads;
        m->tree[i] = s->pid;
        if (marks)
            marks[i] = (cpu_mark){s->pid, s->starttime_ticks, ticks};
    }
    out->processes = k;
    m->n_tree = k;
    free(all);
    uint64_t now_pss = mono_ns();
    if (first || now_pss - m->pss_at_ns >= PSS_EVERY_NS) {
        m->pss_bytes = 0;
        for (int i = 0; i < k; i++)
            m->pss_bytes += read_pss(m->tree[i]);
        m->pss_at_ns = now_pss;
    }
    out->pss_bytes = m->pss_bytes;
    free(m->marks);
    m->marks = marks;
    m->n_marks = marks ? k : 0;
    uint64_t now = mono_ns();
    double dt = (double)(now - m->last_wall_ns) / 1e9;
    m->last_wall_ns = now;
    out->cpu_percent = !first && dt > 0 ? 100.0 * (double)dticks / (double)m->hz / dt : 0.0;
    uint64_t total, avail;
    if (tpi_system_read(&total, &avail, &out->system_memory_percent) == 0)
        out->system_available_bytes = avail;
    return 0;
}

tp_monitor *tp_monitor_new(int pid, tp_error *err)
{
    if (pid <= 0) {
        set_err(err, TP_ERR_INVALID, "tp_monitor_new: invalid pid %d", pid);
        return NULL;
    }
    tp_monitor *m = calloc(1, sizeof *m);
    if (!m) {
        set_err(err, TP_ERR_NOMEM, "out of memory");
        return NULL;
    }
    m->root = pid;
    m->hz = sysconf(_SC_CLK_TCK);
    m->page = sysconf(_SC_PAGESIZE);
    if (m->hz <= 0)
        m->hz = 100;
    if (m->page <= 0)
        m->page = 4096;
    m->last_wall_ns = mono_ns();
    tp_proc_sample first;
    if (measure(m, &first, 1, err) != 0) {
        tp_monitor_free(m);
        return NULL;
    }
    return m;
}

int tp_monitor_sample(tp_monitor *m, tp_proc_sample *out, tp_error *err)
{
    if (!m || !out) {
        set_err(err, TP_ERR_INVALID, "tp_monitor_sample: NULL argument");
        return TP_ERR_INVALID;
    }
    return measure(m, out, 0, err);
}

int tp_monitor_gpus(tp_monitor *m, tp_device_memory *out, int max)
{
    if (!m || !out || max <= 0)
        return 0;
    if (!m->nvml_tried) {
        char why[256] = "";
        m->nvml_tried = 1;
        m->nvml = tpi_nvml_open(why, sizeof why);
        if (!m->nvml)
            fprintf(stderr, "trainprof: info: no GPU monitoring: %s; GPU fields left out\n", why);
    }
    if (!m->nvml)
        return 0;
    tpi_device_sample ds[TPI_MAX_DEVICES];
    char why[300];
    int n = tpi_nvml_sample(m->nvml, m->tree, m->n_tree, ds, TPI_MAX_DEVICES, why, sizeof why);
    if (n < 0) {
        fprintf(stderr, "trainprof: warning: %s; GPU monitoring stops\n", why);
        tpi_nvml_close(m->nvml);
        m->nvml = NULL;
        return 0;
    }
    int k = 0;
    for (int i = 0; i < n && k < max; i++, k++) {
        out[k] = ds[i].mem;
        /* the tree's own share when the driver tells, else the whole device */
        if (ds[i].have_process_used)
            out[k].allocated_bytes = ds[i].process_used_bytes;
        if (out[k].allocated_bytes > m->gpu_peak[i])
            m->gpu_peak[i] = out[k].allocated_bytes;
        out[k].peak_bytes = m->gpu_peak[i];
    }
    return k;
}

void tp_monitor_free(tp_monitor *m)
{
    if (!m)
        return;
    tpi_nvml_close(m->nvml);
    free(m->marks);
    free(m);
}
