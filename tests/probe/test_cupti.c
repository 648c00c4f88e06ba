/* CUPTI capture (src/probe/cupti*.c) and CUDA-event zones
 * (src/probe/cuda_events.c) against the fake libcupti / libcudart. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe/gpu.h"
#include "tp_test.h"

#define MAX_ACTS 64

static void *fake;
static tpi_gpu_activity acts[MAX_ACTS];
static char names[MAX_ACTS][160];
static int n_acts;

static void collect(void *ctx, const tpi_gpu_activity *a)
{
    int *count = ctx;
    (*count)++;
    if (n_acts == MAX_ACTS)
        return;
    acts[n_acts] = *a;
    snprintf(names[n_acts], sizeof names[0], "%s", a->name);
    acts[n_acts].name = names[n_acts];
    n_acts++;
}

static const tpi_gpu_activity *find(tpi_gpu_kind kind)
{
    for (int i = 0; i < n_acts; i++)
        if (acts[i].kind == kind)
            return &acts[i];
    return NULL;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *fake_fn(const char *name)
{
    void *p = dlsym(fake, name);
    CHECK(p != NULL);
    return p;
}

TP_TEST(missing_library_and_symbols)
{
    char why[256] = "";
    setenv("TRAINPROF_CUPTI_LIB", "/nonexistent/libcupti.so", 1);
    CHECK(tpi_cupti_open(1 << 20, 0, why, sizeof why) == NULL);
    CHECK_CONTAINS(why, "TRAINPROF_CUPTI_LIB=/nonexistent/libcupti.so cannot be loaded");
    setenv("TRAINPROF_CUPTI_LIB", FAKE_NVML, 1); /* a library, not CUPTI */
    CHECK(tpi_cupti_open(1 << 20, 0, why, sizeof why) == NULL);
    CHECK_CONTAINS(why, "lacks cuptiActivityRegisterCallbacks");
}

TP_TEST(init_failure)
{
    char why[256] = "";
    setenv("TRAINPROF_CUPTI_LIB", FAKE_CUPTI, 1);
    setenv("FAKE_CUPTI_INIT_FAIL", "1", 1);
    CHECK(tpi_cupti_open(1 << 20, 0, why, sizeof why) == NULL);
    CHECK_CONTAINS(why, "CUPTI initialization failed: CUPTI_ERROR_NOT_INITIALIZED");
    CHECK_CONTAINS(why, "code 15");
    unsetenv("FAKE_CUPTI_INIT_FAIL");
}

