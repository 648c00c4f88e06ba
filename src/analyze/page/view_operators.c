/* view_operators.c - the page's Operators view: every host span name with
 * torch key_averages()' numbers (calls, host self/total, device self/total),
 * the TensorBoard plugin's tensor-core columns (eligible, tensor-core share
 * of device self/total), by name and by name + input shapes, with the python call stacks each name
 * ran under. Nesting and attribution come from attrib.c; this collector only
 * sums the nodes it is handed.
 */
#include "analyze/attrib/attrib.h"
#include "analyze/page/view.h"

#include <stdlib.h>
#include <string.h>

#ifdef TP_SMALL_LIMITS
#define TOP_NAMES 16
#define TOP_SHAPES 16
#define MAX_ROWS 256
#else
#define TOP_NAMES 2000      /* rows written by name; the rest make one "other" row */
#define TOP_SHAPES 3000
#define MAX_ROWS ((size_t)1 << 20)   /* rows held (the string table caps names too) */
#endif
#define STACKS_PER_OP 5
#define STACK_ROWS 300      /* rows (by total) whose stacks the page carries */
#define STACK_FRAMES 8      /* innermost python frames written per stack */

typedef struct op_stack { uint32_t id; uint64_t calls; int64_t total; } op_stack;

typedef struct op_row {
    uint32_t name, shapes;
    uint8_t kind;
    uint64_t calls;
    int64_t self, total, dev_self, dev_total, min, max;
    int64_t tc_self, tc_total;  /* of dev_self, dev_total: kernels on tensor cores */
    bool tc_eligible;           /* a call was eligible (the plugin's rule, attrib.h) */
    op_stack stacks[STACKS_PER_OP];
    uint64_t other_stack_calls;
} op_row;

typedef struct ops_state {
    tpa_at_client c;    /* first: the class's feed and file_end take it */
    tpa_at_rows by_name, by_shape;  /* op_row */
    bool has_shapes, has_stacks;
} ops_state;

static op_row *row_for(tpa_at_rows *t, uint32_t name, uint32_t shapes)
{
    bool fresh;
    op_row *r = tpa_at_rows_get(t, (uint64_t)name << 32 | shapes, &fresh);
    if (r && fresh) {
        r->name = name;
        r->shapes = shapes;
        r->min = INT64_MAX;
    }
    return r;
}

static void row_add(op_row *r, const tpa_at_node *n)
{
    r->kind = n->kind;
    r->calls++;
    r->total = tpa_sat_add(r->total, n->dur_ns);
    r->self = tpa_sat_add(r->self, n->dur_ns - n->child_ns);
    r->dev_self = tpa_sat_add(r->dev_self, n->dev_self_ns);
    r->dev_total = tpa_sat_add(r->dev_total, n->dev_total_ns);
    r->tc_self = tpa_sat_add(r->tc_self, n->tc_self_ns);
    r->tc_total = tpa_sat_add(r->tc_total, n->tc_total_ns);
    r->tc_eligible |= n->tc_eligible;
    if (n->dur_ns < r->min) r->min = n->dur_ns;
    if (n->dur_ns > r->max) r->max = n->dur_ns;
}

static void row_add_stack(op_row *r, uint32_t stack, int64_t dur)
{
    for (int i = 0; i < STACKS_PER_OP; i++) {
        if (r->stacks[i].calls && r->stacks[i].id != stack) continue;
        r->stacks[i].id = stack;
        r->stacks[i].calls++;
        r->stacks[i].total = tpa_sat_add(r->stacks[i].total, dur);
        return;
    }
    r->other_stack_calls++;
}

static void on_node(void *user, const tpa_attrib *at, const tpa_at_node *n)
{
    (void)at;
    ops_state *s = user;
    op_row *r = row_for(&s->by_name, n->name, 0);
    if (r) {
        row_add(r, n);
        if (n->stack && n->kind != TPA_AT_PYTHON) {
            s->has_stacks = true;
            row_add_stack(r, n->stack, n->dur_ns);
        }
    }
    if (n->shapes) s->has_shapes = true;
    if ((r = row_for(&s->by_shape, n->name, n->shapes))) row_add(r, n);
}

static void *ops_begin(const tpa_view_input *in)
{
    ops_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->by_name = (tpa_at_rows){ .size = sizeof(op_row), .max = MAX_ROWS };
    s->by_shape = s->by_name;
    tpa_at_visitor v = { s, on_node, NULL };
    if (!tpa_at_client_begin(&s->c, in->attrib, &v)) { free(s); return NULL; }
    return s;
}

static int cmp_total_desc(const void *a, const void *b)
{
    const op_row *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    if (x->calls != y->calls) return x->calls > y->calls ? -1 : 1;
    if (x->name != y->name) return x->name < y->name ? -1 : 1;
    return x->shapes < y->shapes ? -1 : x->shapes > y->shapes;
}

static void json_str_id(tpu_json *j, const tpa_attrib *at, uint32_t id)
{
    size_t n;
    const char *p = tpa_attrib_str(at, id, &n);
    tpu_json_string_n(j, p, n);
}

static void json_stack(tpu_json *j, const tpa_attrib *at, uint32_t id)
{
    tpu_json_begin_array(j);
    for (int k = 0; id && k < STACK_FRAMES; k++) {
        uint32_t parent;
        json_str_id(j, at, tpa_attrib_stack(at, id, &parent));
        id = parent;
    }
    tpu_json_end_array(j);
}

