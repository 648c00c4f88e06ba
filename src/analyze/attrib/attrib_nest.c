/* attrib_nest.c - a file's buffered spans nested per thread with torch's
 * rules, device events attributed to their launching operators, nodes and
 * device events handed to the visitors (see attrib.h). */
#include "analyze/attrib/attrib_priv.h"
#include "util/adaptive_sort.h"

/* ---- nesting ----------------------------------------------------------------- */

static void emit_node(tpa_attrib *at, const tpa_at_node *n)
{
    for (int i = 0; i < at->nvis; i++)
        if (at->vis[i].node) at->vis[i].node(at->vis[i].user, at, n);
}

/* A device record's key (correlation or External id) and index, ordered
 * by key then index. */
static inline bool keyed_before(const keyed *x, const keyed *y)
{
    return x->key != y->key ? x->key < y->key : x->idx < y->idx;
}

ADAPTIVE_SORT(sort_hrecs, hrec, tpa__at_host_before)
ADAPTIVE_SORT(sort_keyed, keyed, keyed_before)

/* buf, or a larger one in its place (unkept contents), with room for n
 * items of size. */
static void *reserve(void *buf, size_t *cap, size_t n, size_t size)
{
    if (*cap >= n && buf) return buf;
    size_t nc = *cap ? *cap : 1024;
    while (nc < n) nc *= 2;
    free(buf);
    if (!(buf = malloc(nc * size))) abort();
    *cap = nc;
    return buf;
}

/* Each list in host_before order (the feed grouped them by thread and
 * noted the lists that arrived out of order): the sort's scratch (at->htmp;
 * the device index has its own) holds only the spans far from their place. */
static void sort_host(tpa_attrib *at)
{
    for (size_t t = 0; t < at->work.nlists; t++) {
        host_list *l = &at->work.host[t];
        if (l->unsorted) sort_hrecs_scratched(l->r, l->n, &at->htmp, &at->chtmp);
    }
}

/* First index of a[0..n) whose key is >= key, searched from *hint (the
 * last answer: keys come mostly in order) outwards; *hint takes it. */
static size_t seek(const keyed *a, size_t n, uint64_t key, size_t *hint)
{
    size_t lo = 0, hi = n, h = *hint < n ? *hint : n;
    if (h < n && a[h].key < key) {          /* ahead: gallop forwards */
        size_t step = 1;
        lo = h + 1;
        while (lo + step < n && a[lo + step - 1].key < key) { lo += step; step *= 2; }
        hi = lo + step < n ? lo + step : n;
    } else if (h > 0 && a[h - 1].key >= key) { /* behind: gallop backwards */
        size_t step = 1;
        hi = h - 1;
        while (hi >= step && a[hi - step].key >= key) { hi -= step; step *= 2; }
        lo = hi >= step ? hi - step + 1 : 0;
    } else {
        return *hint = h;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid].key < key) lo = mid + 1; else hi = mid;
    }
    return *hint = lo;
}

/* The chunk's runtime calls' correlation ids (the odd lists of
 * HOST_LIST), in list order, into at->corrs; returns how many. */
static size_t collect_corrs(tpa_attrib *at)
{
    size_t calls = 0, nc = 0;
    for (size_t t = 1; t < at->work.nlists; t += 2) calls += at->work.host[t].n;
    keyed *corrs = at->corrs = reserve(at->corrs, &at->ccorrs, calls, sizeof *corrs);
    for (size_t t = 1; t < at->work.nlists; t += 2)
        for (size_t i = 0; i < at->work.host[t].n; i++)
            if (at->work.host[t].r[i].has_key) corrs[nc++] = (keyed){ at->work.host[t].r[i].key, 0 };
    return nc;
}

/* Indexes the chunk's device records: by correlation (those a runtime call
 * of the chunk launched: the nc of collect_corrs) and by External id (the
 * others). Reads no host list and sorts through a scratch of its own
 * (at->ktmp), so the host sort may run beside it. */
static void index_gpu(tpa_attrib *at, size_t nc)
{
    size_t n_corr = 0, n_ext = 0, hint = 0;
    keyed *tmp = at->ktmp = reserve(at->ktmp, &at->cktmp, nc > at->work.ngpu ? nc : at->work.ngpu, sizeof *tmp);
    keyed *corrs = at->corrs;
    /* by correlation from the front, by External id from the back */
    keyed *dev = at->by_dev = reserve(at->by_dev, &at->cby_dev, at->work.ngpu, sizeof *dev);
    sort_keyed(corrs, nc, tmp);
    for (size_t i = 0; i < at->work.ngpu; i++) {
        grec *g = &at->work.gpu[i];
        g->matched = g->has_corr && nc && seek(corrs, nc, g->corr, &hint) < nc && corrs[hint].key == g->corr;
        if (g->matched) dev[n_corr++] = (keyed){ g->corr, (uint32_t)i };
        else if (g->has_ext) dev[at->work.ngpu - ++n_ext] = (keyed){ g->ext, (uint32_t)i };
    }
    at->by_corr = dev;
    at->by_ext = dev + (at->work.ngpu - n_ext);
    sort_keyed(at->by_corr, n_corr, tmp);
    sort_keyed(at->by_ext, n_ext, tmp);
    at->nby_corr = n_corr;
    at->nby_ext = n_ext;
    at->hint_corr = at->hint_ext = 0;
}

