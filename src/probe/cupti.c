/*
 * cupti.c - kernels, copies, sets, synchronizations and the API calls that
 * issued them, through CUPTI's activity API, loaded with dlopen.
 *
 * CUPTI hands out records in buffers it asks us for (on_request) and gives
 * back full (on_complete), from its own threads or from inside
 * cuptiActivityFlushAll. Buffers come from a bounded set (max_bytes): when
 * none is left the request gets no buffer and CUPTI drops the records,
 * which it counts and we add to `dropped`. Completed buffers wait in a
 * queue until the collector drains them (tpi_cupti_drain) and are then
 * recycled. CUPTI's callbacks carry no user pointer and CUPTI is one per
 * process, so the active instance is a global (g_active) under g_lock; no
 * CUPTI function is ever called with g_lock held.
 *
 * Clock: CUPTI is asked to take its timestamps from CLOCK_MONOTONIC (the
 * session's base clock) through cuptiActivityRegisterTimestampCallback;
 * where that is missing, the offset between cuptiGetTimestamp and
 * CLOCK_MONOTONIC is measured at each window start.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe/cupti_abi.h"
#include "probe/gpu.h"

#ifdef TP_SMALL_LIMITS
#define BUF_BYTES (16u * 1024u)
#else
#define BUF_BYTES (1u << 20)
#endif
#define HDR_BYTES 64 /* our header in front of each buffer CUPTI gets (keeps 8-byte alignment) */

typedef int cres;
typedef void (*request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*complete_fn)(void *context, uint32_t stream, uint8_t *buffer, size_t size,
                            size_t valid);

typedef struct cupti_api {
    cres (*register_callbacks)(request_fn, complete_fn);
    cres (*enable)(uint32_t kind);
    cres (*disable)(uint32_t kind);
    cres (*flush_all)(uint32_t flag);
    cres (*next_record)(uint8_t *buffer, size_t valid, void **record);
    cres (*get_timestamp)(uint64_t *ts);
    cres (*num_dropped)(void *context, uint32_t stream, size_t *dropped); /* optional */
    cres (*register_clock)(uint64_t (*)(void));                          /* optional */
    cres (*callback_name)(int domain, uint32_t cbid, const char **name);  /* optional */
    cres (*result_string)(cres r, const char **s);                       /* optional */
} cupti_api;

typedef struct buf_hdr {
    struct buf_hdr *next;
    size_t valid;
} buf_hdr;

struct tpi_cupti {
    void *lib;
    cupti_api f;
    uint64_t mono_base_ns;
    int64_t to_mono;         /* CUPTI ts + to_mono = CLOCK_MONOTONIC ns */
    int own_clock;           /* CUPTI reads CLOCK_MONOTONIC through mono_now */
    int enabled;
    uint32_t kinds_on[8];
    int n_kinds_on;
    tpi_cupti_names *names;
    /* under g_lock */
    buf_hdr *free_list, *done_head, *done_tail;
    uint64_t max_bufs, n_bufs;
    tpi_cupti_counts counts;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static tpi_cupti *g_active;
/* set once per process: CUPTI keeps our callbacks and clock for good */
static cres (*g_num_dropped)(void *, uint32_t, size_t *);
static int g_clock_registered;

static const uint32_t KINDS[] = {
    TPI_CUPTI_KIND_CONCURRENT_KERNEL, TPI_CUPTI_KIND_MEMCPY,  TPI_CUPTI_KIND_MEMSET,
    TPI_CUPTI_KIND_RUNTIME,           TPI_CUPTI_KIND_DRIVER,  TPI_CUPTI_KIND_SYNCHRONIZATION,
};
/* kinds whose absence leaves the capture useful (older drivers, no driver API) */
static int kind_optional(uint32_t k)
{
    return k == TPI_CUPTI_KIND_DRIVER || k == TPI_CUPTI_KIND_SYNCHRONIZATION;
}

static uint64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *result_text(const tpi_cupti *c, cres r)
{
    const char *s = NULL;
    if (c->f.result_string && c->f.result_string(r, &s) == 0 && s)
        return s;
    return "CUPTI error";
}

/* ---- buffers (CUPTI's threads and the collector) ------------------------------ */

static void on_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = NULL;
    *size = 0;
    *max_records = 0; /* as many as fit */
    pthread_mutex_lock(&g_lock);
    tpi_cupti *c = g_active;
    buf_hdr *h = NULL;
    if (c && c->free_list) {
        h = c->free_list;
        c->free_list = h->next;
    } else if (c && c->n_bufs < c->max_bufs) {
        h = aligned_alloc(HDR_BYTES, HDR_BYTES + BUF_BYTES);
        if (h)
            c->n_bufs++;
    }
    if (h) {
        *buffer = (uint8_t *)h + HDR_BYTES;
        *size = BUF_BYTES;
    } else if (c) {
        c->counts.buffers_refused++;
    }
    pthread_mutex_unlock(&g_lock);
}

