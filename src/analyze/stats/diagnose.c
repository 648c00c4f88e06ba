/* diagnose.c - `trainprof analyze`: one streaming pass that feeds both the
 * per-operation report and the step breakdown, then turns their numbers
 * into ranked findings (what costs step time, the evidence, what to try).
 *
 * Shares are of the step time: the sum of the ProfilerStep#N spans, or the
 * extent of the trace's spans when it marks no steps. The step parts are
 * exclusive (see steps.c), so "data loading 12%" means 12% of the step in
 * which nothing of a higher class (GPU work, runtime calls) was running. */
#include "analyze/stats/stats.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- thresholds (documented in docs/ANALYZE.md) ------------------------------------ */
#define DATALOAD_MIN TPA_DATALOAD_MIN  /* exposed data loading share */
#define MEMCPY_MIN 0.05        /* exposed host<->device copies */
#define COMM_MIN 0.10          /* exposed communication */
#define OPTIM_MIN TPA_OPTIM_MIN  /* optimizer step, total */
#define SYNC_MIN 0.05          /* synchronizing calls, total */
#define LAUNCH_IDLE_MIN 0.40   /* GPU idle share ... */
#define LAUNCH_HOST_MIN 0.30   /* ... while host parts (cpu + runtime) take this much */
#define TINY_KERNEL_NS 10000   /* average kernel under 10 us */
#define TINY_MIN_CALLS 100
#define TINY_MIN 0.05
#define VARIANCE_RATIO TPA_VARIANCE_RATIO          /* p90 / median of step time ... */
#define VARIANCE_MIN_STEPS TPA_VARIANCE_MIN_STEPS  /* ... over at least this many steps */
#define PAGEABLE_MIN 0.01      /* pageable host<->device copies, total */
#define OCC_LOW_PCT 25.0       /* est. achieved occupancy under this ... */
#define OCC_MIN 0.10           /* ... for this share of step time */

static bool icontains(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t k = 0;
        while (k < n && s[k] && (s[k] | 0x20) == needle[k]) k++;
        if (k == n) return true;
    }
    return false;
}

static bool is_gpu_table(int t) { return t >= 0 && t != TPA_TABLE_ASYNC; }

static bool is_sync_call(const char *n)
{
    return !strcmp(n, "cudaDeviceSynchronize") || !strcmp(n, "cudaStreamSynchronize") ||
           !strcmp(n, "cudaEventSynchronize") || !strcmp(n, "hipDeviceSynchronize") ||
           !strcmp(n, "hipStreamSynchronize") || !strcmp(n, "hipEventSynchronize");
}

int tpa_severity_of(double share) { return share >= 0.25 ? 2 : share >= 0.10 ? 1 : 0; }

/* The findings a run directory's own files can make for the whole run
 * (tpa_finding_init): their titles and advice, one place. */
typedef struct run_text { const char *id, *title, *torch, *other; } run_text;
static const run_text RUN_TEXTS[] = {
    { "data_loading", "Data loading stalls the step",
      "increase DataLoader num_workers, set pin_memory=True and persistent_workers=True, "
      "raise prefetch_factor; move decoding/augmentation off the training process",
      "prepare the next batch while this one computes (a loader thread or process, double "
      "buffering), keep decoded data in memory, read fewer and larger files" },
    { "optimizer", "Optimizer step is a large part of the step",
      "use a fused or foreach optimizer (torch.optim.AdamW(fused=True) / foreach=True, "
      "apex FusedAdam), step less often with gradient accumulation, or shard the "
      "optimizer state (ZeRO/FSDP) across ranks",
      "update all parameters in one fused kernel instead of one per tensor, "
      "step less often with gradient accumulation, or shard the optimizer "
      "state across ranks" },
    { "step_variance", "Step time varies a lot (stragglers)",
      "look at the slow steps (trainprof steps): data stalls, Python GC "
      "(gc.freeze / gc.disable in the loop), checkpointing or logging steps, "
      "recompilation, other ranks",
      "look at the slow steps (trainprof steps): data stalls, checkpointing "
      "or logging steps, allocations, other ranks" },
};

