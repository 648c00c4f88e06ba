/*
 * strmap.h - string -> uint32 map (open addressing, FNV-1a), owning copies
 * of its keys. Used by the exporters to intern event names, index CSV
 * columns and name folded-stack frames. Not thread safe (sinks run on one
 * thread at a time).
 */
#ifndef TP_SINK_STRMAP_H
#define TP_SINK_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct tpi_strmap {
    char **keys;       /* cap slots, NULL = empty */
    uint32_t *vals;
    size_t cap, n;
} tpi_strmap;

/* Looks key up: returns 1 and sets *val when present, else 0. */
int tpi_strmap_get(const tpi_strmap *m, const char *key, uint32_t *val);
/* Inserts or replaces. Returns 0, or -1 when out of memory. */
int tpi_strmap_put(tpi_strmap *m, const char *key, uint32_t val);
void tpi_strmap_free(tpi_strmap *m);

/* string -> uint64 sum (folded stacks): a strmap whose values index `v`. */
typedef struct tpi_strsum {
    tpi_strmap map;
    uint64_t *v;
    size_t n, cap;
} tpi_strsum;

/* Adds v to key's sum (a new key starts at v). Out of memory: nothing. */
void tpi_strsum_add(tpi_strsum *s, const char *key, uint64_t v);
/* Sum of key, 0 when absent. */
uint64_t tpi_strsum_get(const tpi_strsum *s, const char *key);
/* Keys sorted by strcmp (pointers into s, valid until s changes) in a
 * malloc'd array of *n entries; NULL when out of memory. */
const char **tpi_strsum_sorted(const tpi_strsum *s, size_t *n);
/* Folded-stack text: "key value\n" lines sorted by key, value = sum / unit
 * rounded; lines that round to 0 are left out. Out of memory: out->oom. */
void tpi_strsum_write(const tpi_strsum *s, uint64_t unit, tpu_buf *out);
/* Frees s and leaves it empty, ready for reuse. */
void tpi_strsum_free(tpi_strsum *s);

#endif
