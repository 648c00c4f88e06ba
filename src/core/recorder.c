/* Per-thread buffers and the chunk pool (see recorder.h). */
#include "core/recorder.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

void *tpi_aligned_zalloc(size_t size)
{
    size_t n = (size + TPI_CACHELINE - 1) / TPI_CACHELINE * TPI_CACHELINE;
    void *p = aligned_alloc(TPI_CACHELINE, n);
    if (p)
        memset(p, 0, n);
    return p;
}

void tpi_pool_init(tpi_pool *p, uint64_t max_bytes)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    p->max_chunks = max_bytes / sizeof(tpi_chunk);
    if (p->max_chunks < 2)
        p->max_chunks = 2;
    p->available = p->max_chunks;
    p->ready_target = TPI_POOL_MIN_READY;
}

/* A new chunk within the bound (NULL at the bound or out of memory). */
static tpi_chunk *chunk_new(tpi_pool *p)
{
    uint64_t n = __atomic_load_n(&p->allocated, __ATOMIC_RELAXED);
    do {
        if (n >= p->max_chunks)
            return NULL;
    } while (!__atomic_compare_exchange_n(&p->allocated, &n, n + 1, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    tpi_chunk *c = aligned_alloc(TPI_CACHELINE, sizeof *c);
    if (!c)
        __atomic_fetch_sub(&p->allocated, 1, __ATOMIC_RELAXED);
    return c;
}

static tpi_chunk *pop_free(tpi_pool *p)
{
    tpi_chunk *c = p->free_list;
    if (c) {
        p->free_list = c->next;
        __atomic_store_n(&p->n_free, p->n_free - 1, __ATOMIC_RELAXED);
    }
    return c;
}

static void push_free(tpi_pool *p, tpi_chunk *c)
{
    pthread_mutex_lock(&p->lock);
    c->next = p->free_list;
    p->free_list = c;
    __atomic_store_n(&p->n_free, p->n_free + 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&p->lock);
}

tpi_chunk *tpi_pool_get(tpi_pool *p)
{
    if (__atomic_load_n(&p->available, __ATOMIC_RELAXED) == 0)
        return NULL;
    tpi_chunk *c = NULL;
    if (pthread_mutex_trylock(&p->lock) == 0) {
        c = pop_free(p);
        pthread_mutex_unlock(&p->lock);
    }
    if (!c)
        c = chunk_new(p); /* nothing ready, or the lock is held: a fresh one */
    if (!c) {             /* at the bound: wait for the ready ones */
        pthread_mutex_lock(&p->lock);
        c = pop_free(p);
        pthread_mutex_unlock(&p->lock);
    }
    if (!c)
        return NULL;
    __atomic_fetch_sub(&p->available, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&p->taken, 1, __ATOMIC_RELAXED);
    c->next = NULL;
    __atomic_store_n(&c->committed, 0, __ATOMIC_RELAXED);
    return c;
}

void tpi_pool_put(tpi_pool *p, tpi_chunk *c)
{
    push_free(p, c);
    __atomic_fetch_add(&p->available, 1, __ATOMIC_RELAXED);
}

void tpi_pool_top_up(tpi_pool *p)
{
    uint64_t taken = __atomic_load_n(&p->taken, __ATOMIC_RELAXED);
    uint64_t want = 2 * (taken - p->taken_seen);
    p->taken_seen = taken;
    if (want < TPI_POOL_MIN_READY)
        want = TPI_POOL_MIN_READY;
    if (want > p->max_chunks / 4)
        want = p->max_chunks / 4;
    __atomic_store_n(&p->ready_target, want, __ATOMIC_RELAXED);
    tpi_pool_fill(p);
}

void tpi_pool_fill(tpi_pool *p)
{
    uint64_t want = __atomic_load_n(&p->ready_target, __ATOMIC_RELAXED);
    while (__atomic_load_n(&p->n_free, __ATOMIC_RELAXED) < want) {
        tpi_chunk *c = chunk_new(p);
        if (!c)
            return;
        memset(c, 0, sizeof *c); /* the page faults happen here, not in a writer */
        push_free(p, c);
    }
}

void tpi_pool_free_chunks(tpi_pool *p)
{
    while (p->free_list) {
        tpi_chunk *c = p->free_list;
        p->free_list = c->next;
        free(c);
    }
    p->n_free = 0;
}

void tpi_pool_destroy(tpi_pool *p)
{
    tpi_pool_free_chunks(p);
    pthread_mutex_destroy(&p->lock);
}

void tpi_tbuf_init(tpi_tbuf *b, tpi_pool *pool, uint32_t tid, uint32_t index)
{
    memset(b, 0, sizeof *b);
    b->pool = pool;
    b->tid = tid;
    b->index = index;
}

tpi_rec *tpi_tbuf_refill(tpi_tbuf *b, uint32_t n)
{
    if (n > TPI_CHUNK_RECS)
        return NULL;
    tpi_pool *p = b->pool;
    tpi_chunk *c = tpi_pool_get(p);
    if (p->low_cb && (__atomic_load_n(&p->available, __ATOMIC_RELAXED) < p->max_chunks / 2 ||
                      2 * __atomic_load_n(&p->n_free, __ATOMIC_RELAXED) <
                          __atomic_load_n(&p->ready_target, __ATOMIC_RELAXED))) {
        /* once per collector pass: the wake makes it start the next pass
         * at once, and a second one before then would change nothing */
        uint64_t pass = __atomic_load_n(&p->passes, __ATOMIC_ACQUIRE) + 1;
        if (b->woke_pass != pass) {
            b->woke_pass = pass;
            p->low_cb(p->low_ctx);
        }
    }
    if (!c) {
        tpi_tbuf_count_drop(b);
        return NULL;
    }
    if (b->cur) {
        if (b->pos < b->cap) {
            b->cur->recs[b->pos].e.hdr = TPI_REC_HDR(TPI_REC_PAD, 0);
            b->cur->recs[b->pos].e.ts = 0;
            __atomic_store_n(&b->cur->committed, b->pos + 1, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&b->cur->next, c, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&b->first, c, __ATOMIC_RELEASE);
    }
    b->cur = c;
    b->pos = 0;
    b->cap = TPI_CHUNK_RECS;
    return &c->recs[0];
}

/* Gives a drained chunk back with its records evicted from every cache.
 * A writer storing into lines another core still holds (the collector just
 * read them) measured up to 3x slower per zone on this VM, in some
 * processes and periods (a coherence cost of the host; the invalidations
 * are not prefetched: prefetchw did not help, nor did the collector writing
 * each line or zeroing the chunk); into lines flushed to memory it is as
 * fast as into its own (bench/core/bench_lines; docs/ARCHITECTURE.md).
 * One flush per cache line, in the collector, off the training thread.
 * Other architectures give the chunk back as it is. */
#if defined(__x86_64__) || defined(__i386__)
/* CPUID.(EAX=7,ECX=0):EBX bit 23; CLFLUSH itself is in every x86-64 CPU. */
static int have_clflushopt(void)
{
    static int known; /* 0 unknown, 1 no, 2 yes */
    int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (v == 0) {
        unsigned a, b = 0, c, d;
        v = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23)) ? 2 : 1;
        __atomic_store_n(&known, v, __ATOMIC_RELAXED);
    }
    return v == 2;
}
#endif

static void give_back(tpi_pool *p, tpi_chunk *chunk)
{
#if defined(__x86_64__) || defined(__i386__)
    char *line = (char *)chunk->recs, *end = line + sizeof chunk->recs;
    if (have_clflushopt())
        for (; line < end; line += TPI_CACHELINE)
            __asm__ volatile("clflushopt %0" : "+m"(*line));
    else
        for (; line < end; line += TPI_CACHELINE)
            __asm__ volatile("clflush %0" : "+m"(*line));
#endif
    tpi_pool_put(p, chunk);
}

const tpi_rec *tpi_cursor_peek_slow(tpi_cursor *c, tpi_tbuf *b)
{
    if (!c->chunk) {
        c->chunk = __atomic_load_n(&b->first, __ATOMIC_ACQUIRE);
        c->rpos = c->avail = 0;
        if (!c->chunk)
            return NULL;
    }
    for (;;) {
        if (c->rpos < c->avail) {
            const tpi_rec *r = &c->chunk->recs[c->rpos];
            if (TPI_REC_KIND(r->e.hdr) != TPI_REC_PAD)
                return r;
            c->rpos = TPI_CHUNK_RECS; /* padding: the chunk is finished */
            c->avail = TPI_CHUNK_RECS;
            continue;
        }
        c->avail = __atomic_load_n(&c->chunk->committed, __ATOMIC_ACQUIRE);
        if (c->rpos < c->avail)
            continue;
        /* Everything committed is consumed. Move on only when the writer has
         * linked a successor: then it will never touch this chunk again. */
        tpi_chunk *next = __atomic_load_n(&c->chunk->next, __ATOMIC_ACQUIRE);
        if (!next)
            return NULL;
        /* re-check: records committed before the link */
        c->avail = __atomic_load_n(&c->chunk->committed, __ATOMIC_ACQUIRE);
        if (c->rpos < c->avail)
            continue;
        give_back(b->pool, c->chunk);
        c->chunk = next;
        c->rpos = c->avail = 0;
    }
}
