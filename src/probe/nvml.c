/*
 * nvml.c - NVIDIA GPUs through NVML, loaded with dlopen at run time (no link
 * dependency). TRAINPROF_NVML_LIB overrides the library path (tests load a
 * fake one). Types below mirror nvml.h's ABI.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe_internal.h"

typedef int nvml_ret;           /* nvmlReturn_t: 0 = NVML_SUCCESS */
typedef void *nvml_dev;         /* nvmlDevice_t */
typedef struct { unsigned long long total, free, used; } nvml_memory;
typedef struct { unsigned int gpu, memory; } nvml_util;
typedef struct { unsigned int pid; unsigned long long used; } nvml_proc_v1;
typedef struct {
    unsigned int pid;
    unsigned long long used;
    unsigned int gpu_instance, compute_instance;
} nvml_proc_v2;

#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_NOT_AVAILABLE (~0ULL)
#define NVML_MAX_PROCS 256

struct tpi_nvml {
    void *lib;
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    nvml_ret (*count)(unsigned int *);
    nvml_ret (*handle)(unsigned int, nvml_dev *);
    nvml_ret (*memory)(nvml_dev, nvml_memory *);
    nvml_ret (*util)(nvml_dev, nvml_util *);
    nvml_ret (*power)(nvml_dev, unsigned int *); /* milliwatts */
    nvml_ret (*procs)(nvml_dev, unsigned int *, void *);
    int procs_v2;               /* procs takes nvml_proc_v2 entries */
    const char *(*errstr)(nvml_ret);
    int n_devices;
    nvml_dev devs[TPI_MAX_DEVICES];
};

static const char *nvml_err(const tpi_nvml *n, nvml_ret r)
{
    const char *s = n->errstr ? n->errstr(r) : NULL;
    return s ? s : "NVML error";
}

static void *sym(void *lib, const char *a, const char *b)
{
    void *f = dlsym(lib, a);
    return f || !b ? f : dlsym(lib, b);
}

