/*
 * metrics.c - metrics.jsonl and metrics.csv: one record per step (or every
 * log_every steps) with the scalars of metric_fields.h, flushed record by
 * record so `tail -f` and uploaders (W&B, MLflow) can follow the files live.
 *
 * CSV header: the leading columns are fixed (step, epoch, batch_idx,
 * samples, timestamp); metric columns follow in order of first appearance.
 * Columns are only ever added: when a later step brings a new metric (an
 * operation first seen at step 40), the file is rewritten once, atomically,
 * with the wider header and empty cells in the earlier rows.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sink/metric_fields.h"
#include "sink/strmap.h"
#include "util/fileio.h"
#include "util/json.h"

typedef struct metrics_base {
    tpi_sink base;
    FILE *f;
    char path[1200];
    tpu_buf line;
    tpi_mem_sample last_mem;   /* latest background sample, for steps without one */
    int have_mem;
} metrics_base;

static double wall_seconds(const tpi_sink *k, const tpi_step_info *si)
{
    return (double)(k->env->wall_base_ns + si->end_ns) / 1e9;
}

/* Opens run_dir/name; on failure the sink starts failed (warned, counted). */
static void metrics_open(metrics_base *m, const char *name)
{
    if (tpu_path_join(m->path, sizeof m->path, m->base.env->run_dir, name) != 0) {
        tpi_sink_fail(&m->base, "path too long", name, ENAMETOOLONG);
        return;
    }
    m->f = tpi_sink_fopen(m->path, "w");
    if (!m->f)
        tpi_sink_fail(&m->base, "cannot open", m->path, errno);
}

/* Writes the line buffer and flushes; the first error stops the sink. */
static void metrics_write_line(metrics_base *m)
{
    if (m->base.failed || !m->f)
        return;
    if (m->line.oom) {
        tpi_sink_fail(&m->base, "out of memory writing", m->path, ENOMEM);
        return;
    }
    if (fwrite(m->line.data, 1, m->line.len, m->f) != m->line.len || fflush(m->f) != 0) {
        int e = errno;
        tpi_sink_fclose(m->f);
        m->f = NULL;
        tpi_sink_fail(&m->base, "cannot write", m->path, e);
    }
}

static void metrics_memory(tpi_sink *k, const tpi_mem_sample *s)
{
    metrics_base *m = (metrics_base *)k;
    m->last_mem = *s;
    m->have_mem = 1;
}

typedef void (*row_fn)(tpi_sink *k, const tpi_step_info *si);

/* Writes the final row (see tpi_metric_final_row), then closes. */
static int metrics_close(tpi_sink *k, const tpi_summary *sum, row_fn row)
{
    metrics_base *m = (metrics_base *)k;
    const tpi_step_info *last = tpi_metric_final_row(k->env->settings, sum);
    if (last && m->f && !k->failed)
        row(k, last);
    if (m->f && tpi_sink_fclose(m->f) != 0 && !k->failed)
        tpi_sink_fail(k, "cannot close", m->path, errno);
    m->f = NULL;
    return k->failed ? -1 : 0;
}

/* ---- JSONL ---------------------------------------------------------------- */

static void jsonl_field(void *ctx, const char *key, double v)
{
    tpu_json_kv_double(ctx, key, v);
}

