/* view_memory.c - the Memory view's collector (key "memory").
 *
 * Of traces recorded with profile_memory=True: the "[memory]" instant events
 * (args: Bytes, Total Allocated, Total Reserved, Addr, Device Type, Device
 * Id). Each is attributed to the host operator running innermost on its
 * thread at its time (torch writes the operators before the memory events,
 * so the operators' intervals are held until the end of the file, then
 * swept per thread): per-operator allocations, bytes, self increase (the
 * operator's own events) and total increase (its and its children's), as
 * torch's key_averages self_cpu_memory_usage / cpu_memory_usage. Each
 * device has its own statistics (the page shows one device at a time, as
 * the TensorBoard plugin's Memory view does: CPU, cuda:0, cuda:1 ...).
 * An allocation made inside aten::empty / aten::empty_strided / ... (torch's
 * "malloc") also names the operator that asked for it: the nearest enclosing
 * operator whose name does not start with aten::empty. Then the
 * allocation/free pairs (matched by device and address), the peak per
 * device with what was alive at it, and the allocated / reserved curves.
 * Everything held is capped (MEV_CAP events, OPS_CAP operators, NAMES_CAP
 * names); the page says what a cap left out.
 *
 * A page of several ranks keeps them apart (issue 31): a device is a
 * (rank, device) slot, so each rank has its own curves, peaks, pairs and
 * operator statistics, and its times count from its own first event: each
 * rank's figures are those of the page of its traces alone. A rank is
 * grouped as the Overview and the Distributed view group it: the trace's
 * rank<r>/ directory, else the file's place on the command line (a run
 * directory is one rank), named by its distributedInfo.rank when it has one.
 *
 * Of a run directory: trainprof's own samples (RSS, system memory, each
 * GPU's allocated / reserved / peak) from memory_profile.json. */
#include "analyze/page/html.h"
#include "analyze/page/view.h"
#include "analyze/trace/trace.h"
#include "util/hash.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MEV_CAP (1u << 19)     /* [memory] events held */
#define OPS_CAP (1u << 20)     /* operator intervals held per file */
#define NAMES_CAP (1u << 16)   /* distinct operator names */
#define NAME_MAX_BYTES 1024    /* a name kept longer is cut (UTF-8 safe) */
#define CURVE_POINTS 2000      /* per device: buckets of the allocated curve */
#define PAIRS_ALL 10000        /* allocation/free pairs listed: all, when no more; else per device */
#define PAIRS_LARGEST 200      /* the largest ... */
#define PAIRS_AT_PEAK 300      /* ... and those alive at its peak */
#define EVENTS_MAX 50000       /* events listed for range filtering, when no more */
#define MAX_DEVICES 16         /* per rank */
#define MAX_RANKS 64           /* the page's traces at most (html_build.c) */
#define MAX_SLOTS 256          /* (rank, device) pairs */
#define MAX_DEPTH 512
#define RECENT_NAMES 1024      /* a power of 2 */

typedef struct mev {
    int64_t ts, bytes, alloc, reserved;
    uint64_t addr;
    int64_t thr;
    int32_t op;                /* name id of the innermost operator, -1: none */
    int32_t parent;            /* op is aten::empty*: the operator that called it (name id), else -1 */
    int16_t dev;               /* the (rank, device) slot */
} mev;

typedef struct opiv { int64_t start, end, thr; uint32_t name; } opiv;

typedef struct opstat { uint64_t allocs, frees; int64_t alloc_bytes, free_bytes, self_inc, total_inc; } opstat;

typedef struct pair { int64_t bytes, t_alloc, t_free; int32_t op, parent; int16_t dev; bool listed; } pair;

/* One rank: its key (rank<r>/ of the path, else the file's place), its
 * name (distributedInfo.rank, else the key) and its first timestamp. */
typedef struct mrank { int64_t key, rank, t0; bool have_t0; int n_devices; } mrank;

