/* view_timeline_gpu.c - what the Timeline draws over its events: the GPU
 * utilization and est. SM efficiency tracks of each device, and the
 * forward-to-backward flows. Both are made from the chosen records when the
 * page is written (bounded by what the page carries, no second pass over a
 * trace, no per-event storage beyond the store's). A page that carries
 * chosen steps only has tracks over each step's window (what it carries),
 * not over the gaps between them, where it holds no kernel.
 *
 * The tracks follow the TensorBoard plugin (kineto's
 * tb_plugin/torch_tb_profiler/profiler/gpu_metrics_parser.py, removed in
 * 94979607): buckets of a power of ten microseconds, at most 100 over the
 * span drawn (the last one runs to its end); utilization = the share of a
 * bucket in which at least one kernel runs on the device; est. SM
 * efficiency = at each instant min(sum of the running kernels' "blocks per
 * SM", 1), averaged over the bucket. A device is a kernel's pid (Kineto
 * writes the device id there; the plugin warns when args.device differs).
 */
#include "analyze/page/view_timeline.h"
#include "analyze/trace/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TL_MAX_TRACKS 48   /* tracks written (devices of all files, each window) */
#define TL_MAX_ACTIVE 64   /* kernels running at once on one device, followed */
#define TL_MAX_BUCKETS 100 /* the plugin's */

typedef struct track {
    uint16_t file;
    int64_t pid;
    int64_t step;           /* the chosen step whose window it covers; -1: the span drawn */
    int64_t lo, hi, width;  /* buckets: [lo + i * width, ...), the last to hi */
    int n;
    double busy[TL_MAX_BUCKETS], sm[TL_MAX_BUCKETS]; /* ns, and ns x efficiency */
    int64_t now;            /* the sweep's time */
    int active;
    int64_t end[TL_MAX_ACTIVE];
    double bps[TL_MAX_ACTIVE];
    double sum;             /* blocks per SM of the running kernels */
} track;

static bool is_kernel(const tpa_tl_rec *r) { return r->kind == TPA_K_KERNEL || r->kind == TPA_K_COMM; }

/* Adds [a, b) at the current state (busy when a kernel runs, efficiency
 * min(sum, 1)) to the buckets it overlaps. */
static void add_span(track *g, int64_t a, int64_t b)
{
    if (a < g->lo) a = g->lo; /* a zero-length kernel's row draws no span: it may lie outside */
    if (b > g->hi) b = g->hi;
    if (b <= a || !g->active) return;
    double eff = g->sum < 1.0 ? g->sum : 1.0;
    int64_t i = (a - g->lo) / g->width;
    if (i < 0) i = 0;
    if (i >= g->n) i = g->n - 1; /* the last bucket is the longer one */
    for (; i < g->n && a < b; i++) {
        int64_t be = i == g->n - 1 ? g->hi : g->lo + (i + 1) * g->width;
        int64_t e = b < be ? b : be;
        if (e > a) {
            g->busy[i] += (double)(e - a);
            g->sm[i] += (double)(e - a) * eff;
            a = e;
        }
    }
}

/* Sweeps the device's state forward to time ts: kernels ending before it end. */
static void advance(track *g, int64_t ts)
{
    while (g->active) {
        int m = 0;
        for (int k = 1; k < g->active; k++)
            if (g->end[k] < g->end[m]) m = k;
        if (g->end[m] > ts) break;
        add_span(g, g->now, g->end[m]);
        if (g->end[m] > g->now) g->now = g->end[m];
        g->sum -= g->bps[m];
        g->end[m] = g->end[--g->active];
        g->bps[m] = g->bps[g->active];
    }
    if (!g->active || g->sum < 1e-12) g->sum = 0; /* rounding of the subtractions */
    add_span(g, g->now, ts);
    if (ts > g->now) g->now = ts;
}

