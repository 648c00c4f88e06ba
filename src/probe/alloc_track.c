/*
 * alloc_track.c - live-block tracking for tp_mem_alloc / tp_mem_free.
 *
 * Blocks live in 64 independent open-addressing hash tables ("stripes"), one
 * spin lock each, chosen by the pointer's hash: threads that allocate at once
 * rarely meet on a lock. Deletion shifts entries back (no tombstones), so
 * probe chains stay short however long the run. A table that cannot grow
 * (out of memory) counts the block as untracked instead of failing the host.
 *
 * Counters are per thread ("shards", one per thread and tracker, owned by the
 * tracker): a thread writes only its own shard, with plain relaxed loads and
 * stores (no read-modify-write), and a report sums the shards. Exact live
 * bytes and counts come from that sum. Peaks need a running global: each
 * shard keeps the part of its live bytes not yet published ("pending") and
 * publishes it into the pool's and the tracker's global live counter (one
 * atomic add, then a CAS of the peak only when exceeded) when the thread's
 * view (global + pending) exceeds the peak, or when |pending| reaches
 * TPI_ALLOC_FLUSH bytes. In the steady state of a training loop (live bytes
 * oscillating below the peak) alloc+free touch no shared line for writing
 * except the stripe lock. With one allocating thread peaks and the
 * total_live out-value are exact; with several, each may miss up to
 * TPI_ALLOC_FLUSH bytes per other thread (their unpublished deltas).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"
#include "util/json.h"

#pragma weak tpi_names_get /* provided by src/core; absent in probe-only tests */
const char *tpi_names_get(uint32_t id);

#define N_STRIPES 64
#define MAX_POOLS 64
#define POOL_NAME_MAX 64
#define LEAK_GROUPS_SHOWN 20
#ifdef TP_SMALL_LIMITS
#define TPI_ALLOC_FLUSH 256
#else
#define TPI_ALLOC_FLUSH (256 * 1024)
#endif

typedef struct block {
    uintptr_t ptr; /* 0 = empty slot */
    uint64_t bytes;
    uint32_t zone;
    uint32_t pool;
} block;

typedef struct stripe {
    atomic_int lock;
    uint32_t count, mask; /* mask = capacity - 1, capacity a power of two */
    block *slots;
    char pad[64 - sizeof(atomic_int) - 2 * sizeof(uint32_t) - sizeof(void *)];
} stripe;

/* One pool's counters in one shard: written only by the shard's thread. */
typedef struct shard_pool {
    _Atomic int64_t live;    /* this thread's contribution (frees of others' blocks: < 0) */
    _Atomic int64_t pending; /* part of live not yet added to the pool's global */
    _Atomic uint64_t allocs, frees, total_bytes, bad_frees;
} shard_pool;

typedef struct shard {
    struct shard *next; /* immutable once published */
    pthread_t owner;    /* under the tracker's shard lock */
    _Atomic int64_t pending_total;
    shard_pool pools[MAX_POOLS];
} shard;

typedef struct pool {
    _Atomic(const char *) key; /* the first name pointer seen (fast compare) */
    char name[POOL_NAME_MAX];
    atomic_int_fast64_t live; /* published live bytes (lags the shards) */
    atomic_uint_fast64_t peak;
    char pad[64 - sizeof(void *) - 2 * sizeof(int64_t)];
} pool;

struct tpi_alloc_tracker {
    stripe stripes[N_STRIPES];
    pool pools[MAX_POOLS];
    atomic_int_fast64_t live; /* published total (lags the shards) */
    atomic_uint_fast64_t peak;
    char pad0[64 - 2 * sizeof(int64_t)];
    uint64_t gen; /* unique per tracker: validates the thread-local cache */
    _Atomic(shard *) shards;
    atomic_int n_pools;
    atomic_int pool_lock;
    pthread_mutex_t shard_lock;
    atomic_uint_fast64_t untracked, reused;
    shard orphan; /* counts of threads that got no shard (out of memory): RMW */
};

