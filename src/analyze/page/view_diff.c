/* view_diff.c - the Diff view's data: `trainprof diff`'s result (operators
 * by absolute change, including those in one run only; step pairs; the
 * per-step breakdown of both runs; the findings that moved) as JSON. */
#include "analyze/page/view_diff.h"
#include "analyze/page/html.h"
#include "analyze/page/view.h"
#include "analyze/attrib/attrib.h"  /* TPA_AT_MAX_NAME: the page's cap on a name */

#include <stdio.h>
#include <string.h>

static void run_json(tpu_json *j, const char *key, const tpa_diagnosis *x)
{
    tpu_json_key(j, key);
    tpu_json_begin_object(j);
    tpu_json_kv_string(j, "path", x->path ? x->path : "");
    tpu_json_kv_uint(j, "steps", x->steps.n);
    tpu_json_kv_int(j, "mean_ns", x->steps.n ? tpa_steps_mean(&x->steps, -1) : 0);
    tpu_json_kv_int(j, "p50_ns", x->steps.n ? tpa_steps_quantile(&x->steps, -1, 0.5) : 0);
    tpu_json_kv_int(j, "p90_ns", x->steps.n ? tpa_steps_quantile(&x->steps, -1, 0.9) : 0);
    tpu_json_kv_bool(j, "has_gpu", x->has_gpu);
    tpu_json_end_object(j);
}

static void parts_json(tpu_json *j, const tpa_diagnosis *a, const tpa_diagnosis *b)
{
    tpu_json_key(j, "parts");
    tpu_json_begin_array(j);
    for (int p = 0; p < TPA_P_COUNT; p++) {
        int64_t va = a->steps.n ? tpa_steps_mean(&a->steps, p) : 0, vb = b->steps.n ? tpa_steps_mean(&b->steps, p) : 0;
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "name", tpa_part_names[p]);
        tpu_json_kv_int(j, "a_ns", va);
        tpu_json_kv_int(j, "b_ns", vb);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
}

static void pairs_json(tpu_json *j, const tpa_steps_result *sa, const tpa_steps_result *sb)
{
    size_t n = sa->n < sb->n ? sa->n : sb->n;
    if (n > TPA_DIFF_PAIRS) n = TPA_DIFF_PAIRS;
    static const char *const keys[4] = {"num_a", "num_b", "a", "b"};
    tpu_json_key(j, "pairs");
    tpu_json_begin_object(j);
    for (int k = 0; k < 4; k++) {
        const tpa_steps_result *s = k % 2 ? sb : sa;
        tpu_json_key(j, keys[k]);
        tpu_json_begin_array(j);
        for (size_t i = 0; i < n; i++) tpu_json_int(j, k < 2 ? s->rows[i].num : s->rows[i].dur_ns);
        tpu_json_end_array(j);
    }
    tpu_json_end_object(j);
}

/* A name as the report page shows one: at most TPA_AT_MAX_NAME (8,192)
 * bytes, cut on a UTF-8 boundary; a 50 MB name must not make a 100 MB page. */
static void name_capped(tpu_json *j, const char *name)
{
    size_t n = strlen(name);
    if (n > TPA_AT_MAX_NAME) {
        n = TPA_AT_MAX_NAME;
        while (n && ((unsigned char)name[n] & 0xC0) == 0x80) n--;  /* not inside a character */
    }
    tpu_json_key(j, "name");
    tpu_json_string_n(j, name, n);
}