static void jsonl_row(tpi_sink *k, const tpi_step_info *si)
{
    metrics_base *m = (metrics_base *)k;
    tpu_json j;
    tpu_buf_reset(&m->line);
    tpu_json_init(&j, &m->line, 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_uint(&j, "step", si->step);
    tpu_json_kv_uint(&j, "epoch", si->epoch);
    tpu_json_kv_uint(&j, "batch_idx", si->batch_idx);
    tpu_json_kv_uint(&j, "samples", si->samples);
    tpu_json_kv_double(&j, "timestamp", wall_seconds(k, si));
    tpi_metric_fields(si, m->have_mem ? &m->last_mem : NULL, jsonl_field, &j);
    tpu_json_end_object(&j);
    tpu_buf_putc(&m->line, '\n');
    metrics_write_line(m);
}

static void jsonl_step(tpi_sink *k, const tpi_step_info *si)
{
    if (!k->failed && tpi_metric_due(k->env->settings, si))
        jsonl_row(k, si);
}

static int jsonl_close(tpi_sink *k, const tpi_summary *sum)
{
    return metrics_close(k, sum, jsonl_row);
}

static void metrics_destroy(tpi_sink *k)
{
    metrics_base *m = (metrics_base *)k;
    if (m->f)
        tpi_sink_fclose(m->f);
    tpu_buf_free(&m->line);
    free(m);
}

static const tpi_sink_ops jsonl_ops = {
    .name = "jsonl", .step = jsonl_step, .memory = metrics_memory,
    .close = jsonl_close, .destroy = metrics_destroy,
};

tpi_sink *tpi_sink_jsonl_new(const tpi_sink_env *env)
{
    if (!env || !env->settings || !(env->settings->metrics & TPI_METRIC_JSONL))
        return NULL;
    metrics_base *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->base.ops = &jsonl_ops;
    m->base.env = env;
    metrics_open(m, "metrics.jsonl");
    return &m->base;
}

/* ---- CSV ------------------------------------------------------------------ */

enum { CSV_FIXED = 5 };
static const char *const csv_fixed[CSV_FIXED] = { "step", "epoch", "batch_idx", "samples", "timestamp" };

typedef struct csv_sink {
    metrics_base m;
    tpi_strmap index;       /* column name -> column number */
    char **cols;            /* column names in order */
    double *vals;
    unsigned char *set;     /* value present in this row */
    size_t ncols, cap;
    size_t header_cols;     /* columns in the header on disk (0 = none yet) */
} csv_sink;

static int csv_add_column(csv_sink *c, const char *name)
{
    if (c->ncols == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        char **cols = realloc(c->cols, cap * sizeof *cols);
        if (cols)
            c->cols = cols;
        double *vals = realloc(c->vals, cap * sizeof *vals);
        if (vals)
            c->vals = vals;
        unsigned char *set = realloc(c->set, cap);
        if (set)
            c->set = set;
        if (!cols || !vals || !set)
            return -1;
        c->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy || tpi_strmap_put(&c->index, name, (uint32_t)c->ncols) != 0) {
        free(copy);
        return -1;
    }
    c->cols[c->ncols] = copy;
    c->set[c->ncols] = 0;
    c->ncols++;
    return 0;
}

static void csv_set(csv_sink *c, const char *key, double v)
{
    uint32_t col;
    if (!tpi_strmap_get(&c->index, key, &col)) {
        if (csv_add_column(c, key) != 0) {
            c->m.line.oom = 1; /* reported at write time */
            return;
        }
        col = (uint32_t)(c->ncols - 1);
    }
    c->vals[col] = v;
    c->set[col] = 1;
}

static void csv_field(void *ctx, const char *key, double v)
{
    csv_set(ctx, key, v);
}

/* Appends one CSV cell, quoted when it holds a comma, quote or newline. */
static void csv_cell(tpu_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        tpu_buf_puts(b, s);
        return;
    }
    tpu_buf_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"')
            tpu_buf_putc(b, '"');
        tpu_buf_putc(b, *s);
    }
    tpu_buf_putc(b, '"');
}

static void csv_header(csv_sink *c, tpu_buf *b)
{
    for (size_t i = 0; i < c->ncols; i++) {
        if (i)
            tpu_buf_putc(b, ',');
        csv_cell(b, c->cols[i]);
    }
    tpu_buf_putc(b, '\n');
}