static double blocks_per_sm(const tpa_tl *t, const tpa_tl_rec *r)
{
    double v;
    const char *a = t->arena + r->off + r->name_n, *end = a + r->args_n;
    const char *p = r->args_n ? tpa_obj_find(a, end, "blocks per SM") : NULL;
    return p && tpa_value_f64(p, end, &v) && v > 0 ? v : 0.0; /* the plugin skips values <= 0 */
}

/* The plugin's buckets over [lo, hi): 10^k us each, at most 100. */
static void buckets(track *g, int64_t lo, int64_t hi)
{
    g->lo = lo;
    g->hi = hi > lo ? hi : lo + 1;
    int64_t range = g->hi - lo, w = 1000;
    while (range / w > TL_MAX_BUCKETS || (range / w == TL_MAX_BUCKETS && range % w)) w *= 10;
    g->width = w;
    g->n = (int)(range / w);
    if (g->n < 1) g->n = 1, g->width = range;
}

static void write_track(const track *g, const char *name, int64_t t0, tpu_json *j, bool has_sm)
{
    tpu_json_begin_object(j);
    tpu_json_kv_string(j, "name", name);
    tpu_json_kv_int(j, "file", g->file);
    tpu_json_kv_int(j, "pid", g->pid);
    if (g->step >= 0) tpu_json_kv_int(j, "step", g->step);
    tpu_json_kv_int(j, "start", g->lo - t0);
    tpu_json_kv_int(j, "bucket", g->width);
    tpu_json_kv_int(j, "end", g->hi - t0);
    double busy = 0, span = (double)(g->hi - g->lo);
    tpu_json_key(j, "util");
    tpu_json_begin_array(j);
    for (int i = 0; i < g->n; i++) {
        double w = (double)((i == g->n - 1 ? g->hi : g->lo + (i + 1) * g->width) - (g->lo + i * g->width));
        tpu_json_double(j, g->busy[i] / w);
        busy += g->busy[i];
    }
    tpu_json_end_array(j);
    tpu_json_key(j, "sm");
    if (!has_sm) {
        tpu_json_null(j); /* no kernel says its blocks per SM */
    } else {
        tpu_json_begin_array(j);
        for (int i = 0; i < g->n; i++) {
            double w = (double)((i == g->n - 1 ? g->hi : g->lo + (i + 1) * g->width) - (g->lo + i * g->width));
            tpu_json_double(j, g->sm[i] / w);
        }
        tpu_json_end_array(j);
    }
    tpu_json_kv_double(j, "util_mean", span > 0 ? busy / span : 0.0);
    tpu_json_end_object(j);
}

/* The last name of kind `what` the trace gave process pid, or NULL. */
static const char *process_meta(const tpa_tl *t, uint16_t file, int what, int64_t pid)
{
    for (size_t i = t->n_meta; i-- > 0;) {
        const tpa_tl_meta *m = &t->meta[i];
        if (m->file == file && m->what == what && m->pid == pid) return m->name[0] ? m->name : NULL;
    }
    return NULL;
}

bool tpa_tl_gpu_name(const tpa_tl *t, uint16_t file, int64_t pid, char *out, size_t cap)
{
    /* Kineto: process_labels "GPU 0", its process_name the host's; trainprof:
     * process_name "GPU 0", process_labels "GPU" */
    const char *pl = process_meta(t, file, TPA_TL_PROCESS_LABELS, pid);
    const char *pn = process_meta(t, file, TPA_TL_PROCESS_NAME, pid);
    if (pl && !strncmp(pl, "GPU ", 4)) {
        snprintf(out, cap, "%s", pl);
    } else if (pn && !strncmp(pn, "GPU", 3)) {
        snprintf(out, cap, "%s", pn);
    } else {
        snprintf(out, cap, "GPU %" PRId64, pid);
        return false;
    }
    return true;
}

/* The device's name as the page's rows give it (with its trace's number
 * when the page shows several). */
