/* html_write.c - a run directory's memory findings, and the run's own
 * files as members of the page data (the Overview and Memory views). */
#include "analyze/page/html.h"
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

void tpa_html_ds_member(tpu_json *j, const char *key, const tpa_ds *d, int nv)
{
    tpu_json_key(j, key);
    if (!d->points) { tpu_json_null(j); return; }
    tpu_buf tmp = {0};
    tpa_ds_json(d, nv, &tmp);
    tpu_json_raw(j, tmp.data, tmp.len);
    tpu_buf_free(&tmp);
}

void tpa_html_finding_json(tpu_json *j, const tpa_finding *f, const char *from)
{
    static const char *const sev[3] = { "low", "medium", "high" };
    tpu_json_begin_object(j);
    tpu_json_kv_string(j, "id", f->id);
    tpu_json_kv_string(j, "severity", sev[f->severity < 0 || f->severity > 2 ? 0 : f->severity]);
    tpu_json_kv_double(j, "share_pct", 100 * f->share);
    tpu_json_kv_string(j, "title", f->title);
    tpu_json_kv_string(j, "evidence", f->evidence);
    tpu_json_kv_string(j, "suggestion", f->suggestion);
    if (from) tpu_json_kv_string(j, "from", from);
    tpu_json_end_object(j);
}

void tpa_html_model_members(const tpa_html_model *m, tpu_json *j)
{
    tpa_html_ds_member(j, "step_ms", &m->step_ms, 1);
    tpa_html_ds_member(j, "throughput", &m->throughput, 1);
    tpa_html_ds_member(j, "parts", &m->parts, m->n_parts);
    names_json(j, "part_names", m->part_names, m->n_parts);
    tpu_json_key(j, "ops");
    tpu_json_begin_array(j);
    for (int i = 0; i < m->n_ops; i++) {
        const tpa_html_op *o = &m->ops[i];
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "name", o->name);
        tpu_json_kv_string(j, "where", o->where);
        tpu_json_kv_uint(j, "calls", o->count);
        tpu_json_kv_double(j, "total_ms", o->total_ms);
        tpu_json_kv_double(j, "self_ms", o->self_ms);
        tpu_json_kv_double(j, "avg_ms", o->avg_ms);
        tpu_json_kv_double(j, "min_ms", o->min_ms);
        tpu_json_kv_double(j, "max_ms", o->max_ms);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    /* the run's own files, as text: the page parses them and survives a bad one */
    tpu_json_kv_string(j, "config", m->config_json ? m->config_json : "");
    tpu_json_kv_string(j, "summary", m->summary_json ? m->summary_json : "");
}

void tpa_html_memory_members(const tpa_html_model *m, tpu_json *j)
{
    tpa_html_ds_member(j, "samples", &m->memory, TPA_MEM_DEV0 + 3 * m->n_devices);  /* devices seen */
    tpu_json_key(j, "devices");
    tpu_json_begin_array(j);
    for (int i = 0; i < m->n_devices; i++) tpu_json_string(j, m->devices[i]);
    tpu_json_end_array(j);
}
