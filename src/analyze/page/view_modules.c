/* view_modules.c - the page's Modules view: the nn.Module tree of a
 * with_modules trace ("nn.Module: Name_k" python frames, nested) or of a
 * Lightning run ("[pl][module]class: attr" record_functions, nested), with
 * calls and host/device time per module (device self: the kernels launched
 * by the operators whose innermost module it is, not its children's), the
 * module timeline (each call a bar on its thread, nested: the earliest
 * MAX_CALLS calls), and Lightning's hook table (spans named
 * "[LightningModule]...", "[Callback]...", "[Strategy]...", any
 * "[Owner]hook", with or without Lightning's "[pl][profile]" prefix).
 */
#include "analyze/attrib/attrib.h"
#include "analyze/page/view.h"

#include <stdlib.h>
#include <string.h>

#ifdef TP_SMALL_LIMITS
#define TOP_MODULES 16
#define TOP_HOOKS 16
#define MAX_ROWS 256
#define MAX_CALLS 24
#else
#define TOP_MODULES 5000
#define TOP_HOOKS 2000
#define MAX_ROWS ((size_t)1 << 20)
#define MAX_CALLS 10000     /* module calls the timeline carries (~30 bytes each in the page) */
#endif

typedef struct m_row {
    uint32_t id, name;    /* module tree id (or 0 for hooks), name id */
    uint64_t calls;
    int64_t total, dev_total, dev_self, min, max;
} m_row;

/* One module call of the timeline. */
typedef struct m_call { int64_t start, dur; uint32_t id, thread; } m_call;

typedef struct m_state {
    tpa_at_client c;    /* first: the class's feed and file_end take it */
    tpa_at_rows modules, hooks;  /* m_row */
    /* the timeline: the MAX_CALLS earliest calls, a max-heap on start
     * (the latest kept on top, replaced by an earlier one) */
    m_call *calls; size_t ncalls;
    uint64_t all_calls;
} m_state;

static bool call_later(const m_call *a, const m_call *b)
{
    if (a->start != b->start) return a->start > b->start;
    if (a->thread != b->thread) return a->thread > b->thread;
    return a->dur < b->dur;   /* the outer call of two that start together is the earlier */
}

static void heap_down(m_call *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && call_later(&h[l], &h[m])) m = l;
        if (r < n && call_later(&h[r], &h[m])) m = r;
        if (m == i) return;
        m_call t = h[i]; h[i] = h[m]; h[m] = t;
        i = m;
    }
}