void tpa_tl_rank_name(const tpa_tl *t, int r, char *out, size_t cap)
{
    const tpa_tl_rank *rk = &t->ranks[r];
    if (rk->named) snprintf(out, cap, "rank %" PRId64, rk->rank);
    else snprintf(out, cap, "trace %d", rk->first_file + 1);
}

void tpa_tl_whose(const tpa_tl *t, int file, char *out, size_t cap)
{
    out[0] = '\0';
    if (t->n_files < 2) return;
    const tpa_tl_rank *rk = &t->ranks[tpa_tl_rank_ix(t, file)];
    if (!rk->named) snprintf(out, cap, "trace %d \xc2\xb7 ", file + 1);
    else if (rk->n_files > 1) snprintf(out, cap, "rank %" PRId64 " \xc2\xb7 trace %d \xc2\xb7 ", rk->rank, file + 1);
    else snprintf(out, cap, "rank %" PRId64 " \xc2\xb7 ", rk->rank);
}

static void device_name(const tpa_tl *t, uint16_t file, int64_t pid, char *out, size_t cap)
{
    char whose[64];
    tpa_tl_whose(t, file, whose, sizeof whose);
    int n = snprintf(out, cap, "%s", whose);
    tpa_tl_gpu_name(t, file, pid, out + n, cap - (size_t)n);
}

/* The tracks of the devices of records ix[a..b) (one file) over the window
 * [lo, hi): each device's sweep, kernels in order of start. */
static void sweep(const tpa_tl *t, const size_t *ix, size_t a, size_t b, int64_t lo, int64_t hi, int64_t step,
                  track *g, int *ng, bool *has_sm, uint64_t *left)
{
    int64_t range;
    /* nothing drawn, or a span no bucket width of int64 ns fits (crafted: past 2.9 years) */
    if (hi <= lo || __builtin_sub_overflow(hi, lo, &range) || range > INT64_MAX / 100) return;
    int first = *ng;
    for (size_t k = a; k < b; k++) {
        const tpa_tl_rec *r = &t->rec[ix[k]];
        if (r->ts >= hi) break;
        if (!is_kernel(r) || r->ph != 'X' || tpa_sat_add(r->ts, r->dur) <= lo) continue;
        int d = first;
        while (d < *ng && g[d].pid != r->pid) d++;
        if (d == *ng) {
            if (*ng == TL_MAX_TRACKS) { (*left)++; continue; }
            g[d].file = r->file;
            g[d].pid = r->pid;
            g[d].step = step;
            buckets(&g[d], lo, hi);
            g[d].now = lo;
            (*ng)++;
        }
        advance(&g[d], r->ts);
        if (g[d].active == TL_MAX_ACTIVE) { (*left)++; continue; }
        double v = blocks_per_sm(t, r);
        has_sm[d] |= v > 0;
        g[d].end[g[d].active] = tpa_sat_add(r->ts, r->dur);
        g[d].bps[g[d].active++] = v;
        g[d].sum += v;
    }
    for (int d = first; d < *ng; d++) advance(&g[d], g[d].hi);
}

/* The steps of pick[] in file's events, by start (at most 3 a rank). */
static size_t file_picks(const tpa_tl *t, const long *pick, uint16_t file, long *out)
{
    size_t n = 0;
    for (size_t k = 0; k < 3 * (size_t)t->n_files; k++) {
        if (pick[k] < 0 || t->steps[pick[k]].file != file) continue;
        size_t i = n++;
        for (; i > 0 && t->steps[pick[k]].start < t->steps[out[i - 1]].start; i--) out[i] = out[i - 1];
        out[i] = pick[k];
    }
    return n;
}

