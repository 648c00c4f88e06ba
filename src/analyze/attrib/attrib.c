/* attrib.c - host nesting with torch's rules and launch attribution by
 * correlation id (see attrib.h for the rules): the string and tree tables,
 * and the feeding (what each event adds to a file's buffers).
 * attrib_nest.c nests and attributes; attrib_share.c shares the attributor
 * between the page's collectors. */
#include "analyze/attrib/attrib_priv.h"
#include "analyze/trace/trace.h"
#include "util/hash.h"


const char *const tpa_at_kind_names[TPA_AT_KIND_COUNT] = {
    "op", "annotation", "step", "python", "runtime"
};

/* ---- tables ------------------------------------------------------------- */

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

/* The tables have room for MAX_STRINGS from the start (pages are touched
 * as they fill): never moved, they are read by the nester thread's
 * visitors while the feed adds strings. */
static void str_init(strtab *t)
{
    t->s = calloc(MAX_STRINGS, sizeof *t->s);
    t->len = calloc(MAX_STRINGS, sizeof *t->len);
    t->hash = calloc(MAX_STRINGS, sizeof *t->hash);
    if (!t->s || !t->len || !t->hash) abort();
    t->cap = MAX_STRINGS;
}

static uint32_t str_add(strtab *t, const char *p, size_t n, uint64_t h)
{
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

static uint32_t intern_slow(tpa_attrib *at, const char *p, size_t n)
{
    strtab *t = &at->str;
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

static uint32_t intern(tpa_attrib *at, const char *p, size_t n)
{
    strtab *t = &at->str;
    if (n == 0) return 0;
    n = utf8_cut(p, n, TPA_AT_MAX_NAME);
    /* names repeat: a small table of recent ones (checked byte for byte)
     * spares the hash and the probe of the large one */
    uint32_t *recent = &at->recent[tpu_hash_mark(p, n) & (RECENT_STRINGS - 1)];
    if (*recent && t->len[*recent] == n && memcmp(t->s[*recent], p, n) == 0) return *recent;
    uint32_t id = intern_slow(at, p, n);
    *recent = id;
    return id;
}

static void str_free(strtab *t)
{
    for (uint32_t i = 0; i < t->n; i++) free(t->s[i]);
    free(t->s); free(t->len); free(t->hash); free(t->slots);
}


/* ---- public accessors ------------------------------------------------------ */

const char *tpa_attrib_str(const tpa_attrib *at, uint32_t id, size_t *len)
{
    if (id >= at->str.cap || !at->str.s[id]) id = 0;  /* cap: never written after tpa_attrib_new */
    if (len) *len = at->str.len[id];
    return at->str.s[id];
}


uint32_t tpa_attrib_stack(const tpa_attrib *at, uint32_t id, uint32_t *parent)
{
    return tpa__at_pair_get(&at->stacks, id, parent);
}

uint32_t tpa_attrib_module(const tpa_attrib *at, uint32_t id, uint32_t *parent)
{
    return tpa__at_pair_get(&at->modules, id, parent);
}

bool tpa_attrib_thread(const tpa_attrib *at, uint32_t thread, int64_t *pid, int64_t *tid)
{
    if (thread >= at->nthreads) return false;
    *pid = at->threads[thread].pid;
    *tid = at->threads[thread].tid;
    return true;
}

const tpa_at_stats *tpa_attrib_stats(const tpa_attrib *at) { return &at->stats; }

static size_t g_host_budget, g_gpu_budget;  /* tests (tpa_attrib_set_chunk_budget); 0: default */

void tpa_attrib_set_chunk_budget(size_t host_spans, size_t device_records)
{
    g_host_budget = host_spans;
    g_gpu_budget = device_records;
}

tpa_attrib *tpa_attrib_new(void)
{
    tpa_attrib *at = calloc(1, sizeof *at);
    if (!at) return NULL;
    str_init(&at->str);
    str_add(&at->str, "", 0, tpu_hash_bytes("", 0));  /* id 0 */
    at->may_thread = tpa_jobs() > 1;
    at->host_budget = g_host_budget ? g_host_budget : HOST_BUDGET;
    at->gpu_budget = g_gpu_budget ? g_gpu_budget : GPU_BUDGET;
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
    tpu_worker_stop(at->nester);  /* after the chunk it nests */
    str_free(&at->str);
    free(at->name_flags);
    tpa__at_pair_free(&at->stacks);
    tpa__at_pair_free(&at->modules);
    for (size_t i = 0; i < at->nthreads; i++) free(at->threads[i].begins);
    free(at->threads);
    at_chunk *chunks[2] = { &at->fill, &at->work };
    for (int i = 0; i < 2; i++) {
        for (size_t t = 0; t < chunks[i]->nlists; t++) free(chunks[i]->host[t].r);
        free(chunks[i]->host);
        free(chunks[i]->gpu);
        free(chunks[i]->launches);
    }
    free(at->stack);
    tpa__at_drop_scratch(at);
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
    /* a whole number of at most 15 digits (ids, counts): the same double,
     * exact below 2^53, without the loop below */
    uint64_t whole = 0;
    const char *q = p;
    while (q < end && q - p < 16 && *q >= '0' && *q <= '9') whole = whole * 10 + (uint64_t)(*q++ - '0');
    if (q > p && q - p < 16 && (q == end || (*q != '.' && *q != 'e' && *q != 'E'))) return (double)whole;
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


/* One args member's value (v..end), by its tpa_arg, into the record. */
static void take_arg(args_ctx *c, int which, const char *v, const char *end)
{
    uint64_t x;
    bool runtime = !c->gpu && c->h->kind == TPA_AT_RUNTIME;
    switch (which) {
    case TPA_ARG_CORRELATION:
        if (value_u64(v, end, &x)) {
            if (c->gpu) { c->g->corr = x; c->g->has_corr = true; }
            else if (c->h->kind == TPA_AT_RUNTIME) { c->h->key = x; c->h->has_key = true; }
        }
        c->need &= ~(unsigned)NEED_CORR;
        break;
    case TPA_ARG_EXTERNAL_ID:
    case TPA_ARG_EXTERNAL_ID_LC:
        if (value_u64(v, end, &x)) {
            if (c->gpu) { c->g->ext = x; c->g->has_ext = true; }
            else if (c->h->kind != TPA_AT_RUNTIME) { c->h->key = x; c->h->has_key = true; }
        }
        c->need &= ~(unsigned)NEED_EXT;
        break;
    case TPA_ARG_INPUT_DIMS:
        if (!c->gpu && (c->need & NEED_SHAPES)) {
            /* torch's key: a TensorList's shapes become [] (attrib_torch.c);
             * most operators take none, and their text is the key as written */
            size_t n = (size_t)(end - v);
            if (!tpa__at_shapes_have_lists(v, n)) {
                c->h->u.shapes = intern(c->at, v, n);
            } else {
                char buf[512], *out = n <= sizeof buf ? buf : malloc(n);
                c->h->u.shapes = out ? intern(c->at, out, tpa__at_torch_shapes(v, n, out)) : 0;
                if (out != buf) free(out);
            }
            c->need &= ~(unsigned)NEED_SHAPES;
        }
        break;
    case TPA_ARG_GRID:
        if (c->gpu) value_dim3(v, end, c->g->g.grid);
        else if (runtime) { value_dim3(v, end, c->launch.grid); c->has_launch = true; }
        break;
    case TPA_ARG_BLOCK:
        if (c->gpu) value_dim3(v, end, c->g->g.block);
        else if (runtime) { value_dim3(v, end, c->launch.block); c->has_launch = true; }
        break;
    case TPA_ARG_SHARED_MEMORY:
        if (c->gpu) c->g->g.shmem = value_int(v, end);
        else if (runtime) { c->launch.shmem = value_int(v, end); c->has_launch = true; }
        break;
    case TPA_ARG_REGISTERS: if (c->gpu) c->g->g.regs = value_int(v, end); break;
    case TPA_ARG_BLOCKS_PER_SM: if (c->gpu) c->g->g.blocks_per_sm = value_num(v, end); break;
    case TPA_ARG_WARPS_PER_SM: if (c->gpu) c->g->g.warps_per_sm = value_num(v, end); break;
    case TPA_ARG_STREAM: if (c->gpu) c->g->g.stream = value_int(v, end); break;
    }
}

/* The walk over args (events made by hand, repeated keys): every member in
 * order, a later repeat over an earlier one, until a host span has what it
 * looks for. */
static bool on_arg(const char *k, size_t kn, const char *v, const char *end, void *user)
{
    args_ctx *c = user;
    for (int a = 0; a < TPA_ARG_COUNT; a++)
        if (key_is(k, kn, tpa_arg_keys[a])) {
            take_arg(c, a, v, end);
            break;
        }
    return c->gpu || c->need != 0;
}

#define ARG_BIT(a) (1u << (a))
#define EXT_BITS (ARG_BIT(TPA_ARG_EXTERNAL_ID) | ARG_BIT(TPA_ARG_EXTERNAL_ID_LC))

/* The args members a record reads. A host span other than a runtime call
 * reads its External id and shapes only (the walk stops there; its
 * correlation is never read). */
static unsigned wanted_args(const args_ctx *c)
{
    unsigned launch = ARG_BIT(TPA_ARG_GRID) | ARG_BIT(TPA_ARG_BLOCK) | ARG_BIT(TPA_ARG_SHARED_MEMORY);
    if (c->gpu)
        return ARG_BIT(TPA_ARG_CORRELATION) | EXT_BITS | launch | ARG_BIT(TPA_ARG_REGISTERS) |
               ARG_BIT(TPA_ARG_BLOCKS_PER_SM) | ARG_BIT(TPA_ARG_WARPS_PER_SM) | ARG_BIT(TPA_ARG_STREAM);
    if (c->h->kind == TPA_AT_RUNTIME)
        return ARG_BIT(TPA_ARG_CORRELATION) | EXT_BITS | launch;
    return EXT_BITS | ARG_BIT(TPA_ARG_INPUT_DIMS);
}

/* Reads the record's args from where the parser found them; the walk
 * decides where a member repeats (or both spellings of External id are
 * there): which of them counts depends on the order. */
static void parse_args(tpa_attrib *at, const tpa_event *ev, hrec *h, grec *g, unsigned need)
{
    args_ctx c = { at, g != NULL, need, h, g, { { 0 }, { 0 }, -1 }, false };
    if (!ev->args_marked || ev->arg_dup || (ev->arg_seen & EXT_BITS) == EXT_BITS) {
        const char *a = tpa_event_args(ev, NULL);
        if (!a) return;
        tpa_obj_each(a, ev->raw.p + ev->raw.n, on_arg, &c);
    } else {
        unsigned seen = ev->arg_seen, want = wanted_args(&c);
        for (const tpa_span32 *sp = ev->v_arg; seen; seen &= seen - 1, sp++) {
            int a = __builtin_ctz(seen);
            const char *v = ev->raw.p + sp->off;
            if (want & ARG_BIT(a)) take_arg(&c, a, v, v + sp->len);
        }
    }
    if (c.has_launch) {
        at_chunk *k = &at->fill;
        GROW(k->launches, k->nlaunches, k->claunches);
        k->launches[k->nlaunches++] = c.launch;
        h->u.launch = (uint32_t)k->nlaunches;  /* a runtime call's (has_launch) */
    }
}

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

/* Fills h from ev; returns the index of its thread. */
static uint32_t fill_host(tpa_attrib *at, const tpa_event *ev, int kind, hrec *h)
{
    memset(h, 0, sizeof *h);
    h->kind = host_kind(ev, kind);
    h->start = ev->ts_ns;
    uint32_t thread = thread_index(at, ev->pid, ev->tid);
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
    return thread;
}

static void add_host(tpa_attrib *at, const hrec *h, uint32_t thread)
{
    at_chunk *k = &at->fill;
    if (k->nhost >= at->host_budget) { tpa__at_hand_over(at, false); at->chunked_file = true; }
    size_t li = HOST_LIST(thread, h->kind == TPA_AT_RUNTIME);
    while (k->nlists <= li) {
        GROW(k->host, k->nlists, k->clists);
        k->host[k->nlists++] = (host_list){ NULL, 0, 0, false };
    }
    host_list *l = &k->host[li];
    GROW(l->r, l->n, l->cap);
    if (l->n && !l->unsorted) l->unsorted = tpa__at_host_before(h, &l->r[l->n - 1]);
    l->r[l->n++] = *h;
    k->nhost++;
    at->stats.host_spans++;
}

static void add_gpu(tpa_attrib *at, const tpa_event *ev, int kind)
{
    at_chunk *k = &at->fill;
    if (k->ngpu >= at->gpu_budget) { tpa__at_hand_over(at, false); at->chunked_file = true; }
    GROW(k->gpu, k->ngpu, k->cgpu);
    grec *g = &k->gpu[k->ngpu++];
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
        uint32_t thread = fill_host(at, ev, kind, &h);
        int64_t dur = ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0;
        h.end = tpa_sat_add(h.start, dur);
        add_host(at, &h, thread);
    } else if (ev->ph == 'B' && !tpa_kind_is_gpu(kind)) {
        hrec h;
        uint32_t thread = fill_host(at, ev, kind, &h);  /* may move at->threads */
        thread_ent *t = &at->threads[thread];
        GROW(t->begins, t->nbegins, t->cbegins);
        t->begins[t->nbegins++].r = h;
    } else if (ev->ph == 'E' && !tpa_kind_is_gpu(kind)) {
        uint32_t thread = thread_index(at, ev->pid, ev->tid);
        thread_ent *t = &at->threads[thread];
        if (!t->nbegins) return;
        hrec h = t->begins[--t->nbegins].r;
        h.end = ev->ts_ns > h.start ? ev->ts_ns : h.start;
        add_host(at, &h, thread);
    }
}

void tpa_attrib_file_end(tpa_attrib *at)
{
    /* B without E: closed at the last begin so that they still count */
    for (size_t i = 0; i < at->nthreads; i++) {
        thread_ent *t = &at->threads[i];
        while (t->nbegins) {
            hrec h = t->begins[--t->nbegins].r;
            h.end = h.start;
            add_host(at, &h, (uint32_t)i);
        }
    }
    if (at->chunked_file) at->stats.chunks++;
    tpa__at_hand_over(at, true);
    at->chunked_file = false;
}

