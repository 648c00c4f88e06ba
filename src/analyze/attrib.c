/* attrib.c - host nesting with torch's rules and launch attribution by
 * correlation id (see attrib.h for the rules). */
#include "attrib.h"
#include "event_parse.h"
#include "util/hash.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef TP_SMALL_LIMITS
#define HOST_BUDGET 64
#define GPU_BUDGET 32
#define MAX_STRINGS 4096
#define MAX_PAIRS 4096
#else
#define HOST_BUDGET ((size_t)1 << 20)    /* 56 MB of span records */
#define GPU_BUDGET ((size_t)1 << 19)     /* 64 MB of device records */
#define MAX_STRINGS ((uint32_t)1 << 20)
#define MAX_PAIRS ((uint32_t)1 << 20)
#endif
#define MAX_STRING_BYTES ((size_t)64 << 20)
#define MAX_VISITORS 4
#define NO_FRAME UINT32_MAX

const char *const tpa_at_kind_names[TPA_AT_KIND_COUNT] = {
    "op", "annotation", "step", "python", "runtime"
};

/* ---- tables ------------------------------------------------------------- */

typedef struct strtab {
    char **s; uint32_t *len; uint64_t *hash;
    uint32_t n, cap;
    uint32_t *slots; size_t nslots;
    size_t bytes;
} strtab;

typedef struct pairtab {
    uint32_t *parent, *name;
    uint32_t n, cap;
    uint32_t *slots; size_t nslots;
} pairtab;

typedef struct hrec {
    int64_t start, end;
    uint64_t corr, ext;
    uint32_t name, shapes, thread, seq;
    uint32_t launch;    /* launches[] index + 1 of a runtime call with a launch configuration */
    uint8_t kind;
    bool is_module, has_corr, has_ext;
} hrec;

/* The launch configuration a runtime call carries (HIP writes grid, block
 * and shared memory on hipLaunchKernel, not on the kernel). */
typedef struct launch_cfg { uint32_t grid[3], block[3]; int64_t shmem; } launch_cfg;

typedef struct grec {
    tpa_at_gpu g;
    uint64_t corr, ext;
    bool has_corr, has_ext, matched;
} grec;

typedef struct begin_rec { hrec r; } begin_rec;

typedef struct thread_ent {
    int64_t pid, tid;
    begin_rec *begins; size_t nbegins, cbegins;
} thread_ent;

typedef struct frame {
    tpa_at_node n;
    int64_t end;
    int64_t child_sum, dev_own, dev_child;
    uint32_t nchild, op_frame, ctx_stack, ctx_module;
    bool has_pending;
    tpa_at_node pending;
} frame;

struct tpa_attrib {
    strtab str;
    pairtab stacks, modules;
    thread_ent *threads; size_t nthreads, cthreads, last_thread;
    hrec *host; size_t nhost, chost;
    launch_cfg *launches; size_t nlaunches, claunches;
    grec *gpu; size_t ngpu, cgpu;
    uint32_t seq;
    uint32_t step_name, other_name;
    bool chunked_file;   /* this file needed more than one chunk */
    frame *stack; size_t nstack, cstack;
    uint32_t *by_corr, *by_ext; size_t nby_ext;
    tpa_at_visitor vis[MAX_VISITORS]; int nvis;
    tpa_at_stats stats;
    int refs;           /* acquirers (tpa_attrib_acquire) not yet released */
    bool sealed;        /* fed: no more collectors may join */
};

#define GROW(ptr, n, cap) do { \
    if ((n) == (cap)) { size_t nc_ = (cap) ? (cap) * 2 : 16; \
        void *np_ = realloc((ptr), nc_ * sizeof *(ptr)); if (!np_) abort(); \
        (ptr) = np_; (cap) = nc_; } } while (0)