typedef struct memview {
    tpa_view_input in;
    tpa_html_model own, *m;    /* memory_profile.json: the builder's (view.h), or own */
    mev *ev; size_t n_ev, file_ev0;
    opiv *ops; size_t n_ops, cap_ops;
    char **names; uint32_t *name_len; uint32_t n_names;
    uint8_t *allocator;        /* per name: it starts with aten::empty (the plugin's rule) */
    uint32_t *slots; size_t n_slots;   /* name hash -> id + 1 */
    uint32_t recent[RECENT_NAMES];     /* id + 1 by tpu_hash_mark: an operator's name repeats */
    opstat *stats[MAX_SLOTS]; uint32_t n_stats[MAX_SLOTS];  /* per slot, by name id */
    mrank ranks[MAX_RANKS]; int n_ranks;
    int cur;                   /* the rank of the file being read; -1: past MAX_RANKS */
    uint64_t ev_dropped, dev_dropped, ops_dropped, names_dropped, rank_dropped;
    /* the (rank, device) slots: the device's name, type and id, the rank's index */
    char devices[MAX_SLOTS][24]; int16_t dev_type[MAX_SLOTS], dev_id[MAX_SLOTS]; uint8_t dev_rank[MAX_SLOTS]; int n_devices;
    /* at json: each slot's events (indices into ev, in time order), its peak */
    uint32_t *by_slot; size_t slot_first[MAX_SLOTS + 1];
    const mev *peaks[MAX_SLOTS];
} memview;

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) abort();
    return q;
}

static void *mem_begin(const tpa_view_input *in)
{
    memview *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->in = *in;
    v->m = in->run_files;
    if (!v->m) {
        tpa_html_model_init(&v->own, in->input);
        v->m = &v->own;
    }
    v->cur = -1;               /* no file begun */
    v->n_slots = 1024;
    v->slots = calloc(v->n_slots, sizeof *v->slots);
    if (!v->slots) abort();
    return v;
}

/* ---- names ------------------------------------------------------------------------ */

static void grow_slots(memview *v)
{
    size_t n = v->n_slots * 2;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s) abort();
    for (uint32_t id = 0; id < v->n_names; id++) {
        size_t i = tpu_hash_bytes(v->names[id], v->name_len[id]) & (n - 1);
        while (s[i]) i = (i + 1) & (n - 1);
        s[i] = id + 1;
    }
    free(v->slots);
    v->slots = s;
    v->n_slots = n;
}

/* The id of name (ProfilerStep#N grouped as ProfilerStep*, as torch does); -1 when full. */
static int64_t name_id(memview *v, tpa_sv name)
{
    int64_t num;
    if (tpa_step_number(name, &num)) name = (tpa_sv){ "ProfilerStep*", 13 };
    size_t n = name.n;
    if (n > NAME_MAX_BYTES) {
        n = NAME_MAX_BYTES;
        while (n && ((unsigned char)name.p[n] & 0xC0) == 0x80) n--;
    }
    if (n == 0) name.p = "";
    uint32_t *recent = &v->recent[tpu_hash_mark(name.p, n ? n : 1) & (RECENT_NAMES - 1)];
    if (*recent && v->name_len[*recent - 1] == n && memcmp(v->names[*recent - 1], name.p, n) == 0)
        return *recent - 1;
    size_t i = tpu_hash_bytes(name.p, n) & (v->n_slots - 1);
    for (; v->slots[i]; i = (i + 1) & (v->n_slots - 1)) {
        uint32_t id = v->slots[i] - 1;
        if (v->name_len[id] == n && memcmp(v->names[id], name.p, n) == 0) {
            *recent = id + 1;
            return id;
        }
    }
    if (v->n_names == NAMES_CAP) { v->names_dropped++; return -1; }
    char *copy = malloc(n + 1);
    if (!copy) abort();
    memcpy(copy, name.p, n);
    copy[n] = 0;
    if ((v->n_names & (v->n_names - 1)) == 0) {  /* grow at powers of two */
        size_t cap = v->n_names ? 2 * (size_t)v->n_names : 16;
        v->names = xrealloc(v->names, cap * sizeof *v->names);
        v->name_len = xrealloc(v->name_len, cap * sizeof *v->name_len);
        v->allocator = xrealloc(v->allocator, cap * sizeof *v->allocator);
    }
    v->allocator[v->n_names] = n >= 11 && memcmp(copy, "aten::empty", 11) == 0;
    v->names[v->n_names] = copy;
    v->name_len[v->n_names] = (uint32_t)n;
    v->slots[i] = ++v->n_names;
    *recent = v->n_names;
    if (2 * (size_t)v->n_names > v->n_slots) grow_slots(v);
    return v->n_names - 1;
}

/* ---- feed ------------------------------------------------------------------------- */

/* One number per (pid, tid) (ids may be hashes of strings: wrap, never overflow). */
static int64_t thr_key(const tpa_event *ev)
{
    return (int64_t)((uint64_t)ev->tid * 1000003u ^ (uint64_t)ev->pid);
}

