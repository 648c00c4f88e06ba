/* view_modules.c - the page's Modules view: the nn.Module tree of a
 * with_modules trace ("nn.Module: Name_k" python frames, nested), with calls
 * and host/device time per module, and Lightning's hook table (spans named
 * "[LightningModule]...", "[Callback]...", "[Strategy]...", any "[Owner]hook").
 */
#include "attrib.h"
#include "view.h"

#include <stdlib.h>
#include <string.h>

#ifdef TP_SMALL_LIMITS
#define TOP_MODULES 16
#define TOP_HOOKS 16
#else
#define TOP_MODULES 5000
#define TOP_HOOKS 2000
#endif

typedef struct m_row {
    uint32_t id, name;    /* module tree id (or 0 for hooks), name id */
    uint64_t calls;
    int64_t total, dev_total, min, max;
} m_row;

typedef struct m_table { m_row *rows; size_t n, cap; tpa_u64map map; } m_table;

typedef struct m_state {
    tpa_attrib *at;
    bool feeder;
    m_table modules, hooks;
} m_state;

static m_row *m_row_for(m_table *t, uint64_t key)
{
    bool fresh;
    uint32_t *slot = tpa_u64map_slot(&t->map, key, &fresh);
    if (!fresh) return &t->rows[*slot - 1];
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        m_row *nr = realloc(t->rows, nc * sizeof *nr);
        if (!nr) abort();
        t->rows = nr;
        t->cap = nc;
    }
    m_row *r = &t->rows[t->n];
    memset(r, 0, sizeof *r);
    r->min = INT64_MAX;
    *slot = (uint32_t)++t->n;
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
    if (n->is_module && n->module) {
        m_row *r = m_row_for(&s->modules, n->module);
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
        r->name = n->name;
        m_add(r, n);
    }
}

static void *m_begin(const tpa_view_input *in)
{
    m_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    tpa_at_visitor v = { s, on_node, NULL };
    if (!(s->at = tpa_attrib_acquire(in, &v, &s->feeder))) { free(s); return NULL; }
    return s;
}

static void m_feed(void *state, const tpa_event *ev, int kind)
{
    m_state *s = state;
    if (s->feeder) tpa_attrib_feed(s->at, ev, kind);
}

static void m_file_end(void *state, int file, const tpa_meta *meta)
{
    (void)file; (void)meta;
    m_state *s = state;
    if (s->feeder) tpa_attrib_file_end(s->at);
}

static int m_cmp(const void *a, const void *b)
{
    const m_row *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void json_rows(tpu_json *j, const tpa_attrib *at, m_table *t, size_t top, bool tree)
{
    if (t->n) qsort(t->rows, t->n, sizeof *t->rows, m_cmp);
    size_t n = t->n < top ? t->n : top;
    tpu_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const m_row *r = &t->rows[i];
        size_t len;
        const char *p = tpa_attrib_str(at, r->name, &len);
        tpu_json_begin_object(j);
        if (tree) {
            uint32_t parent;
            tpa_attrib_module(at, r->id, &parent);
            tpu_json_kv_uint(j, "id", r->id);
            tpu_json_kv_uint(j, "parent", parent);
            if (len > 11 && memcmp(p, "nn.Module: ", 11) == 0) { p += 11; len -= 11; }
        }
        tpu_json_key(j, "name");
        tpu_json_string_n(j, p, len);
        tpu_json_kv_uint(j, "calls", r->calls);
        tpu_json_kv_int(j, "total", r->total);
        tpu_json_kv_int(j, "dtotal", r->dev_total);
        tpu_json_kv_int(j, "min", r->calls ? r->min : 0);
        tpu_json_kv_int(j, "max", r->max);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
}

static void m_json(void *state, tpu_json *j)
{
    m_state *s = state;
    if (!s->modules.n && !s->hooks.n) { tpu_json_null(j); return; }
    tpu_json_begin_object(j);
    tpu_json_key(j, "modules");
    json_rows(j, s->at, &s->modules, TOP_MODULES, true);
    tpu_json_kv_uint(j, "modules_left_out", s->modules.n > TOP_MODULES ? s->modules.n - TOP_MODULES : 0);
    tpu_json_key(j, "hooks");
    json_rows(j, s->at, &s->hooks, TOP_HOOKS, false);
    tpu_json_kv_uint(j, "hooks_left_out", s->hooks.n > TOP_HOOKS ? s->hooks.n - TOP_HOOKS : 0);
    tpu_json_end_object(j);
}

static void m_free(void *state)
{
    m_state *s = state;
    if (!s) return;
    free(s->modules.rows);
    tpa_u64map_free(&s->modules.map);
    free(s->hooks.rows);
    tpa_u64map_free(&s->hooks.map);
    tpa_attrib_release(s->at);
    free(s);
}

const tpa_view_class tpa_view_modules = {
    .key = "modules",
    .begin = m_begin,
    .feed = m_feed,
    .file_end = m_file_end,
    .json = m_json,
    .free = m_free,
};