static int load_symbols(tpi_nvml *n)
{
    *(void **)&n->init = sym(n->lib, "nvmlInit_v2", "nvmlInit");
    *(void **)&n->shutdown = sym(n->lib, "nvmlShutdown", NULL);
    *(void **)&n->count = sym(n->lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    *(void **)&n->handle = sym(n->lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    *(void **)&n->memory = sym(n->lib, "nvmlDeviceGetMemoryInfo", NULL);
    *(void **)&n->util = sym(n->lib, "nvmlDeviceGetUtilizationRates", NULL);
    *(void **)&n->power = sym(n->lib, "nvmlDeviceGetPowerUsage", NULL);
    *(void **)&n->errstr = sym(n->lib, "nvmlErrorString", NULL);
    *(void **)&n->procs = sym(n->lib, "nvmlDeviceGetComputeRunningProcesses_v3",
                              "nvmlDeviceGetComputeRunningProcesses_v2");
    n->procs_v2 = n->procs != NULL;
    if (!n->procs)
        *(void **)&n->procs = sym(n->lib, "nvmlDeviceGetComputeRunningProcesses", NULL);
    return n->init && n->count && n->handle && n->memory ? 0 : -1;
}

tpi_nvml *tpi_nvml_open(char *why, size_t whylen)
{
    const char *path = getenv("TRAINPROF_NVML_LIB");
    if (!path || !*path)
        path = "libnvidia-ml.so.1";
    tpi_nvml *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        snprintf(why, whylen, "no NVIDIA driver (%s not loadable)", path);
        free(n);
        return NULL;
    }
    nvml_ret r;
    unsigned int count = 0;
    if (load_symbols(n) != 0) {
        snprintf(why, whylen, "%s lacks the NVML functions trainprof needs", path);
    } else if ((r = n->init()) != 0) {
        snprintf(why, whylen, "NVML initialization failed: %s (code %d)", nvml_err(n, r), r);
    } else if ((r = n->count(&count)) != 0) {
        snprintf(why, whylen, "NVML device count failed: %s (code %d)", nvml_err(n, r), r);
        if (n->shutdown)
            n->shutdown();
    } else {
        n->n_devices = count > TPI_MAX_DEVICES ? TPI_MAX_DEVICES : (int)count;
        for (int i = 0; i < n->n_devices; i++)
            if (n->handle((unsigned)i, &n->devs[i]) != 0)
                n->devs[i] = NULL;
        if (n->n_devices > 0)
            return n;
        snprintf(why, whylen, "NVML reports no GPU");
        if (n->shutdown)
            n->shutdown();
    }
    dlclose(n->lib);
    free(n);
    return NULL;
}

/* Memory the processes in pids use on dev; 0 with *have 0 when unknown. */
static uint64_t process_used(tpi_nvml *n, nvml_dev dev, const int *pids, int n_pids, int *have)
{
    /* On the heap, not in TLS: a large thread-local block would not fit the
     * static TLS that a dlopen'ed library gets (see session.c). */
    unsigned int count = NVML_MAX_PROCS;
    *have = 0;
    if (!n->procs || n_pids <= 0)
        return 0;
    nvml_proc_v2 *buf = malloc(NVML_MAX_PROCS * sizeof *buf);
    if (!buf)
        return 0;
    if (n->procs(dev, &count, buf) != 0) {
        free(buf);
        return 0;
    }
    uint64_t sum = 0;
    for (unsigned int i = 0; i < count && i < NVML_MAX_PROCS; i++) {
        unsigned int pid;
        unsigned long long used;
        if (n->procs_v2) {
            pid = buf[i].pid;
            used = buf[i].used;
        } else {
            pid = ((nvml_proc_v1 *)buf)[i].pid;
            used = ((nvml_proc_v1 *)buf)[i].used;
        }
        for (int k = 0; k < n_pids; k++) {
            if ((int)pid != pids[k])
                continue;
            *have = 1;
            if (used != NVML_NOT_AVAILABLE)
                sum += used;
        }
    }
    free(buf);
    if (count == 0)
        *have = 1; /* the driver answered: nothing of ours on this device */
    return sum;
}

int tpi_nvml_sample(tpi_nvml *n, const int *pids, int n_pids, tpi_device_sample *out,
                    int max, char *why, size_t whylen)
{
    int k = 0;
    for (int i = 0; i < n->n_devices && k < max; i++) {
        nvml_memory m;
        nvml_ret r;
        if (!n->devs[i])
            continue;
        if ((r = n->memory(n->devs[i], &m)) != 0) {
            snprintf(why, whylen, "NVML memory query of GPU %d failed: %s (code %d)", i,
                     nvml_err(n, r), r);
            return -1;
        }
        tpi_device_sample *d = &out[k++];
        memset(d, 0, sizeof *d);
        snprintf(d->mem.device, sizeof d->mem.device, "cuda:%d", i);
        snprintf(d->source, sizeof d->source, "nvml");
        d->mem.allocated_bytes = m.used;
        d->mem.reserved_bytes = m.used;
        d->mem.total_bytes = m.total;
        nvml_util u;
        if (n->util && n->util(n->devs[i], &u) == 0 && u.gpu <= 100) {
            d->have_utilization = 1;
            d->utilization_percent = u.gpu;
        }
        unsigned int mw;
        if (n->power && n->power(n->devs[i], &mw) == 0) {
            d->have_power = 1;
            d->power_watts = mw / 1000.0;
        }
        d->process_used_bytes = process_used(n, n->devs[i], pids, n_pids, &d->have_process_used);
    }
    return k;
}

void tpi_nvml_close(tpi_nvml *n)
{
    if (!n)
        return;
    if (n->shutdown)
        n->shutdown();
    dlclose(n->lib);
    free(n);
}
