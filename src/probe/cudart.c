/*
 * cudart.c - device memory through the CUDA runtime (cudaMemGetInfo), for
 * programs that use CUDA. Only a runtime that the program has already loaded
 * is used (dlopen RTLD_NOLOAD), so trainprof never creates a CUDA context in
 * a CPU-only program; TRAINPROF_CUDART_LIB loads a given library (tests).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe_internal.h"

typedef int cuda_err; /* cudaError_t: 0 = cudaSuccess */

struct tpi_cudart {
    void *lib;
    cuda_err (*count)(int *);
    cuda_err (*get)(int *);
    cuda_err (*meminfo)(size_t *, size_t *);
    const char *(*errstr)(cuda_err);
};

static const char *const CUDART_NAMES[] = {
    "libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", NULL,
};

void *tpi_cudart_find_runtime(char *why, size_t whylen)
{
    const char *path = getenv("TRAINPROF_CUDART_LIB");
    if (path && *path) {
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            snprintf(why, whylen, "TRAINPROF_CUDART_LIB=%s cannot be loaded", path);
        return lib;
    }
    for (int i = 0; CUDART_NAMES[i]; i++) {
        void *lib = dlopen(CUDART_NAMES[i], RTLD_NOW | RTLD_NOLOAD);
        if (lib)
            return lib;
    }
    snprintf(why, whylen, "the program has not loaded the CUDA runtime");
    return NULL;
}

tpi_cudart *tpi_cudart_open(char *why, size_t whylen)
{
    void *lib = tpi_cudart_find_runtime(why, whylen);
    if (!lib)
        return NULL;
    tpi_cudart *c = calloc(1, sizeof *c);
    if (!c) {
        dlclose(lib);
        return NULL;
    }
    c->lib = lib;
    *(void **)&c->count = dlsym(lib, "cudaGetDeviceCount");
    *(void **)&c->get = dlsym(lib, "cudaGetDevice");
    *(void **)&c->meminfo = dlsym(lib, "cudaMemGetInfo");
    *(void **)&c->errstr = dlsym(lib, "cudaGetErrorString");
    int n = 0;
    cuda_err e;
    if (!c->count || !c->get || !c->meminfo) {
        snprintf(why, whylen, "the CUDA runtime lacks cudaMemGetInfo and friends");
    } else if ((e = c->count(&n)) != 0 || n <= 0) {
        snprintf(why, whylen, "CUDA runtime reports no device (%s)",
                 e && c->errstr ? c->errstr(e) : "0 devices");
    } else {
        return c;
    }
    tpi_cudart_close(c);
    return NULL;
}

/* Only the calling thread's current device is queried: switching devices
 * would create a CUDA context (hundreds of MB) on GPUs the program never
 * uses. NVML, when present, is preferred and covers every GPU. */
int tpi_cudart_sample(tpi_cudart *c, tpi_device_sample *out, int max, char *why, size_t whylen)
{
    int cur = 0;
    size_t fr = 0, total = 0;
    cuda_err e;
    if (max <= 0)
        return 0;
    if ((e = c->get(&cur)) != 0 || (e = c->meminfo(&fr, &total)) != 0) {
        snprintf(why, whylen, "CUDA runtime query failed: %s",
                 c->errstr && c->errstr(e) ? c->errstr(e) : "error");
        return -1;
    }
    if (fr > total) {
        snprintf(why, whylen, "CUDA runtime reports %zu free of %zu bytes", fr, total);
        return -1;
    }
    tpi_device_sample *d = &out[0];
    memset(d, 0, sizeof *d);
    snprintf(d->mem.device, sizeof d->mem.device, "cuda:%d", cur);
    snprintf(d->source, sizeof d->source, "cudart");
    d->mem.allocated_bytes = total - fr;
    d->mem.reserved_bytes = total - fr;
    d->mem.total_bytes = total;
    return 1;
}

void tpi_cudart_close(tpi_cudart *c)
{
    if (!c)
        return;
    dlclose(c->lib);
    free(c);
}