bool tpa_finding_init(tpa_finding *f, const char *id, bool torch, double share)
{
    for (size_t i = 0; i < sizeof RUN_TEXTS / sizeof RUN_TEXTS[0]; i++) {
        if (strcmp(RUN_TEXTS[i].id, id) != 0) continue;
        memset(f, 0, sizeof *f);
        f->id = RUN_TEXTS[i].id;
        f->title = RUN_TEXTS[i].title;
        f->suggestion = torch ? RUN_TEXTS[i].torch : RUN_TEXTS[i].other;
        f->share = share > 1.0 ? 1.0 : share < 0 ? 0 : share;
        f->severity = tpa_severity_of(f->share);
        return true;
    }
    return false;
}

static tpa_finding *add_finding(tpa_diagnosis *d, const char *id, const char *title, double share,
                                const char *suggestion)
{
    if (d->n_findings == sizeof d->findings / sizeof d->findings[0]) return NULL;
    tpa_finding *f = &d->findings[d->n_findings++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->title = title;
    f->share = share > 1.0 ? 1.0 : share;  /* no finding claims more than the step */
    f->severity = tpa_severity_of(f->share);
    f->suggestion = suggestion;
    return f;
}

/* name in at most max bytes (max >= 4), cut with "…" (on a UTF-8 boundary)
 * when longer: an evidence line never cuts a name silently. */
static const char *cut_name(char *out, size_t cap, const char *name, size_t max)
{
    size_t n = strlen(name);
    if (n <= max || cap < 4) { snprintf(out, cap, "%s", name); return out; }
    size_t k = max - 3 < cap - 4 ? max - 3 : cap - 4;
    while (k > 0 && ((unsigned char)name[k] & 0xC0) == 0x80) k--;
    memcpy(out, name, k);
    memcpy(out + k, "\xE2\x80\xA6", 4);  /* … and the terminator */
    return out;
}

/* Appends "name (12.3 ms), " for up to k ops of the given kinds, most time first
 * (kind TPA_K_COUNT: data-loading names of any host kind). */
static void top_names(char *buf, size_t cap, const tpa_report *rep, bool gpu, int k1, int k2, int k)
{
    bool loader = k1 == TPA_K_COUNT;
    size_t len = strlen(buf);
    bool used[8] = {0};
    size_t pick[8];
    int got = 0;
    for (; got < k && got < 8; got++) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < rep->n_ops; i++) {
            const tpa_op *o = &rep->ops[i];
            if (gpu != is_gpu_table(o->table)) continue;
            if (loader ? !tpa_name_is_data_loading((tpa_sv){ o->name, strlen(o->name) })
                       : o->kind != k1 && o->kind != k2) continue;
            bool taken = false;
            for (int j = 0; j < got; j++) taken |= used[j] && pick[j] == i;
            if (!taken && (best == SIZE_MAX || o->total_ns > rep->ops[best].total_ns)) best = i;
        }
        if (best == SIZE_MAX) break;
        pick[got] = best;
        used[got] = true;
        char dur[32], nm[64];
        tpa_fmt_dur(dur, sizeof dur, rep->ops[best].total_ns);
        len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s (%s, %" PRIu64 " calls)",
                                got ? ", " : "", cut_name(nm, sizeof nm, rep->ops[best].name, 60), dur, rep->ops[best].count);
        if (len >= cap) { buf[cap - 1] = 0; return; }
    }
}

/* What to try, in the program's own terms: PyTorch advice for a PyTorch
 * trace (aten:: operators), the same advice in CUDA/C terms otherwise. */
static const char *advice(const tpa_diagnosis *d, const char *torch, const char *other)
{
    return d->torch ? torch : other;
}

static double share_of(const tpa_diagnosis *d, int64_t ns)
{
    return d->basis_ns > 0 ? (double)ns / (double)d->basis_ns : 0.0;
}