static int64_t arg_i64(const char *args, const char *end, const char *key, int64_t dflt)
{
    double d;
    if (!tpa_value_f64(tpa_obj_find(args, end, key), end, &d)) return dflt;
    return (int64_t)d;
}

/* The slot of (the current rank, type, id); -1: past MAX_DEVICES of the
 * rank or MAX_SLOTS of the page (*dev_cap tells which). */
static int device_slot(memview *v, int64_t type, int64_t id, bool *dev_cap)
{
    for (int i = 0; i < v->n_devices; i++)
        if (v->dev_rank[i] == v->cur && v->dev_type[i] == type && v->dev_id[i] == id) return i;
    *dev_cap = v->ranks[v->cur].n_devices == MAX_DEVICES;
    if (*dev_cap || v->n_devices == MAX_SLOTS) return -1;
    v->ranks[v->cur].n_devices++;
    int i = v->n_devices++;
    v->dev_rank[i] = (uint8_t)v->cur;
    v->dev_type[i] = (int16_t)type;
    v->dev_id[i] = (int16_t)id;
    /* c10::DeviceType: 0 CPU, 1 CUDA (ROCm's too), 12 XPU, 13 MPS, 15 HPU, 19 MTIA */
    static const char *const kinds[20] = { [1] = "cuda", [12] = "xpu", [13] = "mps", [15] = "hpu", [19] = "mtia" };
    if (type == 0) snprintf(v->devices[i], sizeof v->devices[i], "CPU");
    else if (type > 0 && type < 20 && kinds[type]) snprintf(v->devices[i], sizeof v->devices[i], "%s:%d", kinds[type], (int)id);
    else snprintf(v->devices[i], sizeof v->devices[i], "device type %d:%d", (int)type, (int)id);
    return i;
}

static void memory_event(memview *v, const tpa_event *ev)
{
    const char *end = ev->raw.p + ev->raw.n;
    const char *args = tpa_event_args(ev, NULL);
    if (!args) return;
    if (v->n_ev == MEV_CAP) { v->ev_dropped++; return; }
    if (v->cur < 0) { v->rank_dropped++; return; }
    bool dev_cap = false;
    int dev = device_slot(v, arg_i64(args, end, "Device Type", 0), arg_i64(args, end, "Device Id", -1), &dev_cap);
    if (dev < 0) { if (dev_cap) v->dev_dropped++; else v->rank_dropped++; return; }
    if ((v->n_ev & (v->n_ev - 1)) == 0)
        v->ev = xrealloc(v->ev, (v->n_ev ? 2 * v->n_ev : 64) * sizeof *v->ev);
    mev *e = &v->ev[v->n_ev++];
    e->ts = ev->ts_ns;
    e->bytes = arg_i64(args, end, "Bytes", 0);
    e->alloc = arg_i64(args, end, "Total Allocated", -1);
    e->reserved = arg_i64(args, end, "Total Reserved", -1);
    e->addr = (uint64_t)arg_i64(args, end, "Addr", 0);
    e->thr = thr_key(ev);
    e->op = e->parent = -1;
    e->dev = (int16_t)dev;
}

static void mem_feed(void *state, const tpa_event *ev, int kind)
{
    memview *v = state;
    if (v->cur >= 0 && ev->has_ts && ev->ph != 'M') {
        mrank *r = &v->ranks[v->cur];
        if (!r->have_t0 || ev->ts_ns < r->t0) { r->t0 = ev->ts_ns; r->have_t0 = true; }
    }
    if (ev->ph == 'X') {
        if ((kind != TPA_K_CPU && kind != TPA_K_ANNOTATION && kind != TPA_K_STEP) || !ev->has_dur || ev->on_device) return;
        if (v->n_ops == OPS_CAP) { v->ops_dropped++; return; }
        int64_t id = name_id(v, ev->name);
        if (id < 0) return;
        if (v->n_ops == v->cap_ops) {
            v->cap_ops = v->cap_ops ? 2 * v->cap_ops : 1024;
            v->ops = xrealloc(v->ops, v->cap_ops * sizeof *v->ops);
        }
        v->ops[v->n_ops++] = (opiv){ ev->ts_ns, tpa_sat_add(ev->ts_ns, ev->dur_ns), thr_key(ev), (uint32_t)id };
    } else if ((ev->ph == 'i' || ev->ph == 'I') && ev->name.n == 8 && memcmp(ev->name.p, "[memory]", 8) == 0) {
        memory_event(v, ev);
    }
}

