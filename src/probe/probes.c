/*
 * probes.c - the probe set: process, system, NVML or CUDA runtime, and the
 * framework allocator callback, merged into one tpi_mem_sample. Each probe is
 * optional; a probe that fails prints one warning, is counted, and leaves its
 * fields absent. Samples may come from the training thread (step end) and
 * the background sampler at once: the shared state is under a mutex.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe/probe_internal.h"

#define TPI_IMPLAUSIBLE_BYTES (1ULL << 56) /* 64 PiB: a garbage value */
#define TPI_MEMINFO_NS 1000000000ull       /* system memory changes slowly */

typedef struct dev_peak {
    char name[32];
    uint64_t peak;
} dev_peak;

struct tpi_probe_set {
    pthread_mutex_t lock;
    tpi_nvml *nvml;
    tpi_cudart *cudart;
    tp_device_memory_fn cb;
    void *cb_user;
    int pid;
    uint64_t page_bytes;
    int stat_fd, stat_pid; /* self/stat kept open; reopened in a forked child */
    uint64_t last_cpu_ns, last_wall_ns;
    uint64_t sys_read_ns; /* /proc/meminfo read at most every TPI_MEMINFO_NS */
    uint64_t sys_total, sys_available;
    double sys_percent;
    dev_peak peaks[TPI_MAX_DEVICES];
    int n_peaks;
    uint32_t cb_rejected, errors;
    int warned_proc, warned_sys, warned_gpu, warned_cb;
    char describe[64];
    char gpu_note[600]; /* why no GPU probe opened ("" when one did) */
};

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void open_gpu(tpi_probe_set *p)
{
    char why_nvml[256] = "", why_cuda[256] = "";
    p->nvml = tpi_nvml_open(why_nvml, sizeof why_nvml);
    if (!p->nvml)
        p->cudart = tpi_cudart_open(why_cuda, sizeof why_cuda);
    /* said in training_summary.json, not on the console: a CPU-only run
     * (most of them on a laptop) has nothing wrong to report */
    if (!p->nvml && !p->cudart)
        snprintf(p->gpu_note, sizeof p->gpu_note, "%s; %s", why_nvml, why_cuda);
}

tpi_probe_set *tpi_probes_open(const tpi_settings *s, tp_error *err)
{
    (void)s; /* every probe is cheap to open; settings only gate sampling */
    tpi_probe_set *p = calloc(1, sizeof *p);
    if (!p) {
        if (err) {
            memset(err, 0, sizeof *err);
            err->code = TP_ERR_NOMEM;
            snprintf(err->message, sizeof err->message, "out of memory opening the memory probes");
        }
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    p->pid = (int)getpid();
    p->stat_fd = -1;
    long page = sysconf(_SC_PAGESIZE);
    p->page_bytes = page > 0 ? (uint64_t)page : 4096;
    p->last_cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    p->last_wall_ns = clock_ns(CLOCK_MONOTONIC);
    open_gpu(p);
    snprintf(p->describe, sizeof p->describe, "process,system%s", p->nvml ? ",nvml"
             : p->cudart ? ",cudart" : "");
    return p;
}

const char *tpi_probes_describe(const tpi_probe_set *p) { return p ? p->describe : ""; }

const char *tpi_probes_gpu_note(const tpi_probe_set *p) { return p ? p->gpu_note : ""; }

void tpi_probes_set_callback(tpi_probe_set *p, tp_device_memory_fn fn, void *user)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->cb = fn;
    p->cb_user = user;
    pthread_mutex_unlock(&p->lock);
}

/* One warning per probe and kind of failure; every failure is counted. */
static void probe_failed(tpi_probe_set *p, int *warned, const char *what, const char *detail)
{
    pthread_mutex_lock(&p->lock);
    p->errors++;
    int first = !*warned;
    *warned = 1;
    pthread_mutex_unlock(&p->lock);
    if (first)
        fprintf(stderr, "trainprof: warning: %s: %s (fields left out, training goes on)\n",
                what, detail);
}

/* The self/stat descriptor of this process, opened on first use and again
 * after a fork (the child's "self" is another file). -1 with errno set. */
static int stat_fd(tpi_probe_set *p)
{
    int pid = (int)getpid();
    pthread_mutex_lock(&p->lock);
    if (p->stat_fd >= 0 && p->stat_pid != pid) {
        close(p->stat_fd);
        p->stat_fd = -1;
    long page = sysconf(_SC_PAGESIZE);
    p->page_bytes = page > 0 ? (uint64_t)page : 4096;
    }
    if (p->stat_fd < 0) {
        p->stat_fd = tpi_proc_open("self/stat");
        p->stat_pid = pid;
    }
    int fd = p->stat_fd, e = errno;
    pthread_mutex_unlock(&p->lock);
    errno = e;
    return fd;
}