TP_TEST(records_in_window_only)
{
    char why[256] = "";
    int count = 0;
    uint64_t base = mono_ns();
    tpi_cupti *c = tpi_cupti_open(8 << 20, base, why, sizeof why);
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK(tpi_cupti_open(8 << 20, base, why, sizeof why) == NULL); /* one per process */
    CHECK_CONTAINS(why, "already in use");
    uint32_t (*kernel)(const char *, uint32_t, uint64_t, uint64_t, uint64_t, uint64_t *) =
        (uint32_t(*)(const char *, uint32_t, uint64_t, uint64_t, uint64_t, uint64_t *))fake_fn(
            "fake_cupti_kernel");
    uint32_t (*memcpy_)(unsigned, unsigned, unsigned, uint64_t, uint32_t, uint64_t) =
        (uint32_t(*)(unsigned, unsigned, unsigned, uint64_t, uint32_t, uint64_t))fake_fn(
            "fake_cupti_memcpy");
    uint32_t (*memset_)(uint64_t, uint32_t, uint64_t) =
        (uint32_t(*)(uint64_t, uint32_t, uint64_t))fake_fn("fake_cupti_memset");
    uint32_t (*sync)(uint32_t, uint64_t) = (uint32_t(*)(uint32_t, uint64_t))fake_fn(
        "fake_cupti_stream_sync");
    void (*oddities)(void) = (void (*)(void))fake_fn("fake_cupti_oddities");
    int (*enabled)(void) = (int (*)(void))fake_fn("fake_cupti_enabled");
    if (!kernel || !memcpy_ || !memset_ || !sync || !oddities || !enabled)
        return;

    /* outside a window: CUPTI disabled, nothing recorded */
    CHECK(!enabled());
    kernel("_Z6beforev", 7, 1000, 1000, 1000, NULL);
    CHECK_EQ_INT(tpi_cupti_start(c, why, sizeof why), 0);
    CHECK(enabled());
    uint64_t gpu_start = 0;
    uint32_t corr = kernel("_Z6matmulPKfS0_Pfi", 7, 5000, 20000, 300000, &gpu_start);
    memcpy_(1, 2, 3, 4096, 7, 8000);  /* HtoD pinned -> device */
    memcpy_(1, 1, 3, 4096, 7, 9000);  /* HtoD pageable -> device */
    memset_(256, 7, 1500);
    sync(7, 400000);
    oddities();
    struct timespec gpu_runs = {0, 2000000}; /* the fake GPU finishes the kernel */
    nanosleep(&gpu_runs, NULL);
    tpi_cupti_flush(c);
    tpi_cupti_stop(c);
    CHECK(!enabled());
    kernel("_Z5afterv", 7, 1000, 1000, 1000, NULL);
    CHECK_EQ_INT(tpi_cupti_drain(c, collect, &count), 10);

    const tpi_gpu_activity *k = find(TPI_GPU_KERNEL);
    CHECK(k != NULL);
    if (k) {
        CHECK_STR(k->name, "matmul(float const*, float const*, float*, int)");
        CHECK_EQ_INT(k->correlation, corr);
        CHECK_EQ_INT(k->stream, 7);
        CHECK_EQ_INT(k->start_ns, gpu_start - base); /* CUPTI read CLOCK_MONOTONIC */
        CHECK_EQ_INT(k->end_ns - k->start_ns, 300000);
        CHECK_EQ_INT(k->grid[0], 128);
        CHECK_EQ_INT(k->block[0], 256);
        CHECK_EQ_INT(k->registers, 32);
        CHECK_EQ_INT(k->shared_bytes, 2048);
    }
    const tpi_gpu_activity *r = find(TPI_GPU_RUNTIME);
    CHECK(r && strcmp(r->name, "cudaLaunchKernel") == 0 && r->correlation == corr);
    CHECK(r && r->tid == (uint32_t)syscall(SYS_gettid) && r->cbid == 211);
    const tpi_gpu_activity *m = find(TPI_GPU_MEMCPY);
    CHECK(m && strcmp(m->name, "Memcpy HtoD (Pinned -> Device)") == 0);
    CHECK(m && m->bytes == 4096 && strcmp(m->copy_kind, "HtoD") == 0);
    CHECK_STR(names[7], "Memcpy HtoD (Pageable -> Device)");
    const tpi_gpu_activity *s = find(TPI_GPU_MEMSET);
    CHECK(s && strcmp(s->name, "Memset (Device)") == 0 && s->bytes == 256);
    const tpi_gpu_activity *y = find(TPI_GPU_SYNC);
    CHECK(y && strcmp(y->name, "Stream Sync") == 0 && y->stream == 7);
    CHECK_STR(names[4], "cudaStreamSynchronize");
    for (int i = 0; i < 10; i++) /* API calls first, whatever buffer they came in */
        CHECK((acts[i].kind == TPI_GPU_RUNTIME) == (i < 5));

    tpi_cupti_counts n;
    tpi_cupti_get_counts(c, &n);
    CHECK_EQ_INT(n.records, 10);
    CHECK_EQ_INT(n.unknown, 1);    /* kind 99 skipped */
    CHECK_EQ_INT(n.incomplete, 1); /* no end time */
    CHECK_EQ_INT(n.dropped, 0);
    tpi_cupti_close(c);
}

TP_TEST(bounded_buffers_count_losses)
{
    char why[256] = "";
    int count = 0;
    setenv("FAKE_CUPTI_DROPPED", "5", 1); /* CUPTI's own losses are added */
    tpi_cupti *c = tpi_cupti_open(1, mono_ns(), why, sizeof why); /* 2 buffers */
    CHECK(c != NULL);
    uint32_t (*kernel)(const char *, uint32_t, uint64_t, uint64_t, uint64_t, uint64_t *) =
        (uint32_t(*)(const char *, uint32_t, uint64_t, uint64_t, uint64_t, uint64_t *))fake_fn(
            "fake_cupti_kernel");
    if (!c || !kernel)
        return;
    CHECK_EQ_INT(tpi_cupti_start(c, why, sizeof why), 0);
    enum { LAUNCHES = 30000 }; /* 60000 records: more than two buffers hold */
    for (int i = 0; i < LAUNCHES; i++)
        kernel("_Z4stepv", 7, 1000, 1000, 1000, NULL);
    tpi_cupti_stop(c);
    n_acts = 0;
    uint64_t got = tpi_cupti_drain(c, collect, &count);
    tpi_cupti_counts n;
    tpi_cupti_get_counts(c, &n);
    CHECK(got > 0 && got < 2 * LAUNCHES);
    CHECK_EQ_INT(got + n.dropped, 2 * LAUNCHES + 5);
    CHECK(n.buffers_refused >= 1);
    /* buffers come back after a drain: the next window records again */
    CHECK_EQ_INT(tpi_cupti_start(c, why, sizeof why), 0);
    kernel("_Z4stepv", 7, 1000, 1000, 1000, NULL);
    struct timespec gpu_runs = {0, 1000000};
    nanosleep(&gpu_runs, NULL);
    tpi_cupti_stop(c);
    CHECK_EQ_INT(tpi_cupti_drain(c, collect, &count), 2);
    tpi_cupti_close(c);
    unsetenv("FAKE_CUPTI_DROPPED");
}

