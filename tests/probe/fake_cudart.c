/*
 * fake_cudart.c - a stand-in CUDA runtime for tests:
 *   FAKE_CUDA_TOTAL / FAKE_CUDA_FREE bytes, FAKE_CUDA_DEVICE current device,
 *   FAKE_CUDA_FAIL=1 makes cudaMemGetInfo fail.
 */
#include <stddef.h>
#include <stdlib.h>

static unsigned long long env_u64(const char *k, unsigned long long def)
{
    const char *v = getenv(k);
    return v && *v ? strtoull(v, NULL, 10) : def;
}

int cudaGetDeviceCount(int *n) { *n = 1; return 0; }
int cudaGetDevice(int *d) { *d = (int)env_u64("FAKE_CUDA_DEVICE", 0); return 0; }
int cudaSetDevice(int d) { (void)d; return 0; }
const char *cudaGetErrorString(int e) { return e == 2 ? "out of memory" : "unknown error"; }

int cudaMemGetInfo(size_t *fr, size_t *total)
{
    if (env_u64("FAKE_CUDA_FAIL", 0))
        return 2;
    *total = (size_t)env_u64("FAKE_CUDA_TOTAL", 16ull << 30);
    *fr = (size_t)env_u64("FAKE_CUDA_FREE", 12ull << 30);
    return 0;
}