static void str_rehash(strtab *t)
{
    size_t ns = t->nslots ? t->nslots * 2 : 1024;
    uint32_t *slots = calloc(ns, sizeof *slots);
    if (!slots) abort();
    for (uint32_t i = 0; i < t->n; i++) {
        size_t s = t->hash[i] & (ns - 1);
        while (slots[s]) s = (s + 1) & (ns - 1);
        slots[s] = i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
}

/* Cuts n to at most max bytes without splitting a UTF-8 sequence. */
static size_t utf8_cut(const char *p, size_t n, size_t max)
{
    if (n <= max) return n;
    while (max > 0 && ((unsigned char)p[max] & 0xC0) == 0x80) max--;
    return max;
}

static uint32_t str_add(strtab *t, const char *p, size_t n, uint64_t h)
{
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 256;
        t->s = realloc(t->s, nc * sizeof *t->s);
        t->len = realloc(t->len, nc * sizeof *t->len);
        t->hash = realloc(t->hash, nc * sizeof *t->hash);
        if (!t->s || !t->len || !t->hash) abort();
        t->cap = (uint32_t)nc;
    }
    char *s = malloc(n + 1);
    if (!s) abort();
    if (n) memcpy(s, p, n);
    s[n] = 0;
    uint32_t id = t->n++;
    t->s[id] = s;
    t->len[id] = (uint32_t)n;
    t->hash[id] = h;
    t->bytes += n + 1;
    return id;
}

static uint32_t intern(tpa_attrib *at, const char *p, size_t n)
{
    strtab *t = &at->str;
    if (n == 0) return 0;
    n = utf8_cut(p, n, TPA_AT_MAX_NAME);
    if ((t->n + 1) * 2 > t->nslots) str_rehash(t);
    uint64_t h = tpu_hash_bytes(p, n);
    size_t s = h & (t->nslots - 1);
    while (t->slots[s]) {
        uint32_t i = t->slots[s] - 1;
        if (t->hash[i] == h && t->len[i] == n && memcmp(t->s[i], p, n) == 0) return i;
        s = (s + 1) & (t->nslots - 1);
    }
    if (t->n >= MAX_STRINGS || t->bytes + n > MAX_STRING_BYTES) {
        at->stats.names_capped++;
        return at->other_name;
    }
    uint32_t id = str_add(t, p, n, h);
    t->slots[s] = id + 1;
    return id;
}

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
static uint32_t pair_id(pairtab *t, uint32_t parent, uint32_t name)
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

static void str_free(strtab *t)
{
    for (uint32_t i = 0; i < t->n; i++) free(t->s[i]);
    free(t->s); free(t->len); free(t->hash); free(t->slots);
}

static void pair_free(pairtab *t)
{
    free(t->parent); free(t->name); free(t->slots);
}

/* ---- public accessors ------------------------------------------------------ */

const char *tpa_attrib_str(const tpa_attrib *at, uint32_t id, size_t *len)
{
    if (id >= at->str.n) id = 0;
    if (len) *len = at->str.len[id];
    return at->str.s[id];
}

static uint32_t pair_get(const pairtab *t, uint32_t id, uint32_t *parent)
{
    if (id == 0 || id >= t->n) { *parent = 0; return 0; }
    *parent = t->parent[id];
    return t->name[id];
}

uint32_t tpa_attrib_stack(const tpa_attrib *at, uint32_t id, uint32_t *parent)
{
    return pair_get(&at->stacks, id, parent);
}

uint32_t tpa_attrib_module(const tpa_attrib *at, uint32_t id, uint32_t *parent)
{
    return pair_get(&at->modules, id, parent);
}

const tpa_at_stats *tpa_attrib_stats(const tpa_attrib *at) { return &at->stats; }

tpa_attrib *tpa_attrib_new(void)
{
    tpa_attrib *at = calloc(1, sizeof *at);
    if (!at) return NULL;
    str_add(&at->str, "", 0, tpu_hash_bytes("", 0));  /* id 0 */
    str_rehash(&at->str);
    at->step_name = intern(at, "ProfilerStep*", 13);
    at->other_name = intern(at, "(other)", 7);
    return at;
}

void tpa_attrib_add_visitor(tpa_attrib *at, const tpa_at_visitor *v)
{
    if (v && at->nvis < MAX_VISITORS) at->vis[at->nvis++] = *v;
}

void tpa_attrib_free(tpa_attrib *at)
{
    if (!at) return;
    str_free(&at->str);
    pair_free(&at->stacks);
    pair_free(&at->modules);
    for (size_t i = 0; i < at->nthreads; i++) free(at->threads[i].begins);
    free(at->threads);
    free(at->host);
    free(at->launches);
    free(at->gpu);
    free(at->stack);
    free(at->by_corr);
    free(at->by_ext);
    free(at);
}

