/* attrib_share.c - the collectors on one attributor (join, feed, end) and
 * their row tables. */
#include "analyze/attrib/attrib_priv.h"

/* ---- a small map from 64-bit keys to indexes, for the collectors ------------------ */

/* The home slot of key: every bit of the key reaches the low bits (a plain
 * multiply-and-shift sent every name<<32 key to slot 0, one long probe). */
static size_t u64map_home(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

uint32_t *tpa_u64map_slot(tpa_u64map *m, uint64_t key, bool *fresh)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 256;
        uint64_t *keys = malloc(nc * sizeof *keys);
        uint32_t *vals = calloc(nc, sizeof *vals);
        if (!keys || !vals) abort();
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->vals[i]) continue;
            size_t s = u64map_home(m->keys[i], nc);
            while (vals[s]) s = (s + 1) & (nc - 1);
            keys[s] = m->keys[i];
            vals[s] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = nc;
    }
    size_t s = u64map_home(key, m->cap);
    while (m->vals[s]) {
        if (m->keys[s] == key) { *fresh = false; return &m->vals[s]; }
        s = (s + 1) & (m->cap - 1);
    }
    m->keys[s] = key;
    m->n++;
    *fresh = true;
    return &m->vals[s];
}

void tpa_u64map_free(tpa_u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void *tpa_at_rows_get(tpa_at_rows *t, uint64_t key, bool *fresh)
{
    uint32_t *slot = tpa_u64map_slot(&t->map, key, fresh);
    if (!*fresh) return t->rows + (size_t)(*slot - 1) * t->size;
    if (t->n >= t->max) {
        t->map.n--;  /* the slot stays empty */
        *slot = 0;
        t->dropped++;
        return NULL;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 128;
        char *nr = realloc(t->rows, nc * t->size);
        if (!nr) abort();
        t->rows = nr;
        t->cap = nc;
    }
    char *r = t->rows + t->n * t->size;
    memset(r, 0, t->size);
    *slot = (uint32_t)++t->n;
    return r;
}

void tpa_at_rows_free(tpa_at_rows *t)
{
    free(t->rows);
    tpa_u64map_free(&t->map);
    t->rows = NULL;
    t->n = t->cap = 0;
}

bool tpa_at_client_begin(tpa_at_client *c, tpa_attrib *at, const tpa_at_visitor *v)
{
    c->at = NULL;
    c->feeder = false;
    if (!at || at->sealed || at->nvis >= MAX_VISITORS) return false;
    tpa_attrib_add_visitor(at, v);
    c->at = at;
    c->feeder = at->clients++ == 0;
    return true;
}

void tpa_at_client_feed(void *state, const tpa_event *ev, int kind)
{
    tpa_at_client *c = state;
    if (!c->feeder) return;
    c->at->sealed = true;
    tpa_attrib_feed(c->at, ev, kind);
}

void tpa_at_client_file_end(void *state, int file, const tpa_meta *meta)
{
    (void)file; (void)meta;
    tpa_at_client *c = state;
    if (!c->feeder) return;
    c->at->sealed = true;
    tpa_attrib_file_end(c->at);
}

/* The attributor stays its owner's to free. */
void tpa_at_client_end(tpa_at_client *c)
{
    c->at = NULL;
    c->feeder = false;
}