/* The calling thread's shard of its last tracker and its last pool. */
static _Thread_local struct {
    uint64_t gen;
    shard *sh;
    const char *pool_key;
    uint32_t pool_idx;
} tls;

static atomic_uint_fast64_t tracker_gen;

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
/* Single-writer update: a load and a store, no read-modify-write. */
#define BUMP(x, v) atomic_store_explicit(&(x), LOAD(x) + (v), memory_order_relaxed)
/* A count of pool pi: in the thread's shard, else (no shard) the shared one. */
#define COUNT(t, sh, pi, field, v)                                                              \
    do {                                                                                       \
        if (sh)                                                                                \
            BUMP((sh)->pools[pi].field, v);                                                    \
        else                                                                                   \
            atomic_fetch_add_explicit(&(t)->orphan.pools[pi].field, v, memory_order_relaxed);   \
    } while (0)

static inline void spin_lock(atomic_int *l)
{
    int spins = 0;
    while (atomic_exchange_explicit(l, 1, memory_order_acquire)) {
        while (atomic_load_explicit(l, memory_order_relaxed))
            if (++spins > 200) {
                sched_yield();
                spins = 0;
            }
    }
}

static inline void spin_unlock(atomic_int *l) { atomic_store_explicit(l, 0, memory_order_release); }