/* ---- feeding ---------------------------------------------------------------- */

static uint32_t thread_index(tpa_attrib *at, int64_t pid, int64_t tid)
{
    if (at->nthreads && at->threads[at->last_thread].pid == pid &&
        at->threads[at->last_thread].tid == tid)
        return (uint32_t)at->last_thread;
    for (size_t i = 0; i < at->nthreads; i++)
        if (at->threads[i].pid == pid && at->threads[i].tid == tid) {
            at->last_thread = i;
            return (uint32_t)i;
        }
    GROW(at->threads, at->nthreads, at->cthreads);
    memset(&at->threads[at->nthreads], 0, sizeof *at->threads);
    at->threads[at->nthreads].pid = pid;
    at->threads[at->nthreads].tid = tid;
    at->last_thread = at->nthreads++;
    return (uint32_t)at->last_thread;
}

enum { NEED_CORR = 1, NEED_EXT = 2, NEED_SHAPES = 4, NEED_ALL = 8 /* never found: the whole args */ };

typedef struct args_ctx {
    tpa_attrib *at;
    bool gpu;
    unsigned need;   /* host spans: what is still looked for (the scan stops when nothing is) */
    hrec *h;
    grec *g;
    launch_cfg launch;  /* a runtime call's grid/block/shared memory */
    bool has_launch;
} args_ctx;

static bool key_is(const char *k, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    return n == m && memcmp(k, lit, m) == 0;
}

/* A number value (or a quoted one) as a double, -1 when it is none. Read
 * here, digit by digit: strtod costs more than the whole event's parse, and
 * the scanner's number reader wants bytes after the value. */
static double value_num(const char *v, const char *end)
{
    const char *p = v;
    if (p < end && *p == '"') p++;
    bool neg = p < end && *p == '-';
    if (neg) p++;
    double d = 0, scale = 1;
    bool any = false, frac = false;
    for (; p < end; p++) {
        if (*p >= '0' && *p <= '9') {
            any = true;
            if (frac) { scale /= 10; d += (*p - '0') * scale; }
            else d = d * 10 + (*p - '0');
        } else if (*p == '.' && !frac) {
            frac = true;
        } else {
            break;
        }
    }
    if (!any) return -1;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = p < end && *p == '-';
        if (p < end && (*p == '-' || *p == '+')) p++;
        int x = 0;
        while (p < end && *p >= '0' && *p <= '9' && x < 400) x = x * 10 + (*p++ - '0');
        while (x-- > 0) d = eneg ? d / 10 : d * 10;
    }
    return neg ? -d : d;
}

/* Integer fields: the same reader, kept when it is whole. */
static int64_t value_int(const char *v, const char *end)
{
    double d = value_num(v, end);
    return d >= 0 && d <= 9e18 ? (int64_t)d : -1;
}

static bool value_u64(const char *v, const char *end, uint64_t *out)
{
    double d = value_num(v, end);
    if (d < 0 || d > 9e18) return false;
    *out = (uint64_t)d;
    return true;
}

/* [x, y, z] -> dims (missing entries stay 0). */
static void value_dim3(const char *v, const char *end, uint32_t dim[3])
{
    const char *p = v;
    if (p >= end || *p != '[') return;
    p++;
    for (int i = 0; i < 3 && p < end; i++) {
        while (p < end && (*p == ' ' || *p == ',')) p++;
        uint64_t x = 0;
        bool any = false;
        while (p < end && *p >= '0' && *p <= '9') { if (x < UINT32_MAX) x = x * 10 + (uint64_t)(*p - '0'); p++; any = true; }
        if (!any) return;
        dim[i] = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
    }
}


