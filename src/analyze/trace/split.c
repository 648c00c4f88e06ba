/* split.c - guessed cuts in the traceEvents array and the parse of one range
 * between them (see split.h for why a guess is only a guess). */
#include "analyze/trace/split.h"
#include "analyze/json/json_scan.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK ((size_t)64 << 10)

/* ---- arena ---------------------------------------------------------------- */

static void arena_reset(tpa_arena *a)
{
    a->cur = 0;
    a->used = 0;
}

static char *arena_alloc(tpa_arena *a, size_t n)
{
    while (a->cur < a->n) {
        if (a->sizes[a->cur] - a->used >= n) {
            char *p = a->blocks[a->cur] + a->used;
            a->used += n;
            return p;
        }
        a->cur++;
        a->used = 0;
    }
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 8;
        char **nb = realloc(a->blocks, nc * sizeof *nb);
        if (!nb) return NULL;
        a->blocks = nb;
        size_t *ns = realloc(a->sizes, nc * sizeof *ns);
        if (!ns) return NULL;
        a->sizes = ns;
        a->cap = nc;
    }
    size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;
    char *b = malloc(size);
    if (!b) return NULL;
    a->blocks[a->n] = b;
    a->sizes[a->n] = size;
    a->cur = a->n++;
    a->used = n;
    return b;
}

/* n bytes aligned for tpa_span32 (strings before them end anywhere). */
static void *arena_alloc_spans(tpa_arena *a, size_t n)
{
    enum { ALIGN = _Alignof(tpa_span32) };
    char *p = arena_alloc(a, n + ALIGN - 1);
    return p ? p + (-(uintptr_t)p & (ALIGN - 1)) : NULL;
}

static void arena_free(tpa_arena *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->blocks[i]);
    free(a->blocks);
    free(a->sizes);
    memset(a, 0, sizeof *a);
}

/* ---- guessed cuts ---------------------------------------------------------- */

static const char *prev_non_ws(const char *lo, const char *p)
{
    while (p > lo && tpa_is_ws(p[-1])) p--;
    return p > lo ? p - 1 : NULL;
}

const char *tpa_split_guess(const char *lo, const char *from, const char *to)
{
    for (const char *p = from; p < to; p++) {
        p = memchr(p, '{', (size_t)(to - p));
        if (!p) return NULL;
        const char *comma = prev_non_ws(lo, p);
        if (!comma || *comma != ',') continue;
        const char *close = prev_non_ws(lo, comma);
        if (close && *close == '}') return p;
    }
    return NULL;
}

/* ---- one range --------------------------------------------------------------- */

/* Decoded strings live in the parser's scratch buffers until the next event:
 * move them (anything outside the window) to the arena. */
static bool keep_string(tpa_range_out *out, tpa_sv *s, const char *lo, const char *end)
{
    if (!s->n) return true;
    uintptr_t p = (uintptr_t)s->p;
    if (p >= (uintptr_t)lo && p + s->n <= (uintptr_t)end) return true;
    char *copy = arena_alloc(&out->arena, s->n);
    if (!copy) return false;
    memcpy(copy, s->p, s->n);
    s->p = copy;
    return true;
}

void tpa_range_reserve(tpa_range_out *out, size_t n)
{
    if (out->cap >= n && out->cap <= 2 * n) return;
    tpa_event *nv = realloc(out->evs, n * sizeof *nv);
    if (!nv) return;  /* keeps the old array: push_event grows it when needed */
    out->evs = nv;
    out->cap = n;
}

/* The args members' spans live in the parser's scratch too. */
static bool keep_args(tpa_range_out *out, tpa_event *ev)
{
    size_t n = (size_t)__builtin_popcount(ev->arg_seen) * sizeof *ev->v_arg;
    tpa_span32 *copy = arena_alloc_spans(&out->arena, n);
    if (!copy) return false;
    memcpy(copy, ev->v_arg, n);
    ev->v_arg = copy;
    return true;
}

static bool push_event(tpa_range_out *out, tpa_event *ev, const char *lo, const char *end)
{
    if (!keep_string(out, &ev->name, lo, end) || !keep_string(out, &ev->cat, lo, end) ||
        !keep_string(out, &ev->arg_name, lo, end))
        return false;
    if (ev->arg_seen && !keep_args(out, ev)) return false;
    if (out->n == out->cap) {
        size_t nc = out->cap ? out->cap + out->cap / 2 : 1024;
        tpa_event *nv = realloc(out->evs, nc * sizeof *nv);
        if (!nv) return false;
        out->evs = nv;
        out->cap = nc;
    }
    out->evs[out->n++] = *ev;
    return true;
}

/* One element at p: an event, or any other value (counted, skipped). */
static int parse_element(tpa_range_out *out, const char **pp, const char *lo, const char *end)
{
    tpa_scanerr e = {0};
    if (**pp != '{') {
        int rc = tpa_skip_value(pp, end, &e, 1);
        if (rc == SC_OK) out->non_objects++;
        return rc;
    }
    tpa_event ev;
    int rc = tpa_parse_event(pp, end, &ev, &out->sb, &e);
    if (rc == SC_OK && !push_event(out, &ev, lo, end)) {
        out->oom = true;
        return SC_ERR;
    }
    return rc;
}

void tpa_range_parse(tpa_range_out *out, const char *lo, const char *start, int st,
                     const char *limit, const char *end)
{
    out->n = 0;
    out->non_objects = 0;
    out->oom = false;
    out->next_start = NULL;
    arena_reset(&out->arena);
    out->last_good = start;
    out->last_state = st;
    const char *p = start;
    for (;;) {
        p = tpa_skip_ws(p, end);
        if (p >= end) { out->stop = TPA_STOP_MORE; return; }
        if (st == TPA_RS_FIRST) {
            if (*p == ']') { out->stop = TPA_STOP_CLOSE; return; }
            st = TPA_RS_ELEM;
        }
        if (st == TPA_RS_ELEM) {
            if (limit && p >= limit) {
                out->next_start = p;
                out->stop = TPA_STOP_LIMIT;
                return;
            }
            int rc = parse_element(out, &p, lo, end);
            if (rc != SC_OK) { out->stop = rc == SC_MORE ? TPA_STOP_MORE : TPA_STOP_ERR; return; }
            st = TPA_RS_NEXT;
            out->last_good = p;
            out->last_state = st;
            continue;
        }
        if (*p == ',') { st = TPA_RS_ELEM; p++; continue; }
        out->stop = *p == ']' ? TPA_STOP_CLOSE : TPA_STOP_ERR;
        return;
    }
}

void tpa_range_out_free(tpa_range_out *out)
{
    free(out->evs);
    arena_free(&out->arena);
    tpa_strbufs_free(&out->sb);
    memset(out, 0, sizeof *out);
}