static void part_finding(tpa_diagnosis *d, int part, double min, const char *id, const char *title,
                         const char *suggestion, int k1, int k2, bool gpu)
{
    if (!d->steps.n && !d->steps.has_whole) return;
    double share = d->mean_ns ? (double)d->part_mean_ns[part] / (double)d->mean_ns : 0.0;
    if (share < min) return;
    tpa_finding *f = add_finding(d, id, title, share, suggestion);
    if (!f) return;
    char m[32];
    tpa_fmt_dur(m, sizeof m, d->part_mean_ns[part]);
    snprintf(f->evidence, sizeof f->evidence, "%s of %s with nothing of higher priority running; top: ", m,
             d->steps.n ? "each step on average" : "the trace (no steps)");
    top_names(f->evidence, sizeof f->evidence, &d->rep, gpu, k1, k2, 3);
}

/* Copies from or to pageable host memory are staged by the driver and
 * synchronous with respect to the host (Kineto names them "(Pageable -> ...)"). */
static void pageable_finding(tpa_diagnosis *d)
{
    int64_t ns = 0;
    uint64_t calls = 0;
    for (size_t i = 0; i < d->rep.n_ops; i++) {
        const tpa_op *o = &d->rep.ops[i];
        if (!is_gpu_table(o->table) || o->kind != TPA_K_MEMCPY || !icontains(o->name, "pageable")) continue;
        ns = tpa_sat_add(ns, o->total_ns);
        calls += o->count;
    }
    if (!calls || share_of(d, ns) < PAGEABLE_MIN) return;
    tpa_finding *f = add_finding(d, "pageable_memcpy", "Copies from pageable host memory", share_of(d, ns),
                                 advice(d, "pin the host buffers (DataLoader pin_memory=True, tensor.pin_memory()) so copies "
                                        "run asynchronously with .to(device, non_blocking=True)",
                                        "allocate the host buffers pinned (cudaHostAlloc / cudaHostRegister) so "
                                        "cudaMemcpyAsync runs asynchronously"));
    char dur[32];
    tpa_fmt_dur(dur, sizeof dur, ns);
    if (f) snprintf(f->evidence, sizeof f->evidence, "%" PRIu64 " pageable copies, %s in total; top: ", calls, dur);
    if (f) top_names(f->evidence, sizeof f->evidence, &d->rep, true, TPA_K_MEMCPY, TPA_K_MEMCPY, 2);
}

/* Kineto's "est. achieved occupancy %" of kernels (CUPTI traces carry it). */
static void occupancy_finding(tpa_diagnosis *d)
{
    if (!d->occ_kernel_ns || share_of(d, d->occ_low_ns) < OCC_MIN) return;
    tpa_finding *f = add_finding(d, "low_occupancy", "Kernels run at low achieved occupancy", share_of(d, d->occ_low_ns),
                                 advice(d, "give kernels more parallel work (larger batch, fuse small ops with "
                                        "torch.compile), check register and shared-memory use of custom kernels, "
                                        "prefer tensor-core friendly shapes (multiples of 8/16)",
                                        "give kernels more parallel work (larger batches, more blocks), check their "
                                        "register and shared-memory use (--ptxas-options=-v), prefer "
                                        "tensor-core friendly shapes (multiples of 8/16)"));
    char a[32], b[32];
    tpa_fmt_dur(a, sizeof a, d->occ_low_ns);
    tpa_fmt_dur(b, sizeof b, d->occ_kernel_ns);
    if (f) snprintf(f->evidence, sizeof f->evidence, "%s of %s kernel time below %.0f%% est. achieved occupancy; "
                    "time-weighted mean %.1f%%", a, b, OCC_LOW_PCT, d->occ_weighted);
}

/* The share of step time spent beyond the median by slower steps. */
static double slow_share(const tpa_steps_result *s, int64_t med)
{
    double over = 0, all = 0;
    for (size_t i = 0; i < s->n; i++) {
        all += (double)s->rows[i].dur_ns;
        if (s->rows[i].dur_ns > med) over += (double)(s->rows[i].dur_ns - med);
    }
    return all > 0 ? over / all : 0;
}

/* ---- what counts is what ran inside the steps ------------------------------------------
 *
 * The synchronizations, item() calls, optimizer spans and kernel occupancy
 * that findings weigh are kept as spans while the trace is read and
 * clipped to the steps at the end: a span outside every step (the
 * profiler's exit cudaDeviceSynchronize, warm-up before the first step)
 * is not step time. A span nested in one of the same name on its thread
 * counts once, as torch's table counts it. */

