/*
 * session.c - the public session API: open/close, the collector thread and
 * the hot-path recording functions (zones, steps, counters, marks).
 *
 * Hot path: one TLS load and a generation compare find the calling thread's
 * buffer; one clock read; one 16-byte record appended and published with a
 * release store. Nothing shared is written per event. The first event of a
 * thread in a session registers its buffer (malloc + mutex, once).
 *
 * tp_step_end adds one atomic increment (the step count) and, only while a
 * trace window is open, signals the collector so it writes and flushes
 * that step at once (glibc's pthread_cond_signal makes the futex system
 * call only when the collector is actually waiting). Outside windows the
 * collector drains every 20 ms on its own: no system call per step.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/collector_internal.h"
#include "core/gpu_session.h"
#include "core/names.h"
#include "core/session_internal.h"
#include "sink/live.h"
#include "util/fileio.h"

#define ZDROPPED 0x80000000u

/* The calling thread's buffers and the session generations they belong
 * to, most recently used first: a thread using several open sessions
 * keeps one buffer per session instead of registering a new one at every
 * switch. initial-exec: a plain %fs-relative load instead of a
 * __tls_get_addr call per event (64 bytes of static TLS, also available
 * when the shared library is dlopen'ed, from glibc's reserve for such
 * libraries). */
typedef struct tls_slot {
    tpi_tbuf *buf;
    uint64_t gen;
} tls_slot;
#define TLS_SLOTS 4
static __thread tls_slot tls[TLS_SLOTS] __attribute__((tls_model("initial-exec")));
static uint64_t g_next_gen = 1;

/* ---- fork safety --------------------------------------------------------- */
static pthread_mutex_t g_live_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_session *g_live[8];
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

/* In a fork child no other thread exists: disable every live session so the
 * child records nothing and never writes the parent's files. */
static void atfork_child(void)
{
    pthread_mutex_init(&g_live_lock, NULL);
    for (int i = 0; i < 8; i++) {
        if (g_live[i]) {
            g_live[i]->dead = 1;
            g_live[i]->gen = 0;
        }
    }
    memset(tls, 0, sizeof tls);
    tpi_sink_files_after_fork_child();
}

static void atfork_register(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}

void tpi_session_live(tp_session *s, int add)
{
    pthread_once(&g_atfork_once, atfork_register);
    if (add)
        s->gen = __atomic_fetch_add(&g_next_gen, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&g_live_lock);
    for (int i = 0; i < 8; i++) {
        if (add ? !g_live[i] : g_live[i] == s) {
            g_live[i] = add ? s : NULL;
            break;
        }
    }
    pthread_mutex_unlock(&g_live_lock);
}

/* ---- thread registration ------------------------------------------------- */
uint32_t tpi_os_tid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