static bool on_arg(const char *k, size_t kn, const char *v, const char *end, void *user)
{
    args_ctx *c = user;
    uint64_t x;
    if (key_is(k, kn, "correlation")) {
        if (value_u64(v, end, &x)) {
            if (c->gpu) { c->g->corr = x; c->g->has_corr = true; }
            else { c->h->corr = x; c->h->has_corr = true; }
        }
        c->need &= ~(unsigned)NEED_CORR;
    } else if (key_is(k, kn, "External id") || key_is(k, kn, "external id")) {
        if (value_u64(v, end, &x)) {
            if (c->gpu) { c->g->ext = x; c->g->has_ext = true; }
            else { c->h->ext = x; c->h->has_ext = true; }
        }
        c->need &= ~(unsigned)NEED_EXT;
    } else if (!c->gpu) {
        if ((c->need & NEED_SHAPES) && key_is(k, kn, "Input Dims")) {
            c->h->shapes = intern(c->at, v, (size_t)(end - v));
            c->need &= ~(unsigned)NEED_SHAPES;
        } else if (c->h->kind == TPA_AT_RUNTIME && key_is(k, kn, "grid")) {
            value_dim3(v, end, c->launch.grid);
            c->has_launch = true;
        } else if (c->h->kind == TPA_AT_RUNTIME && key_is(k, kn, "block")) {
            value_dim3(v, end, c->launch.block);
            c->has_launch = true;
        } else if (c->h->kind == TPA_AT_RUNTIME && key_is(k, kn, "shared memory")) {
            c->launch.shmem = value_int(v, end);
            c->has_launch = true;
        }
    } else if (key_is(k, kn, "grid")) {
        value_dim3(v, end, c->g->g.grid);
    } else if (key_is(k, kn, "block")) {
        value_dim3(v, end, c->g->g.block);
    } else if (key_is(k, kn, "registers per thread")) {
        c->g->g.regs = value_int(v, end);
    } else if (key_is(k, kn, "shared memory")) {
        c->g->g.shmem = value_int(v, end);
    } else if (key_is(k, kn, "blocks per SM")) {
        c->g->g.blocks_per_sm = value_num(v, end);
    } else if (key_is(k, kn, "warps per SM")) {
        c->g->g.warps_per_sm = value_num(v, end);
    } else if (key_is(k, kn, "stream")) {
        c->g->g.stream = value_int(v, end);
    }
    return c->gpu || c->need != 0;
}

static void parse_args(tpa_attrib *at, const tpa_event *ev, hrec *h, grec *g, unsigned need)
{
    const char *end = ev->raw.p + ev->raw.n;
    const char *a = tpa_obj_find(ev->raw.p, end, "args");
    if (!a || *a != '{') return;
    args_ctx c = { at, g != NULL, need, h, g, { { 0 }, { 0 }, -1 }, false };
    tpa_obj_each(a, end, on_arg, &c);
    if (c.has_launch) {
        GROW(at->launches, at->nlaunches, at->claunches);
        at->launches[at->nlaunches++] = c.launch;
        h->launch = (uint32_t)at->nlaunches;
    }
}

static void process_chunk(tpa_attrib *at);

static uint8_t host_kind(const tpa_event *ev, int kind)
{
    switch (kind) {
    case TPA_K_ANNOTATION: return TPA_AT_ANNOTATION;
    case TPA_K_STEP: return TPA_AT_STEP;
    case TPA_K_RUNTIME: return TPA_AT_RUNTIME;
    default: break;
    }
    if (ev->cat.n == 15 && memcmp(ev->cat.p, "python_function", 15) == 0) return TPA_AT_PYTHON;
    return TPA_AT_OP;
}

static void fill_host(tpa_attrib *at, const tpa_event *ev, int kind, hrec *h)
{
    memset(h, 0, sizeof *h);
    h->kind = host_kind(ev, kind);
    h->start = ev->ts_ns;
    h->thread = thread_index(at, ev->pid, ev->tid);
    h->seq = at->seq++;
    int64_t num;
    if (h->kind == TPA_AT_STEP || tpa_step_number(ev->name, &num)) {
        h->name = at->step_name;
    } else if ((h->kind == TPA_AT_PYTHON && ev->name.n > 11 && memcmp(ev->name.p, "nn.Module: ", 11) == 0) ||
               (ev->name.n > 12 && memcmp(ev->name.p, "[pl][module]", 12) == 0)) {
        h->is_module = true;  /* torch's with_modules frame, or Lightning's record_function of a module */
        h->name = intern(at, ev->name.p, ev->name.n);
    } else {
        h->name = intern(at, ev->name.p, ev->name.n);
    }
    if (h->kind == TPA_AT_RUNTIME)  /* the whole args: HIP's launch configuration follows */
        parse_args(at, ev, h, NULL, NEED_CORR | NEED_EXT | NEED_ALL);
    else if (h->kind != TPA_AT_PYTHON)
        parse_args(at, ev, h, NULL, NEED_EXT | NEED_SHAPES);
}