enum { W_SYNC, W_ITEM, W_OPTIM };
#define W_NAMES 16
typedef struct w_span { int64_t ts, end, tid; int slot; } w_span;
/* a kernel with its occupancy: 16 bytes (a duration past 2.1 s is cut there) */
typedef struct w_kernel { int64_t ts; int32_t dur; float occ; } w_kernel;
typedef struct w_name { char name[96]; int what; int64_t ns; uint64_t calls; } w_name;
typedef struct in_steps {
    w_name names[W_NAMES]; int n_names;
    w_span *v; size_t n, cap;        /* host spans of the names above */
    w_kernel *k; size_t nk, capk;    /* kernels with an est. achieved occupancy */
} in_steps;

/* Room for one more item of size elem in *v (n used of *cap). */
static void *w_room(void *v, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap) return v;
    size_t nc = *cap ? *cap * 2 : 256;
    void *nv = realloc(v, nc * elem);
    if (!nv) abort();
    *cap = nc;
    return nv;
}

static bool sv_is(tpa_sv n, const char *s) { return n.n == strlen(s) && (!n.n || memcmp(n.p, s, n.n) == 0); }

/* "optimizer" anywhere in the name, any case (memchr finds the candidates). */
static bool sv_optimizer(tpa_sv n)
{
    static const char w[] = "ptimizer";
    if (!n.n) return false;  /* an absent name has no text (p may be NULL) */
    for (const char *p = n.p, *end = n.p + n.n; p < end; p++) {
        p = memchr(p, 'p', (size_t)(end - p));
        if (!p) return false;
        if (p == n.p || (p[-1] | 0x20) != 'o' || (size_t)(end - p) < sizeof w - 1) continue;
        size_t k = 1;
        while (k < sizeof w - 1 && (p[k] | 0x20) == w[k]) k++;
        if (k == sizeof w - 1) return true;
    }
    return false;
}

static int w_slot(in_steps *w, tpa_sv name, int what)
{
    size_t n = name.n < sizeof w->names[0].name - 1 ? name.n : sizeof w->names[0].name - 1;
    for (int i = 0; i < w->n_names; i++)
        if (w->names[i].what == what && strlen(w->names[i].name) == n && memcmp(w->names[i].name, name.p, n) == 0) return i;
    if (w->n_names == W_NAMES) return -1;
    w_name *x = &w->names[w->n_names];
    memcpy(x->name, name.p, n);
    x->name[n] = 0;
    x->what = what;
    return w->n_names++;
}

static void in_steps_feed(in_steps *w, const tpa_event *ev, int kind)
{
    if (ev->ph != 'X' || !ev->has_ts || (ev->has_dur && ev->dur_ns < 0)) return;
    int64_t end = ev->ts_ns + (ev->has_dur ? ev->dur_ns : 0);
    if (kind == TPA_K_KERNEL) {
        if (ev->occupancy >= 0 && end > ev->ts_ns) {
            w->k = w_room(w->k, w->nk, &w->capk, sizeof *w->k);
            w->k[w->nk++] = (w_kernel){ ev->ts_ns, end - ev->ts_ns > INT32_MAX ? INT32_MAX : (int32_t)(end - ev->ts_ns),
                                        (float)ev->occupancy };
        }
        return;
    }
    int what = -1;
    if (kind == TPA_K_RUNTIME) {
        if (ev->name.n > 14 && (memcmp(ev->name.p, "cuda", 4) == 0 || memcmp(ev->name.p, "hip", 3) == 0)) {
            char n[32];
            size_t k = ev->name.n < sizeof n - 1 ? ev->name.n : sizeof n - 1;
            memcpy(n, ev->name.p, k);
            n[k] = 0;
            if (is_sync_call(n)) what = W_SYNC;
        }
    } else if (kind == TPA_K_CPU || kind == TPA_K_ANNOTATION) {
        if (sv_is(ev->name, "aten::item") || sv_is(ev->name, "aten::_local_scalar_dense")) what = W_ITEM;
        else if (sv_optimizer(ev->name)) what = W_OPTIM;
    }
    if (what < 0) return;
    int slot = w_slot(w, ev->name, what);
    if (slot < 0) return;
    w->v = w_room(w->v, w->n, &w->cap, sizeof *w->v);
    w->v[w->n++] = (w_span){ ev->ts_ns, end, ev->tid, slot };
}

