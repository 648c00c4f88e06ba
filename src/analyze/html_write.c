/* html_write.c - memory findings, and the page: the model as JSON between
 * the stylesheet and the drawing script of html_assets.c. */
#include "html.h"
#include "util/fileio.h"
#include "util/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory findings (thresholds documented in docs/ANALYZE.md) -------------------- */
#define LEAK_MIN_MB 64.0         /* growth from the first to the last sample ... */
#define LEAK_MIN_FRACTION 0.10   /* ... and relative to the first sample */
#define LEAK_MIN_STEPS 10
#define FRAG_RATIO 1.5           /* mean reserved / mean allocated */
#define FRAG_MIN_GB 1.0          /* mean reserved - allocated */

static tpa_finding *add(tpa_html_model *m, const char *id, const char *title, const char *suggestion)
{
    if (m->n_findings == (int)(sizeof m->findings / sizeof m->findings[0])) return NULL;
    tpa_finding *f = &m->findings[m->n_findings++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->title = title;
    f->severity = 1;
    f->suggestion = suggestion;
    return f;
}

static bool grows(double first, double last, double min_abs)
{
    return !isnan(first) && !isnan(last) && last - first >= min_abs &&
           last - first >= LEAK_MIN_FRACTION * first;
}

void tpa_html_memory_findings(tpa_html_model *m)
{
    int64_t span = m->mem_step_last - m->mem_step_first;
    if (m->memory.points >= 2 && span >= LEAK_MIN_STEPS) {
        bool rss = grows(m->rss_first, m->rss_last, LEAK_MIN_MB);
        bool gpu = m->n_devices && grows(m->alloc_first * 1024, m->alloc_last * 1024, LEAK_MIN_MB);
        tpa_finding *f = rss || gpu ? add(m, "memory_growth", "Memory grows across steps (possible leak)",
            "look for tensors kept across steps (losses appended without .item()/.detach(), growing "
            "caches, lists of outputs); compare torch.cuda.memory_snapshot() at two steps; "
            "tp_mem_alloc tracking names the pool that grows") : NULL;
        if (f) snprintf(f->evidence, sizeof f->evidence,
                        "over steps %lld-%lld: RSS %.1f -> %.1f MB; GPU allocated %.3f -> %.3f GB",
                        (long long)m->mem_step_first, (long long)m->mem_step_last, m->rss_first,
                        m->rss_last, m->alloc_first, m->alloc_last);
    }
    if (m->n_dev_rows) {
        double alloc = m->sum_alloc / (double)m->n_dev_rows, reserved = m->sum_reserved / (double)m->n_dev_rows;
        if (reserved - alloc >= FRAG_MIN_GB && (alloc <= 0 || reserved / alloc >= FRAG_RATIO)) {
            tpa_finding *f = add(m, "fragmentation", "GPU memory reserved far above allocated (fragmentation)",
                "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, keep tensor shapes stable "
                "across steps (pad variable lengths), avoid torch.cuda.empty_cache() in the loop");
            if (f) snprintf(f->evidence, sizeof f->evidence,
                            "mean reserved %.3f GB vs allocated %.3f GB (x%.2f) over %llu samples",
                            reserved, alloc, alloc > 0 ? reserved / alloc : 0.0,
                            (unsigned long long)m->n_dev_rows);
        }
    }
}

/* ---- the data -------------------------------------------------------------------------- */

static void names_json(tpu_json *j, const char *key, const char (*names)[64], int n)
{
    tpu_json_key(j, key);
    tpu_json_begin_array(j);
    for (int i = 0; i < n; i++) tpu_json_string(j, names[i]);
    tpu_json_end_array(j);
}

static void ds_member(tpu_json *j, const char *key, const tpa_ds *d, int nv)
{
    tpu_json_key(j, key);
    if (!d->points) { tpu_json_null(j); return; }
    tpu_buf tmp = {0};
    tpa_ds_json(d, nv, &tmp);
    tpu_json_raw(j, tmp.data, tmp.len);
    tpu_buf_free(&tmp);
}

void tpa_html_model_json(const tpa_html_model *m, tpu_buf *b)
{
    tpu_json j;
    tpu_json_init(&j, b, 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_string(&j, "title", m->title);
    tpu_json_kv_string(&j, "input", m->input);
    tpu_json_kv_bool(&j, "run_dir", m->run_dir);
    tpu_json_kv_string(&j, "step_note", m->step_note);
    tpu_json_kv_string(&j, "findings_from", m->findings_from);
    ds_member(&j, "step_ms", &m->step_ms, 1);
    ds_member(&j, "throughput", &m->throughput, 1);
    ds_member(&j, "memory", &m->memory, TPA_MEM_DEV0 + 3 * m->n_devices);  /* devices seen */
    ds_member(&j, "parts", &m->parts, m->n_parts);
    names_json(&j, "part_names", m->part_names, m->n_parts);
    tpu_json_key(&j, "devices");
    tpu_json_begin_array(&j);
    for (int i = 0; i < m->n_devices; i++) tpu_json_string(&j, m->devices[i]);
    tpu_json_end_array(&j);
    tpu_json_key(&j, "windows");
    tpu_json_begin_array(&j);
    for (int i = 0; i < m->n_windows; i++) {
        tpu_json_begin_array(&j);
        tpu_json_int(&j, m->windows[i][0]);
        tpu_json_int(&j, m->windows[i][1]);
        tpu_json_end_array(&j);
    }
    tpu_json_end_array(&j);
    tpu_json_key(&j, "ops");
    tpu_json_begin_array(&j);
    for (int i = 0; i < m->n_ops; i++) {
        const tpa_html_op *o = &m->ops[i];
        tpu_json_begin_array(&j);
        tpu_json_string(&j, o->name);
        tpu_json_string(&j, o->where);
        tpu_json_uint(&j, o->count);
        tpu_json_double(&j, o->total_ms);
        tpu_json_double(&j, o->self_ms);
        tpu_json_double(&j, o->avg_ms);
        tpu_json_double(&j, o->min_ms);
        tpu_json_double(&j, o->max_ms);
        tpu_json_end_array(&j);
    }
    tpu_json_end_array(&j);
    static const char *const sev[3] = { "low", "medium", "high" };
    tpu_json_key(&j, "findings");
    tpu_json_begin_array(&j);
    for (int i = 0; i < m->n_findings; i++) {
        const tpa_finding *f = &m->findings[i];
        tpu_json_begin_object(&j);
        tpu_json_kv_string(&j, "id", f->id);
        tpu_json_kv_string(&j, "severity", sev[f->severity < 0 || f->severity > 2 ? 0 : f->severity]);
        tpu_json_kv_double(&j, "share_pct", 100 * f->share);
        tpu_json_kv_string(&j, "title", f->title);
        tpu_json_kv_string(&j, "evidence", f->evidence);
        tpu_json_kv_string(&j, "suggestion", f->suggestion);
        tpu_json_end_object(&j);
    }
    tpu_json_end_array(&j);
    /* the run's own files, as text: the page parses them and survives a bad one */
    tpu_json_kv_string(&j, "config", m->config_json ? m->config_json : "");
    tpu_json_kv_string(&j, "summary", m->summary_json ? m->summary_json : "");
    tpu_json_end_object(&j);
}

/* "</" cannot appear inside a <script> element: "<\/" is the same JSON. */
static void put_script_safe(tpu_buf *out, const tpu_buf *data)
{
    size_t from = 0;
    for (size_t i = 0; i + 1 < data->len; i++)
        if (data->data[i] == '<' && data->data[i + 1] == '/') {
            tpu_buf_append(out, data->data + from, i + 1 - from);
            tpu_buf_putc(out, '\\');
            from = i + 1;
        }
    tpu_buf_append(out, data->data + from, data->len - from);
}

int tpa_html_write(const tpa_html_model *m, const char *out, tpa_error *err)
{
    tpu_buf data = {0}, page = {0};
    tpa_html_model_json(m, &data);
    tpu_buf_puts(&page, tpa_html_head);
    tpu_buf_puts(&page, "<script id=\"trainprof-data\" type=\"application/json\">");
    put_script_safe(&page, &data);
    tpu_buf_puts(&page, "</script>\n<script>");
    tpu_buf_puts(&page, tpa_html_script);
    tpu_buf_puts(&page, "</script>\n</body>\n</html>\n");
    char eb[256];
    int rc = tpu_write_file_atomic(out, page.data, page.len, eb, sizeof eb);
    if (rc != 0) {
        tpa_error_set(err, TPA_ERR_IO, "cannot write the report: %s", eb);
        snprintf(err->file, sizeof err->file, "%s", out);
    }
    tpu_buf_free(&data);
    tpu_buf_free(&page);
    return rc != 0 ? -1 : 0;
}

int tpa_report_html(const char *input, const char *out, tpa_error *err)
{
    tpa_html_model m;
    int rc = tpa_html_model_build(&m, input, err);
    if (rc == 0) {
        tpa_html_memory_findings(&m);
        rc = tpa_html_write(&m, out, err);
    }
    tpa_html_model_free(&m);
    return rc;
}
