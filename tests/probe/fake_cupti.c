/*
 * fake_cupti.c - a stand-in libcupti for tests, loaded through
 * TRAINPROF_CUPTI_LIB. It keeps the activity records a test "issues" with
 * the fake_cupti_* functions below (only for the kinds trainprof enabled,
 * as CUPTI would) and hands them over in the buffers trainprof gives it
 * when cuptiActivityFlushAll is called. A buffer request refused (the
 * bound) loses the records that did not fit; they are reported by
 * cuptiActivityGetNumDroppedRecords, as CUPTI does.
 *
 * Scripted by the environment:
 *   FAKE_CUPTI_INIT_FAIL=1  cuptiActivityRegisterCallbacks fails (no driver)
 *   FAKE_CUPTI_NO_CLOCK=1   no timestamp callback: timestamps are CLOCK_REALTIME
 *                           (CUPTI's own clock on Linux), trainprof must offset them
 *   FAKE_CUPTI_DROPPED=N    N more records reported lost by CUPTI itself
 *   FAKE_CUPTI_GPU_LAG_US=N kernels start N us after their launch (a GPU
 *                           running behind the CPU); a kernel that has not
 *                           ended is held back by a default flush and handed
 *                           over without an end time by a forced one
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe/cupti_abi.h"

typedef void (*request_fn)(uint8_t **, size_t *, size_t *);
typedef void (*complete_fn)(void *, uint32_t, uint8_t *, size_t, size_t);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static request_fn on_request;
static complete_fn on_complete;
static uint64_t (*clock_cb)(void);
static uint64_t enabled_mask;     /* 1 << kind; bit 63: let unknown kinds through */
static unsigned char *pending;    /* records, back to back */
static size_t pending_len, pending_cap;
static uint64_t lost, enables, disables, lost_total;
static uint32_t next_corr = 1000;
static char *names[256];          /* kernel names: stable pointers, as CUPTI's */
static int n_names;

static int env_on(const char *k)
{
    const char *v = getenv(k);
    return v && *v && strcmp(v, "0") != 0;
}