void tpa_tl_json_gpu(const tpa_tl *t, const size_t *ix, size_t n, int64_t t0, const int64_t lo64[64],
                     const int64_t hi64[64], const long *pick, bool whole, tpu_json *j)
{
    track *g = calloc(TL_MAX_TRACKS, sizeof *g);
    long *order = malloc(3 * (size_t)t->n_files * sizeof *order);
    if (!g || !order) abort();
    int ng = 0;
    bool has_sm[TL_MAX_TRACKS] = {false};
    uint64_t left = 0;
    bool steps = false;
    for (size_t k = 0; !whole && pick && k < 3 * (size_t)t->n_files; k++) steps |= pick[k] >= 0;
    for (size_t a = 0; a < n;) { /* one file at a time: its windows, then its devices' sweeps */
        uint16_t file = t->rec[ix[a]].file;
        size_t b = a;
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (; b < n && t->rec[ix[b]].file == file; b++) {
            const tpa_tl_rec *r = &t->rec[ix[b]];
            if (file < 64 || r->ph == 'C') continue; /* past the first 64 files: all their events */
            if (r->ts < lo) lo = r->ts;
            if (tpa_sat_add(r->ts, r->dur) > hi) hi = tpa_sat_add(r->ts, r->dur);
        }
        if (file < 64) lo = lo64[file], hi = hi64[file];
        if (!steps) {
            sweep(t, ix, a, b, lo, hi, -1, g, &ng, has_sm, &left);
        } else { /* a page of chosen steps: each one's window, what is carried of it */
            size_t np = file_picks(t, pick, file, order);
            for (size_t x = 0; x < np; x++) {
                const tpa_tl_step *s = &t->steps[order[x]];
                sweep(t, ix, a, b, s->start, tpa_sat_add(s->start, s->dur), s->num, g, &ng, has_sm, &left);
            }
        }
        a = b;
    }
    tpu_json_key(j, "gpu_tracks");
    tpu_json_begin_array(j);
    for (int d = 0; d < ng; d++) {
        char name[96];
        device_name(t, g[d].file, g[d].pid, name, sizeof name);
        write_track(&g[d], name, t0, j, has_sm[d]);
    }
    tpu_json_end_array(j);
    tpu_json_kv_uint(j, "gpu_kernels_left_out", left);
    free(g);
    free(order);
}

/* ---- forward-to-backward flows ------------------------------------------------------ */

typedef struct flow_end { uint16_t file; int64_t id; char ph; int64_t ev; } flow_end;

static int by_flow(const void *a, const void *b)
{
    const flow_end *x = a, *y = b;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return (x->ph == 'f') - (y->ph == 'f'); /* 's' first */
}

/* The host threads' stacks of open spans, by (file, pid, tid): top is the
 * innermost span open so far (an index into the chosen records, -1: none),
 * up[k] the span under record k. */
#define TL_THREADS 8192u   /* slots (a power of two): the page has at most 4096 rows */

typedef struct stack_slot { bool used; uint16_t file; int64_t pid, tid, top; } stack_slot;

static stack_slot *slot_of(stack_slot *tab, uint16_t file, int64_t pid, int64_t tid, bool insert)
{
    uint64_t h = ((uint64_t)pid * 0x9E3779B97F4A7C15u) ^ ((uint64_t)tid * 0xC2B2AE3D27D4EB4Fu) ^ file;
    for (size_t i = (size_t)(h >> 40) & (TL_THREADS - 1), probes = 0; probes < TL_THREADS;
         i = (i + 1) & (TL_THREADS - 1), probes++) {
        stack_slot *s = &tab[i];
        if (s->used && s->file == file && s->pid == pid && s->tid == tid) return s;
        if (!s->used) {
            if (!insert) return NULL;
            *s = (stack_slot){true, file, pid, tid, -1};
            return s;
        }
    }
    return NULL; /* full: more threads than rows, not reached */
}

/* Drops from s's stack the spans that end before time ts. */
static void pop_ended(const tpa_tl *t, const size_t *ix, const int64_t *up, stack_slot *s, int64_t ts)
{
    while (s->top >= 0) {
        const tpa_tl_rec *r = &t->rec[ix[s->top]];
        if (tpa_sat_add(r->ts, r->dur) >= ts) break;
        s->top = up[s->top];
    }
}

