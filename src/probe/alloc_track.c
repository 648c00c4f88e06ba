/*
 * alloc_track.c - live-block tracking for tp_mem_alloc / tp_mem_free.
 *
 * Blocks live in 64 independent open-addressing hash tables ("stripes"), one
 * spin lock each, chosen by the pointer's hash: threads that allocate at once
 * rarely meet on a lock. Deletion shifts entries back (no tombstones), so
 * probe chains stay short however long the run. Pool counters are atomics.
 * A table that cannot grow (out of memory) counts the block as untracked
 * instead of failing the host program.
 */
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

typedef struct block {
    uintptr_t ptr; /* 0 = empty slot */
    uint64_t bytes;
    uint32_t zone;
    uint32_t pool;
} block;

/* Per-pool counts kept per stripe, under the stripe lock: no atomics. */
typedef struct stripe_counts {
    uint64_t allocs, frees, total_bytes;
} stripe_counts;

typedef struct stripe {
    atomic_int lock;
    uint32_t count, mask; /* mask = capacity - 1, capacity a power of two */
    block *slots;
    stripe_counts *counts; /* [MAX_POOLS], allocated with the first slots */
    char pad[64 - sizeof(atomic_int) - 2 * sizeof(uint32_t) - 2 * sizeof(void *)];
} stripe;

typedef struct pool {
    _Atomic(const char *) key; /* the first name pointer seen (fast compare) */
    char name[POOL_NAME_MAX];
    atomic_uint_fast64_t live, peak, bad_frees;
} pool;

struct tpi_alloc_tracker {
    stripe stripes[N_STRIPES];
    pool pools[MAX_POOLS];
    atomic_int n_pools;
    atomic_int pool_lock;
    atomic_uint_fast64_t live, peak, untracked, reused;
};

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

