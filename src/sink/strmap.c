/* String -> uint32 map (see strmap.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sink/strmap.h"
#include "util/hash.h"

/* Slot of key, or of the empty slot where it would go. cap is a power of 2. */
static size_t find_slot(char **keys, size_t cap, const char *key)
{
    size_t i = (size_t)tpu_hash_bytes(key, strlen(key)) & (cap - 1);
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

void tpi_strsum_add(tpi_strsum *s, const char *key, uint64_t v)
{
    uint32_t idx;
    if (tpi_strmap_get(&s->map, key, &idx)) {
        s->v[idx] += v;
        return;
    }
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 256;
        uint64_t *p = realloc(s->v, c * sizeof *p);
        if (!p)
            return;
        s->v = p;
        s->cap = c;
    }
    if (tpi_strmap_put(&s->map, key, (uint32_t)s->n) == 0)
        s->v[s->n++] = v;
}

uint64_t tpi_strsum_get(const tpi_strsum *s, const char *key)
{
    uint32_t idx;
    return tpi_strmap_get(&s->map, key, &idx) ? s->v[idx] : 0;
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **tpi_strsum_sorted(const tpi_strsum *s, size_t *n)
{
    const char **keys = malloc((s->map.n + 1) * sizeof *keys);
    *n = 0;
    if (!keys)
        return NULL;
    for (size_t i = 0; i < s->map.cap; i++)
        if (s->map.keys[i])
            keys[(*n)++] = s->map.keys[i];
    qsort(keys, *n, sizeof *keys, cmp_keys);
    return keys;
}

void tpi_strsum_write(const tpi_strsum *s, uint64_t unit, tpu_buf *out)
{
    size_t n;
    const char **keys = tpi_strsum_sorted(s, &n);
    if (!keys) {
        out->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t v = (tpi_strsum_get(s, keys[i]) + unit / 2) / unit;
        if (v)
            tpu_buf_printf(out, "%s %" PRIu64 "\n", keys[i], v);
    }
    free(keys);
}

void tpi_strsum_free(tpi_strsum *s)
{
    tpi_strmap_free(&s->map);
    free(s->v);
    memset(s, 0, sizeof *s);
}
