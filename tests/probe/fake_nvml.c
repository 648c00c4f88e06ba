/*
 * fake_nvml.c - a stand-in libnvidia-ml.so.1 for tests: the NVML symbols
 * trainprof uses, with values scripted through the environment:
 *   FAKE_NVML_DEVICES  number of GPUs (default 2)
 *   FAKE_NVML_TOTAL    bytes per GPU (default 80 GiB)
 *   FAKE_NVML_USED     bytes used per GPU (default 1 GiB); grows by
 *   FAKE_NVML_GROWTH   bytes at every memory query
 *   FAKE_NVML_UTIL     utilization percent (default 42)
 *   FAKE_NVML_PROC_USED bytes the calling process uses on each GPU
 *   FAKE_NVML_FAIL     init | count | memory: that call fails
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { unsigned long long total, free, used; } nvml_memory;
typedef struct { unsigned int gpu, memory; } nvml_util;
typedef struct {
    unsigned int pid;
    unsigned long long used;
    unsigned int gi, ci;
} nvml_proc;

static int handles[64];
static unsigned long long queries;

static unsigned long long env_u64(const char *k, unsigned long long def)
{
    const char *v = getenv(k);
    return v && *v ? strtoull(v, NULL, 10) : def;
}

static int fails(const char *what)
{
    const char *v = getenv("FAKE_NVML_FAIL");
    return v && strcmp(v, what) == 0;
}

int nvmlInit_v2(void) { return fails("init") ? 9 /* DRIVER_NOT_LOADED */ : 0; }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int r) { return r == 9 ? "Driver Not Loaded" : "Unknown Error"; }

int nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (fails("count"))
        return 999;
    *n = (unsigned)env_u64("FAKE_NVML_DEVICES", 2);
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
    if (i >= 64)
        return 2;
    *dev = &handles[i];
    return 0;
}

int nvmlDeviceGetMemoryInfo(void *dev, nvml_memory *m)
{
    (void)dev;
    if (fails("memory"))
        return 15; /* GPU_IS_LOST */
    m->total = env_u64("FAKE_NVML_TOTAL", 80ull << 30);
    m->used = env_u64("FAKE_NVML_USED", 1ull << 30) + env_u64("FAKE_NVML_GROWTH", 0) * queries++;
    m->free = m->total - m->used;
    return 0;
}

int nvmlDeviceGetUtilizationRates(void *dev, nvml_util *u)
{
    (void)dev;
    u->gpu = (unsigned)env_u64("FAKE_NVML_UTIL", 42);
    u->memory = 10;
    return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, nvml_proc *p)
{
    (void)dev;
    unsigned long long used = env_u64("FAKE_NVML_PROC_USED", 0);
    if (!used) {
        *count = 0;
        return 0;
    }
    if (*count < 2) {
        *count = 2;
        return 7; /* INSUFFICIENT_SIZE */
    }
    p[0] = (nvml_proc){(unsigned)getpid(), used, 0, 0};
    p[1] = (nvml_proc){1, 12345, 0, 0}; /* someone else's process */
    *count = 2;
    return 0;
}

/* 250.5 W, or FAKE_NVML_POWER_MW */
int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw)
{
    (void)dev;
    const char *v = getenv("FAKE_NVML_POWER_MW");
    *mw = v && *v ? (unsigned int)strtoul(v, NULL, 10) : 250500u;
    return 0;
}