/* Gives the device records with this key to the operator frame (or to no
 * operator when op_frame is NO_FRAME); returns their time, *tc the part of
 * it in kernels that use tensor cores. */
static int64_t attribute(tpa_attrib *at, uint64_t key, bool ext, uint32_t op_name, uint32_t runtime,
                         const launch_cfg *launch, int64_t *tc)
{
    const keyed *idx = ext ? at->by_ext : at->by_corr;
    size_t n = ext ? at->nby_ext : at->nby_corr;
    int64_t sum = 0;
    *tc = 0;
    for (size_t i = seek(idx, n, key, ext ? &at->hint_ext : &at->hint_corr); i < n && idx[i].key == key; i++) {
        grec *g = &at->work.gpu[idx[i].idx];
        if (ext && g->g.op) continue;  /* taken already */
        g->g.op = op_name;
        g->g.runtime = runtime;
        if (launch && !g->g.grid[0] && !g->g.block[0]) {
            memcpy(g->g.grid, launch->grid, sizeof g->g.grid);
            memcpy(g->g.block, launch->block, sizeof g->g.block);
            if (g->g.shmem < 0) g->g.shmem = launch->shmem;
        }
        sum = tpa_sat_add(sum, g->g.dur_ns);
        if (g->g.kind == TPA_K_KERNEL && tpa__at_name_flag(at, g->g.name, NAME_TC_KERNEL)) {
            g->g.tensor_cores = true;
            *tc = tpa_sat_add(*tc, g->g.dur_ns);
        }
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
    p->tc_child = tpa_sat_add(p->tc_child, c->tc_total_ns);
    /* the plugin's rule: an operator with an eligible child is eligible */
    if (c->tc_eligible && p->n.kind == TPA_AT_OP) p->n.tc_eligible = true;
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
            f->tc_own = c->tc_self_ns;
            f->tc_child = c->tc_total_ns - c->tc_self_ns;
            f->n.tc_eligible |= c->tc_eligible;
            at->stats.folded++;
        } else {
            emit_node(at, c);
        }
    }
    f->n.child_ns = f->child_sum;
    f->n.dev_self_ns = f->dev_own;
    f->n.dev_total_ns = tpa_sat_add(f->dev_own, f->dev_child);
    f->n.tc_self_ns = f->tc_own;
    f->n.tc_total_ns = tpa_sat_add(f->tc_own, f->tc_child);
    if (f->tc_own > 0 && f->n.kind == TPA_AT_OP) f->n.tc_eligible = true;  /* the plugin's "new eligible operator" */
    if (at->nstack) give_child(at, &at->stack[at->nstack - 1], &f->n);
    else emit_node(at, &f->n);
}

static void push_span(tpa_attrib *at, const hrec *r)
{
    GROW(at->stack, at->nstack, at->cstack);
    const frame *p = at->nstack ? &at->stack[at->nstack - 1] : NULL;
    frame *f = &at->stack[at->nstack];
    /* field by field: a memset of the whole frame (its pending node
     * included, read only once set) was a rep stos per span */
    f->n = (tpa_at_node){ .start_ns = r->start, .dur_ns = r->end - r->start, .name = r->name,
                          .shapes = r->kind == TPA_AT_RUNTIME ? 0 : r->u.shapes, .kind = r->kind,
                          .is_module = r->is_module, .thread = at->nest_thread };
    f->end = r->end;
    f->child_sum = f->dev_own = f->dev_child = f->tc_own = f->tc_child = 0;
    f->n.tc_eligible = r->kind != TPA_AT_RUNTIME && tpa__at_name_flag(at, r->name, NAME_TC_OP);
    f->nchild = 0;
    f->has_pending = false;
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
        if (r->has_key && at->nby_ext)
            f->dev_own = attribute(at, r->key, true, r->name, 0, NULL, &f->tc_own);
    } else if (r->kind == TPA_AT_RUNTIME && r->has_key) {
        uint32_t opn = f->op_frame == NO_FRAME ? 0 : at->stack[f->op_frame].n.name;
        int64_t tc, t = attribute(at, r->key, false, opn, r->name,
                                  r->u.launch ? &at->work.launches[r->u.launch - 1] : NULL, &tc);
        if (f->op_frame != NO_FRAME) {
            frame *op = &at->stack[f->op_frame];
            op->dev_own = tpa_sat_add(op->dev_own, t);
            op->tc_own = tpa_sat_add(op->tc_own, tc);
        }
    }
    at->nstack++;
}

