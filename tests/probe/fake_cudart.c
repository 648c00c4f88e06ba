/*
 * fake_cudart.c - a stand-in CUDA runtime for tests:
 *   FAKE_CUDA_TOTAL / FAKE_CUDA_FREE bytes, FAKE_CUDA_DEVICE current device,
 *   FAKE_CUDA_FAIL=1 makes cudaMemGetInfo fail.
 * CUDA events (GPU zones): every event pair measures FAKE_CUDA_EVENT_US
 * microseconds (default 2500); the first FAKE_CUDA_NOT_READY queries answer
 * cudaErrorNotReady (work still running); FAKE_CUDA_EVENT_FAIL=1 makes
 * cudaEventRecord fail.
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

/* ---- events ---------------------------------------------------------------- */

static long not_ready_left = -1; /* queries still to answer "not ready" */
static unsigned long long events_live, records, queries;

int cudaEventCreateWithFlags(void **ev, unsigned int flags)
{
    (void)flags;
    *ev = malloc(8);
    if (!*ev)
        return 2;
    __atomic_add_fetch(&events_live, 1, __ATOMIC_RELAXED);
    return 0;
}

int cudaEventDestroy(void *ev)
{
    free(ev);
    __atomic_sub_fetch(&events_live, 1, __ATOMIC_RELAXED);
    return 0;
}

int cudaEventRecord(void *ev, void *stream)
{
    (void)ev;
    (void)stream;
    if (env_u64("FAKE_CUDA_EVENT_FAIL", 0))
        return 400; /* cudaErrorInvalidResourceHandle */
    __atomic_add_fetch(&records, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Only the collector thread queries. */
int cudaEventQuery(void *ev)
{
    (void)ev;
    queries++;
    if (not_ready_left < 0)
        not_ready_left = (long)env_u64("FAKE_CUDA_NOT_READY", 0);
    if (not_ready_left > 0) {
        not_ready_left--;
        return 600; /* cudaErrorNotReady */
    }
    return 0;
}

int cudaEventElapsedTime(float *ms, void *a, void *b)
{
    (void)a;
    (void)b;
    *ms = (float)env_u64("FAKE_CUDA_EVENT_US", 2500) / 1000.0f;
    return 0;
}

unsigned long long fake_cuda_events_live(void) { return __atomic_load_n(&events_live, __ATOMIC_RELAXED); }
unsigned long long fake_cuda_event_records(void) { return __atomic_load_n(&records, __ATOMIC_RELAXED); }
unsigned long long fake_cuda_event_queries(void) { return queries; }