/* Rewrites the file with the wider header; earlier rows get empty cells. */
static int csv_widen(csv_sink *c)
{
    char *old = NULL, err[256];
    size_t len = 0;
    if (tpi_sink_fclose(c->m.f) != 0 || tpu_read_file(c->m.path, &old, &len, err, sizeof err) != 0) {
        c->m.f = NULL;
        return -1;
    }
    c->m.f = NULL;
    tpu_buf out = { 0 };
    csv_header(c, &out);
    /* the header ends at the first newline outside a quoted cell (op names
     * may hold newlines); the rows below are plain numbers */
    char *body = NULL;
    for (size_t i = 0, q = 0; i < len && !body; i++) {
        if (old[i] == '"')
            q = !q;
        else if (old[i] == '\n' && !q)
            body = old + i;
    }
    for (char *p = body ? body + 1 : old + len; p < old + len;) {
        char *nl = memchr(p, '\n', (size_t)(old + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(old + len - p);
        tpu_buf_append(&out, p, n);
        for (size_t i = c->header_cols; i < c->ncols; i++)
            tpu_buf_putc(&out, ',');
        tpu_buf_putc(&out, '\n');
        p += n + 1;
    }
    int rc = out.oom ? -1 : tpu_write_file_atomic(c->m.path, out.data, out.len, err, sizeof err);
    free(old);
    tpu_buf_free(&out);
    if (rc == 0)
        c->m.f = tpi_sink_fopen(c->m.path, "a");
    return c->m.f ? 0 : -1;
}

static void csv_row(csv_sink *c, tpu_buf *b)
{
    for (size_t i = 0; i < c->ncols; i++) {
        if (i)
            tpu_buf_putc(b, ',');
        double v = c->vals[i];
        if (c->set[i] && isfinite(v)) /* shortest text that reads back as v */
            tpu_json_format_double(b, v);
    }
    tpu_buf_putc(b, '\n');
}

static void csv_row_of(tpi_sink *k, const tpi_step_info *si)
{
    csv_sink *c = (csv_sink *)k;
    if (k->failed || !c->m.f)
        return;
    memset(c->set, 0, c->ncols);
    tpu_buf_reset(&c->m.line);
    csv_set(c, "step", (double)si->step);
    csv_set(c, "epoch", (double)si->epoch);
    csv_set(c, "batch_idx", (double)si->batch_idx);
    csv_set(c, "samples", (double)si->samples);
    csv_set(c, "timestamp", wall_seconds(k, si));
    tpi_metric_fields(si, c->m.have_mem ? &c->m.last_mem : NULL, csv_field, c);
    if (c->header_cols == 0) {
        csv_header(c, &c->m.line);
    } else if (c->ncols > c->header_cols && csv_widen(c) != 0) {
        tpi_sink_fail(k, "cannot rewrite", c->m.path, errno);
        return;
    }
    c->header_cols = c->ncols;
    csv_row(c, &c->m.line);
    metrics_write_line(&c->m);
}

static void csv_step(tpi_sink *k, const tpi_step_info *si)
{
    if (tpi_metric_due(k->env->settings, si))
        csv_row_of(k, si);
}

static int csv_close(tpi_sink *k, const tpi_summary *sum)
{
    return metrics_close(k, sum, csv_row_of);
}

static void csv_destroy(tpi_sink *k)
{
    csv_sink *c = (csv_sink *)k;
    for (size_t i = 0; i < c->ncols; i++)
        free(c->cols[i]);
    free(c->cols);
    free(c->vals);
    free(c->set);
    tpi_strmap_free(&c->index);
    metrics_destroy(k);
}

static const tpi_sink_ops csv_ops = {
    .name = "csv", .step = csv_step, .memory = metrics_memory,
    .close = csv_close, .destroy = csv_destroy,
};

tpi_sink *tpi_sink_csv_new(const tpi_sink_env *env)
{
    if (!env || !env->settings || !(env->settings->metrics & TPI_METRIC_CSV))
        return NULL;
    csv_sink *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->m.base.ops = &csv_ops;
    c->m.base.env = env;
    for (int i = 0; i < CSV_FIXED; i++)
        if (csv_add_column(c, csv_fixed[i]) != 0) {
            csv_destroy(&c->m.base);
            return NULL;
        }
    metrics_open(&c->m, "metrics.csv");
    return &c->m.base;
}