/* The next span of a thread's two sorted lists in host_before order. */
static const hrec *next_of_two(const host_list *a, size_t *i, const host_list *b, size_t *j)
{
    if (*i == a->n) return *j < b->n ? &b->r[(*j)++] : NULL;
    if (*j == b->n || tpa__at_host_before(&a->r[*i], &b->r[*j])) return &a->r[(*i)++];
    return &b->r[(*j)++];
}

static void nest_all(tpa_attrib *at)
{
    static const host_list none = { NULL, 0, 0, false };
    for (size_t t = 0; t < at->work.nlists; t += 2) {
        const host_list *a = &at->work.host[t], *b = t + 1 < at->work.nlists ? &at->work.host[t + 1] : &none;
        size_t i = 0, j = 0;
        at->nstack = 0;
        at->nest_thread = (uint32_t)(t / 2);  /* HOST_LIST's thread */
        for (const hrec *r; (r = next_of_two(a, &i, b, &j));) {
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
    for (size_t i = 0; i < at->work.ngpu; i++) {
        const grec *g = &at->work.gpu[i];
        if (g->matched) at->stats.gpu_by_correlation++;
        else if (g->g.op) at->stats.gpu_by_external_id++;
        else at->stats.gpu_unattributed++;
        if (!g->g.op && g->g.kind == TPA_K_KERNEL)  /* attribute() flagged the others */
            at->work.gpu[i].g.tensor_cores = tpa__at_name_flag(at, g->g.name, NAME_TC_KERNEL);
        for (int v = 0; v < at->nvis; v++)
            if (at->vis[v].gpu) at->vis[v].gpu(at->vis[v].user, at, &g->g);
    }
}

void tpa__at_drop_scratch(tpa_attrib *at)
{
    free(at->htmp);
    free(at->corrs);
    free(at->by_dev);
    free(at->ktmp);
    at->htmp = NULL;
    at->corrs = at->by_dev = at->by_corr = at->by_ext = at->ktmp = NULL;
    at->chtmp = at->ccorrs = at->cby_dev = at->cktmp = 0;
}

/* Nests the sorted and indexed work chunk, hands its nodes and device
 * records to the visitors and empties it (its buffers and the sorts'
 * scratch are kept for the next chunk). */
static void finish_chunk(tpa_attrib *at)
{
    nest_all(at);
    emit_gpu(at);
    for (size_t t = 0; t < at->work.nlists; t++) {
        at->work.host[t].n = 0;
        at->work.host[t].unsorted = false;
    }
    at->work.nhost = at->work.ngpu = at->work.nlaunches = 0;
    at->nby_corr = at->nby_ext = 0;
}

static void nest_work(tpa_attrib *at)
{
    index_gpu(at, collect_corrs(at));
    sort_host(at);
    finish_chunk(at);
}

/* ---- the nester thread -------------------------------------------------------- */

/* With threads to spare, a full chunk is nested on a thread of its own
 * (a tpu_worker) while the feed goes on into the other chunk's buffers:
 * the page's other lane no longer waits for the nesting at each chunk's
 * end. One chunk at a time, in file order, so the visitors see what they
 * saw on one thread. */
static void nest_work_job(void *at) { nest_work(at); }
static void sort_host_job(void *at) { sort_host(at); }

/* A file's last chunk, which the feeding thread waits for: the nester
 * thread sorts the host lists while this one indexes the device records
 * (the correlation ids read first, before the runtime lists move). */
static void nest_work_beside(tpa_attrib *at)
{
    size_t nc = collect_corrs(at);
    tpu_worker_post(at->nester, sort_host_job, at);
    index_gpu(at, nc);
    tpu_worker_wait(at->nester);
    finish_chunk(at);
}

void tpa__at_hand_over(tpa_attrib *at, bool last)
{
    tpu_worker_wait(at->nester);
    at_chunk full = at->fill;
    at->fill = at->work;  /* nested and empty: the feed goes on in its buffers */
    at->work = full;
    if (at->may_thread && !at->nester) at->nester = tpu_worker_start(1);
    if (!at->nester) {
        nest_work(at);
    } else if (last) {
        nest_work_beside(at);
    } else {
        tpu_worker_post(at->nester, nest_work_job, at);
        return;
    }
    if (last) tpa__at_drop_scratch(at);
}