static tpi_tbuf *register_thread(tp_session *s)
{
    if (s->dead)
        return NULL;
    pthread_mutex_lock(&s->reg_lock);
    uint32_t n = s->n_tbufs;
    tpi_tbuf *b = n < TPI_MAX_THREADS ? tpi_aligned_zalloc(sizeof *b) : NULL;
    if (!b) {
        pthread_mutex_unlock(&s->reg_lock);
        __atomic_fetch_add(&s->dropped_unregistered, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    tpi_tbuf_init(b, &s->pool, tpi_os_tid(), n);
    char name[64] = "";
    if (pthread_getname_np(pthread_self(), name, sizeof name) == 0 && name[0])
        b->name_id = tpi_names_intern(b->tid == s->opener_tid ? "main" : name);
    s->tbufs[n] = b;
    __atomic_store_n(&s->n_tbufs, n + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->reg_lock);
    memmove(&tls[1], &tls[0], (TLS_SLOTS - 1) * sizeof tls[0]);
    tls[0].buf = b;
    tls[0].gen = s->gen;
    return b;
}

/* Not the most recent session of this thread: another slot, or a new
 * registration. */
static tpi_tbuf *find_buf(tp_session *s)
{
    for (int i = 1; i < TLS_SLOTS; i++) {
        if (tls[i].gen == s->gen && tls[i].buf != NULL) {
            tls_slot hit = tls[i];
            memmove(&tls[1], &tls[0], (size_t)i * sizeof tls[0]);
            tls[0] = hit;
            return hit.buf;
        }
    }
    return register_thread(s);
}

static inline tpi_tbuf *get_buf(tp_session *s)
{
    if (__builtin_expect(tls[0].gen == s->gen && tls[0].buf != NULL, 1))
        return tls[0].buf;
    return find_buf(s);
}

/* ---- records ------------------------------------------------------------- */
/* Appends one record with `nx` extra slots x[0..nx-1] (each two words) and
 * publishes it; 0 when it was dropped (pool empty, counted). */
static inline int put_rec(tpi_tbuf *b, uint64_t t, uint32_t kind, uint32_t name, uint32_t arg,
                          const uint64_t (*x)[2], uint32_t nx)
{
    tpi_rec *r = tpi_tbuf_reserve(b, 1 + nx);
    if (!r)
        return 0;
    r[0].e.ts = t;
    r[0].e.hdr = TPI_REC_HDR(kind, name);
    r[0].e.arg = arg;
    for (uint32_t k = 0; k < nx; k++) {
        r[1 + k].x.a = x[k][0];
        r[1 + k].x.b = x[k][1];
    }
    tpi_tbuf_commit(b, 1 + nx);
    return 1;
}

static inline void put1(tpi_tbuf *b, uint64_t t, uint32_t kind, uint32_t name, uint32_t arg)
{
    put_rec(b, t, kind, name, arg, NULL, 0);
}

static inline void zone_begin(tp_session *s, uint32_t id, uint32_t args)
{
    tpi_tbuf *b = get_buf(s);
    if (!b)
        return;
    uint32_t d = b->depth++;
    int kept = put_rec(b, tpi_ticks(), TPI_REC_BEGIN, id, args, NULL, 0);
    if (d < TPI_ZSTACK)
        b->zstack[d] = kept ? id : (id | ZDROPPED);
}

/* Zone begin and end are split in a fast path (the thread's buffer is the
 * most recent one, the site is interned, the clock is the counter, the
 * chunk has room) and a slow path holding every call. The fast path then
 * needs no saved registers nor stack frame: ~25 instructions instead of ~50
 * per call (callgrind, bench/core/bench_steps). */
/* The site's name id, interned on its first use. */
static uint32_t site_id(tp_site *site)
{
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
    if (__builtin_expect(id == 0, 0)) {
        id = tpi_names_intern(site->name);
        __atomic_store_n(&site->id, id, __ATOMIC_RELAXED);
    }
    return id;
}

__attribute__((noinline)) static void zone_begin_site_slow(tp_session *s, tp_site *site)
{
    zone_begin(s, site_id(site), 0);
}

/* The calling thread's buffer when it can take `n` records now, else NULL. */
static inline tpi_tbuf *fast_buf(const tp_session *s, uint32_t n)
{
    tpi_tbuf *b = tls[0].buf;
    if (__builtin_expect(tls[0].gen != s->gen || b == NULL || !tpi_clock_use_counter, 0))
        return NULL;
    return __builtin_expect(b->pos + n <= b->cap, 1) ? b : NULL;
}

void tp_zone_begin_site(tp_session *s, tp_site *site)
{
    if (!s || !site)
        return;
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
    tpi_tbuf *b = fast_buf(s, 1);
    if (__builtin_expect(id == 0 || b == NULL, 0)) {
        zone_begin_site_slow(s, site);
        return;
    }
    uint32_t d = b->depth++;
    tpi_rec *r = &b->cur->recs[b->pos];
    r->e.ts = tpi_counter_read();
    r->e.hdr = TPI_REC_HDR(TPI_REC_BEGIN, id);
    r->e.arg = 0;
    tpi_tbuf_commit(b, 1);
    if (d < TPI_ZSTACK)
        b->zstack[d] = id;
}

/* The fast path's END: one clock read and one record in room fast_buf
 * checked; the zone stack drops to depth d. id 0: the innermost zone. */
static inline __attribute__((always_inline)) void put_end_fast(tpi_tbuf *b, uint32_t d, uint32_t id)
{
    uint64_t t = tpi_counter_read();
    b->depth = d;
    tpi_rec *r = &b->cur->recs[b->pos];
    r->e.ts = t;
    r->e.hdr = TPI_REC_HDR(TPI_REC_END, id);
    r->e.arg = 0;
    tpi_tbuf_commit(b, 1);
}

__attribute__((noinline)) static void zone_end_slow(tp_session *s)
{
    tpi_tbuf *b = get_buf(s);
    if (!b)
        return;
    uint64_t t = tpi_ticks();
    if (b->depth > 0) {
        uint32_t d = --b->depth;
        if (d < TPI_ZSTACK && (b->zstack[d] & ZDROPPED))
            return; /* its BEGIN was dropped: drop the END too */
    }
    put1(b, t, TPI_REC_END, 0, 0);
}

void tp_zone_end(tp_session *s)
{
    if (!s)
        return;
    tpi_tbuf *b = fast_buf(s, 1);
    /* open zones whose BEGIN was dropped (or too deep to know) go slow */
    uint32_t d = b ? b->depth - 1 : 0;
    if (__builtin_expect(b == NULL || d >= TPI_ZSTACK || (b->zstack[d] & ZDROPPED), 0)) {
        zone_end_slow(s);
        return;
    }
    put_end_fast(b, d, 0);
}

/* Removes zstack entry d (the frames above it move down one). */
static void zstack_remove(tpi_tbuf *b, uint32_t d)
{
    uint32_t top = b->depth < TPI_ZSTACK ? b->depth : TPI_ZSTACK;
    memmove(&b->zstack[d], &b->zstack[d + 1], (top - d - 1) * sizeof b->zstack[0]);
    b->depth--;
}

__attribute__((noinline)) static void zone_end_site_slow(tp_session *s, uint32_t id)
{
    tpi_tbuf *b = get_buf(s);
    if (!b)
        return;
    uint64_t t = tpi_ticks();
    if (b->depth > 0 && b->depth <= TPI_ZSTACK) {
        uint32_t d = b->depth;
        while (d > 0 && (b->zstack[d - 1] & ~ZDROPPED) != id)
            d--;
        if (d == 0) { /* not open on this thread: the collector counts it */
            put1(b, t, TPI_REC_END, id, 0);
            return;
        }
        int dropped = (b->zstack[d - 1] & ZDROPPED) != 0;
        zstack_remove(b, d - 1);
        if (dropped)
            return; /* its BEGIN was dropped: drop the END too */
    } else if (b->depth > 0) {
        b->depth--; /* deeper than the zstack sees: the innermost, as tp_zone_end */
    }
    put1(b, t, TPI_REC_END, id, 0);
}

void tp_zone_end_site(tp_session *s, tp_site *site)
{
    if (!s)
        return;
    uint32_t id = site ? __atomic_load_n(&site->id, __ATOMIC_RELAXED) : 0;
    if (id == 0) { /* never begun (not interned): an END of nothing open, or of the innermost */
        if (site)
            id = site_id(site);
        else {
            tp_zone_end(s);
            return;
        }
    }
    tpi_tbuf *b = fast_buf(s, 1);
    uint32_t d = b ? b->depth - 1 : 0;
    if (__builtin_expect(b == NULL || d >= TPI_ZSTACK || b->zstack[d] != id, 0)) {
        zone_end_site_slow(s, id); /* not the innermost, dropped, or no room */
        return;
    }
    put_end_fast(b, d, id);
}

uint64_t tp_session_now(const tp_session *s)
{
    return s ? tpi_ticks() : 0;
}

void tp_zone_complete(tp_session *s, tp_site *site, uint64_t begin)
{
    if (!s || !site)
        return;
    tpi_tbuf *b = get_buf(s);
    if (!b)
        return;
    const uint64_t x[1][2] = {{begin, 0}};
    put_rec(b, tpi_ticks(), TPI_REC_COMPLETE, site_id(site), 0, x, 1);
}

void tp_zone_begin_dyn(tp_session *s, const char *name)
{
    if (!s)
        return;
    zone_begin(s, tpi_names_intern(name ? name : ""), 0);
}

/* Length of args cut to at most max bytes, never inside a UTF-8 sequence. */
static size_t args_cut(const char *args, size_t max)
{
    size_t len = strnlen(args, max);
    if (len == max)
        while (len > 0 && ((unsigned char)args[len] & 0xC0) == 0x80)
            len--; /* args[len] continues a character: cut before it */
    return len;
}

void tp_zone_begin_args(tp_session *s, const char *name, const char *args)
{
    if (!s)
        return;
    uint32_t a = 0;
    if (args && s->settings.record_shapes)
        a = tpi_names_intern_n(args, args_cut(args, 240));
    zone_begin(s, tpi_names_intern(name ? name : ""), a);
}

/* A record named by a runtime string (interned), with nx payload slots. */
static void named_record(tp_session *s, uint32_t kind, const char *name,
                         const uint64_t (*x)[2], uint32_t nx)
{
    if (!s)
        return;
    tpi_tbuf *b = get_buf(s);
    if (!b)
        return;
    uint32_t id = tpi_names_intern(name ? name : "");
    put_rec(b, tpi_ticks(), kind, id, 0, x, nx);
}

void tp_thread_name(tp_session *s, const char *name) { named_record(s, TPI_REC_THREAD, name, NULL, 0); }
void tp_mark(tp_session *s, const char *name) { named_record(s, TPI_REC_MARK, name, NULL, 0); }

void tp_counter(tp_session *s, const char *name, double value)
{
    uint64_t x[1][2] = {{0, 0}};
    memcpy(&x[0][0], &value, sizeof value);
    named_record(s, TPI_REC_COUNTER, name, (const uint64_t(*)[2])x, 1);
}

static void wake_collector(tp_session *s)
{
    __atomic_fetch_add(&s->wake_seq, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&s->wake_cond);
}

/* the pool is more than half used: drain now rather than in up to 20 ms */
void tpi_session_pool_low(void *ctx)
{
    wake_collector(ctx);
}

/* A record with no name and no payload (step begin, epoch end). */
static void plain_record(tp_session *s, uint32_t kind)
{
    if (!s)
        return;
    tpi_tbuf *b = get_buf(s);
    if (b)
        put1(b, tpi_ticks(), kind, 0, 0);
}

void tp_step_begin(tp_session *s) { plain_record(s, TPI_REC_STEP_BEGIN); }

void tp_step_end(tp_session *s, uint64_t samples)
{
    if (!s)
        return;
    tpi_tbuf *b = get_buf(s);
    if (!b)
        return;
    const uint64_t x[1][2] = {{samples, 0}};
    put_rec(b, tpi_ticks(), TPI_REC_STEP_END, 0, 0, x, 1);
    uint64_t steps = __atomic_add_fetch(&s->steps_ended, 1, __ATOMIC_RELAXED);
    if (s->gpu) /* only sessions with profiling.cuda: no call per step otherwise */
        tpi_gpu_steps_ended(s->gpu, steps);
    if (__atomic_load_n(&s->wake_each_step, __ATOMIC_RELAXED))
        wake_collector(s);
}

void tp_epoch_end(tp_session *s) { plain_record(s, TPI_REC_EPOCH); }

uint64_t tp_session_steps(const tp_session *s)
{
    return s ? __atomic_load_n(&s->steps_ended, __ATOMIC_RELAXED) : 0;
}

const char *tp_session_dir(const tp_session *s)
{
    return s ? s->run_dir : NULL;
}

void tp_session_get_stats(const tp_session *s, tp_session_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!s)
        return;
    pthread_mutex_lock((pthread_mutex_t *)&s->stats_lock);
    *out = s->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&s->stats_lock);
    out->steps = tp_session_steps(s);
}