static void add_host(tpa_attrib *at, const hrec *h)
{
    if (at->nhost >= HOST_BUDGET) { process_chunk(at); at->chunked_file = true; }
    GROW(at->host, at->nhost, at->chost);
    at->host[at->nhost++] = *h;
    at->stats.host_spans++;
}

static void add_gpu(tpa_attrib *at, const tpa_event *ev, int kind)
{
    if (at->ngpu >= GPU_BUDGET) { process_chunk(at); at->chunked_file = true; }
    GROW(at->gpu, at->ngpu, at->cgpu);
    grec *g = &at->gpu[at->ngpu++];
    memset(g, 0, sizeof *g);
    g->g.start_ns = ev->ts_ns;
    g->g.dur_ns = ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0;
    g->g.name = intern(at, ev->name.p, ev->name.n);
    g->g.kind = kind;
    g->g.device = ev->device;
    g->g.stream = -1;
    g->g.regs = g->g.shmem = -1;
    g->g.blocks_per_sm = g->g.warps_per_sm = -1;
    g->g.occupancy = ev->occupancy;
    parse_args(at, ev, NULL, g, 0);
    at->stats.gpu_events++;
}

void tpa_attrib_feed(tpa_attrib *at, const tpa_event *ev, int kind)
{
    if (!ev->has_ts) return;
    if (ev->ph == 'X') {
        if (tpa_kind_is_gpu(kind)) {
            if (kind != TPA_K_GPU_ANNOTATION) add_gpu(at, ev, kind);
            return;
        }
        if (ev->cat.n == 5 && memcmp(ev->cat.p, "Trace", 5) == 0) return;  /* Kineto's whole-profile span */
        hrec h;
        fill_host(at, ev, kind, &h);
        int64_t dur = ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0;
        h.end = tpa_sat_add(h.start, dur);
        add_host(at, &h);
    } else if (ev->ph == 'B' && !tpa_kind_is_gpu(kind)) {
        hrec h;
        fill_host(at, ev, kind, &h);
        thread_ent *t = &at->threads[h.thread];
        GROW(t->begins, t->nbegins, t->cbegins);
        t->begins[t->nbegins++].r = h;
    } else if (ev->ph == 'E' && !tpa_kind_is_gpu(kind)) {
        thread_ent *t = &at->threads[thread_index(at, ev->pid, ev->tid)];
        if (!t->nbegins) return;
        hrec h = t->begins[--t->nbegins].r;
        h.end = ev->ts_ns > h.start ? ev->ts_ns : h.start;
        add_host(at, &h);
    }
}

/* ---- nesting ----------------------------------------------------------------- */

static void emit_node(tpa_attrib *at, const tpa_at_node *n)
{
    for (int i = 0; i < at->nvis; i++)
        if (at->vis[i].node) at->vis[i].node(at->vis[i].user, at, n);
}