static void on_complete(void *context, uint32_t stream, uint8_t *buffer, size_t size,
                        size_t valid)
{
    (void)size;
    size_t lost = 0;
    if (g_num_dropped && g_num_dropped(context, stream, &lost) != 0)
        lost = 0;
    buf_hdr *h = buffer ? (buf_hdr *)(buffer - HDR_BYTES) : NULL;
    pthread_mutex_lock(&g_lock);
    tpi_cupti *c = g_active;
    if (c) {
        c->counts.dropped += lost;
        if (h) {
            h->valid = valid;
            h->next = NULL;
            if (c->done_tail)
                c->done_tail->next = h;
            else
                c->done_head = h;
            c->done_tail = h;
        }
    } else {
        free(h); /* a buffer of a session already closed */
    }
    pthread_mutex_unlock(&g_lock);
}

/* ---- opening ---------------------------------------------------------------- */

static void *find_cupti(char *why, size_t whylen)
{
    static const char *const NAMES[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12",
                                        "libcupti.so.11.8", NULL};
    const char *path = getenv("TRAINPROF_CUPTI_LIB");
    if (path && *path) {
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            snprintf(why, whylen, "TRAINPROF_CUPTI_LIB=%s cannot be loaded", path);
        return lib;
    }
    for (int i = 0; NAMES[i]; i++) {
        void *lib = dlopen(NAMES[i], RTLD_NOW | RTLD_LOCAL);
        if (lib)
            return lib;
    }
    snprintf(why, whylen, "CUPTI (libcupti.so) not found: add the CUDA toolkit's "
                          "extras/CUPTI/lib64 to LD_LIBRARY_PATH or set TRAINPROF_CUPTI_LIB");
    return NULL;
}

/* Resolves the functions; returns the name of the first required one
 * missing, or NULL. */
static const char *load_api(void *lib, cupti_api *f)
{
    static const struct {
        const char *name;
        size_t offset;
        int required;
    } SYMS[] = {
        {"cuptiActivityRegisterCallbacks", offsetof(cupti_api, register_callbacks), 1},
        {"cuptiActivityEnable", offsetof(cupti_api, enable), 1},
        {"cuptiActivityDisable", offsetof(cupti_api, disable), 1},
        {"cuptiActivityFlushAll", offsetof(cupti_api, flush_all), 1},
        {"cuptiActivityGetNextRecord", offsetof(cupti_api, next_record), 1},
        {"cuptiGetTimestamp", offsetof(cupti_api, get_timestamp), 1},
        {"cuptiActivityGetNumDroppedRecords", offsetof(cupti_api, num_dropped), 0},
        {"cuptiActivityRegisterTimestampCallback", offsetof(cupti_api, register_clock), 0},
        {"cuptiGetCallbackName", offsetof(cupti_api, callback_name), 0},
        {"cuptiGetResultString", offsetof(cupti_api, result_string), 0},
    };
    for (size_t i = 0; i < sizeof SYMS / sizeof SYMS[0]; i++) {
        void *p = dlsym(lib, SYMS[i].name);
        if (!p && SYMS[i].required)
            return SYMS[i].name;
        memcpy((char *)f + SYMS[i].offset, &p, sizeof p);
    }
    return NULL;
}