/* ---- memory glue ---------------------------------------------------------- */
static uint32_t innermost_zone(const tpi_tbuf *b)
{
    if (!b || b->depth == 0 || b->depth > TPI_ZSTACK)
        return 0;
    return b->zstack[b->depth - 1] & ~ZDROPPED;
}

/* Interned pool name, cached per thread. The pointer alone is not enough:
 * a reused buffer can hold another name (as in the allocation tracker). */
static uint32_t pool_id(tpi_tbuf *b, const char *pool)
{
    if (b->pool_ptr != pool || !b->pool_id || strcmp(tpi_names_get(b->pool_id), pool) != 0) {
        b->pool_id = tpi_names_intern(pool);
        b->pool_ptr = pool;
    }
    return b->pool_id;
}

static void mem_record(tp_session *s, tpi_tbuf *b, const void *ptr, int64_t bytes,
                       const char *pool, uint64_t live)
{
    if (!b || !s->settings.profile_memory)
        return;
    uint32_t pid = pool_id(b, pool); /* may intern: before the clock read */
    const uint64_t x[2][2] = {{(uint64_t)(uintptr_t)ptr, (uint64_t)bytes}, {live, live}};
    put_rec(b, tpi_ticks(), TPI_REC_MEMORY, pid, 0, x, 2);
}