/* Fibonacci hashing: the top 6 bits pick the stripe, the next bits the slot. */
static inline uint64_t hash_ptr(uintptr_t p) { return (uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ull; }
static inline uint32_t slot_of(uint64_t h, uint32_t mask) { return (uint32_t)(h >> 26) & mask; }

static inline void max_update(atomic_uint_fast64_t *m, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(m, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(m, &cur, v, memory_order_relaxed,
                                                            memory_order_relaxed)) {
    }
}

tpi_alloc_tracker *tpi_alloc_tracker_new(void)
{
    tpi_alloc_tracker *t = aligned_alloc(64, (sizeof *t + 63) / 64 * 64);
    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    t->gen = atomic_fetch_add(&tracker_gen, 1) + 1;
    pthread_mutex_init(&t->shard_lock, NULL);
    return t;
}

void tpi_alloc_tracker_free(tpi_alloc_tracker *t)
{
    if (!t)
        return;
    for (int i = 0; i < N_STRIPES; i++)
        free(t->stripes[i].slots);
    for (shard *s = atomic_load(&t->shards), *n; s; s = n) {
        n = s->next;
        free(s);
    }
    pthread_mutex_destroy(&t->shard_lock);
    free(t);
}

/* The calling thread's shard: found by owner (a shard whose thread ended is
 * adopted by a new thread with the same id), else created. NULL when out of
 * memory (the counts of that call are then lost, the block still tracked). */
static shard *shard_slow(tpi_alloc_tracker *t)
{
    pthread_t self = pthread_self();
    pthread_mutex_lock(&t->shard_lock);
    shard *s = atomic_load_explicit(&t->shards, memory_order_relaxed);
    while (s && !pthread_equal(s->owner, self))
        s = s->next;
    if (!s && (s = aligned_alloc(64, (sizeof *s + 63) / 64 * 64)) != NULL) {
        memset(s, 0, sizeof *s);
        s->owner = self;
        s->next = atomic_load_explicit(&t->shards, memory_order_relaxed);
        atomic_store_explicit(&t->shards, s, memory_order_release);
    }
    pthread_mutex_unlock(&t->shard_lock);
    if (s) {
        tls.gen = t->gen;
        tls.sh = s;
        tls.pool_key = NULL;
    }
    return s;
}

static inline shard *my_shard(tpi_alloc_tracker *t)
{
    if (__builtin_expect(tls.gen == t->gen, 1))
        return tls.sh;
    return shard_slow(t);
}

/* Index of the pool named name, created on first use; the last slot
 * collects every pool beyond MAX_POOLS - 1. */
static uint32_t pool_lookup(tpi_alloc_tracker *t, const char *name)
{
    int n = atomic_load_explicit(&t->n_pools, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (strncmp(t->pools[i].name, name, POOL_NAME_MAX - 1) == 0)
            return (uint32_t)i;
    spin_lock(&t->pool_lock);
    n = atomic_load_explicit(&t->n_pools, memory_order_relaxed);
    int idx = -1;
    for (int i = 0; i < n && idx < 0; i++)
        if (strncmp(t->pools[i].name, name, POOL_NAME_MAX - 1) == 0)
            idx = i;
    if (idx < 0 && n < MAX_POOLS) {
        idx = n;
        snprintf(t->pools[idx].name, POOL_NAME_MAX, "%s", n == MAX_POOLS - 1 ? "(other pools)" : name);
        atomic_store_explicit(&t->pools[idx].key, name, memory_order_relaxed);
        atomic_store_explicit(&t->n_pools, n + 1, memory_order_release);
    }
    spin_unlock(&t->pool_lock);
    return idx < 0 ? MAX_POOLS - 1 : (uint32_t)idx;
}

/* Pool index, cached per thread for the last name pointer (the same string
 * literal from one call site, usually). */
static inline uint32_t pool_index(tpi_alloc_tracker *t, shard *sh, const char *name)
{
    if (!name || !*name)
        name = "default";
    /* the pointer alone is not enough: a reused buffer can hold another name */
    if (sh && tls.pool_key == name &&
        strncmp(t->pools[tls.pool_idx].name, name, POOL_NAME_MAX - 1) == 0)
        return tls.pool_idx;
    uint32_t i = pool_lookup(t, name);
    if (sh) {
        tls.pool_key = name;
        tls.pool_idx = i;
    }
    return i;
}

static int stripe_grow(stripe *s)
{
    uint32_t cap = s->slots ? (s->mask + 1) * 2 : 64;
    block *nb = calloc(cap, sizeof *nb);
    if (!nb)
        return -1;
    for (uint32_t i = 0; s->slots && i <= s->mask; i++) {
        if (!s->slots[i].ptr)
            continue;
        uint32_t j = slot_of(hash_ptr(s->slots[i].ptr), cap - 1);
        while (nb[j].ptr)
            j = (j + 1) & (cap - 1);
        nb[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = nb;
    s->mask = cap - 1;
    return 0;
}

/* Slot holding ptr, or the empty slot where it would go. */
static inline uint32_t stripe_find(const stripe *s, uintptr_t ptr, uint64_t h)
{
    uint32_t i = slot_of(h, s->mask);
    while (s->slots[i].ptr && s->slots[i].ptr != ptr)
        i = (i + 1) & s->mask;
    return i;
}

/* Removes slot i, shifting later entries of the chain back into the hole. */
static void stripe_remove(stripe *s, uint32_t i)
{
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & s->mask;
        if (!s->slots[j].ptr)
            break;
        uint32_t k = slot_of(hash_ptr(s->slots[j].ptr), s->mask);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        s->slots[i] = s->slots[j];
        i = j;
    }
    s->slots[i].ptr = 0;
    s->count--;
}

/* Publishes pending bytes into a global live counter; a new peak is kept. */
static inline int64_t publish(atomic_int_fast64_t *live, atomic_uint_fast64_t *peak,
                              _Atomic int64_t *pending, int64_t d)
{
    int64_t g = atomic_fetch_add_explicit(live, d, memory_order_relaxed) + d;
    atomic_store_explicit(pending, 0, memory_order_relaxed);
    if (g > 0)
        max_update(peak, (uint64_t)g);
    return g;
}

/* Adds d bytes to this thread's share of one global (pool or total): when
 * the thread's view exceeds the peak, or the pending part grew large, it is
 * published. Returns the thread's view of the global's live bytes. */
static inline int64_t account(atomic_int_fast64_t *live, atomic_uint_fast64_t *peak,
                              _Atomic int64_t *pending, int64_t d)
{
    int64_t p = LOAD(*pending) + d;
    int64_t view = (int64_t)LOAD(*live) + p;
    if ((d > 0 && view > 0 && (uint64_t)view > LOAD(*peak)) || p >= TPI_ALLOC_FLUSH ||
        p <= -TPI_ALLOC_FLUSH)
        return publish(live, peak, pending, p);
    atomic_store_explicit(pending, p, memory_order_relaxed);
    return view;
}

static inline uint64_t clamp_live(int64_t v) { return v > 0 ? (uint64_t)v : 0; }

/* Counts a change of live bytes of pool pi; *total_live gets the view. */
static inline void live_change(tpi_alloc_tracker *t, shard *sh, uint32_t pi, int64_t d,
                               uint64_t *total_live)
{
    if (!sh) { /* no shard (out of memory): publish directly */
        atomic_fetch_add_explicit(&t->orphan.pools[pi].live, d, memory_order_relaxed);
        int64_t g = atomic_fetch_add_explicit(&t->pools[pi].live, d, memory_order_relaxed) + d;
        if (d > 0)
            max_update(&t->pools[pi].peak, clamp_live(g));
        g = atomic_fetch_add_explicit(&t->live, d, memory_order_relaxed) + d;
        if (d > 0)
            max_update(&t->peak, clamp_live(g));
        if (total_live)
            *total_live = clamp_live(g);
        return;
    }
    shard_pool *c = &sh->pools[pi];
    BUMP(c->live, d);
    account(&t->pools[pi].live, &t->pools[pi].peak, &c->pending, d);
    int64_t v = account(&t->live, &t->peak, &sh->pending_total, d);
    if (total_live)
        *total_live = clamp_live(v);
}

static inline uint64_t view_total(tpi_alloc_tracker *t, shard *sh)
{
    return clamp_live((int64_t)LOAD(t->live) + (sh ? LOAD(sh->pending_total) : 0));
}

void tpi_alloc_record(tpi_alloc_tracker *t, const void *ptr, uint64_t bytes, const char *pool,
                      uint32_t zone_id, uint64_t *total_live)
{
    if (!t || !ptr) {
        if (total_live)
            *total_live = t ? view_total(t, NULL) : 0;
        return;
    }
    shard *sh = my_shard(t);
    uint32_t pi = pool_index(t, sh, pool);
    uintptr_t p = (uintptr_t)ptr;
    uint64_t h = hash_ptr(p);
    stripe *s = &t->stripes[h >> 58];
    spin_lock(&s->lock);
    if ((!s->slots || (s->count + 1) * 2 > s->mask + 1) && stripe_grow(s) != 0) {
        spin_unlock(&s->lock);
        atomic_fetch_add_explicit(&t->untracked, 1, memory_order_relaxed);
        if (total_live)
            *total_live = view_total(t, sh);
        return;
    }
    uint32_t i = stripe_find(s, p, h);
    block old = s->slots[i];
    s->slots[i] = (block){p, bytes, zone_id, pi};
    if (!old.ptr)
        s->count++;
    spin_unlock(&s->lock);
    COUNT(t, sh, pi, allocs, 1);
    COUNT(t, sh, pi, total_bytes, bytes);
    if (old.ptr) { /* recorded twice without a free: the first is gone */
        atomic_fetch_add_explicit(&t->reused, 1, memory_order_relaxed);
        COUNT(t, sh, old.pool, frees, 1);
        live_change(t, sh, old.pool, -(int64_t)old.bytes, NULL);
    }
    live_change(t, sh, pi, (int64_t)bytes, total_live);
}

uint64_t tpi_alloc_release(tpi_alloc_tracker *t, const void *ptr, const char *pool,
                           uint64_t *total_live)
{
    if (!t || !ptr) {
        if (total_live)
            *total_live = t ? view_total(t, t && tls.gen == t->gen ? tls.sh : NULL) : 0;
        return 0;
    }
    shard *sh = my_shard(t);
    uintptr_t p = (uintptr_t)ptr;
    uint64_t h = hash_ptr(p);
    stripe *s = &t->stripes[h >> 58];
    block b = {0, 0, 0, 0};
    spin_lock(&s->lock);
    if (s->slots) {
        uint32_t i = stripe_find(s, p, h);
        b = s->slots[i];
        if (b.ptr)
            stripe_remove(s, i);
    }
    spin_unlock(&s->lock);
    if (!b.ptr) {
        uint32_t pi = pool_index(t, sh, pool);
        COUNT(t, sh, pi, bad_frees, 1);
        if (total_live)
            *total_live = view_total(t, sh);
        return 0;
    }
    COUNT(t, sh, b.pool, frees, 1);
    live_change(t, sh, b.pool, -(int64_t)b.bytes, total_live);
    return b.bytes;
}

/* --- report at close --------------------------------------------------------- */

typedef struct leak_group {
    uint64_t key; /* pool << 32 | zone */
    uint64_t blocks, bytes;
} leak_group;

static int by_key(const void *a, const void *b)
{
    uint64_t x = ((const leak_group *)a)->key, y = ((const leak_group *)b)->key;
    return x < y ? -1 : x > y;
}

static int by_bytes_desc(const void *a, const void *b)
{
    uint64_t x = ((const leak_group *)a)->bytes, y = ((const leak_group *)b)->bytes;
    return x > y ? -1 : x < y;
}

/* Outstanding blocks grouped by (pool, zone), largest first. */
static leak_group *collect_leaks(tpi_alloc_tracker *t, size_t *n_out)
{
    size_t cap = 0, n = 0;
    for (int i = 0; i < N_STRIPES; i++)
        cap += t->stripes[i].count;
    leak_group *g = cap ? malloc((cap + 1) * sizeof *g) : NULL;
    for (int i = 0; g && i < N_STRIPES; i++) {
        stripe *s = &t->stripes[i];
        spin_lock(&s->lock);
        for (uint32_t k = 0; s->slots && k <= s->mask && n < cap; k++)
            if (s->slots[k].ptr)
                g[n++] = (leak_group){(uint64_t)s->slots[k].pool << 32 | s->slots[k].zone, 1,
                                      s->slots[k].bytes};
        spin_unlock(&s->lock);
    }
    if (n > 1)
        qsort(g, n, sizeof *g, by_key);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && g[m - 1].key == g[i].key) {
            g[m - 1].blocks++;
            g[m - 1].bytes += g[i].bytes;
        } else {
            g[m++] = g[i];
        }
    }
    if (m > 1)
        qsort(g, m, sizeof *g, by_bytes_desc);
    *n_out = m;
    return g;
}

static const char *zone_name(uint32_t zone)
{
    const char *n = zone && tpi_names_get ? tpi_names_get(zone) : NULL;
    return n ? n : zone ? "(unnamed zone)" : "(no zone)";
}

/* One pool's counts summed over the shards (exact once the threads are quiet). */
typedef struct pool_sum {
    int64_t live;
    uint64_t allocs, frees, total_bytes, bad_frees;
} pool_sum;

static void add_counts(pool_sum *c, shard_pool *p)
{
    c->live += LOAD(p->live);
    c->allocs += LOAD(p->allocs);
    c->frees += LOAD(p->frees);
    c->total_bytes += LOAD(p->total_bytes);
    c->bad_frees += LOAD(p->bad_frees);
}

static pool_sum pool_counts(tpi_alloc_tracker *t, int pi)
{
    pool_sum c = {0, 0, 0, 0, 0};
    for (shard *s = atomic_load_explicit(&t->shards, memory_order_acquire); s; s = s->next)
        add_counts(&c, &s->pools[pi]);
    add_counts(&c, &t->orphan.pools[pi]);
    if (c.live < 0)
        c.live = 0;
    return c;
}

/* A peak is at least the live bytes now (pending deltas not yet published). */
static uint64_t peak_of(atomic_uint_fast64_t *peak, uint64_t live)
{
    uint64_t p = LOAD(*peak);
    return p > live ? p : live;
}

/* Exact live bytes of all pools. */
static uint64_t total_live_exact(tpi_alloc_tracker *t)
{
    int n = atomic_load_explicit(&t->n_pools, memory_order_acquire);
    uint64_t live = 0;
    for (int i = 0; i < n; i++)
        live += (uint64_t)pool_counts(t, i).live;
    return live;
}

static void write_pools(tpi_alloc_tracker *t, tpu_json *j)
{
    int n = atomic_load_explicit(&t->n_pools, memory_order_acquire);
    tpu_json_key(j, "pools");
    tpu_json_begin_array(j);
    for (int i = 0; i < n; i++) {
        pool *p = &t->pools[i];
        pool_sum c = pool_counts(t, i);
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "pool", p->name);
        tpu_json_kv_uint(j, "live_bytes", (uint64_t)c.live);
        tpu_json_kv_uint(j, "peak_bytes", peak_of(&p->peak, (uint64_t)c.live));
        tpu_json_kv_uint(j, "allocations", c.allocs);
        tpu_json_kv_uint(j, "frees", c.frees);
        tpu_json_kv_uint(j, "unknown_frees", c.bad_frees);
        tpu_json_kv_uint(j, "total_allocated_bytes", c.total_bytes);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
}

void tpi_alloc_write_json(const tpi_alloc_tracker *tc, tpu_json *j)
{
    tpi_alloc_tracker *t = (tpi_alloc_tracker *)tc; /* locks only */
    if (!t || !j)
        return;
    size_t n = 0;
    leak_group *g = collect_leaks(t, &n);
    tpu_json_key(j, "allocations");
    tpu_json_begin_object(j);
    uint64_t live = total_live_exact(t);
    tpu_json_kv_uint(j, "live_bytes", live);
    tpu_json_kv_uint(j, "peak_live_bytes", peak_of(&t->peak, live));
    tpu_json_kv_uint(j, "untracked_allocations", LOAD(t->untracked));
    tpu_json_kv_uint(j, "recorded_twice", LOAD(t->reused));
    write_pools(t, j);
    tpu_json_key(j, "possible_leaks");
    tpu_json_begin_array(j);
    for (size_t i = 0; i < n && i < LEAK_GROUPS_SHOWN; i++) {
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "pool", t->pools[g[i].key >> 32].name);
        tpu_json_kv_string(j, "zone", zone_name((uint32_t)g[i].key));
        tpu_json_kv_uint(j, "blocks", g[i].blocks);
        tpu_json_kv_uint(j, "bytes", g[i].bytes);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    tpu_json_kv_uint(j, "possible_leak_groups", n);
    tpu_json_end_object(j);
    free(g);
}

void tpi_alloc_print(const tpi_alloc_tracker *tc, void *file)
{
    tpi_alloc_tracker *t = (tpi_alloc_tracker *)tc;
    FILE *f = file ? file : stderr;
    if (!t)
        return;
    int np = atomic_load_explicit(&t->n_pools, memory_order_acquire);
    for (int i = 0; i < np; i++) {
        pool *p = &t->pools[i];
        pool_sum c = pool_counts(t, i);
        fprintf(f, "Pool %-16s peak %10.2f MB  live %10.2f MB  %llu allocs  %llu frees",
                p->name, peak_of(&p->peak, (uint64_t)c.live) / 1048576.0, c.live / 1048576.0,
                (unsigned long long)c.allocs, (unsigned long long)c.frees);
        if (c.bad_frees)
            fprintf(f, "  %llu frees of unknown blocks", (unsigned long long)c.bad_frees);
        fputc('\n', f);
    }
    size_t n = 0;
    leak_group *g = collect_leaks(t, &n);
    for (size_t i = 0; i < n && i < LEAK_GROUPS_SHOWN; i++)
        fprintf(f, "Possible leak: %llu blocks, %.2f MB still live in pool %s, allocated in %s\n",
                (unsigned long long)g[i].blocks, g[i].bytes / 1048576.0,
                t->pools[g[i].key >> 32].name, zone_name((uint32_t)g[i].key));
    if (n > LEAK_GROUPS_SHOWN)
        fprintf(f, "... and %zu more groups of live blocks\n", n - LEAK_GROUPS_SHOWN);
    free(g);
}