static uint64_t now_ns(void)
{
    if (clock_cb)
        return clock_cb();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t record_size(uint32_t kind)
{
    switch (kind) {
    case TPI_CUPTI_KIND_KERNEL:
    case TPI_CUPTI_KIND_CONCURRENT_KERNEL: return sizeof(tpi_cupti_kernel);
    case TPI_CUPTI_KIND_MEMCPY: return sizeof(tpi_cupti_memcpy);
    case TPI_CUPTI_KIND_MEMSET: return sizeof(tpi_cupti_memset);
    case TPI_CUPTI_KIND_RUNTIME:
    case TPI_CUPTI_KIND_DRIVER: return sizeof(tpi_cupti_api);
    case TPI_CUPTI_KIND_SYNCHRONIZATION: return sizeof(tpi_cupti_sync);
    default: return 24;
    }
}

/* Queues a record when its kind is enabled (lock held). */
static void add(const void *rec, uint32_t kind)
{
    if (!(enabled_mask & (1ull << (kind & 63))) && !(enabled_mask >> 63))
        return;
    size_t n = record_size(kind);
    if (pending_len + n > pending_cap) {
        size_t cap = pending_cap ? pending_cap * 2 : 65536;
        while (cap < pending_len + n)
            cap *= 2;
        unsigned char *p = realloc(pending, cap);
        if (!p)
            return;
        pending = p;
        pending_cap = cap;
    }
    memset(pending + pending_len, 0, n);
    memcpy(pending + pending_len, rec, n);
    pending_len += n;
}

static void api(uint32_t kind, uint32_t cbid, uint64_t start, uint64_t end, uint32_t corr)
{
    tpi_cupti_api a = {0};
    a.kind = kind;
    a.cbid = cbid;
    a.start = start;
    a.end = end;
    a.process_id = (uint32_t)getpid();
    a.thread_id = (uint32_t)syscall(SYS_gettid);
    a.correlation_id = corr;
    add(&a, kind);
}

static const char *intern(const char *name)
{
    for (int i = 0; i < n_names; i++)
        if (strcmp(names[i], name) == 0)
            return names[i];
    if (n_names == 256)
        return names[255];
    return names[n_names++] = strdup(name);
}

/* ---- what tests call (through dlsym) --------------------------------------- */

/* cudaLaunchKernel of launch_ns on the CPU, then the kernel for gpu_ns on
 * stream, starting gap_ns after the launch returned. Returns the
 * correlation id, and the kernel's start in the fake clock in *gpu_start. */
uint32_t fake_cupti_kernel(const char *name, uint32_t stream, uint64_t launch_ns, uint64_t gap_ns,
                           uint64_t gpu_ns, uint64_t *gpu_start)
{
    pthread_mutex_lock(&lock);
    uint32_t corr = next_corr++;
    uint64_t t = now_ns();
    api(TPI_CUPTI_KIND_RUNTIME, 211, t, t + launch_ns, corr);
    tpi_cupti_kernel k = {0};
    k.kind = TPI_CUPTI_KIND_CONCURRENT_KERNEL;
    k.registers_per_thread = 32;
    const char *lag = getenv("FAKE_CUPTI_GPU_LAG_US");
    k.start = t + launch_ns + gap_ns + (lag ? strtoull(lag, NULL, 10) * 1000 : 0);
    k.end = k.start + gpu_ns;
    k.completed = k.end;
    k.device_id = 0;
    k.context_id = 1;
    k.stream_id = stream;
    k.grid_x = 128, k.grid_y = 1, k.grid_z = 1;
    k.block_x = 256, k.block_y = 1, k.block_z = 1;
    k.static_shared_memory = 1024;
    k.dynamic_shared_memory = 1024;
    k.correlation_id = corr;
    k.name = intern(name);
    if (gpu_start)
        *gpu_start = k.start;
    add(&k, TPI_CUPTI_KIND_CONCURRENT_KERNEL);
    pthread_mutex_unlock(&lock);
    return corr;
}

/* cudaMemcpy (copy_kind 1 = HtoD, memory kinds 1 pageable, 2 pinned, 3 device). */
uint32_t fake_cupti_memcpy(unsigned copy_kind, unsigned src, unsigned dst, uint64_t bytes,
                           uint32_t stream, uint64_t gpu_ns)
{
    pthread_mutex_lock(&lock);
    uint32_t corr = next_corr++;
    uint64_t t = now_ns();
    api(TPI_CUPTI_KIND_RUNTIME, 31, t, t + gpu_ns + 2000, corr);
    tpi_cupti_memcpy m = {0};
    m.kind = TPI_CUPTI_KIND_MEMCPY;
    m.copy_kind = (uint8_t)copy_kind;
    m.src_kind = (uint8_t)src;
    m.dst_kind = (uint8_t)dst;
    m.bytes = bytes;
    m.start = t + 1000;
    m.end = m.start + gpu_ns;
    m.device_id = 0;
    m.context_id = 1;
    m.stream_id = stream;
    m.correlation_id = corr;
    add(&m, TPI_CUPTI_KIND_MEMCPY);
    pthread_mutex_unlock(&lock);
    return corr;
}

uint32_t fake_cupti_memset(uint64_t bytes, uint32_t stream, uint64_t gpu_ns)
{
    pthread_mutex_lock(&lock);
    uint32_t corr = next_corr++;
    uint64_t t = now_ns();
    api(TPI_CUPTI_KIND_RUNTIME, 51, t, t + 3000, corr);
    tpi_cupti_memset m = {0};
    m.kind = TPI_CUPTI_KIND_MEMSET;
    m.bytes = bytes;
    m.start = t + 4000;
    m.end = m.start + gpu_ns;
    m.device_id = 0;
    m.context_id = 1;
    m.stream_id = stream;
    m.correlation_id = corr;
    m.memory_kind = 3;
    add(&m, TPI_CUPTI_KIND_MEMSET);
    pthread_mutex_unlock(&lock);
    return corr;
}

/* cudaStreamSynchronize blocking the CPU for wait_ns, with its sync record. */
uint32_t fake_cupti_stream_sync(uint32_t stream, uint64_t wait_ns)
{
    pthread_mutex_lock(&lock);
    uint32_t corr = next_corr++;
    uint64_t t = now_ns();
    api(TPI_CUPTI_KIND_RUNTIME, 131, t, t + wait_ns, corr);
    tpi_cupti_sync s = {0};
    s.kind = TPI_CUPTI_KIND_SYNCHRONIZATION;
    s.type = 3;
    s.start = t + 500;
    s.end = t + wait_ns;
    s.correlation_id = corr;
    s.context_id = 1;
    s.stream_id = stream;
    add(&s, TPI_CUPTI_KIND_SYNCHRONIZATION);
    pthread_mutex_unlock(&lock);
    return corr;
}

/* A record of a kind trainprof does not read (always queued), and one with
 * no end time yet. */
void fake_cupti_oddities(void)
{
    pthread_mutex_lock(&lock);
    uint64_t saved = enabled_mask;
    enabled_mask |= 1ull << 63; /* unknown kinds are not filtered */
    uint64_t odd[3] = {99, 1, 2};
    add(odd, 99);
    enabled_mask = saved;
    tpi_cupti_kernel k = {0};
    k.kind = TPI_CUPTI_KIND_CONCURRENT_KERNEL;
    k.start = now_ns();
    k.end = 0;
    k.name = intern("unfinished");
    add(&k, TPI_CUPTI_KIND_CONCURRENT_KERNEL);
    pthread_mutex_unlock(&lock);
}

/* Enables and disables seen so far (the zero-cost-outside-windows check). */
uint64_t fake_cupti_enables(void) { return enables; }
uint64_t fake_cupti_lost_total(void) { return lost_total; }
uint64_t fake_cupti_disables(void) { return disables; }
int fake_cupti_enabled(void) { return enabled_mask != 0; }

/* ---- the CUPTI functions trainprof uses ------------------------------------------ */

int cuptiActivityRegisterCallbacks(request_fn req, complete_fn done)
{
    if (env_on("FAKE_CUPTI_INIT_FAIL"))
        return 15; /* CUPTI_ERROR_NOT_INITIALIZED */
    on_request = req;
    on_complete = done;
    return 0;
}

int cuptiActivityRegisterTimestampCallback(uint64_t (*fn)(void))
{
    if (env_on("FAKE_CUPTI_NO_CLOCK"))
        return 19; /* CUPTI_ERROR_NOT_SUPPORTED */
    clock_cb = fn;
    return 0;
}

int cuptiGetTimestamp(uint64_t *ts)
{
    *ts = now_ns();
    return 0;
}

int cuptiActivityEnable(uint32_t kind)
{
    pthread_mutex_lock(&lock);
    enabled_mask |= 1ull << (kind & 63);
    enables++;
    pthread_mutex_unlock(&lock);
    return kind < 63 ? 0 : 21;
}

int cuptiActivityDisable(uint32_t kind)
{
    pthread_mutex_lock(&lock);
    enabled_mask &= ~(1ull << (kind & 63));
    disables++;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* Kernels that have not ended yet: kept for a later default flush, handed
 * over unfinished (end 0) by a forced one. Returns the bytes kept at the
 * front of `pending` (lock held). */
static size_t hold_running(int forced)
{
    uint64_t now = now_ns();
    size_t off = 0, kept = 0;
    unsigned char *out = pending_len ? malloc(pending_len) : NULL;
    size_t out_len = 0;
    if (!out)
        return 0;
    while (off < pending_len) {
        uint32_t kind;
        memcpy(&kind, pending + off, sizeof kind);
        size_t n = record_size(kind);
        tpi_cupti_kernel *k = (tpi_cupti_kernel *)(pending + off);
        int running = kind == TPI_CUPTI_KIND_CONCURRENT_KERNEL && k->end > now;
        if (running && forced)
            k->end = 0;
        if (running && !forced) {
            memmove(pending + kept, pending + off, n); /* kept records go first */
            kept += n;
        } else {
            memcpy(out + out_len, pending + off, n);
            out_len += n;
        }
        off += n;
    }
    memcpy(pending + kept, out, out_len);
    free(out);
    return kept;
}

/* Hands the pending records over, one buffer at a time. */
int cuptiActivityFlushAll(uint32_t flag)
{
    pthread_mutex_lock(&lock);
    size_t kept = hold_running(flag & TPI_CUPTI_FLUSH_FORCED);
    size_t off = kept;
    while (off < pending_len && on_request) {
        uint8_t *buf = NULL;
        size_t size = 0, maxrec = 0;
        on_request(&buf, &size, &maxrec);
        if (!buf || size == 0) {
            /* no buffer: whatever is left is lost */
            for (; off < pending_len; lost++, lost_total++) {
                uint32_t kind;
                memcpy(&kind, pending + off, sizeof kind);
                off += record_size(kind);
            }
            break;
        }
        size_t used = 0;
        while (off < pending_len) {
            uint32_t kind;
            memcpy(&kind, pending + off, sizeof kind);
            size_t n = record_size(kind);
            if (used + n > size)
                break;
            memcpy(buf + used, pending + off, n);
            used += n;
            off += n;
        }
        on_complete(NULL, 0, buf, size, used);
    }
    pending_len = kept;
    pthread_mutex_unlock(&lock);
    return 0;
}

int cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record)
{
    uint8_t *p = *record ? (uint8_t *)*record : buffer;
    if (*record) {
        uint32_t kind;
        memcpy(&kind, p, sizeof kind);
        p += record_size(kind);
    }
    if ((size_t)(p - buffer) >= valid)
        return TPI_CUPTI_MAX_LIMIT_REACHED;
    *record = p;
    return 0;
}

/* Records lost since the last call (refused buffers, plus FAKE_CUPTI_DROPPED
 * once). Called from inside on_complete with `lock` held by FlushAll, or by
 * the same (collector) thread after a flush: no locking here. */
int cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *dropped)
{
    (void)ctx;
    (void)stream;
    static int reported;
    *dropped = (size_t)lost;
    lost = 0;
    if (!reported && getenv("FAKE_CUPTI_DROPPED")) {
        *dropped += strtoul(getenv("FAKE_CUPTI_DROPPED"), NULL, 10);
        reported = 1;
    }
    return 0;
}

int cuptiGetCallbackName(int domain, uint32_t cbid, const char **name)
{
    switch (domain == TPI_CUPTI_DOMAIN_RUNTIME ? cbid : 0) {
    case 211: *name = "cudaLaunchKernel_v7000"; return 0;
    case 31: *name = "cudaMemcpy_v3020"; return 0;
    case 51: *name = "cudaMemsetAsync_v3020"; return 0;
    case 131: *name = "cudaStreamSynchronize_v3020"; return 0;
    default: return 1;
    }
}

int cuptiGetResultString(int r, const char **s)
{
    *s = r == 15 ? "CUPTI_ERROR_NOT_INITIALIZED (fake: no CUDA driver)" : "CUPTI_ERROR_UNKNOWN";
    return 0;
}