void tp_mem_alloc(tp_session *s, const void *ptr, size_t bytes, const char *pool)
{
    if (!s || s->dead)
        return;
    if (!pool)
        pool = "default";
    tpi_tbuf *b = get_buf(s);
    uint64_t live = 0;
    if (s->alloc)
        tpi_alloc_record(s->alloc, ptr, bytes, pool, innermost_zone(b), &live);
    mem_record(s, b, ptr, (int64_t)bytes, pool, live);
}

void tp_mem_free(tp_session *s, const void *ptr, const char *pool)
{
    if (!s || s->dead)
        return;
    if (!pool)
        pool = "default";
    tpi_tbuf *b = get_buf(s);
    uint64_t live = 0, size = 0;
    if (s->alloc)
        size = tpi_alloc_release(s->alloc, ptr, pool, &live);
    mem_record(s, b, ptr, -(int64_t)size, pool, live);
}

void tp_set_device_memory_callback(tp_session *s, tp_device_memory_fn fn, void *user)
{
    if (s && s->probes)
        tpi_probes_set_callback(s->probes, fn, user);
}

void tpi_session_queue_sample(tp_session *s, const tpi_mem_sample *m)
{
    pthread_mutex_lock(&s->sample_lock);
    if (!s->samples)
        s->samples = calloc(TPI_SAMPLE_QUEUE, sizeof *s->samples);
    if (s->samples) {
        if (s->sample_count == TPI_SAMPLE_QUEUE) { /* full: drop the oldest */
            s->sample_head = (s->sample_head + 1) % TPI_SAMPLE_QUEUE;
            s->sample_count--;
            s->samples_lost++;
        }
        s->samples[(s->sample_head + s->sample_count) % TPI_SAMPLE_QUEUE] = *m;
        s->sample_count++;
    }
    pthread_mutex_unlock(&s->sample_lock);
}