/* Whether a host span starting at ts is a step's own (starts inside its
 * host span, as torch nests it under ProfilerStep#N); every span without steps. */
static bool in_host_step(const tpa_steps_result *s, int64_t ts)
{
    if (!s->n) return true;
    size_t lo = 0, hi = s->n;  /* rows are in order of start, so are their host spans */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->rows[mid].host_start_ns <= ts) lo = mid + 1; else hi = mid;
    }
    return lo && ts < s->rows[lo - 1].host_end_ns;
}

/* The part of [a, b) inside the steps (all of it without steps). */
static int64_t clip_to_steps(const tpa_steps_result *s, int64_t a, int64_t b)
{
    if (!s->n) return b - a;
    size_t lo = 0, hi = s->n;  /* first step ending after a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->rows[mid].start_ns + s->rows[mid].dur_ns <= a) lo = mid + 1; else hi = mid;
    }
    int64_t in = 0;
    for (size_t i = lo; i < s->n && s->rows[i].start_ns <= b; i++) {
        int64_t x = a > s->rows[i].start_ns ? a : s->rows[i].start_ns;
        int64_t y = b < s->rows[i].start_ns + s->rows[i].dur_ns ? b : s->rows[i].start_ns + s->rows[i].dur_ns;
        if (y > x) in += y - x;
    }
    return in;
}

static int w_cmp(const void *a, const void *b)
{
    const w_span *x = a, *y = b;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Each name's calls and time inside the steps; the occupancy statistics of
 * the kernel time inside them. Host spans count when they start inside a
 * step's host span; kernels for the part of them inside the steps. */
static void in_steps_finish(in_steps *w, tpa_diagnosis *d)
{
    if (w->n) qsort(w->v, w->n, sizeof *w->v, w_cmp);
    int64_t open_end = INT64_MIN;
    for (size_t i = 0; i < w->n; i++) {
        const w_span *x = &w->v[i];
        if (!i || x->slot != w->v[i - 1].slot || x->tid != w->v[i - 1].tid) open_end = INT64_MIN;
        if (x->ts < open_end) {  /* nested in one of its name: the outer one counted it */
            if (x->end > open_end) open_end = x->end;
            continue;
        }
        open_end = x->end;
        if (!in_host_step(&d->steps, x->ts)) continue;
        w->names[x->slot].ns = tpa_sat_add(w->names[x->slot].ns, x->end - x->ts);
        w->names[x->slot].calls++;
    }
    double occ = 0;
    d->occ_kernel_ns = d->occ_low_ns = 0;
    for (size_t i = 0; i < w->nk; i++) {
        int64_t ns = clip_to_steps(&d->steps, w->k[i].ts, w->k[i].ts + w->k[i].dur);
        if (ns <= 0) continue;
        d->occ_kernel_ns = tpa_sat_add(d->occ_kernel_ns, ns);
        occ += (double)w->k[i].occ * (double)ns;
        if (w->k[i].occ < OCC_LOW_PCT) d->occ_low_ns = tpa_sat_add(d->occ_low_ns, ns);
    }
    d->occ_weighted = d->occ_kernel_ns ? occ / (double)d->occ_kernel_ns : 0;
    free(w->v);
    free(w->k);
    w->v = NULL;
    w->k = NULL;
}

static void find_all(tpa_diagnosis *d, const in_steps *w)
{
    const tpa_report *rep = &d->rep;
    int64_t sync_calls = 0, item = 0, optim = 0, tiny_ns = 0, kern_ns = 0;
    uint64_t sync_n = 0, item_n = 0, kern_n = 0, tiny_n = 0;
    const char *optim_name = NULL;
    for (size_t i = 0; i < rep->n_ops; i++) {
        const tpa_op *o = &rep->ops[i];
        if (is_gpu_table(o->table)) {
            if (o->kind != TPA_K_KERNEL) continue;
            kern_ns = tpa_sat_add(kern_ns, o->total_ns);
            kern_n += o->count;
            if (o->count && o->total_ns / (int64_t)o->count < TINY_KERNEL_NS) { tiny_ns = tpa_sat_add(tiny_ns, o->total_ns); tiny_n += o->count; }
            continue;
        }
    }
    for (int i = 0; i < w->n_names; i++) {  /* inside the steps only */
        const w_name *x = &w->names[i];
        if (x->what == W_SYNC) { sync_calls = tpa_sat_add(sync_calls, x->ns); sync_n += x->calls; }
        else if (x->what == W_ITEM) { if (x->ns > item || (!item && x->calls > item_n)) { item = x->ns; item_n = x->calls; } }
        else if (x->ns > optim) { optim = x->ns; optim_name = x->name; }
    }
    d->kernel_calls = kern_n;
    d->kernel_avg_ns = kern_n ? kern_ns / (int64_t)kern_n : 0;

    /* dropped device events: no GPU statistic is whole, so none is a finding */
    bool gpu_ok = !d->steps.negative_device;
    d->gpu_withheld = d->steps.negative_device;
    part_finding(d, TPA_P_DATALOAD, DATALOAD_MIN, RUN_TEXTS[0].id, RUN_TEXTS[0].title,
                 advice(d, RUN_TEXTS[0].torch, RUN_TEXTS[0].other),
                 TPA_K_COUNT, TPA_K_COUNT, false);
    if (gpu_ok) part_finding(d, TPA_P_MEMCPY, MEMCPY_MIN, "memcpy", "Host<->device copies not hidden by compute",
                 advice(d, "pin host memory (pin_memory=True) and copy with .to(device, non_blocking=True); keep "
                        "tensors on the GPU between steps; avoid .cpu()/.numpy() inside the step",
                        "copy from pinned host buffers (cudaHostAlloc) with cudaMemcpyAsync on a stream that "
                        "overlaps compute; keep data on the device between steps"),
                 TPA_K_MEMCPY, TPA_K_MEMCPY, true);
    if (gpu_ok) part_finding(d, TPA_P_COMM, COMM_MIN, "communication", "Communication (NCCL/RCCL) not overlapped with compute",
                 advice(d, "overlap gradients' all-reduce with backward (DDP bucket_cap_mb, gradient_as_bucket_view), "
                        "fewer/larger buckets, gradient accumulation (no_sync) to communicate less often; check "
                        "for stragglers on other ranks",
                        "start each all-reduce as soon as its gradients are ready, on its own stream, overlapped "
                        "with the rest of backward; fewer, larger messages; check for stragglers on other ranks"),
                 TPA_K_COMM, TPA_K_COMM, true);

    if (gpu_ok && d->has_gpu && (d->steps.n || d->steps.has_whole) && d->mean_ns) {
        double idle = d->gpu_idle, host = (double)(d->part_mean_ns[TPA_P_CPU] + d->part_mean_ns[TPA_P_RUNTIME]) / (double)d->mean_ns;
        if (idle >= LAUNCH_IDLE_MIN && host >= LAUNCH_HOST_MIN) {
            tpa_finding *f = add_finding(d, "launch_bound", "GPU idle while the CPU works (launch/host bound)", idle,
                                         advice(d, "capture the step with CUDA graphs (torch.compile mode=\"reduce-overhead\"), "
                                                "use larger batches, fuse small ops (torch.compile), and move Python-side "
                                                "work out of the step",
                                                "capture the step as a CUDA graph, give each kernel more work (larger "
                                                "batches), fuse small kernels, and move host work out of the step"));
            if (f) {
                snprintf(f->evidence, sizeof f->evidence, "GPU idle %.1f%% of the step; host CPU ops %.1f%% and "
                         "runtime calls %.1f%% with no GPU work running; top host ops: ", 100 * idle,
                         100.0 * (double)d->part_mean_ns[TPA_P_CPU] / (double)d->mean_ns,
                         100.0 * (double)d->part_mean_ns[TPA_P_RUNTIME] / (double)d->mean_ns);
                top_names(f->evidence, sizeof f->evidence, rep, false, TPA_K_CPU, TPA_K_CPU, 3);
            }
        }
    }
    if (gpu_ok && kern_n >= TINY_MIN_CALLS && d->kernel_avg_ns < TINY_KERNEL_NS && share_of(d, tiny_ns) >= TINY_MIN) {
        tpa_finding *f = add_finding(d, "tiny_kernels", "Many tiny kernels (launch overhead dominates)",
                                     share_of(d, tiny_ns),
                                     advice(d, "fuse elementwise ops (torch.compile), use fused/foreach optimizers, "
                                            "larger batches; CUDA graphs remove per-kernel launch cost",
                                            "fuse small kernels into larger ones, give each more work (larger "
                                            "batches); CUDA graphs remove per-kernel launch cost"));
        if (f) snprintf(f->evidence, sizeof f->evidence, "%" PRIu64 " kernels, average %.2f us; %" PRIu64
                        " calls of kernels averaging under 10 us; GPU idle %.1f%% of the step", kern_n,
                        (double)d->kernel_avg_ns / 1e3, tiny_n, 100 * d->gpu_idle);
    }
    if (optim_name && share_of(d, optim) >= OPTIM_MIN) {
        tpa_finding *f = add_finding(d, RUN_TEXTS[1].id, RUN_TEXTS[1].title, share_of(d, optim),
                                     advice(d, RUN_TEXTS[1].torch, RUN_TEXTS[1].other));
        char dur[32], nm[88];
        tpa_fmt_dur(dur, sizeof dur, optim);
        if (f) snprintf(f->evidence, sizeof f->evidence, "%s: %s in total", cut_name(nm, sizeof nm, optim_name, 80), dur);
    }
    int64_t sync = sync_calls > item ? sync_calls : item;
    if (share_of(d, sync) >= SYNC_MIN) {
        tpa_finding *f = add_finding(d, "synchronization", "Host-device synchronizations block the CPU", share_of(d, sync),
                                     advice(d, "remove .item()/.cpu()/print of GPU tensors and explicit synchronize calls "
                                            "from the step (log every N steps, keep metrics on the GPU); use "
                                            "non_blocking copies and events instead of device-wide syncs",
                                            "remove cudaDeviceSynchronize and blocking copies from the step (read "
                                            "results back every N steps); wait on a CUDA event or one stream where a "
                                            "result is needed"));
        char a[32], b[32];
        tpa_fmt_dur(a, sizeof a, sync_calls);
        tpa_fmt_dur(b, sizeof b, item);
        if (f) snprintf(f->evidence, sizeof f->evidence, "cuda*Synchronize: %" PRIu64 " calls, %s; aten::item/"
                        "_local_scalar_dense: %" PRIu64 " calls, %s", sync_n, a, item_n, b);
    }
    if (gpu_ok) pageable_finding(d);
    if (gpu_ok) occupancy_finding(d);
    if (d->steps.n >= VARIANCE_MIN_STEPS) {
        int64_t med = tpa_steps_quantile(&d->steps, -1, 0.5), p90 = tpa_steps_quantile(&d->steps, -1, 0.9);
        if (med > 0 && (double)p90 / (double)med > VARIANCE_RATIO) {
            tpa_finding *f = add_finding(d, RUN_TEXTS[2].id, RUN_TEXTS[2].title,
                                         slow_share(&d->steps, med),
                                         advice(d, RUN_TEXTS[2].torch, RUN_TEXTS[2].other));
            char a[32], b[32];
            tpa_fmt_dur(a, sizeof a, med);
            tpa_fmt_dur(b, sizeof b, p90);
            if (f) snprintf(f->evidence, sizeof f->evidence, "median step %s, p90 %s (x%.2f) over %zu steps",
                            a, b, (double)p90 / (double)med, d->steps.n);
        }
    }
}

static int finding_cmp(const void *a, const void *b)
{
    const tpa_finding *x = a, *y = b;
    return x->share > y->share ? -1 : x->share < y->share;
}

struct tpa_diagnose_run {
    tpa_diagnosis *d;
    const char *path;
    tpa_report_run *rep;
    tpa_steps_ctx *steps;
    in_steps w;
};

tpa_diagnose_run *tpa_diagnose_begin(tpa_diagnosis *d, const char *path)
{
    static const tpa_report_opts opts = { .group_steps = true };
    memset(d, 0, sizeof *d);
    d->path = path;
    tpa_diagnose_run *run = calloc(1, sizeof *run);
    if (!run) abort();
    run->d = d;
    run->path = path;
    run->rep = tpa_report_begin(&d->rep, path, &opts, NULL);  /* no steps option: cannot fail */
    run->steps = tpa_steps_begin(path);
    return run;
}

void tpa_diagnose_feed(tpa_diagnose_run *run, const tpa_event *ev, int kind)
{
    tpa_report_feed_kind(run->rep, ev, kind);
    tpa_steps_feed_kind(run->steps, ev, kind);
    in_steps_feed(&run->w, ev, kind);
    if (!run->d->torch && kind == TPA_K_CPU && ev->name.n > 6 && memcmp(ev->name.p, "aten::", 6) == 0)
        run->d->torch = true;  /* a PyTorch program: advice in its terms */
}

int tpa_diagnose_end(tpa_diagnose_run *run, const tpa_meta *meta, bool read_failed, tpa_error *err)
{
    tpa_diagnosis *d = run->d;
    int rc = read_failed ? -1 : 0;
    in_steps w = run->w;
    tpa_report_end(run->rep, meta, run->path);
    tpa_error serr;
    if (tpa_steps_finish(run->steps, meta->truncated, &d->steps, read_failed ? &serr : err) != 0 && !read_failed) rc = -1;
    free(run);
    if (rc < 0) { free(w.v); free(w.k); tpa_diagnosis_free(d); return -1; }
    in_steps_finish(&w, d);
    tpa_sort_ops(&d->rep, "self");
    d->has_gpu = d->steps.has_gpu;
    if (d->steps.n) {
        d->mean_ns = tpa_steps_mean(&d->steps, -1);
        for (int p = 0; p < TPA_P_COUNT; p++) d->part_mean_ns[p] = tpa_steps_mean(&d->steps, p);
        for (size_t i = 0; i < d->steps.n; i++) d->basis_ns = tpa_sat_add(d->basis_ns, d->steps.rows[i].dur_ns);
        if (d->has_gpu && d->mean_ns)
            d->gpu_idle = 1.0 - (double)tpa_steps_mean(&d->steps, TPA_P_COUNT) / (double)d->mean_ns;
    } else if (d->steps.has_whole) {  /* no steps: the whole span as one */
        const tpa_step_row *w = &d->steps.whole;
        d->mean_ns = d->basis_ns = w->dur_ns;
        for (int p = 0; p < TPA_P_COUNT; p++) d->part_mean_ns[p] = w->part_ns[p];
        if (d->has_gpu && w->dur_ns) d->gpu_idle = 1.0 - (double)w->gpu_busy_ns / (double)w->dur_ns;
    } else {
        d->basis_ns = d->steps.span_end_ns - d->steps.span_start_ns;
    }
    find_all(d, &w);
    if (d->n_findings) qsort(d->findings, d->n_findings, sizeof *d->findings, finding_cmp);
    return 0;
}

int tpa_diagnose_file(const char *path, tpa_diagnosis *d, tpa_error *err)
{
    memset(d, 0, sizeof *d);
    tpa_reader *r = tpa_reader_open(path, err);
    if (!r) return -1;
    tpa_diagnose_run *run = tpa_diagnose_begin(d, path);
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0)  /* one pass serves both */
        tpa_diagnose_feed(run, &ev, tpa_event_kind(&ev));
    rc = tpa_diagnose_end(run, tpa_reader_meta(r), rc < 0, err);
    tpa_reader_close(r);
    return rc;
}

void tpa_diagnosis_free(tpa_diagnosis *d)
{
    tpa_report_free(&d->rep);
    tpa_steps_free(&d->steps);
}