static inline uint64_t hash_ptr(uintptr_t p)
{
    uint64_t h = (uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

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
    if (t)
        memset(t, 0, sizeof *t);
    return t;
}

void tpi_alloc_tracker_free(tpi_alloc_tracker *t)
{
    if (!t)
        return;
    for (int i = 0; i < N_STRIPES; i++) {
        free(t->stripes[i].slots);
        free(t->stripes[i].counts);
    }
    free(t);
}

/* Index of the pool named name, created on first use; the last slot
 * collects every pool beyond MAX_POOLS - 1. */
static uint32_t pool_index(tpi_alloc_tracker *t, const char *name)
{
    if (!name || !*name)
        name = "default";
    int n = atomic_load_explicit(&t->n_pools, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&t->pools[i].key, memory_order_relaxed) == name)
            return (uint32_t)i;
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

static int stripe_grow(stripe *s)
{
    if (!s->counts && !(s->counts = calloc(MAX_POOLS, sizeof *s->counts)))
        return -1;
    uint32_t cap = s->slots ? (s->mask + 1) * 2 : 64;
    block *nb = calloc(cap, sizeof *nb);
    if (!nb)
        return -1;
    for (uint32_t i = 0; s->slots && i <= s->mask; i++) {
        if (!s->slots[i].ptr)
            continue;
        uint32_t j = (uint32_t)hash_ptr(s->slots[i].ptr) & (cap - 1);
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
    uint32_t i = (uint32_t)h & s->mask;
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
        uint32_t k = (uint32_t)hash_ptr(s->slots[j].ptr) & s->mask;
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        s->slots[i] = s->slots[j];
        i = j;
    }
    s->slots[i].ptr = 0;
    s->count--;
}

static void pool_add(tpi_alloc_tracker *t, uint32_t pi, uint64_t bytes, uint64_t *total_live)
{
    pool *p = &t->pools[pi];
    uint64_t live = atomic_fetch_add_explicit(&p->live, bytes, memory_order_relaxed) + bytes;
    max_update(&p->peak, live);
    uint64_t tl = atomic_fetch_add_explicit(&t->live, bytes, memory_order_relaxed) + bytes;
    max_update(&t->peak, tl);
    if (total_live)
        *total_live = tl;
}

static void pool_sub(tpi_alloc_tracker *t, uint32_t pi, uint64_t bytes, uint64_t *total_live)
{
    atomic_fetch_sub_explicit(&t->pools[pi].live, bytes, memory_order_relaxed);
    uint64_t tl = atomic_fetch_sub_explicit(&t->live, bytes, memory_order_relaxed) - bytes;
    if (total_live)
        *total_live = tl;
}

void tpi_alloc_record(tpi_alloc_tracker *t, const void *ptr, uint64_t bytes, const char *pool,
                      uint32_t zone_id, uint64_t *total_live)
{
    if (!t || !ptr) {
        if (total_live)
            *total_live = t ? atomic_load_explicit(&t->live, memory_order_relaxed) : 0;
        return;
    }
    uint32_t pi = pool_index(t, pool);
    uintptr_t p = (uintptr_t)ptr;
    uint64_t h = hash_ptr(p);
    stripe *s = &t->stripes[h >> 58];
    spin_lock(&s->lock);
    if ((!s->slots || (s->count + 1) * 2 > s->mask + 1) && stripe_grow(s) != 0) {
        spin_unlock(&s->lock);
        atomic_fetch_add_explicit(&t->untracked, 1, memory_order_relaxed);
        if (total_live)
            *total_live = atomic_load_explicit(&t->live, memory_order_relaxed);
        return;
    }
    uint32_t i = stripe_find(s, p, h);
    block old = s->slots[i];
    s->slots[i] = (block){p, bytes, zone_id, pi};
    if (!old.ptr)
        s->count++;
    s->counts[pi].allocs++;
    s->counts[pi].total_bytes += bytes;
    if (old.ptr)
        s->counts[old.pool].frees++;
    spin_unlock(&s->lock);
    if (old.ptr) { /* recorded twice without a free: the first is gone */
        atomic_fetch_add_explicit(&t->reused, 1, memory_order_relaxed);
        pool_sub(t, old.pool, old.bytes, NULL);
    }
    pool_add(t, pi, bytes, total_live);
}

uint64_t tpi_alloc_release(tpi_alloc_tracker *t, const void *ptr, const char *pool,
                           uint64_t *total_live)
{
    if (!t || !ptr) {
        if (total_live)
            *total_live = t ? atomic_load_explicit(&t->live, memory_order_relaxed) : 0;
        return 0;
    }
    uintptr_t p = (uintptr_t)ptr;
    uint64_t h = hash_ptr(p);
    stripe *s = &t->stripes[h >> 58];
    block b = {0, 0, 0, 0};
    spin_lock(&s->lock);
    if (s->slots) {
        uint32_t i = stripe_find(s, p, h);
        b = s->slots[i];
        if (b.ptr) {
            stripe_remove(s, i);
            s->counts[b.pool].frees++;
        }
    }
    spin_unlock(&s->lock);
    if (!b.ptr) {
        atomic_fetch_add_explicit(&t->pools[pool_index(t, pool)].bad_frees, 1, memory_order_relaxed);
        if (total_live)
            *total_live = atomic_load_explicit(&t->live, memory_order_relaxed);
        return 0;
    }
    pool_sub(t, b.pool, b.bytes, total_live);
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

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* Sums one pool's per-stripe counts. */
static stripe_counts pool_counts(tpi_alloc_tracker *t, int pi)
{
    stripe_counts c = {0, 0, 0};
    for (int i = 0; i < N_STRIPES; i++) {
        stripe *s = &t->stripes[i];
        spin_lock(&s->lock);
        if (s->counts) {
            c.allocs += s->counts[pi].allocs;
            c.frees += s->counts[pi].frees;
            c.total_bytes += s->counts[pi].total_bytes;
        }
        spin_unlock(&s->lock);
    }
    return c;
}

static void write_pools(tpi_alloc_tracker *t, tpu_json *j)
{
    int n = atomic_load_explicit(&t->n_pools, memory_order_acquire);
    tpu_json_key(j, "pools");
    tpu_json_begin_array(j);
    for (int i = 0; i < n; i++) {
        pool *p = &t->pools[i];
        stripe_counts c = pool_counts(t, i);
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "pool", p->name);
        tpu_json_kv_uint(j, "live_bytes", LOAD(p->live));
        tpu_json_kv_uint(j, "peak_bytes", LOAD(p->peak));
        tpu_json_kv_uint(j, "allocations", c.allocs);
        tpu_json_kv_uint(j, "frees", c.frees);
        tpu_json_kv_uint(j, "unknown_frees", LOAD(p->bad_frees));
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
    tpu_json_kv_uint(j, "live_bytes", LOAD(t->live));
    tpu_json_kv_uint(j, "peak_live_bytes", LOAD(t->peak));
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
        stripe_counts c = pool_counts(t, i);
        fprintf(f, "Pool %-16s peak %10.2f MB  live %10.2f MB  %llu allocs  %llu frees",
                p->name, LOAD(p->peak) / 1048576.0, LOAD(p->live) / 1048576.0,
                (unsigned long long)c.allocs, (unsigned long long)c.frees);
        if (LOAD(p->bad_frees))
            fprintf(f, "  %llu frees of unknown blocks", (unsigned long long)LOAD(p->bad_frees));
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