int tpi_session_pop_sample(tp_session *s, tpi_mem_sample *out)
{
    int got = 0;
    pthread_mutex_lock(&s->sample_lock);
    if (s->sample_count) {
        *out = s->samples[s->sample_head];
        s->sample_head = (s->sample_head + 1) % TPI_SAMPLE_QUEUE;
        s->sample_count--;
        got = 1;
    }
    pthread_mutex_unlock(&s->sample_lock);
    return got;
}

static uint64_t last_step_of(tp_session *s)
{
    uint64_t n = tp_session_steps(s);
    return n ? n - 1 : 0;
}

void tp_memory_sample_now(tp_session *s)
{
    if (!s || s->dead || !s->probes)
        return;
    tpi_mem_sample m;
    if (tpi_probes_sample(s->probes, &m) != 0)
        return;
    m.ts_ns = tpi_session_ns(s, tpi_ticks());
    m.step = last_step_of(s);
    tpi_session_queue_sample(s, &m);
    wake_collector(s);
}

void tpi_session_sampler_cb(void *ctx, tpi_mem_sample *m)
{
    tp_session *s = ctx;
    m->ts_ns = tpi_session_ns(s, tpi_ticks());
    m->step = last_step_of(s);
    tpi_session_queue_sample(s, m);
}

/* ---- collector thread ----------------------------------------------------- */
void *tpi_session_collector_main(void *arg)
{
    tp_session *s = arg;
    uint64_t seen = 0;
    pthread_setname_np(pthread_self(), "trainprof-coll");
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&s->wake_lock);
        if (__atomic_load_n(&s->wake_seq, __ATOMIC_ACQUIRE) == seen &&
            !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&s->wake_cond, &s->wake_lock, &ts);
        }
        pthread_mutex_unlock(&s->wake_lock);
        seen = __atomic_load_n(&s->wake_seq, __ATOMIC_ACQUIRE);
        pthread_mutex_lock(&s->col_lock);
        tpi_collector_samples(s->col);
        tpi_collector_drain(s->col, tpi_ticks());
        tpi_flight_poll(s->col->fl); /* captures: SIGUSR1, requests, hang timeout */
        tpi_pool_top_up(&s->pool); /* after the drain gave chunks back */
        tpi_pool_pass_done(&s->pool);
        tpi_collector_publish_stats(s->col);
        int live_due = tpi_session_live_prepare(s, tpi_mono_ns());
        pthread_mutex_unlock(&s->col_lock);
        if (live_due)
            tpi_live_write(s->live); /* outside the lock: never delays a statistics reader */
    }
    return NULL;
}

