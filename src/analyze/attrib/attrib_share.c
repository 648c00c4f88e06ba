/* attrib_share.c - one attributor for the page's collectors (acquire,
 * release, the client callbacks), and their row tables. */
#include "analyze/attrib/attrib_priv.h"

#include <pthread.h>

/* ---- sharing between the page's collectors ------------------------------------- */

/* Pages built at once (sessions closing on several threads) each have
 * their own input, so their own entry. */
typedef struct shared_ent { const tpa_view_input *in; tpa_attrib *at; } shared_ent;
static shared_ent g_shared[8];
static pthread_mutex_t g_shared_lock = PTHREAD_MUTEX_INITIALIZER;

static void unregister(const tpa_attrib *at)
{
    for (size_t i = 0; i < sizeof g_shared / sizeof *g_shared; i++)
        if (g_shared[i].at == at) g_shared[i] = (shared_ent){ 0 };
}

tpa_attrib *tpa_attrib_acquire(const tpa_view_input *in, const tpa_at_visitor *v, bool *feeder)
{
    shared_ent *free_ent = NULL;
    tpa_attrib *at = NULL;
    pthread_mutex_lock(&g_shared_lock);
    for (size_t i = 0; i < sizeof g_shared / sizeof *g_shared && !at; i++) {
        if (g_shared[i].at && g_shared[i].in == in) {
            at = g_shared[i].at;
            at->refs++;
            tpa_attrib_add_visitor(at, v);
            *feeder = false;
        } else if (!g_shared[i].at && !free_ent) {
            free_ent = &g_shared[i];
        }
    }
    if (!at && (at = tpa_attrib_new())) {
        tpa_attrib_add_visitor(at, v);
        at->refs = 1;
        *feeder = true;
        if (free_ent) *free_ent = (shared_ent){ in, at };  /* else: unshared, still correct */
    }
    pthread_mutex_unlock(&g_shared_lock);
    return at;
}

void tpa_attrib_release(tpa_attrib *at)
{
    if (!at) return;
    pthread_mutex_lock(&g_shared_lock);
    bool last = --at->refs <= 0;
    if (last) unregister(at);
    pthread_mutex_unlock(&g_shared_lock);
    if (last) tpa_attrib_free(at);
}

/* Once fed, a page's attributor takes no more collectors: an entry a
 * builder never released cannot catch a later page at the same address. */
static void seal(tpa_attrib *at)
{
    if (at->sealed) return;
    pthread_mutex_lock(&g_shared_lock);
    unregister(at);
    pthread_mutex_unlock(&g_shared_lock);
    at->sealed = true;
}

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

bool tpa_at_client_begin(tpa_at_client *c, const tpa_view_input *in, const tpa_at_visitor *v)
{
    c->at = tpa_attrib_acquire(in, v, &c->feeder);
    return c->at != NULL;
}

void tpa_at_client_feed(void *state, const tpa_event *ev, int kind)
{
    tpa_at_client *c = state;
    if (!c->feeder) return;
    if (!c->at->sealed) seal(c->at);
    tpa_attrib_feed(c->at, ev, kind);
}

void tpa_at_client_file_end(void *state, int file, const tpa_meta *meta)
{
    (void)file; (void)meta;
    tpa_at_client *c = state;
    if (!c->feeder) return;
    seal(c->at);
    tpa_attrib_file_end(c->at);
}

void tpa_at_client_end(tpa_at_client *c)
{
    tpa_attrib_release(c->at);
    c->at = NULL;
}