/* O(log MAX_CALLS) a call: the page keeps the earliest calls whatever the trace's size. */
static void keep_call(m_state *s, const tpa_at_node *n)
{
    m_call c = { n->start_ns, n->dur_ns, n->module, n->thread };
    s->all_calls++;
    if (s->ncalls < MAX_CALLS) {
        size_t i = s->ncalls++;
        s->calls[i] = c;
        while (i && call_later(&s->calls[i], &s->calls[(i - 1) / 2])) {
            m_call t = s->calls[i]; s->calls[i] = s->calls[(i - 1) / 2]; s->calls[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
    } else if (call_later(&s->calls[0], &c)) {
        s->calls[0] = c;
        heap_down(s->calls, s->ncalls, 0);
    }
}

static m_row *m_row_for(tpa_at_rows *t, uint64_t key)
{
    bool fresh;
    m_row *r = tpa_at_rows_get(t, key, &fresh);
    if (r && fresh) r->min = INT64_MAX;
    return r;
}

static void m_add(m_row *r, const tpa_at_node *n)
{
    r->calls++;
    r->total = tpa_sat_add(r->total, n->dur_ns);
    r->dev_total = tpa_sat_add(r->dev_total, n->dev_total_ns);
    if (n->dur_ns < r->min) r->min = n->dur_ns;
    if (n->dur_ns > r->max) r->max = n->dur_ns;
}

/* "[Owner]hook" with a non-empty owner and hook. */
static bool is_hook(const char *p, size_t n)
{
    if (n < 4 || p[0] != '[') return false;
    const char *close = memchr(p, ']', n);
    return close && close > p + 1 && close < p + n - 1;
}

static void on_node(void *user, const tpa_attrib *at, const tpa_at_node *n)
{
    m_state *s = user;
    if (n->dev_self_ns && n->module) {
        /* device self of the innermost module around the launching operator
         * (nodes come children first: the module's own row may come later) */
        m_row *r = m_row_for(&s->modules, n->module);
        if (r) {
            r->id = n->module;
            r->dev_self = tpa_sat_add(r->dev_self, n->dev_self_ns);
        }
    }
    if (n->is_module && n->module) {
        keep_call(s, n);
        m_row *r = m_row_for(&s->modules, n->module);
        if (!r) return;
        r->id = n->module;
        r->name = n->name;
        m_add(r, n);
        return;
    }
    if (n->kind == TPA_AT_ANNOTATION || n->kind == TPA_AT_OP || n->kind == TPA_AT_PYTHON) {
        size_t len;
        const char *p = tpa_attrib_str(at, n->name, &len);
        if (!is_hook(p, len)) return;
        m_row *r = m_row_for(&s->hooks, n->name);
        if (!r) return;
        r->name = n->name;
        m_add(r, n);
    }
}

static void *m_begin(const tpa_view_input *in)
{
    m_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->modules = (tpa_at_rows){ .size = sizeof(m_row), .max = MAX_ROWS };
    s->hooks = s->modules;
    if (!(s->calls = malloc(MAX_CALLS * sizeof *s->calls))) { free(s); return NULL; }
    tpa_at_visitor v = { s, on_node, NULL };
    if (!tpa_at_client_begin(&s->c, in->attrib, &v)) { free(s->calls); free(s); return NULL; }
    return s;
}

static int m_cmp(const void *a, const void *b)
{
    const m_row *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Writes the rows that fit; returns how many. */
static size_t json_rows(tpu_json *j, const tpa_attrib *at, tpa_at_rows *t, size_t top, bool tree,
                        size_t *skipped)
{
    m_row *rows = (m_row *)(void *)t->rows;
    if (t->n) qsort(rows, t->n, sizeof *rows, m_cmp);
    size_t n = t->n < top ? t->n : top;
    tpu_json_begin_array(j);
    size_t start = j->out->len, i;
    size_t w = 0;
    for (i = 0; i < n && j->out->len - start < TPA_AT_TABLE_BYTES / 2; i++) {
        const m_row *r = &rows[i];
        if (!r->calls) continue;  /* device time of a module whose frame was never seen whole */
        w++;
        size_t len;
        const char *p = tpa_attrib_str(at, r->name, &len);
        tpu_json_begin_object(j);
        if (tree) {
            uint32_t parent;
            tpa_attrib_module(at, r->id, &parent);
            tpu_json_kv_uint(j, "id", r->id);
            tpu_json_kv_uint(j, "parent", parent);
            if (len > 11 && memcmp(p, "nn.Module: ", 11) == 0) { p += 11; len -= 11; }
            else if (len > 12 && memcmp(p, "[pl][module]", 12) == 0) { p += 12; len -= 12; }
        }
        tpu_json_key(j, "name");
        tpu_json_string_n(j, p, len);
        tpu_json_kv_uint(j, "calls", r->calls);
        tpu_json_kv_int(j, "total", r->total);
        tpu_json_kv_int(j, "dtotal", r->dev_total);
        if (tree) tpu_json_kv_int(j, "dself", r->dev_self);
        tpu_json_kv_int(j, "min", r->calls ? r->min : 0);
        tpu_json_kv_int(j, "max", r->max);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    *skipped = i - w;
    return i;
}

static int call_cmp(const void *a, const void *b)
{
    const m_call *x = a, *y = b;
    if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
    return call_later(y, x) ? -1 : call_later(x, y);
}

static const char *module_name(const tpa_attrib *at, uint32_t id, size_t *len)
{
    uint32_t parent;
    const char *p = tpa_attrib_str(at, tpa_attrib_module(at, id, &parent), len);
    if (*len > 11 && memcmp(p, "nn.Module: ", 11) == 0) { p += 11; *len -= 11; }
    else if (*len > 12 && memcmp(p, "[pl][module]", 12) == 0) { p += 12; *len -= 12; }
    return p;
}

/* The kept calls by thread, then start: {t0, all_calls, lanes: [[pid, tid]],
 * modules: [[id, parent, name]] (the ids the calls use and their
 * ancestors: the depth of a bar is its module's), calls: [[lane, start -
 * t0, dur, id]]}. */
static void json_timeline(tpu_json *j, m_state *s)
{
    const tpa_attrib *at = s->c.at;
    qsort(s->calls, s->ncalls, sizeof *s->calls, call_cmp);
    int64_t t0 = INT64_MAX;
    for (size_t i = 0; i < s->ncalls; i++) if (s->calls[i].start < t0) t0 = s->calls[i].start;
    tpu_json_begin_object(j);
    tpu_json_kv_int(j, "t0", t0);
    tpu_json_kv_uint(j, "all_calls", s->all_calls);
    tpu_json_key(j, "lanes");
    tpu_json_begin_array(j);
    uint32_t lane = 0, prev = 0;
    for (size_t i = 0; i < s->ncalls; i++) {
        uint32_t thread = s->calls[i].thread;
        if (i && thread == prev) { s->calls[i].thread = lane - 1; continue; }
        prev = thread;
        int64_t pid = -1, tid = -1;
        tpa_attrib_thread(at, thread, &pid, &tid);
        tpu_json_begin_array(j);
        tpu_json_int(j, pid);
        tpu_json_int(j, tid);
        tpu_json_end_array(j);
        s->calls[i].thread = lane++;   /* from here on: the lane */
    }
    tpu_json_end_array(j);
    /* each module id once, with its ancestors (a map of the ids written) */
    tpu_json_key(j, "modules");
    tpu_json_begin_array(j);
    tpa_u64map seen = { 0 };
    for (size_t i = 0; i < s->ncalls; i++) {
        for (uint32_t id = s->calls[i].id; id;) {
            bool fresh;
            uint32_t *slot = tpa_u64map_slot(&seen, id, &fresh);
            if (!slot || !fresh) break;
            *slot = 1;
            uint32_t parent;
            size_t len;
            tpa_attrib_module(at, id, &parent);
            const char *p = module_name(at, id, &len);
            tpu_json_begin_array(j);
            tpu_json_uint(j, id);
            tpu_json_uint(j, parent);
            tpu_json_string_n(j, p, len);
            tpu_json_end_array(j);
            id = parent;
        }
    }
    tpu_json_end_array(j);
    tpu_json_key(j, "calls");
    tpu_json_begin_array(j);
    for (size_t i = 0; i < s->ncalls; i++) {
        const m_call *c = &s->calls[i];
        tpu_json_begin_array(j);
        tpu_json_uint(j, c->thread);
        tpu_json_int(j, c->start - t0);
        tpu_json_int(j, c->dur);
        tpu_json_uint(j, c->id);
        tpu_json_end_array(j);
    }
    tpu_json_end_array(j);
    tpu_json_end_object(j);
    tpa_u64map_free(&seen);
}

static void m_json(void *state, tpu_json *j)
{
    m_state *s = state;
    if (!s->modules.n && !s->hooks.n) { tpu_json_null(j); return; }
    tpu_json_begin_object(j);
    size_t skipped;
    tpu_json_key(j, "modules");
    size_t w = json_rows(j, s->c.at, &s->modules, TOP_MODULES, true, &skipped);
    tpu_json_kv_uint(j, "modules_left_out", s->modules.n - w);
    tpu_json_key(j, "hooks");
    w = json_rows(j, s->c.at, &s->hooks, TOP_HOOKS, false, &skipped);
    tpu_json_kv_uint(j, "hooks_left_out", s->hooks.n - w);
    if (s->ncalls) {
        tpu_json_key(j, "timeline");
        json_timeline(j, s);
    }
    tpu_json_end_object(j);
}

static void m_free(void *state)
{
    m_state *s = state;
    if (!s) return;
    tpa_at_rows_free(&s->modules);
    tpa_at_rows_free(&s->hooks);
    free(s->calls);
    tpa_at_client_end(&s->c);
    free(s);
}

const tpa_view_class tpa_view_modules = {
    .key = "modules",
    .begin = m_begin,
    .feed = tpa_at_client_feed,
    .lane = 1,  /* the attributor: the three views of attrib.h share it */
    .file_end = tpa_at_client_file_end,
    .json = m_json,
    .free = m_free,
};