/* RSS and threads from self/stat (kept open, re-read with pread: ~4 us
 * instead of ~18 us for opening and formatting self/status), peak RSS from
 * getrusage (ru_maxrss = VmHWM), CPU from CLOCK_PROCESS_CPUTIME_ID. */
static void sample_process(tpi_probe_set *p, tpi_mem_sample *out)
{
    char buf[1024];
    tpi_proc_stat st;
    int fd = stat_fd(p);
    if (fd < 0 || tpi_proc_pread(fd, buf, sizeof buf) < 0) {
        char d[600];
        snprintf(d, sizeof d, "cannot read %s/self/stat: %s", tpi_proc_root(), strerror(errno));
        probe_failed(p, &p->warned_proc, "process memory probe", d);
        return;
    }
    if (tpi_proc_parse_stat(buf, &st) != 0 || st.threads <= 0) {
        probe_failed(p, &p->warned_proc, "process memory probe", "malformed self/stat");
        return;
    }
    out->rss_bytes = st.rss_pages * p->page_bytes;
    out->threads = st.threads;
    struct rusage ru;
    uint64_t hwm = getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024 : 0;
    out->peak_rss_bytes = hwm > out->rss_bytes ? hwm : out->rss_bytes;
    /* clocks read under the lock: two threads sampling at once must not see
     * each other's later reading as "last" (the difference wrapped) */
    pthread_mutex_lock(&p->lock);
    uint64_t cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID), wall = clock_ns(CLOCK_MONOTONIC);
    /* a forked child's CPU clock restarts at 0: its CPU time is all since the fork */
    uint64_t dc = cpu >= p->last_cpu_ns ? cpu - p->last_cpu_ns : cpu;
    uint64_t dw = wall - p->last_wall_ns;
    p->last_cpu_ns = cpu;
    p->last_wall_ns = wall;
    pthread_mutex_unlock(&p->lock);
    out->cpu_percent = dw ? 100.0 * (double)dc / (double)dw : 0.0;
    out->have_process = 1;
}

/* /proc/meminfo costs ~13 us and changes slowly: it is read at most every
 * TPI_MEMINFO_NS; samples in between reuse the last values read. */
static void sample_system(tpi_probe_set *p, tpi_mem_sample *out)
{
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    pthread_mutex_lock(&p->lock);
    int fresh = p->sys_read_ns && now - p->sys_read_ns < TPI_MEMINFO_NS;
    if (fresh) {
        out->system_total_bytes = p->sys_total;
        out->system_available_bytes = p->sys_available;
        out->system_memory_percent = p->sys_percent;
        out->have_system = 1;
    }
    pthread_mutex_unlock(&p->lock);
    if (fresh)
        return;
    if (tpi_system_read(&out->system_total_bytes, &out->system_available_bytes,
                        &out->system_memory_percent) != 0) {
        char d[600];
        snprintf(d, sizeof d, "cannot read %s/meminfo: %s", tpi_proc_root(), strerror(errno));
        probe_failed(p, &p->warned_sys, "system memory probe", d);
        return;
    }
    out->have_system = 1;
    pthread_mutex_lock(&p->lock);
    p->sys_read_ns = now;
    p->sys_total = out->system_total_bytes;
    p->sys_available = out->system_available_bytes;
    p->sys_percent = out->system_memory_percent;
    pthread_mutex_unlock(&p->lock);
}

static void sample_gpu(tpi_probe_set *p, tpi_mem_sample *out)
{
    char why[300] = "";
    int n = 0, pid = (int)getpid(); /* not p->pid: a forked child asks about itself */
    if (p->nvml)
        n = tpi_nvml_sample(p->nvml, &pid, 1, out->devices, TPI_MAX_DEVICES, why, sizeof why);
    else if (p->cudart)
        n = tpi_cudart_sample(p->cudart, out->devices, TPI_MAX_DEVICES, why, sizeof why);
    if (n < 0) {
        probe_failed(p, &p->warned_gpu, "GPU memory probe", why);
        n = 0;
    }
    out->n_devices = n;
}

