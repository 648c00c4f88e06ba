/* view_modules.c - the page's Modules view: the nn.Module tree of a
 * with_modules trace ("nn.Module: Name_k" python frames, nested) or of a
 * Lightning run ("[pl][module]class: attr" record_functions, nested), with
 * calls and host/device time per module, and Lightning's hook table (spans
 * named "[LightningModule]...", "[Callback]...", "[Strategy]...", any
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
#else
#define TOP_MODULES 5000
#define TOP_HOOKS 2000
#define MAX_ROWS ((size_t)1 << 20)
#endif

typedef struct m_row {
    uint32_t id, name;    /* module tree id (or 0 for hooks), name id */
    uint64_t calls;
    int64_t total, dev_total, min, max;
} m_row;

typedef struct m_state {
    tpa_at_client c;    /* first: the class's feed and file_end take it */
    tpa_at_rows modules, hooks;  /* m_row */
} m_state;

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
    if (n->is_module && n->module) {
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
    tpa_at_visitor v = { s, on_node, NULL };
    if (!tpa_at_client_begin(&s->c, in->attrib, &v)) { free(s); return NULL; }
    return s;
}

static int m_cmp(const void *a, const void *b)
{
    const m_row *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Writes the rows that fit; returns how many. */
static size_t json_rows(tpu_json *j, const tpa_attrib *at, tpa_at_rows *t, size_t top, bool tree)
{
    m_row *rows = (m_row *)(void *)t->rows;
    if (t->n) qsort(rows, t->n, sizeof *rows, m_cmp);
    size_t n = t->n < top ? t->n : top;
    tpu_json_begin_array(j);
    size_t start = j->out->len, i;
    for (i = 0; i < n && j->out->len - start < TPA_AT_TABLE_BYTES / 2; i++) {
        const m_row *r = &rows[i];
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
        tpu_json_kv_int(j, "min", r->calls ? r->min : 0);
        tpu_json_kv_int(j, "max", r->max);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    return i;
}

static void m_json(void *state, tpu_json *j)
{
    m_state *s = state;
    if (!s->modules.n && !s->hooks.n) { tpu_json_null(j); return; }
    tpu_json_begin_object(j);
    tpu_json_key(j, "modules");
    size_t w = json_rows(j, s->c.at, &s->modules, TOP_MODULES, true);
    tpu_json_kv_uint(j, "modules_left_out", s->modules.n - w);
    tpu_json_key(j, "hooks");
    w = json_rows(j, s->c.at, &s->hooks, TOP_HOOKS, false);
    tpu_json_kv_uint(j, "hooks_left_out", s->hooks.n - w);
    tpu_json_end_object(j);
}

static void m_free(void *state)
{
    m_state *s = state;
    if (!s) return;
    tpa_at_rows_free(&s->modules);
    tpa_at_rows_free(&s->hooks);
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