static int cmp_host(const void *a, const void *b)
{
    const hrec *x = a, *y = b;
    if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end > y->end ? -1 : 1;  /* the longer one first */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const grec *g_sort_base;
static int cmp_corr(const void *a, const void *b)
{
    uint64_t x = g_sort_base[*(const uint32_t *)a].corr, y = g_sort_base[*(const uint32_t *)b].corr;
    return x < y ? -1 : x > y;
}
static int cmp_ext(const void *a, const void *b)
{
    uint64_t x = g_sort_base[*(const uint32_t *)a].ext, y = g_sort_base[*(const uint32_t *)b].ext;
    return x < y ? -1 : x > y;
}
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* First index in idx[0..n) whose record's key (corr or ext) is >= key. */
static size_t lower_bound(const grec *g, const uint32_t *idx, size_t n, uint64_t key, bool ext)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint64_t k = ext ? g[idx[mid]].ext : g[idx[mid]].corr;
        if (k < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* Indexes the chunk's device records: by correlation (those a runtime call
 * of the chunk launched) and by External id (the others). */
static void index_gpu(tpa_attrib *at)
{
    uint64_t *corrs = NULL;
    size_t nc = 0;
    if (at->nhost && !(corrs = malloc(at->nhost * sizeof *corrs))) abort();
    for (size_t i = 0; i < at->nhost; i++)
        if (at->host[i].kind == TPA_AT_RUNTIME && at->host[i].has_corr) corrs[nc++] = at->host[i].corr;
    qsort(corrs, nc, sizeof *corrs, cmp_u64);
    free(at->by_corr);
    free(at->by_ext);
    at->by_corr = malloc((at->ngpu + 1) * sizeof *at->by_corr);
    at->by_ext = malloc((at->ngpu + 1) * sizeof *at->by_ext);
    if (!at->by_corr || !at->by_ext) abort();
    size_t n_ext = 0;
    for (size_t i = 0; i < at->ngpu; i++) {
        grec *g = &at->gpu[i];
        at->by_corr[i] = (uint32_t)i;
        g->matched = g->has_corr && nc && bsearch(&g->corr, corrs, nc, sizeof *corrs, cmp_u64);
        if (!g->matched && g->has_ext) at->by_ext[n_ext++] = (uint32_t)i;
    }
    free(corrs);
    g_sort_base = at->gpu;
    qsort(at->by_corr, at->ngpu, sizeof *at->by_corr, cmp_corr);
    qsort(at->by_ext, n_ext, sizeof *at->by_ext, cmp_ext);
    at->nby_ext = n_ext;
}

/* Gives the device records with this key to the operator frame (or to no
 * operator when op_frame is NO_FRAME); returns their time. */
static int64_t attribute(tpa_attrib *at, uint64_t key, bool ext, uint32_t op_name, uint32_t runtime,
                         const launch_cfg *launch)
{
    const uint32_t *idx = ext ? at->by_ext : at->by_corr;
    size_t n = ext ? at->nby_ext : at->ngpu;
    int64_t sum = 0;
    for (size_t i = lower_bound(at->gpu, idx, n, key, ext); i < n; i++) {
        grec *g = &at->gpu[idx[i]];
        if ((ext ? g->ext : g->corr) != key) break;
        if (!ext && !g->matched) continue;
        if (ext && g->g.op) continue;  /* taken already */
        g->g.op = op_name;
        g->g.runtime = runtime;
        if (launch && !g->g.grid[0] && !g->g.block[0]) {
            memcpy(g->g.grid, launch->grid, sizeof g->g.grid);
            memcpy(g->g.block, launch->block, sizeof g->g.block);
            if (g->g.shmem < 0) g->g.shmem = launch->shmem;
        }
        sum = tpa_sat_add(sum, g->g.dur_ns);
    }
    return sum;
}

static void give_child(tpa_attrib *at, frame *p, const tpa_at_node *c)
{
    if (p->nchild == 0) {
        p->pending = *c;
        p->has_pending = true;
    } else {
        if (p->has_pending) { emit_node(at, &p->pending); p->has_pending = false; }
        emit_node(at, c);
    }
    p->nchild++;
    p->child_sum = tpa_sat_add(p->child_sum, c->dur_ns);
    p->dev_child = tpa_sat_add(p->dev_child, c->dev_total_ns);
}

static void close_top(tpa_attrib *at)
{
    frame *f = &at->stack[--at->nstack];
    if (f->has_pending) {
        const tpa_at_node *c = &f->pending;
        if (f->nchild == 1 && c->name == f->n.name) {
            /* torch's _remove_dup_nodes: the only child of the same name
             * goes; its children and kernels become the parent's */
            f->child_sum = c->child_ns;
            f->dev_own = c->dev_self_ns;
            f->dev_child = c->dev_total_ns - c->dev_self_ns;
            at->stats.folded++;
        } else {
            emit_node(at, c);
        }
    }
    f->n.child_ns = f->child_sum;
    f->n.dev_self_ns = f->dev_own;
    f->n.dev_total_ns = tpa_sat_add(f->dev_own, f->dev_child);
    if (at->nstack) give_child(at, &at->stack[at->nstack - 1], &f->n);
    else emit_node(at, &f->n);
}

static void push_span(tpa_attrib *at, const hrec *r)
{
    GROW(at->stack, at->nstack, at->cstack);
    const frame *p = at->nstack ? &at->stack[at->nstack - 1] : NULL;
    frame *f = &at->stack[at->nstack];
    memset(f, 0, sizeof *f);
    f->end = r->end;
    f->n.start_ns = r->start;
    f->n.dur_ns = r->end - r->start;
    f->n.name = r->name;
    f->n.shapes = r->shapes;
    f->n.kind = r->kind;
    f->n.is_module = r->is_module;
    f->ctx_stack = p ? p->ctx_stack : 0;
    f->ctx_module = p ? p->ctx_module : 0;
    f->op_frame = p ? p->op_frame : NO_FRAME;
    f->n.stack = f->ctx_stack;
    if (r->is_module) {
        f->ctx_module = pair_id(&at->modules, f->ctx_module, r->name);
    } else if (r->kind == TPA_AT_PYTHON) {
        f->ctx_stack = pair_id(&at->stacks, f->ctx_stack, r->name);
    }
    f->n.module = f->ctx_module;
    if (r->kind == TPA_AT_OP || r->kind == TPA_AT_ANNOTATION || r->kind == TPA_AT_STEP) {
        f->op_frame = (uint32_t)at->nstack;
        if (r->has_ext && at->nby_ext)
            f->dev_own = attribute(at, r->ext, true, r->name, 0, NULL);
    } else if (r->kind == TPA_AT_RUNTIME && r->has_corr) {
        uint32_t opn = f->op_frame == NO_FRAME ? 0 : at->stack[f->op_frame].n.name;
        int64_t t = attribute(at, r->corr, false, opn, r->name, r->launch ? &at->launches[r->launch - 1] : NULL);
        if (f->op_frame != NO_FRAME)
            at->stack[f->op_frame].dev_own = tpa_sat_add(at->stack[f->op_frame].dev_own, t);
    }
    at->nstack++;
}

static void nest_all(tpa_attrib *at)
{
    size_t i = 0;
    while (i < at->nhost) {
        uint32_t th = at->host[i].thread;
        at->nstack = 0;
        for (; i < at->nhost && at->host[i].thread == th; i++) {
            const hrec *r = &at->host[i];
            while (at->nstack) {
                const frame *top = &at->stack[at->nstack - 1];
                if (r->start >= top->end || r->end > top->end) close_top(at);
                else break;
            }
            push_span(at, r);
        }
        while (at->nstack) close_top(at);
    }
}

static void emit_gpu(tpa_attrib *at)
{
    for (size_t i = 0; i < at->ngpu; i++) {
        const grec *g = &at->gpu[i];
        if (g->matched) at->stats.gpu_by_correlation++;
        else if (g->g.op) at->stats.gpu_by_external_id++;
        else at->stats.gpu_unattributed++;
        for (int v = 0; v < at->nvis; v++)
            if (at->vis[v].gpu) at->vis[v].gpu(at->vis[v].user, at, &g->g);
    }
}

static void process_chunk(tpa_attrib *at)
{
    index_gpu(at);
    qsort(at->host, at->nhost, sizeof *at->host, cmp_host);
    nest_all(at);
    emit_gpu(at);
    at->nhost = at->ngpu = 0;
    at->nby_ext = 0;
    at->nlaunches = 0;
}

void tpa_attrib_file_end(tpa_attrib *at)
{
    /* B without E: closed at the last begin so that they still count */
    for (size_t i = 0; i < at->nthreads; i++) {
        thread_ent *t = &at->threads[i];
        while (t->nbegins) {
            hrec h = t->begins[--t->nbegins].r;
            h.end = h.start;
            add_host(at, &h);
        }
    }
    if (at->chunked_file) at->stats.chunks++;
    process_chunk(at);
    at->chunked_file = false;
}

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

uint32_t *tpa_u64map_slot(tpa_u64map *m, uint64_t key, bool *fresh)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 256;
        uint64_t *keys = malloc(nc * sizeof *keys);
        uint32_t *vals = calloc(nc, sizeof *vals);
        if (!keys || !vals) abort();
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->vals[i]) continue;
            size_t s = (m->keys[i] * 0x9E3779B97F4A7C15ULL >> 20) & (nc - 1);
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
    size_t s = (key * 0x9E3779B97F4A7C15ULL >> 20) & (m->cap - 1);
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
