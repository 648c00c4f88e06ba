/*
 * recorder.h - per-thread event buffers fed from a bounded chunk pool.
 *
 * Each recording thread owns one tpi_tbuf. It appends fixed-size 16-byte
 * records to its current chunk and publishes them with a release store of
 * the chunk's `committed` count; the collector reads them with an acquire
 * load, so neither side locks per event. A full chunk is linked to a fresh
 * one taken from the pool (a mutex, once per TPI_CHUNK_RECS records). When
 * the pool is exhausted (profiling.max_buffer_mb) events are dropped and
 * counted. The collector returns drained chunks to the pool.
 */
#ifndef TP_CORE_RECORDER_H
#define TP_CORE_RECORDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef TP_SMALL_LIMITS
#define TPI_CHUNK_RECS 32
#define TPI_MAX_THREADS 16
#else
#define TPI_CHUNK_RECS 4096
#define TPI_MAX_THREADS 1024
#endif
#define TPI_POOL_MIN_READY 16 /* chunks ready from the start (1 MB) */
#define TPI_ZSTACK 64 /* writer-side zone stack kept per thread */

/* Cache-line size: data written by different threads lives on different
 * lines (tbuf writer fields vs collector-read fields, chunk header vs
 * records, the pool's counters), so no thread's store invalidates a line
 * another thread is using (no false sharing). Structures with such members
 * must come from tpi_aligned_zalloc. */
#define TPI_CACHELINE 64
#define TPI_LINE _Alignas(TPI_CACHELINE)

/* Zeroed memory aligned to TPI_CACHELINE (free with free()); NULL on failure. */
void *tpi_aligned_zalloc(size_t size);

/* Record kinds (4 bits). */
enum {
    TPI_REC_PAD = 0,        /* rest of the chunk is unused */
    TPI_REC_BEGIN = 1,      /* zone begin: name, arg = args name id */
    TPI_REC_END = 2,        /* zone end */
    TPI_REC_STEP_BEGIN = 3,
    TPI_REC_STEP_END = 4,   /* + 1 slot: samples */
    TPI_REC_COUNTER = 5,    /* name; + 1 slot: double value */
    TPI_REC_MARK = 6,       /* name */
    TPI_REC_THREAD = 7,     /* thread name */
    TPI_REC_EPOCH = 8,      /* epoch end */
    TPI_REC_MEMORY = 9,     /* pool name; + 2 slots: addr, bytes, total live, device */
    TPI_REC_COMPLETE = 10   /* zone ending now; + 1 slot: begin ticks */
};
#define TPI_REC_KIND(h) ((h) >> 28)
#define TPI_REC_NAME(h) ((h)&0x0fffffffu)
#define TPI_REC_HDR(kind, name) (((uint32_t)(kind) << 28) | ((uint32_t)(name)&0x0fffffffu))

typedef union tpi_rec {
    struct {
        uint64_t ts;  /* ticks */
        uint32_t hdr; /* kind << 28 | name id */
        uint32_t arg;
    } e;
    struct {
        uint64_t a, b; /* payload of a multi-slot record */
    } x;
} tpi_rec;

/* The header (written per event: `committed`) has its own cache line, so
 * the collector polling it never steals the line the writer is filling
 * with records. */
typedef struct tpi_chunk {
    struct tpi_chunk *next;     /* atomic: set once by the writer */
    uint32_t committed;         /* atomic: records readable */
    TPI_LINE tpi_rec recs[TPI_CHUNK_RECS];
} tpi_chunk;

/* Touched once per chunk (TPI_CHUNK_RECS records), never per event; on its
 * own cache lines inside the session.
 *
 * Chunks come ready: the collector allocates them and touches every page
 * (tpi_pool_top_up) before a writer takes one, so a recording thread never
 * calls malloc nor takes the page faults of fresh memory. Measured before
 * this (bench/core/bench_steps, trace window active): writers that grew the
 * pool themselves took 16 faults per 64 KB chunk, several zones per run
 * took 100-230 us (the fault waiting for the address-space lock while the
 * collector allocated and wrote files) and the mean cost of a zone varied
 * per process from 1.0x to 2.0x two TSC reads; with the pool pre-touched it
 * stayed at 1.01-1.19x with no fault stall. The `committed` store per
 * event, suspected first, was left as it is: pre-touching alone removed the
 * slow mode, and the collector reads that line once per drain pass, not
 * per event (tpi_collector_drain).
 * A later slow mode (1.35-2.6x in some processes and periods) came from
 * writers storing into recycled chunks whose lines the collector still
 * held after reading them: drained chunks are now flushed from the caches
 * before reuse (give_back in recorder.c). The collector was also made
 * cheaper (452 -> 265 instructions per zone) and a writer wakes it at most
 * once per pass (docs/ARCHITECTURE.md, "The recorder's hot path").
 *
 * During a long drain pass (a trace window writing slower than the
 * threads record) the collector also tops up every 1024 records: measured
 * under load, writers then allocated 52-120 of ~4000 chunks instead of
 * 2205, and the fault stalls went away.
 *
 * A writer takes the lock with trylock: the collector holds it only to
 * push a chunk, but if it is preempted while holding it the writer takes a
 * fresh chunk itself (within the bound) instead of waiting a time slice. */
