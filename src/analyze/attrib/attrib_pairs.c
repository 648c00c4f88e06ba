/* attrib_pairs.c - the attributor's trees of (parent, name) pairs: Python
 * stacks and the module tree (attrib_priv.h: pairtab). */
#include "analyze/attrib/attrib_priv.h"

#include <stdlib.h>
#include <string.h>

static uint64_t pair_hash(uint32_t parent, uint32_t name)
{
    uint64_t x = ((uint64_t)parent << 32 | name) * 0x9E3779B97F4A7C15ULL;
    return x ^ (x >> 29);
}

static void pair_rehash(pairtab *t)
{
    size_t ns = t->nslots ? t->nslots * 2 : 256;
    uint32_t *slots = calloc(ns, sizeof *slots);
    if (!slots) abort();
    for (uint32_t i = 1; i < t->n; i++) {
        size_t s = pair_hash(t->parent[i], t->name[i]) & (ns - 1);
        while (slots[s]) s = (s + 1) & (ns - 1);
        slots[s] = i;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
}

static void pair_grow(pairtab *t)
{
    if (t->n < t->cap) return;
    uint32_t nc = t->cap ? t->cap * 2 : 64;
    t->parent = realloc(t->parent, nc * sizeof *t->parent);
    t->name = realloc(t->name, nc * sizeof *t->name);
    if (!t->parent || !t->name) abort();
    t->cap = nc;
}

/* The id of (parent, name); id 0 is the root (and the answer past the budget). */
uint32_t tpa__at_pair_id(pairtab *t, uint32_t parent, uint32_t name)
{
    if (t->n == 0) {  /* slot 0: the root */
        pair_grow(t);
        t->parent[0] = t->name[0] = 0;
        t->n = 1;
    }
    if ((t->n + 1) * 2 > t->nslots) pair_rehash(t);
    size_t s = pair_hash(parent, name) & (t->nslots - 1);
    while (t->slots[s]) {
        uint32_t i = t->slots[s];
        if (t->parent[i] == parent && t->name[i] == name) return i;
        s = (s + 1) & (t->nslots - 1);
    }
    if (t->n >= MAX_PAIRS) return 0;
    pair_grow(t);
    t->parent[t->n] = parent;
    t->name[t->n] = name;
    t->slots[s] = t->n;
    return t->n++;
}

void tpa__at_pair_free(pairtab *t)
{
    free(t->parent); free(t->name); free(t->slots);
}

uint32_t tpa__at_pair_get(const pairtab *t, uint32_t id, uint32_t *parent)
{
    if (id == 0 || id >= t->n) { *parent = 0; return 0; }
    *parent = t->parent[id];
    return t->name[id];
}
