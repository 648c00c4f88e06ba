/* attrib_nest.c - a file's buffered spans nested per thread with torch's
 * rules, device events attributed to their launching operators, nodes and
 * device events handed to the visitors (see attrib.h). */
#include "attrib_priv.h"

/* ---- nesting ----------------------------------------------------------------- */

static void emit_node(tpa_attrib *at, const tpa_at_node *n)
{
    for (int i = 0; i < at->nvis; i++)
        if (at->vis[i].node) at->vis[i].node(at->vis[i].user, at, n);
}

/* Thread, then start, then the longer one first, then arrival: a total order. */
static inline bool host_before(const hrec *x, const hrec *y)
{
    if (x->thread != y->thread) return x->thread < y->thread;
    if (x->start != y->start) return x->start < y->start;
    if (x->end != y->end) return x->end > y->end;
    return x->seq < y->seq;
}

/* Sorts the host spans in host_before order: a merge sort with the
 * comparison inlined (qsort's calls and byte copies were a sixth of the
 * page's time), runs of 16 by insertion, merges skipped where two runs are
 * already in order (a trace is mostly sorted by time). */
static void sort_host(hrec *a, size_t n)
{
    enum { RUN = 16 };
    for (size_t lo = 0; lo < n; lo += RUN) {
        size_t hi = lo + RUN < n ? lo + RUN : n;
        for (size_t i = lo + 1; i < hi; i++) {
            if (!host_before(&a[i], &a[i - 1])) continue;
            hrec x = a[i];
            size_t j = i;
            do { a[j] = a[j - 1]; j--; } while (j > lo && host_before(&x, &a[j - 1]));
            a[j] = x;
        }
    }
    if (n <= RUN) return;
    hrec *tmp = malloc(n * sizeof *tmp);
    if (!tmp) abort();
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo + w < n; lo += 2 * w) {
            size_t mid = lo + w, hi = lo + 2 * w < n ? lo + 2 * w : n;
            if (!host_before(&a[mid], &a[mid - 1])) continue;
            memcpy(tmp + lo, a + lo, (hi - lo) * sizeof *a);
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) a[k++] = host_before(&tmp[j], &tmp[i]) ? tmp[j++] : tmp[i++];
            while (i < mid) a[k++] = tmp[i++];
            while (j < hi) a[k++] = tmp[j++];
        }
    }
    free(tmp);
}

/* qsort_r comparators over indexes into the device records (ctx): pages
 * may be built on several threads at once, so no global base. */
static int cmp_corr(const void *a, const void *b, void *ctx)
{
    const grec *g = ctx;
    uint64_t x = g[*(const uint32_t *)a].corr, y = g[*(const uint32_t *)b].corr;
    return x < y ? -1 : x > y;
}
static int cmp_ext(const void *a, const void *b, void *ctx)
{
    const grec *g = ctx;
    uint64_t x = g[*(const uint32_t *)a].ext, y = g[*(const uint32_t *)b].ext;
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
    if (nc) qsort(corrs, nc, sizeof *corrs, cmp_u64);   /* corrs is NULL with no host span */
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
    if (at->ngpu) qsort_r(at->by_corr, at->ngpu, sizeof *at->by_corr, cmp_corr, at->gpu);
    if (n_ext) qsort_r(at->by_ext, n_ext, sizeof *at->by_ext, cmp_ext, at->gpu);
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
        f->ctx_module = tpa__at_pair_id(&at->modules, f->ctx_module, r->name);
    } else if (r->kind == TPA_AT_PYTHON) {
        f->ctx_stack = tpa__at_pair_id(&at->stacks, f->ctx_stack, r->name);
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

void tpa__at_process_chunk(tpa_attrib *at)
{
    index_gpu(at);
    sort_host(at->host, at->nhost);
    nest_all(at);
    emit_gpu(at);
    at->nhost = at->ngpu = 0;
    at->nby_ext = 0;
    at->nlaunches = 0;
}