typedef struct tpi_pool {
    TPI_LINE pthread_mutex_t lock;
    tpi_chunk *free_list;
    uint64_t n_free;            /* atomic: chunks on free_list (written under lock) */
    uint64_t max_chunks;
    uint64_t allocated;         /* atomic: chunks allocated so far */
    uint64_t available;         /* atomic: free + not yet allocated */
    uint64_t taken;             /* atomic: chunks given to writers */
    uint64_t ready_target;      /* atomic: free chunks the collector keeps ready */
    uint64_t taken_seen;        /* collector only: `taken` at the last top-up */
    /* Called (any thread, no lock held) when a writer takes a chunk while
     * less than half the pool is available or the ready chunks run low:
     * the session wakes its collector so drained chunks come back and new
     * ones are prepared before the writers need them. A writer calls it at
     * most once per collector pass (`passes`): once the pool is exhausted
     * every event of every thread comes through the refill path, and a
     * wake per event (an atomic on the session's wake counter and a
     * condition signal, lines the collector reads too) made the recording
     * threads 2-3x slower exactly when the collector was behind. */
    void (*low_cb)(void *ctx);
    void *low_ctx;
    TPI_LINE uint64_t passes;   /* atomic: collector passes done (tpi_pool_pass_done) */
} tpi_pool;

void tpi_pool_init(tpi_pool *p, uint64_t max_bytes);
tpi_chunk *tpi_pool_get(tpi_pool *p); /* NULL when exhausted */
void tpi_pool_put(tpi_pool *p, tpi_chunk *c);
/* Collector side: allocates and pre-touches free chunks until twice the
 * number writers took since the last call are ready (at least
 * TPI_POOL_MIN_READY, at most a quarter of the bound). */
void tpi_pool_top_up(tpi_pool *p);
/* Collector side, during a long drain pass: tops up to the current target
 * without changing it. */
void tpi_pool_fill(tpi_pool *p);
/* Collector side: a drain and top-up pass is complete. */
static inline void tpi_pool_pass_done(tpi_pool *p)
{
    __atomic_store_n(&p->passes, __atomic_load_n(&p->passes, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELEASE);
}
void tpi_pool_destroy(tpi_pool *p);    /* frees every free chunk and the lock */
void tpi_pool_free_chunks(tpi_pool *p); /* frees every free chunk, lock untouched */

/* One per recording thread, allocated with tpi_aligned_zalloc. The
 * writer's fields fill the first cache lines and are never read by another
 * thread; what the collector reads starts on its own line and is written
 * by the owner only once per chunk (first) or per dropped event. */
typedef struct tpi_tbuf {
    /* writer side (owning thread only) */
    TPI_LINE tpi_chunk *cur;
    uint32_t pos, cap;
    uint32_t depth;                 /* open zones (writer's view) */
    uint32_t pool_id;
    const char *pool_ptr;           /* last pool name seen by tp_mem_alloc */
    uint32_t zstack[TPI_ZSTACK];    /* name ids; high bit = begin was dropped */
    uint64_t woke_pass;             /* pool passes + 1 at this thread's last low_cb */
    /* read by the collector */
    TPI_LINE tpi_chunk *first;      /* atomic: first chunk, for the collector */
    uint64_t dropped;               /* atomic (relaxed), written by the owner */
    tpi_pool *pool;
    uint32_t tid;                   /* OS thread id */
    uint32_t index;                 /* position in the session's table */
    uint32_t name_id;               /* initial thread name */
} tpi_tbuf;

void tpi_tbuf_init(tpi_tbuf *b, tpi_pool *pool, uint32_t tid, uint32_t index);

/* Slow path of tpi_tbuf_reserve: closes the current chunk and takes a new
 * one; NULL (event dropped and counted) when the pool is empty. */
tpi_rec *tpi_tbuf_refill(tpi_tbuf *b, uint32_t n);

/* Room for n consecutive records, or NULL (dropped). */
static inline tpi_rec *tpi_tbuf_reserve(tpi_tbuf *b, uint32_t n)
{
    if (__builtin_expect(b->pos + n <= b->cap, 1))
        return &b->cur->recs[b->pos];
    return tpi_tbuf_refill(b, n);
}

/* Publishes the n records just written. */
static inline void tpi_tbuf_commit(tpi_tbuf *b, uint32_t n)
{
    b->pos += n;
    __atomic_store_n(&b->cur->committed, b->pos, __ATOMIC_RELEASE);
}

static inline void tpi_tbuf_count_drop(tpi_tbuf *b)
{
    __atomic_store_n(&b->dropped, __atomic_load_n(&b->dropped, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
}

/* Collector-side reader of one tbuf. */
typedef struct tpi_cursor {
    tpi_chunk *chunk;
    uint32_t rpos;
    uint32_t avail;                 /* committed count last seen */
} tpi_cursor;

/* Slow path of tpi_cursor_peek: at the end of what was seen committed,
 * at padding, or before the first chunk. */
const tpi_rec *tpi_cursor_peek_slow(tpi_cursor *c, tpi_tbuf *b);

/* Next readable record (NULL when none now); does not advance. Recycles
 * drained chunks into the pool. */
static inline const tpi_rec *tpi_cursor_peek(tpi_cursor *c, tpi_tbuf *b)
{
    if (__builtin_expect(c->rpos < c->avail, 1)) {
        const tpi_rec *r = &c->chunk->recs[c->rpos];
        if (__builtin_expect(TPI_REC_KIND(r->e.hdr) != TPI_REC_PAD, 1))
            return r;
    }
    return tpi_cursor_peek_slow(c, b);
}
/* Consumes n records (the head record and its extra slots). */
static inline void tpi_cursor_advance(tpi_cursor *c, uint32_t n) { c->rpos += n; }
/* Extra slots of the multi-slot record at the head (n-th after it). */
static inline const tpi_rec *tpi_cursor_slot(const tpi_cursor *c, uint32_t k)
{
    return &c->chunk->recs[c->rpos + k];
}

#endif