/* Claims the process-wide CUPTI slot; 0 when another session holds it. */
static int claim(tpi_cupti *c)
{
    pthread_mutex_lock(&g_lock);
    int ok = g_active == NULL;
    if (ok)
        g_active = c;
    pthread_mutex_unlock(&g_lock);
    return ok;
}

static void release(tpi_cupti *c)
{
    pthread_mutex_lock(&g_lock);
    if (g_active == c)
        g_active = NULL;
    buf_hdr *lists[2] = {c->free_list, c->done_head};
    c->free_list = c->done_head = c->done_tail = NULL;
    pthread_mutex_unlock(&g_lock);
    for (int i = 0; i < 2; i++) {
        for (buf_hdr *h = lists[i]; h;) {
            buf_hdr *next = h->next;
            free(h);
            h = next;
        }
    }
}

tpi_cupti *tpi_cupti_open(uint64_t max_bytes, uint64_t mono_base_ns, char *why, size_t whylen)
{
    void *lib = find_cupti(why, whylen);
    if (!lib)
        return NULL;
    tpi_cupti *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    c->lib = lib;
    c->mono_base_ns = mono_base_ns;
    c->max_bufs = max_bytes / BUF_BYTES < 2 ? 2 : max_bytes / BUF_BYTES;
    const char *missing = load_api(lib, &c->f);
    cres r;
    if (missing) {
        snprintf(why, whylen, "the CUPTI library lacks %s", missing);
    } else if (!claim(c)) {
        snprintf(why, whylen, "CUPTI is already in use by another trainprof session");
    } else if ((r = c->f.register_callbacks(on_request, on_complete)) != TPI_CUPTI_SUCCESS) {
        snprintf(why, whylen, "CUPTI initialization failed: %s (code %d)", result_text(c, r), r);
        release(c);
    } else if (!(c->names = tpi_cupti_names_new())) {
        snprintf(why, whylen, "out of memory");
        release(c);
    } else {
        g_num_dropped = c->f.num_dropped;
        /* the clock must be set before any kind is enabled; once per process */
        if (!g_clock_registered && c->f.register_clock &&
            c->f.register_clock(mono_now) == TPI_CUPTI_SUCCESS)
            g_clock_registered = 1;
        c->own_clock = g_clock_registered;
        return c;
    }
    /* CUPTI stays loaded: it may hold our callbacks (they check g_active) */
    free(c);
    return NULL;
}

/* Offset CUPTI clock -> CLOCK_MONOTONIC, from the closest of a few pairs. */
static void calibrate(tpi_cupti *c)
{
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t ts = 0, a = mono_now();
        if (c->f.get_timestamp(&ts) != TPI_CUPTI_SUCCESS)
            continue;
        uint64_t b = mono_now();
        if (b - a < best_gap) {
            best_gap = b - a;
            c->to_mono = (int64_t)(a + (b - a) / 2) - (int64_t)ts;
        }
    }
}

int tpi_cupti_start(tpi_cupti *c, char *why, size_t whylen)
{
    if (!c || c->enabled)
        return 0;
    if (!c->own_clock)
        calibrate(c);
    c->n_kinds_on = 0;
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
        cres r = c->f.enable(KINDS[i]);
        if (r == TPI_CUPTI_SUCCESS) {
            c->kinds_on[c->n_kinds_on++] = KINDS[i];
        } else if (!kind_optional(KINDS[i])) {
            snprintf(why, whylen, "CUPTI refused to record activity kind %u: %s (code %d)",
                     KINDS[i], result_text(c, r), r);
            for (int k = 0; k < c->n_kinds_on; k++)
                c->f.disable(c->kinds_on[k]);
            c->n_kinds_on = 0;
            return -1;
        }
    }
    c->enabled = 1;
    return 0;
}