TP_TEST(demangle)
{
    char *d = tpi_demangle("_Z3fooiPKc");
    CHECK_STR(d, "foo(int, char const*)");
    free(d);
    CHECK(tpi_demangle("plain_c_kernel") == NULL);
    CHECK(tpi_demangle("_Zbroken((") == NULL);
    char buf[64];
    const char *k = NULL;
    tpi_cupti_memcpy_name(buf, sizeof buf, 2, 3, 1, &k);
    CHECK_STR(buf, "Memcpy DtoH (Device -> Pageable)");
    CHECK_STR(k, "DtoH");
    tpi_cupti_memcpy_name(buf, sizeof buf, 77, 9, 9, &k);
    CHECK_STR(buf, "Memcpy Unknown (Unknown -> Unknown)");
}

static uint64_t zone_ns[4];
static int zone_n;
static void zone_time(void *ctx, uint32_t name_id, uint64_t step, uint64_t gpu_ns)
{
    (void)ctx;
    if (zone_n < 4)
        zone_ns[zone_n] = gpu_ns + name_id * 0 + step * 0;
    zone_n++;
}

TP_TEST(cuda_event_zones)
{
    char why[256] = "";
    setenv("TRAINPROF_CUDART_LIB", FAKE_CUDART, 1);
    setenv("FAKE_CUDA_NOT_READY", "1", 1);
    setenv("FAKE_CUDA_EVENT_US", "1500", 1);
    void *rt = dlopen(FAKE_CUDART, RTLD_NOW | RTLD_LOCAL); /* stays loaded for the checks */
    tpi_cuda_events *e = tpi_cuda_events_open(2, why, sizeof why);
    CHECK(e != NULL);
    if (!e)
        return;
    tpi_event_pair *a = tpi_cuda_events_begin(e, NULL, 5);
    tpi_event_pair *b = tpi_cuda_events_begin(e, NULL, 6);
    CHECK(a && b);
    CHECK(tpi_cuda_events_begin(e, NULL, 7) == NULL); /* pool of 2: lost */
    CHECK_EQ_INT(tpi_cuda_events_lost(e), 1);
    tpi_cuda_events_end(e, a, 0);
    tpi_cuda_events_end(e, b, 0);
    CHECK_EQ_INT(tpi_cuda_events_poll(e, zone_time, NULL), 1); /* first query: not ready */
    CHECK_EQ_INT(zone_n, 1);
    CHECK_EQ_INT(tpi_cuda_events_poll(e, zone_time, NULL), 0);
    CHECK_EQ_INT(zone_n, 2);
    CHECK_EQ_INT(zone_ns[0], 1500000);
    CHECK(tpi_cuda_events_begin(e, NULL, 8) != NULL); /* pairs are reused */
    tpi_cuda_events_close(e);                         /* pending one: lost, events freed */
    unsigned long long (*live)(void) = NULL;
    if (rt)
        *(void **)&live = dlsym(rt, "fake_cuda_events_live");
    CHECK(live && live() == 0);
    unsetenv("FAKE_CUDA_NOT_READY");
    setenv("TRAINPROF_CUDART_LIB", FAKE_NVML, 1);
    CHECK(tpi_cuda_events_open(2, why, sizeof why) == NULL);
    CHECK_CONTAINS(why, "lacks the cudaEvent* functions");
}

int main(void)
{
    RUN(missing_library_and_symbols);
    RUN(init_failure);
    setenv("TRAINPROF_CUPTI_LIB", FAKE_CUPTI, 1);
    fake = dlopen(FAKE_CUPTI, RTLD_NOW | RTLD_LOCAL);
    CHECK(fake != NULL);
    RUN(records_in_window_only);
    RUN(bounded_buffers_count_losses);
    RUN(demangle);
    RUN(cuda_event_zones);
    return tp_test_finish();
}
