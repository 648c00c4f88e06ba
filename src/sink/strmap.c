/* String -> uint32 map (see strmap.h). */
#include <stdlib.h>
#include <string.h>

#include "sink/strmap.h"

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Slot of key, or of the empty slot where it would go. cap is a power of 2. */
static size_t find_slot(char **keys, size_t cap, const char *key)
{
    size_t i = (size_t)str_hash(key) & (cap - 1);
    while (keys[i] && strcmp(keys[i], key) != 0)
        i = (i + 1) & (cap - 1);
    return i;
}

int tpi_strmap_get(const tpi_strmap *m, const char *key, uint32_t *val)
{
    if (!m->cap || !key)
        return 0;
    size_t i = find_slot(m->keys, m->cap, key);
    if (!m->keys[i])
        return 0;
    *val = m->vals[i];
    return 1;
}

static int grow(tpi_strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    char **keys = calloc(cap, sizeof *keys);
    uint32_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = find_slot(keys, cap, m->keys[i]);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int tpi_strmap_put(tpi_strmap *m, const char *key, uint32_t val)
{
    if (!key)
        return -1;
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    size_t i = find_slot(m->keys, m->cap, key);
    if (!m->keys[i]) {
        char *copy = strdup(key);
        if (!copy)
            return -1;
        m->keys[i] = copy;
        m->n++;
    }
    m->vals[i] = val;
    return 0;
}

void tpi_strmap_free(tpi_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