void tpi_cupti_stop(tpi_cupti *c)
{
    if (!c || !c->enabled)
        return;
    c->f.flush_all(TPI_CUPTI_FLUSH_FORCED);
    /* records lost after the last completed buffer (the global count) */
    size_t lost = 0;
    if (c->f.num_dropped && c->f.num_dropped(NULL, 0, &lost) == TPI_CUPTI_SUCCESS && lost) {
        pthread_mutex_lock(&g_lock);
        c->counts.dropped += lost;
        pthread_mutex_unlock(&g_lock);
    }
    for (int k = 0; k < c->n_kinds_on; k++)
        c->f.disable(c->kinds_on[k]);
    c->n_kinds_on = 0;
    c->enabled = 0;
}

void tpi_cupti_flush(tpi_cupti *c)
{
    if (c && c->enabled)
        c->f.flush_all(0);
}

static const char *cbid_name(void *ctx, int domain, uint32_t cbid)
{
    tpi_cupti *c = ctx;
    const char *name = NULL;
    if (c->f.callback_name && c->f.callback_name(domain, cbid, &name) == TPI_CUPTI_SUCCESS)
        return name;
    return NULL;
}

/* One pass over the queued buffers: API records (pass 0) or the others. */
static void drain_pass(tpi_cupti *c, buf_hdr *list, int pass, tpi_gpu_fn fn, void *ctx,
                       tpi_cupti_counts *n)
{
    int64_t to_session = c->to_mono - (int64_t)c->mono_base_ns;
    for (buf_hdr *h = list; h; h = h->next) {
        uint8_t *data = (uint8_t *)h + HDR_BYTES;
        void *rec = NULL;
        while (c->f.next_record(data, h->valid, &rec) == TPI_CUPTI_SUCCESS && rec) {
            uint32_t kind;
            memcpy(&kind, rec, sizeof kind);
            int api = kind == TPI_CUPTI_KIND_RUNTIME || kind == TPI_CUPTI_KIND_DRIVER;
            if (api != (pass == 0))
                continue;
            tpi_gpu_activity a;
            int got = tpi_cupti_convert(rec, c->names, cbid_name, c, to_session, &a);
            if (got > 0) {
                fn(ctx, &a);
                n->records++;
            } else if (got == 0) {
                n->unknown++;
            } else {
                n->incomplete++;
            }
        }
    }
}

/* API calls are delivered before the rest (two passes), so the caller knows
 * a call before the GPU work it launched, whatever buffer each came in. */
uint64_t tpi_cupti_drain(tpi_cupti *c, tpi_gpu_fn fn, void *ctx)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&g_lock);
    buf_hdr *list = c->done_head;
    c->done_head = c->done_tail = NULL;
    pthread_mutex_unlock(&g_lock);
    tpi_cupti_counts n = {0};
    drain_pass(c, list, 0, fn, ctx, &n);
    drain_pass(c, list, 1, fn, ctx, &n);
    buf_hdr *last = list;
    while (last && last->next)
        last = last->next;
    pthread_mutex_lock(&g_lock);
    if (last) {
        last->next = c->free_list;
        c->free_list = list;
    }
    c->counts.records += n.records;
    c->counts.unknown += n.unknown;
    c->counts.incomplete += n.incomplete;
    pthread_mutex_unlock(&g_lock);
    return n.records;
}

void tpi_cupti_get_counts(tpi_cupti *c, tpi_cupti_counts *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    pthread_mutex_lock(&g_lock);
    *out = c->counts;
    pthread_mutex_unlock(&g_lock);
}

void tpi_cupti_close(tpi_cupti *c)
{
    if (!c)
        return;
    tpi_cupti_stop(c);
    release(c);
    tpi_cupti_names_free(c->names);
    free(c);
}