static int by_end_time(const void *a, const void *b, void *ctx)
{
    const tpa_tl_flow *f = ctx, *x = &f[*(const size_t *)a], *y = &f[*(const size_t *)b];
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Binds each flow end to the written event it belongs to (bound[i], -1:
 * none carried): the innermost host span on its thread enclosing its time
 * (Kineto puts 's' at the forward op's start and 'f', "bp": "e", inside the
 * backward op). One sweep over the chosen records (in order of file, then
 * start; of equal starts the longer first, so the inner one is pushed
 * last), beside the flow ends in the same order. */
static void bind_all(const tpa_tl *t, const size_t *ix, const int64_t *ord, size_t n, int64_t *bound)
{
    size_t m = t->n_flows, *order = malloc((m ? m : 1) * sizeof *order);
    int64_t *up = malloc((n ? n : 1) * sizeof *up);
    stack_slot *tab = calloc(TL_THREADS, sizeof *tab);
    if (!order || !up || !tab) abort();
    for (size_t i = 0; i < m; i++) order[i] = i;
    qsort_r(order, m, sizeof *order, by_end_time, t->flows);
    size_t k = 0;
    for (size_t q = 0; q < m; q++) {
        const tpa_tl_flow *f = &t->flows[order[q]];
        for (; k < n; k++) {
            const tpa_tl_rec *r = &t->rec[ix[k]];
            if (r->file > f->file || (r->file == f->file && r->ts > f->ts)) break;
            if (ord[k] < 0 || r->ph != 'X' || tpa_kind_is_gpu(r->kind)) continue;
            stack_slot *s = slot_of(tab, r->file, r->pid, r->tid, true);
            if (!s) continue;
            pop_ended(t, ix, up, s, r->ts);
            up[k] = s->top;
            s->top = (int64_t)k;
        }
        stack_slot *s = slot_of(tab, f->file, f->pid, f->tid, false);
        if (s) pop_ended(t, ix, up, s, f->ts);
        bound[order[q]] = s && s->top >= 0 ? ord[s->top] : -1;
    }
    free(order);
    free(up);
    free(tab);
}

void tpa_tl_json_flows(const tpa_tl *t, const size_t *ix, const int64_t *ord, size_t n, tpu_json *j)
{
    flow_end *fe = malloc((t->n_flows ? t->n_flows : 1) * sizeof *fe);
    int64_t *bound = malloc((t->n_flows ? t->n_flows : 1) * sizeof *bound);
    if (!fe || !bound) abort();
    bind_all(t, ix, ord, n, bound);
    size_t m = 0;
    for (size_t i = 0; i < t->n_flows; i++) {
        const tpa_tl_flow *f = &t->flows[i];
        if (f->ph == 's' || f->ph == 'f') fe[m++] = (flow_end){f->file, f->id, f->ph, bound[i]};
    }
    free(bound);
    qsort(fe, m, sizeof *fe, by_flow);
    uint64_t pairs = 0, written = 0;
    tpu_json_key(j, "fwdbwd");
    tpu_json_begin_array(j);
    for (size_t i = 0; i + 1 < m; i++) {
        const flow_end *s = &fe[i], *f = &fe[i + 1];
        if (s->ph != 's' || f->ph != 'f' || s->file != f->file || s->id != f->id) continue;
        pairs++;
        i++;
        if (s->ev < 0 || f->ev < 0 || s->ev == f->ev) continue;
        tpu_json_int(j, s->ev);
        tpu_json_int(j, f->ev);
        written++;
    }
    tpu_json_end_array(j);
    /* pairs whose ops are not both carried, and ends past the cap */
    tpu_json_kv_uint(j, "fwdbwd_left_out", pairs - written + t->flows_lost);
    free(fe);
}