const char *tpi_device_memory_check(const tp_device_memory *d)
{
    if (!memchr(d->device, '\0', sizeof d->device))
        return "device name not NUL-terminated";
    if (!d->device[0])
        return "empty device name";
    if (d->allocated_bytes >= TPI_IMPLAUSIBLE_BYTES || d->reserved_bytes >= TPI_IMPLAUSIBLE_BYTES ||
        d->peak_bytes >= TPI_IMPLAUSIBLE_BYTES || d->total_bytes >= TPI_IMPLAUSIBLE_BYTES)
        return "implausible byte count (>= 64 PiB)";
    if (d->reserved_bytes && d->allocated_bytes > d->reserved_bytes)
        return "allocated bytes exceed reserved bytes";
    if (d->total_bytes && d->reserved_bytes > d->total_bytes)
        return "reserved bytes exceed the device total";
    if (d->peak_bytes && d->peak_bytes < d->allocated_bytes)
        return "peak bytes below allocated bytes";
    return NULL;
}

static tpi_device_sample *find_device(tpi_mem_sample *out, const char *name)
{
    for (int i = 0; i < out->n_devices; i++)
        if (strcmp(out->devices[i].mem.device, name) == 0)
            return &out->devices[i];
    if (out->n_devices >= TPI_MAX_DEVICES)
        return NULL;
    tpi_device_sample *d = &out->devices[out->n_devices++];
    memset(d, 0, sizeof *d);
    memcpy(d->mem.device, name, strnlen(name, sizeof d->mem.device - 1));
    return d;
}

static void reject_callback(tpi_probe_set *p, const char *why, int index)
{
    char d[200];
    snprintf(d, sizeof d, "allocator callback result rejected (entry %d: %s)", index, why);
    pthread_mutex_lock(&p->lock);
    p->cb_rejected++;
    pthread_mutex_unlock(&p->lock);
    probe_failed(p, &p->warned_cb, "device memory callback", d);
}

/* Merges the framework allocator's view over the driver's: allocated,
 * reserved and peak come from the callback, the total from whichever has it. */
static void sample_callback(tpi_probe_set *p, tpi_mem_sample *out)
{
    tp_device_memory got[TPI_MAX_DEVICES];
    pthread_mutex_lock(&p->lock);
    tp_device_memory_fn fn = p->cb;
    void *user = p->cb_user;
    pthread_mutex_unlock(&p->lock);
    if (!fn)
        return;
    memset(got, 0, sizeof got);
    int n = fn(user, got, TPI_MAX_DEVICES);
    if (n < 0 || n > TPI_MAX_DEVICES) {
        reject_callback(p, n < 0 ? "callback returned an error" : "count above max", -1);
        return;
    }
    for (int i = 0; i < n; i++) {
        const char *why = tpi_device_memory_check(&got[i]);
        tpi_device_sample *d = why ? NULL : find_device(out, got[i].device);
        if (why) {
            reject_callback(p, why, i);
            continue;
        }
        if (!d)
            continue;
        uint64_t total = got[i].total_bytes ? got[i].total_bytes : d->mem.total_bytes;
        d->mem = got[i];
        d->mem.total_bytes = total;
        snprintf(d->source, sizeof d->source, "callback");
    }
}

/* Peak bytes in use per device, kept across samples when the source gives none. */
static void update_peaks(tpi_probe_set *p, tpi_mem_sample *out)
{
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < out->n_devices; i++) {
        tp_device_memory *m = &out->devices[i].mem;
        dev_peak *pk = NULL;
        for (int k = 0; k < p->n_peaks && !pk; k++)
            if (strcmp(p->peaks[k].name, m->device) == 0)
                pk = &p->peaks[k];
        if (!pk && p->n_peaks < TPI_MAX_DEVICES) {
            pk = &p->peaks[p->n_peaks++];
            snprintf(pk->name, sizeof pk->name, "%s", m->device);
            pk->peak = 0;
        }
        uint64_t cur = m->peak_bytes > m->allocated_bytes ? m->peak_bytes : m->allocated_bytes;
        if (pk && cur > pk->peak)
            pk->peak = cur;
        if (pk && !m->peak_bytes)
            m->peak_bytes = pk->peak;
    }
    out->callback_rejected = p->cb_rejected;
    out->probe_errors = p->errors;
    pthread_mutex_unlock(&p->lock);
}

int tpi_probes_sample(tpi_probe_set *p, tpi_mem_sample *out)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    if (!p)
        return -1;
    sample_process(p, out);
    sample_system(p, out);
    sample_gpu(p, out);
    sample_callback(p, out);
    update_peaks(p, out);
    return 0;
}

void tpi_probes_close(tpi_probe_set *p)
{
    if (!p)
        return;
    tpi_nvml_close(p->nvml);
    tpi_cudart_close(p->cudart);
    if (p->stat_fd >= 0)
        close(p->stat_fd);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