static void json_row_fields(tpu_json *j, const op_row *r)
{
    tpu_json_kv_uint(j, "calls", r->calls);
    tpu_json_kv_int(j, "self", r->self);
    tpu_json_kv_int(j, "total", r->total);
    tpu_json_kv_int(j, "dself", r->dev_self);
    tpu_json_kv_int(j, "dtotal", r->dev_total);
    tpu_json_kv_int(j, "min", r->calls ? r->min : 0);
    tpu_json_kv_int(j, "max", r->max);
    if (r->dev_total) {  /* the tensor-core figures mean something on device time only */
        tpu_json_kv_int(j, "tc_self", r->tc_self);
        tpu_json_kv_int(j, "tc_total", r->tc_total);
        tpu_json_kv_bool(j, "tc_eligible", r->tc_eligible);
    }
}

static void json_table(tpu_json *j, const tpa_attrib *at, tpa_at_rows *t, size_t top, bool shapes,
                       bool stacks)
{
    op_row *rows = (op_row *)(void *)t->rows;
    if (t->n) qsort(rows, t->n, sizeof *rows, cmp_total_desc);
    size_t n = t->n < top ? t->n : top;
    tpu_json_begin_object(j);
    tpu_json_key(j, "rows");
    tpu_json_begin_array(j);
    size_t start = j->out->len, i;
    for (i = 0; i < n && j->out->len - start < TPA_AT_TABLE_BYTES; i++) {
        const op_row *r = &rows[i];
        tpu_json_begin_object(j);
        tpu_json_key(j, "name");
        json_str_id(j, at, r->name);
        tpu_json_kv_string(j, "kind", tpa_at_kind_names[r->kind]);
        if (shapes) { tpu_json_key(j, "shapes"); json_str_id(j, at, r->shapes); }
        json_row_fields(j, r);
        if (stacks && i < STACK_ROWS && r->stacks[0].calls) {
            tpu_json_key(j, "stacks");
            tpu_json_begin_array(j);
            for (int k = 0; k < STACKS_PER_OP && r->stacks[k].calls; k++) {
                tpu_json_begin_object(j);
                tpu_json_key(j, "frames");
                json_stack(j, at, r->stacks[k].id);
                tpu_json_kv_uint(j, "calls", r->stacks[k].calls);
                tpu_json_kv_int(j, "total", r->stacks[k].total);
                tpu_json_end_object(j);
            }
            tpu_json_end_array(j);
            if (r->other_stack_calls) tpu_json_kv_uint(j, "other_stack_calls", r->other_stack_calls);
        }
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    n = i;
    /* what did not fit: one row of sums, and how many names it holds */
    op_row other = { .min = INT64_MAX };
    for (size_t i = n; i < t->n; i++) {
        const op_row *r = &rows[i];
        other.calls += r->calls;
        other.self = tpa_sat_add(other.self, r->self);
        other.total = tpa_sat_add(other.total, r->total);
        other.dev_self = tpa_sat_add(other.dev_self, r->dev_self);
        other.dev_total = tpa_sat_add(other.dev_total, r->dev_total);
        other.tc_self = tpa_sat_add(other.tc_self, r->tc_self);
        other.tc_total = tpa_sat_add(other.tc_total, r->tc_total);
        other.tc_eligible |= r->tc_eligible;
        if (r->min < other.min) other.min = r->min;
        if (r->max > other.max) other.max = r->max;
    }
    tpu_json_kv_uint(j, "left_out", (uint64_t)(t->n - n));
    tpu_json_kv_uint(j, "dropped_calls", t->dropped);
    if (t->n > n) {
        tpu_json_key(j, "other");
        tpu_json_begin_object(j);
        json_row_fields(j, &other);
        tpu_json_end_object(j);
    }
    tpu_json_end_object(j);
}

static void ops_json(void *state, tpu_json *j)
{
    ops_state *s = state;
    if (!s->by_name.n) { tpu_json_null(j); return; }
    const tpa_at_stats *st = tpa_attrib_stats(s->c.at);
    const op_row *rows = (const op_row *)(const void *)s->by_name.rows;
    bool has_device = false;
    for (size_t i = 0; i < s->by_name.n && !has_device; i++)
        has_device = rows[i].dev_total != 0;
    tpu_json_begin_object(j);
    tpu_json_kv_bool(j, "has_device", has_device);
    tpu_json_kv_bool(j, "has_shapes", s->has_shapes);
    tpu_json_kv_bool(j, "has_stacks", s->has_stacks);
    tpu_json_kv_uint(j, "spans", st->host_spans);
    tpu_json_kv_uint(j, "folded", st->folded);
    tpu_json_kv_uint(j, "chunked_files", st->chunks);
    tpu_json_kv_uint(j, "device_events", st->gpu_events);
    tpu_json_kv_uint(j, "device_by_correlation", st->gpu_by_correlation);
    tpu_json_kv_uint(j, "device_by_external_id", st->gpu_by_external_id);
    tpu_json_kv_uint(j, "device_unattributed", st->gpu_unattributed);
    tpu_json_key(j, "by_name");
    json_table(j, s->c.at, &s->by_name, TOP_NAMES, false, true);
    if (s->has_shapes) {
        tpu_json_key(j, "by_shape");
        json_table(j, s->c.at, &s->by_shape, TOP_SHAPES, true, false);
    }
    tpu_json_end_object(j);
}

static void ops_free(void *state)
{
    ops_state *s = state;
    if (!s) return;
    tpa_at_rows_free(&s->by_name);
    tpa_at_rows_free(&s->by_shape);
    tpa_at_client_end(&s->c);
    free(s);
}

const tpa_view_class tpa_view_operators = {
    .key = "operators",
    .begin = ops_begin,
    .feed = tpa_at_client_feed,
    .lane = 1,  /* the attributor: the three views of attrib.h share it */
    .file_end = tpa_at_client_file_end,
    .json = ops_json,
    .free = ops_free,
};
