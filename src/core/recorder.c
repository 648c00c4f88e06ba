/* Per-thread buffers and the chunk pool (see recorder.h). */
#include "core/recorder.h"

#include <stdlib.h>
#include <string.h>

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
}

tpi_chunk *tpi_pool_get(tpi_pool *p)
{
    if (__atomic_load_n(&p->available, __ATOMIC_RELAXED) == 0)
        return NULL;
    tpi_chunk *c = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->free_list) {
        c = p->free_list;
        p->free_list = c->next;
    } else if (p->allocated < p->max_chunks) {
        c = aligned_alloc(TPI_CACHELINE, sizeof *c);
        if (c)
            p->allocated++;
    }
    if (c) {
        __atomic_store_n(&p->available, p->available - 1, __ATOMIC_RELAXED);
        c->next = NULL;
        c->committed = 0;
    }
    pthread_mutex_unlock(&p->lock);
    return c;
}

void tpi_pool_put(tpi_pool *p, tpi_chunk *c)
{
    pthread_mutex_lock(&p->lock);
    c->next = p->free_list;
    p->free_list = c;
    __atomic_store_n(&p->available, p->available + 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&p->lock);
}

void tpi_pool_free_chunks(tpi_pool *p)
{
    while (p->free_list) {
        tpi_chunk *c = p->free_list;
        p->free_list = c->next;
        free(c);
    }
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
    if (p->low_cb && __atomic_load_n(&p->available, __ATOMIC_RELAXED) < p->max_chunks / 2)
        p->low_cb(p->low_ctx); /* once per chunk at most: not per event */
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

const tpi_rec *tpi_cursor_peek(tpi_cursor *c, tpi_tbuf *b)
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
        tpi_pool_put(b->pool, c->chunk);
        c->chunk = next;
        c->rpos = c->avail = 0;
    }
}