/* ---- attribution at the end of each file -------------------------------------------- */

static int op_cmp(const void *a, const void *b)
{
    const opiv *x = a, *y = b;
    if (x->thr != y->thr) return x->thr < y->thr ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end;   /* outer first */
}

static int mev_thr_cmp(const void *a, const void *b)
{
    const mev *x = a, *y = b;
    if (x->thr != y->thr) return x->thr < y->thr ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int mev_ts_cmp(const void *a, const void *b)
{
    const mev *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The statistics of device d, one per name known so far (zeroed when new). */
static opstat *stats_of(memview *v, int d)
{
    if (v->n_stats[d] < v->n_names) {
        v->stats[d] = xrealloc(v->stats[d], v->n_names * sizeof *v->stats[d]);
        memset(v->stats[d] + v->n_stats[d], 0, (v->n_names - v->n_stats[d]) * sizeof *v->stats[d]);
        v->n_stats[d] = v->n_names;
    }
    return v->stats[d];
}

static void charge(memview *v, const mev *e, const uint32_t *stack, int depth)
{
    if (depth == 0) return;
    opstat *st = stats_of(v, e->dev), *s = &st[stack[depth - 1]];
    if (e->bytes > 0) { s->allocs++; s->alloc_bytes += e->bytes; }
    else if (e->bytes < 0) { s->frees++; s->free_bytes -= e->bytes; }
    s->self_inc += e->bytes;
    for (int i = 0; i < depth; i++) st[stack[i]].total_inc += e->bytes;
}

/* The operator that called the allocator: below an innermost aten::empty*,
 * the nearest operator whose name does not start with aten::empty (the
 * plugin names the direct parent, which for aten::empty_like ->
 * aten::empty_strided is aten::empty_like: we go on to its caller). */
static int32_t caller_of(const memview *v, const uint32_t *stack, int depth)
{
    if (depth < 2 || !v->allocator[stack[depth - 1]]) return -1;
    for (int i = depth - 2; i >= 0; i--)
        if (!v->allocator[stack[i]]) return (int32_t)stack[i];
    return -1;
}

/* Keeps the open operators that have not ended before t. Not only from the
 * top: a span that starts inside another and outlives it (ProfilerStep#N
 * opened inside record_function's __enter__) leaves its parent closed below it. */
static int drop_ended(uint32_t *stack, int64_t *ends, int depth, int64_t t)
{
    int k = 0;
    for (int i = 0; i < depth; i++)
        if (ends[i] >= t) { stack[k] = stack[i]; ends[k++] = ends[i]; }
    return k;
}

/* Sweeps one file's events and operators thread by thread: each event goes
 * to the operators open at its time (an operator is open on [start, end]). */
static void attribute(memview *v)
{
    mev *ev = v->ev + v->file_ev0;
    size_t n = v->n_ev - v->file_ev0;
    if (v->n_ops) qsort(v->ops, v->n_ops, sizeof *v->ops, op_cmp);
    if (n) qsort(ev, n, sizeof *ev, mev_thr_cmp);
    uint32_t stack[MAX_DEPTH];
    int64_t ends[MAX_DEPTH];
    size_t o = 0;
    int depth = 0;
    int64_t thr = 0;
    for (size_t i = 0; i < n; i++) {
        mev *e = &ev[i];
        if (i == 0 || e->thr != thr) { thr = e->thr; depth = 0; }
        while (o < v->n_ops && (v->ops[o].thr < thr || (v->ops[o].thr == thr && v->ops[o].start <= e->ts))) {
            const opiv *p = &v->ops[o++];
            if (p->thr != thr) continue;
            depth = drop_ended(stack, ends, depth, p->start);
            if (depth < MAX_DEPTH) { stack[depth] = p->name; ends[depth++] = p->end; }
        }
        depth = drop_ended(stack, ends, depth, e->ts);
        e->op = depth ? (int32_t)stack[depth - 1] : -1;
        e->parent = caller_of(v, stack, depth);
        charge(v, e, stack, depth);
    }
    if (n) qsort(ev, n, sizeof *ev, mev_ts_cmp);
}

/* The rank of the file about to be read (tpa_html_rank_key); -1 past MAX_RANKS. */
static int rank_index(memview *v, int file, const char *path)
{
    int64_t key = tpa_html_rank_key(v->in.run_dir, file, path);
    for (int i = 0; i < v->n_ranks; i++)
        if (v->ranks[i].key == key) return i;
    if (v->n_ranks == MAX_RANKS) return -1;
    v->ranks[v->n_ranks] = (mrank){ .key = key, .rank = key };
    return v->n_ranks++;
}

static void mem_file_begin(void *state, int file, const char *path)
{
    memview *v = state;
    v->cur = rank_index(v, file, path ? path : "");
    v->file_ev0 = v->n_ev;
    v->n_ops = 0;
}

static void mem_file_end(void *state, int file, const tpa_meta *meta)
{
    memview *v = state;
    (void)file;
    if (v->cur >= 0 && meta && meta->has_rank) v->ranks[v->cur].rank = meta->rank;
    if (v->n_ev > v->file_ev0) attribute(v);
    v->n_ops = 0;
}

/* The first timestamp of slot d's rank: its times count from it. */
static int64_t t0_of(const memview *v, int d)
{
    return v->ranks[v->dev_rank[d]].t0;
}

/* Each slot's events in time order (a stable counting sort of their
 * indices: files are in order, each sorted by time) and its peak, the event
 * with the highest Total Allocated (the first of equals). */
static void index_slots(memview *v)
{
    v->by_slot = xrealloc(v->by_slot, (v->n_ev ? v->n_ev : 1) * sizeof *v->by_slot);
    size_t count[MAX_SLOTS] = {0};
    for (size_t i = 0; i < v->n_ev; i++) count[v->ev[i].dev]++;
    v->slot_first[0] = 0;
    for (int d = 0; d < MAX_SLOTS; d++) v->slot_first[d + 1] = v->slot_first[d] + count[d];
    size_t at[MAX_SLOTS];
    memcpy(at, v->slot_first, sizeof at);
    for (size_t i = 0; i < v->n_ev; i++) {
        const mev *e = &v->ev[i];
        v->by_slot[at[e->dev]++] = (uint32_t)i;
        if (!v->peaks[e->dev] || e->alloc > v->peaks[e->dev]->alloc) v->peaks[e->dev] = e;
    }
}

/* ---- pairs, peaks, curves ------------------------------------------------------------ */

/* An allocation waiting for its free, by device and address (state 0: an
 * empty slot, 1: a free one that ended a probe chain, 2: in use). */
typedef struct pending { uint64_t addr; size_t pair; int16_t dev; uint8_t state; } pending;

/* The slot of (dev, addr) in tab, or where it goes: the first free slot of
 * its chain (*found false). */
static size_t pending_slot(const pending *tab, size_t slots, uint64_t addr, int16_t dev, bool *found)
{
    size_t h = (size_t)((addr * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev * 0xC2B2AE3D27D4EB4Full) >> 20) & (slots - 1);
    size_t put = SIZE_MAX;
    for (; tab[h].state; h = (h + 1) & (slots - 1)) {
        if (tab[h].state == 2 && tab[h].addr == addr && tab[h].dev == dev) { *found = true; return h; }
        if (tab[h].state == 1 && put == SIZE_MAX) put = h;
    }
    *found = false;
    return put == SIZE_MAX ? h : put;
}

/* Allocation/free pairs in time order (events sorted by time per file, files
 * in order): an allocation is matched by the next free of its device and
 * address. Returns the pairs (*n of them); a free with no allocation seen
 * (allocated before the profiler started) makes none. */
static pair *make_pairs(const memview *v, size_t *n_out)
{
    size_t cap = 64, n = 0, slots = 64;
    while (slots < 2 * v->n_ev) slots *= 2;
    pair *pairs = malloc(cap * sizeof *pairs);
    pending *tab = calloc(slots, sizeof *tab);
    if (!pairs || !tab) abort();
    for (size_t i = 0; i < v->n_ev; i++) {
        const mev *e = &v->ev[i];
        bool found;
        size_t h = pending_slot(tab, slots, e->addr, e->dev, &found);
        if (e->bytes > 0) {
            if (n == cap) pairs = xrealloc(pairs, (cap *= 2) * sizeof *pairs);
            pairs[n] = (pair){ e->bytes, e->ts, -1, e->op, e->parent, e->dev, false };
            tab[h] = (pending){ e->addr, n++, e->dev, 2 };   /* a second allocation at one address replaces the first */
        } else if (e->bytes < 0 && found) {
            pairs[tab[h].pair].t_free = e->ts;
            tab[h].state = 1;
        }
    }
    free(tab);
    *n_out = n;
    return pairs;
}

static int pair_size_cmp(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

static void pair_json(const memview *v, tpu_json *j, const pair *p)
{
    tpu_json_begin_array(j);
    tpu_json_int(j, p->dev);
    tpu_json_int(j, p->op);
    tpu_json_int(j, p->bytes);
    int64_t t0 = t0_of(v, p->dev);
    tpu_json_int(j, p->t_alloc - t0);
    if (p->t_free >= 0) tpu_json_int(j, p->t_free - t0);
    else tpu_json_null(j);
    tpu_json_int(j, p->parent);
    tpu_json_end_array(j);
}

/* The peak of slot d (index_slots): the event with the highest Total Allocated. */
static const mev *peak_of(const memview *v, int d)
{
    return v->peaks[d];
}

static bool alive_at(const pair *p, int d, int64_t t)
{
    return p->dev == d && p->t_alloc <= t && (p->t_free < 0 || p->t_free > t);
}

/* pairs, largest first: all of them when there are at most PAIRS_ALL; else
 * per device its PAIRS_LARGEST largest, then PAIRS_AT_PEAK more of those
 * alive at its peak (each pair once), so that every device has its own */
static void pairs_json(const memview *v, tpu_json *j)
{
    size_t n;
    pair *pairs = make_pairs(v, &n);
    if (n) qsort(pairs, n, sizeof *pairs, pair_size_cmp);
    tpu_json_kv_uint(j, "n_pairs", n);
    uint64_t per_dev[MAX_SLOTS] = {0};
    for (size_t i = 0; i < n; i++) per_dev[pairs[i].dev]++;
    tpu_json_key(j, "n_pairs_device");
    tpu_json_begin_array(j);
    for (int d = 0; d < v->n_devices; d++) tpu_json_uint(j, per_dev[d]);
    tpu_json_end_array(j);
    tpu_json_kv_bool(j, "pairs_all", n <= PAIRS_ALL);
    tpu_json_key(j, "pairs");
    tpu_json_begin_array(j);
    if (n <= PAIRS_ALL) {
        for (size_t i = 0; i < n; i++) pair_json(v, j, &pairs[i]);
    } else {
        int largest[MAX_SLOTS] = {0};
        for (size_t i = 0; i < n; i++)
            if (largest[pairs[i].dev] < PAIRS_LARGEST) {
                largest[pairs[i].dev]++;
                pairs[i].listed = true;
                pair_json(v, j, &pairs[i]);
            }
        for (int d = 0; d < v->n_devices; d++) {
            const mev *pk = peak_of(v, d);
            int kept = 0;
            for (size_t i = 0; pk && i < n && kept < PAIRS_AT_PEAK; i++)
                if (!pairs[i].listed && alive_at(&pairs[i], d, pk->ts)) { pair_json(v, j, &pairs[i]); kept++; }
        }
    }
    tpu_json_end_array(j);
    free(pairs);
}

/* The operators with memory events on device d: [name id, allocations,
 * bytes allocated, frees, bytes freed, self increase, total increase]. */
static void ops_json(const memview *v, tpu_json *j, int d)
{
    tpu_json_key(j, "ops");
    tpu_json_begin_array(j);
    for (uint32_t i = 0; i < v->n_stats[d]; i++) {
        const opstat *s = &v->stats[d][i];
        if (!s->allocs && !s->frees && !s->total_inc) continue;
        tpu_json_begin_array(j);
        tpu_json_uint(j, i);
        tpu_json_uint(j, s->allocs);
        tpu_json_int(j, s->alloc_bytes);
        tpu_json_uint(j, s->frees);
        tpu_json_int(j, s->free_bytes);
        tpu_json_int(j, s->self_inc);
        tpu_json_int(j, s->total_inc);
        tpu_json_end_array(j);
    }
    tpu_json_end_array(j);
}

/* The device the page shows first of rank r: its first GPU (lowest type,
 * then id), as the plugin does; else its first device; -1: it has none. */
static int default_device(const memview *v, int r)
{
    int best = -1, first = -1;
    for (int d = 0; d < v->n_devices; d++) {
        if (v->dev_rank[d] != r) continue;
        if (first < 0) first = d;
        if (v->dev_type[d] != 0 && (best < 0 || v->dev_type[d] < v->dev_type[best] ||
                                    (v->dev_type[d] == v->dev_type[best] && v->dev_id[d] < v->dev_id[best])))
            best = d;
    }
    return best < 0 ? first : best;
}

/* The ranks with [memory] events in rank order (then by key): their
 * indices into v->ranks; returns how many. */
static int ranks_in_order(const memview *v, int *order)
{
    int n = 0;
    for (int i = 0; i < v->n_ranks; i++) {
        if (!v->ranks[i].n_devices) continue;
        int k = n++;
        for (; k > 0; k--) {   /* insertion: at most MAX_RANKS */
            const mrank *a = &v->ranks[order[k - 1]], *b = &v->ranks[i];
            if (a->rank < b->rank || (a->rank == b->rank && a->key < b->key)) break;
            order[k] = order[k - 1];
        }
        order[k] = i;
    }
    return n;
}

/* Several ranks on the page: each rank with [memory] events, in rank order,
 * its slots (devices_traced indices) and the one shown first; null for a
 * page of one rank (the page then names none). */
static void ranks_json(const memview *v, tpu_json *j)
{
    tpu_json_key(j, "ranks");
    if (v->n_ranks < 2) { tpu_json_null(j); return; }
    int order[MAX_RANKS];
    int n = ranks_in_order(v, order);
    tpu_json_begin_array(j);
    for (int i = 0; i < n; i++) {
        int r = order[i];
        uint64_t events = 0;
        tpu_json_begin_object(j);
        tpu_json_kv_int(j, "rank", v->ranks[r].rank);
        tpu_json_kv_int(j, "default_device", default_device(v, r));
        tpu_json_key(j, "devices");
        tpu_json_begin_array(j);
        for (int d = 0; d < v->n_devices; d++)
            if (v->dev_rank[d] == r) {
                tpu_json_int(j, d);
                events += v->slot_first[d + 1] - v->slot_first[d];
            }
        tpu_json_end_array(j);
        tpu_json_kv_uint(j, "n_events", events);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
}

static void names_json(const memview *v, tpu_json *j)
{
    tpu_json_key(j, "op_names");
    tpu_json_begin_array(j);
    for (uint32_t i = 0; i < v->n_names; i++) tpu_json_string_n(j, v->names[i], v->name_len[i]);
    tpu_json_end_array(j);
}

/* Per device: its peak, and the curves [t, allocated, reserved], at most
 * 2 x CURVE_POINTS points (the lowest and the highest point of each time bucket). */
static void device_json(const memview *v, tpu_json *j, int d)
{
    tpu_json_begin_object(j);
    tpu_json_kv_string(j, "name", v->devices[d]);
    tpu_json_kv_int(j, "type", v->dev_type[d]);
    tpu_json_kv_int(j, "id", v->dev_id[d]);
    tpu_json_kv_int(j, "rank", v->ranks[v->dev_rank[d]].rank);
    const mev *pk = peak_of(v, d);
    const uint32_t *mine = v->by_slot + v->slot_first[d];
    size_t n = v->slot_first[d + 1] - v->slot_first[d];
    int64_t lo = n ? v->ev[mine[0]].ts : 0, hi = n ? v->ev[mine[n - 1]].ts : 0, t0 = t0_of(v, d);
    tpu_json_kv_uint(j, "events", n);
    if (pk) {
        tpu_json_kv_int(j, "peak_bytes", pk->alloc);
        tpu_json_kv_int(j, "peak_t", pk->ts - t0);
    }
    tpu_json_key(j, "curve");
    tpu_json_begin_array(j);
    int64_t width = n > 2 * CURVE_POINTS ? (hi - lo) / CURVE_POINTS + 1 : 0;
    const mev *bmin = NULL, *bmax = NULL;
    int64_t bucket = -1;
    for (size_t i = 0; i <= n; i++) {
        const mev *e = i < n ? &v->ev[mine[i]] : NULL;
        int64_t b = e && width ? (e->ts - lo) / width : (int64_t)i;
        if (b != bucket || !e) {  /* flush the bucket: its low and high points in time order */
            const mev *pts[2] = { bmin, bmax };
            if (bmin && bmax && bmax->ts < bmin->ts) { pts[0] = bmax; pts[1] = bmin; }
            for (int k = 0; k < 2; k++) {
                if (!pts[k] || (k == 1 && pts[1] == pts[0])) continue;
                tpu_json_begin_array(j);
                tpu_json_int(j, pts[k]->ts - t0);
                tpu_json_int(j, pts[k]->alloc);
                tpu_json_int(j, pts[k]->reserved);
                tpu_json_end_array(j);
            }
            bmin = bmax = NULL;
            bucket = b;
        }
        if (!e) break;
        if (!bmin || e->alloc < bmin->alloc) bmin = e;
        if (!bmax || e->alloc > bmax->alloc) bmax = e;
    }
    tpu_json_end_array(j);
    ops_json(v, j, d);
    tpu_json_end_object(j);
}

static void events_json(const memview *v, tpu_json *j)
{
    tpu_json_key(j, "events");
    if (v->n_ev > EVENTS_MAX) { tpu_json_null(j); return; }
    tpu_json_begin_array(j);
    for (size_t i = 0; i < v->n_ev; i++) {
        const mev *e = &v->ev[i];
        tpu_json_begin_array(j);
        tpu_json_int(j, e->ts - t0_of(v, e->dev));
        tpu_json_int(j, e->bytes);
        tpu_json_int(j, e->op);
        tpu_json_int(j, e->dev);
        tpu_json_end_array(j);
    }
    tpu_json_end_array(j);
}

static void mem_json(void *state, tpu_json *j)
{
    memview *v = state;
    if (!v->m->memory.points && !v->n_ev) { tpu_json_null(j); return; }
    tpu_json_begin_object(j);
    if (v->m->memory.points) tpa_html_memory_members(v->m, j);
    tpu_json_kv_uint(j, "n_events", v->n_ev);
    if (v->n_ev) {
        index_slots(v);
        int order[MAX_RANKS];
        ranks_in_order(v, order);
        tpu_json_kv_int(j, "default_device", default_device(v, order[0]));  /* of the first rank */
        ranks_json(v, j);
        names_json(v, j);
        tpu_json_key(j, "devices_traced");
        tpu_json_begin_array(j);
        for (int d = 0; d < v->n_devices; d++) device_json(v, j, d);
        tpu_json_end_array(j);
        pairs_json(v, j);
        events_json(v, j);
    }
    tpu_json_key(j, "left_out");
    tpu_json_begin_array(j);
    char line[200];
    if (v->ev_dropped) {
        snprintf(line, sizeof line, "%llu [memory] events past the first %u", (unsigned long long)v->ev_dropped, MEV_CAP);
        tpu_json_string(j, line);
    }
    if (v->dev_dropped) {
        snprintf(line, sizeof line, "%llu [memory] events of devices past the first %d%s", (unsigned long long)v->dev_dropped,
                 MAX_DEVICES, v->n_ranks > 1 ? " of a rank" : "");
        tpu_json_string(j, line);
    }
    if (v->rank_dropped) {
        snprintf(line, sizeof line, "%llu [memory] events of ranks past the first %d, or of devices past the first %d of the page",
                 (unsigned long long)v->rank_dropped, MAX_RANKS, MAX_SLOTS);
        tpu_json_string(j, line);
    }
    if (v->ops_dropped) {
        snprintf(line, sizeof line, "%llu operators past the first %u of a file: later events are not attributed",
                 (unsigned long long)v->ops_dropped, OPS_CAP);
        tpu_json_string(j, line);
    }
    if (v->names_dropped) {
        snprintf(line, sizeof line, "%llu operators with names past the first %u distinct ones",
                 (unsigned long long)v->names_dropped, NAMES_CAP);
        tpu_json_string(j, line);
    }
    tpu_json_end_array(j);
    tpu_json_end_object(j);
}

static void mem_free(void *state)
{
    memview *v = state;
    if (v->m == &v->own) tpa_html_model_free(&v->own);
    for (uint32_t i = 0; i < v->n_names; i++) free(v->names[i]);
    free(v->names);
    free(v->name_len);
    free(v->allocator);
    for (int d = 0; d < MAX_SLOTS; d++) free(v->stats[d]);
    free(v->by_slot);
    free(v->slots);
    free(v->ev);
    free(v->ops);
    free(v);
}

const tpa_view_class tpa_view_memory = {
    .key = "memory",
    .begin = mem_begin,
    .file_begin = mem_file_begin,
    .feed = mem_feed,
    .file_end = mem_file_end,
    .json = mem_json,
    .free = mem_free,
};