static void ops_json(tpu_json *j, const tpa_diff *d)
{
    tpu_json_key(j, "ops");
    tpu_json_begin_array(j);
    for (size_t i = 0; i < d->n && i < TPA_DIFF_OPS; i++) {
        const tpa_diff_row *r = &d->rows[i];
        tpu_json_begin_object(j);
        name_capped(j, r->name);
        tpu_json_kv_string(j, "kind", r->gpu ? "gpu" : "host");
        tpu_json_kv_uint(j, "calls_a", r->count_a);
        tpu_json_kv_uint(j, "calls_b", r->count_b);
        tpu_json_kv_int(j, "total_a_ns", r->total_a);
        tpu_json_kv_int(j, "total_b_ns", r->total_b);
        tpu_json_kv_int(j, "change_ns", r->total_b - r->total_a);
        tpu_json_kv_string(j, "status", !r->count_a ? "new" : !r->count_b ? "gone" : "both");
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    tpu_json_kv_uint(j, "ops_total", d->n);
}

static void findings_json(tpu_json *j, const tpa_diff *d)
{
    tpu_json_key(j, "findings");
    tpu_json_begin_array(j);
    for (size_t i = 0; i < d->n_moves; i++) {
        const tpa_finding_move *m = &d->moves[i];
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "id", m->id);
        tpu_json_kv_string(j, "title", m->title);
        tpu_json_kv_bool(j, "in_a", m->in_a);
        tpu_json_kv_bool(j, "in_b", m->in_b);
        tpu_json_kv_double(j, "share_a", m->share_a);
        tpu_json_kv_double(j, "share_b", m->share_b);
        tpu_json_kv_string(j, "verdict", tpa_finding_move_verdict(m));
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
}

void tpa_view_diff_json(tpu_json *j, const tpa_diff *d, const tpa_diagnosis *a, const tpa_diagnosis *b)
{
    tpu_json_begin_object(j);
    run_json(j, "a", a);
    run_json(j, "b", b);
    tpu_json_kv_string(j, "metric", d->metric ? d->metric : "");
    tpu_json_kv_int(j, "metric_a_ns", d->metric_a);
    tpu_json_kv_int(j, "metric_b_ns", d->metric_b);
    tpu_json_kv_double(j, "change_pct", d->change_pct);
    parts_json(j, a, b);
    pairs_json(j, &a->steps, &b->steps);
    ops_json(j, d);
    findings_json(j, d);
    tpu_json_end_object(j);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b && b[1] ? b + 1 : path;
}

int tpa_diff_html(const char *out, const tpa_diff *d, const tpa_diagnosis *a, const tpa_diagnosis *b,
                  tpa_error *err)
{
    static const tpa_view_class *const views[] = { TPA_VIEW_LIST };
    tpu_buf data = {0};
    tpu_json j;
    tpu_json_init(&j, &data, 0);
    tpu_json_begin_object(&j);
    tpu_json_key(&j, "meta");
    tpu_json_begin_object(&j);
    char title[600];
    snprintf(title, sizeof title, "%.280s vs %.280s", base_name(a->path), base_name(b->path));
    tpu_json_kv_string(&j, "title", title);
    snprintf(title, sizeof title, "A: %.280s, B: %.280s", a->path, b->path);
    tpu_json_kv_string(&j, "input", title);
    tpu_json_kv_string(&j, "kind", "diff");
    tpu_json_key(&j, "traces");
    tpu_json_begin_array(&j);
    tpu_json_string(&j, a->path);
    tpu_json_string(&j, b->path);
    tpu_json_end_array(&j);
    tpu_json_key(&j, "left_out");
    tpu_json_begin_array(&j);
    tpu_json_end_array(&j);
    tpu_json_key(&j, "missing");
    tpu_json_begin_object(&j);
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++)
        tpu_json_kv_string(&j, views[v]->key, "this page compares two runs: `trainprof report --html OUT TRACE` "
                                              "draws this view of each run");
    tpu_json_end_object(&j);
    tpu_json_end_object(&j);
    tpu_json_key(&j, "diff");
    tpa_view_diff_json(&j, d, a, b);
    tpu_json_end_object(&j);
    const char *const in[2] = { a->path, b->path };
    int rc = tpa_html_not_input(out, in, 2, err);
    if (rc == 0) rc = tpa_html_write_page(&data, out, err);
    tpu_buf_free(&data);
    return rc;
}
