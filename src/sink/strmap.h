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

#endif
