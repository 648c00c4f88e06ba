/* Name registry (see names.h). tpi_names_get is declared in sink/sink.h. */
#include "core/names.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sink/sink.h"
#include "util/hash.h"

#define SLOTS (TPI_NAMES_MAX * 2)

typedef struct name_entry {
    uint64_t hash;
    uint32_t id;
    size_t len;
    char text[];
} name_entry;

static name_entry *g_slots[SLOTS];           /* published with release stores */
static const char *g_by_id[TPI_NAMES_MAX];   /* id -> text */
static uint32_t g_next_id = 1;
static uint32_t g_other_id;
static uint64_t g_overflow;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* Slot holding the name, or the empty slot where it would go; -1 if full. */
static long probe(uint64_t h, const char *s, size_t n, name_entry **found)
{
    for (size_t i = 0; i < SLOTS; i++) {
        size_t slot = (size_t)((h + i) % SLOTS);
        name_entry *e = __atomic_load_n(&g_slots[slot], __ATOMIC_ACQUIRE);
        if (!e) {
            *found = NULL;
            return (long)slot;
        }
        if (e->hash == h && e->len == n && memcmp(e->text, s, n) == 0) {
            *found = e;
            return (long)slot;
        }
    }
    *found = NULL;
    return -1;
}

static uint32_t add_locked(uint64_t h, const char *s, size_t n, long slot);

static uint32_t other_id_locked(void)
{
    if (!g_other_id) {
        const char *o = "<other>";
        name_entry *e;
        long slot = probe(tpu_hash_bytes(o, 7), o, 7, &e);
        g_other_id = e ? e->id : (slot >= 0 ? add_locked(tpu_hash_bytes(o, 7), o, 7, slot) : 0);
    }
    return g_other_id;
}

static uint32_t add_locked(uint64_t h, const char *s, size_t n, long slot)
{
    uint32_t id = __atomic_load_n(&g_next_id, __ATOMIC_RELAXED);
    /* keep the last id free for "<other>" */
    if (id >= TPI_NAMES_MAX - 1 && !(n == 7 && memcmp(s, "<other>", 7) == 0)) {
        g_overflow++;
        return other_id_locked();
    }
    name_entry *e = malloc(sizeof *e + n + 1);
    if (!e) {
        g_overflow++;
        return other_id_locked();
    }
    e->hash = h;
    e->id = id;
    e->len = n;
    memcpy(e->text, s, n);
    e->text[n] = '\0';
    __atomic_store_n(&g_by_id[id], e->text, __ATOMIC_RELEASE);
    __atomic_store_n(&g_next_id, id + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&g_slots[slot], e, __ATOMIC_RELEASE);
    return id;
}

uint32_t tpi_names_intern_n(const char *name, size_t n)
{
    if (!name)
        name = "";
    size_t len = strnlen(name, n);
    uint64_t h = tpu_hash_bytes(name, len);
    name_entry *e;
    long slot = probe(h, name, len, &e);
    if (e)
        return e->id;
    pthread_mutex_lock(&g_lock);
    slot = probe(h, name, len, &e);
    uint32_t id;
    if (e)
        id = e->id;
    else if (slot < 0)
        id = (g_overflow++, other_id_locked());
    else
        id = add_locked(h, name, len, slot);
    pthread_mutex_unlock(&g_lock);
    return id;
}

uint32_t tpi_names_intern(const char *name)
{
    return tpi_names_intern_n(name, (size_t)-1);
}

const char *tpi_names_get(uint32_t id)
{
    if (id == 0 || id >= TPI_NAMES_MAX)
        return "";
    const char *s = __atomic_load_n(&g_by_id[id], __ATOMIC_ACQUIRE);
    return s ? s : "";
}

uint64_t tpi_names_overflow(void)
{
    pthread_mutex_lock(&g_lock);
    uint64_t n = g_overflow;
    pthread_mutex_unlock(&g_lock);
    return n;
}
