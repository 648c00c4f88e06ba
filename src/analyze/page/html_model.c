/* html_model.c - what the report page shows of a run directory's own files
 * (operations.json, timing_profile.json, memory_profile.json, config.json,
 * training_summary.json). Every per-step series goes through a downsampler
 * (html_ds.c), so memory is bounded by the columns kept, not by the run's
 * length. The traces are the views' business (view.h, html_build.c). */
#include "analyze/page/html.h"
#include "analyze/trace/trace.h"
#include "analyze/json/json_scan.h"
#include "util/fileio.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define COLUMNS 1024        /* line charts: at most this many columns */
#define BAR_COLUMNS 160     /* stacked bars */

typedef void (*row_fn)(tpa_html_model *m, const char *obj, const char *end);
static void op_row(tpa_html_model *m, const char *obj, const char *end);
static void timing_row(tpa_html_model *m, const char *obj, const char *end);
static void memory_row(tpa_html_model *m, const char *obj, const char *end);

int tpa_html_feed(tpa_html_model *m, int file, tpa_reader *r, tpa_error *err)
{
    row_fn fn = file == TPA_HTML_OPERATIONS ? op_row : file == TPA_HTML_TIMING ? timing_row : memory_row;
    if (file == TPA_HTML_TIMING && !m->parts_fixed) {
        snprintf(m->part_names[m->n_parts++], sizeof m->part_names[0], "other");
        m->parts_fixed = true;
    }
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) fn(m, ev.raw.p, ev.raw.p + ev.raw.n);
    return rc < 0 ? -1 : 0;
}

/* Feeds every object of the JSON array file at path. A missing file is no
 * error (the run may have turned that output off). */
static int read_rows(tpa_html_model *m, const char *path, int file, tpa_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    tpa_reader *r = tpa_reader_open(path, err);
    if (!r) return -1;
    tpa_reader_set_rows(r, true);
    int rc = tpa_html_feed(m, file, r, err);
    tpa_reader_close(r);
    return rc;
}

static double field_f64(const char *obj, const char *end, const char *key)
{
    double v;
    return tpa_value_f64(tpa_obj_find(obj, end, key), end, &v) ? v : NAN;
}

static int64_t field_step(const char *obj, const char *end)
{
    int64_t v;
    return tpa_value_i64(tpa_obj_find(obj, end, "step"), end, &v) ? v : -1;
}

/* A string value, escapes decoded (a name with '"' or '\\' shows as written),
 * cut to cap - 1 bytes at a character boundary. */
static bool decoded_str(const char *v, const char *end, char *out, size_t cap)
{
    tpa_scanerr e;
    const char *s;
    size_t n, got;
    bool esc;
    if (!v || v >= end || *v != '"' || tpa_scan_string(&v, end, &e, &s, &n, &esc) != SC_OK) return false;
    char *tmp = malloc(n + 1);
    if (!tmp) abort();
    bool ok = tpa_decode_string(s, n, tmp, &got, &e) == SC_OK;
    if (ok) {
        if (got >= cap) {
            got = cap - 1;
            while (got && ((unsigned char)tmp[got] & 0xC0) == 0x80) got--;
        }
        memcpy(out, tmp, got);
        out[got] = 0;
    }
    free(tmp);
    return ok;
}

/* ---- operations.json: the table, and which zones are top level ------------------- */

static void op_row(tpa_html_model *m, const char *obj, const char *end)
{
    if (m->n_ops == TPA_HTML_OPS) return;
    tpa_html_op *o = &m->ops[m->n_ops];
    memset(o, 0, sizeof *o);
    if (!decoded_str(tpa_obj_find(obj, end, "name"), end, o->name, sizeof o->name)) return;
    snprintf(o->where, sizeof o->where, "host");
    int64_t count = 0;
    tpa_value_i64(tpa_obj_find(obj, end, "count"), end, &count);
    o->count = count > 0 ? (uint64_t)count : 0;
    o->total_ms = field_f64(obj, end, "total_time") * 1e3;
    o->self_ms = field_f64(obj, end, "self_time") * 1e3;
    o->avg_ms = field_f64(obj, end, "avg_time") * 1e3;
    o->min_ms = field_f64(obj, end, "min_time") * 1e3;
    o->max_ms = field_f64(obj, end, "max_time") * 1e3;
    m->n_ops++;
    const char *top = tpa_obj_find(obj, end, "top_level");
    if (top && end - top >= 4 && memcmp(top, "true", 4) == 0 && !m->parts_fixed && m->n_parts < TPA_HTML_PARTS - 1) {
        size_t n = strnlen(o->name, sizeof m->part_names[0] - 1);
        memcpy(m->part_names[m->n_parts], o->name, n);
        m->part_names[m->n_parts++][n] = 0;
    }
}

/* ---- timing_profile.json: step time, throughput, the parts of each step ---------- */

#define BIN_BASE_MS 0.01   /* the first bin's lower edge: 10 us */
#define BIN_RATIO 1.02

static int step_bin(double ms)
{
    if (!(ms > BIN_BASE_MS)) return 0;
    double b = log(ms / BIN_BASE_MS) / log(BIN_RATIO);
    return b >= TPA_HTML_STEP_BINS - 1 ? TPA_HTML_STEP_BINS - 1 : (int)b;
}

double tpa_html_step_quantile(const tpa_html_model *m, double q)
{
    uint64_t n = 0;
    for (int b = 0; b < TPA_HTML_STEP_BINS; b++) n += m->step_bins[b];
    if (!n) return 0;
    /* the step of rank q * (n - 1), as tpa_steps_quantile places it (no interpolation) */
    uint64_t want = (uint64_t)(q * (double)(n - 1) + 0.5), seen = 0;
    for (int b = 0; b < TPA_HTML_STEP_BINS; b++) {
        seen += m->step_bins[b];
        if (seen > want) return m->step_bin_ms[b] / m->step_bins[b];
    }
    return 0;
}

double tpa_html_slow_share(const tpa_html_model *m, double med)
{
    double over = 0;
    for (int b = 0; b < TPA_HTML_STEP_BINS; b++) {
        if (!m->step_bins[b]) continue;
        double over_b = m->step_bin_ms[b] - med * m->step_bins[b];
        if (over_b > 0) over += over_b;
    }
    return m->step_sum_ms > 0 ? over / m->step_sum_ms : 0;
}

typedef struct part_pick { tpa_html_model *m; double *v; } part_pick;

static bool pick_part(const char *key, size_t kn, const char *val, const char *end, void *user)
{
    part_pick *p = user;
    for (int i = 0; i + 1 < p->m->n_parts; i++)
        if (strlen(p->m->part_names[i]) == kn && memcmp(p->m->part_names[i], key, kn) == 0) {
            double t = field_f64(val, end, "time");
            if (!isnan(t)) p->v[i] = t * 1e3;
        }
    return true;
}

static void timing_row(tpa_html_model *m, const char *obj, const char *end)
{
    int64_t step = field_step(obj, end);
    if (step < 0) return;
    double ms = field_f64(obj, end, "total_batch_time") * 1e3;
    double sps = field_f64(obj, end, "samples_per_second");
    tpa_ds_add(&m->step_ms, step, &ms);
    tpa_ds_add(&m->throughput, step, &sps);
    double v[TPA_HTML_PARTS] = {0};
    const char *ops = tpa_obj_find(obj, end, "operations");
    part_pick pick = { m, v };
    if (ops) tpa_obj_each(ops, end, pick_part, &pick);
    double named = 0;
    for (int i = 0; i + 1 < m->n_parts; i++) named += v[i];
    v[m->n_parts - 1] = isnan(ms) || ms < named ? 0 : ms - named;
    tpa_ds_add(&m->parts, step, v);
    if (!isnan(ms) && ms > 0) {
        int b = step_bin(ms);
        m->step_bins[b]++;
        m->step_bin_ms[b] += ms;
        m->step_sum_ms += ms;
        for (int i = 0; i < m->n_parts; i++) m->part_sum_ms[i] += v[i];
        m->n_timed++;
    }
}

/* ---- memory_profile.json ------------------------------------------------------------ */

typedef struct dev_pick { tpa_html_model *m; double *v; } dev_pick;

static int device_slot(tpa_html_model *m, const char *key, size_t kn)
{
    for (int i = 0; i < m->n_devices; i++)
        if (strlen(m->devices[i]) == kn && memcmp(m->devices[i], key, kn) == 0) return i;
    if (m->n_devices == TPA_HTML_DEVICES || kn >= sizeof m->devices[0]) return -1;
    memcpy(m->devices[m->n_devices], key, kn);
    m->devices[m->n_devices][kn] = 0;
    return m->n_devices++;
}

static bool pick_device(const char *key, size_t kn, const char *val, const char *end, void *user)
{
    dev_pick *p = user;
    int d = device_slot(p->m, key, kn);
    if (d < 0) return true;
    double *v = p->v + TPA_MEM_DEV0 + 3 * d;
    v[0] = field_f64(val, end, "bytes_in_use") / 1073741824.0;
    v[1] = field_f64(val, end, "bytes_reserved") / 1073741824.0;
    v[2] = field_f64(val, end, "peak_bytes_in_use") / 1073741824.0;
    return true;
}

static void memory_row(tpa_html_model *m, const char *obj, const char *end)
{
    int64_t step = field_step(obj, end);
    if (step < 0) return;
    double v[TPA_MEM_NV];
    for (int i = 0; i < TPA_MEM_NV; i++) v[i] = NAN;
    v[TPA_MEM_RSS] = field_f64(obj, end, "rss_bytes") / 1048576.0;
    v[TPA_MEM_SYS] = field_f64(obj, end, "cpu_memory_percent");
    const char *devs = tpa_obj_find(obj, end, "memory");
    dev_pick pick = { m, v };
    if (devs) tpa_obj_each(devs, end, pick_device, &pick);
    tpa_ds_add(&m->memory, step, v);
    /* trend of the first device and of RSS, for the memory findings */
    double alloc = 0, reserved = 0;
    bool have_dev = false;
    for (int d = 0; d < m->n_devices; d++) {
        const double *dv = v + TPA_MEM_DEV0 + 3 * d;
        if (!isnan(dv[0])) { alloc += dv[0]; have_dev = true; }
        if (!isnan(dv[1])) reserved += dv[1];
    }
    if (m->memory.points == 1) {
        m->mem_step_first = step;
        m->rss_first = v[TPA_MEM_RSS];
        m->alloc_first = alloc;
    }
    m->mem_step_last = step;
    m->rss_last = v[TPA_MEM_RSS];
    m->alloc_last = alloc;
    if (have_dev) { m->sum_alloc += alloc; m->sum_reserved += reserved; m->n_dev_rows++; }
}

static char *read_small(const char *dir, const char *name)
{
    char path[1200], eb[128];
    char *data = NULL;
    size_t len;
    if (tpu_path_join(path, sizeof path, dir, name) != 0) return NULL;
    if (tpu_read_file(path, &data, &len, eb, sizeof eb) != 0) return NULL;
    return data;
}

int tpa_html_read_run(tpa_html_model *m, const char *dir, unsigned mask, bool config, tpa_error *err)
{
    static const char *const files[3] = { "operations.json", "timing_profile.json", "memory_profile.json" };
    char path[1200];
    for (int f = 0; f < 3; f++) {
        if (!(mask & (1u << f)) || tpu_path_join(path, sizeof path, dir, files[f]) != 0) continue;
        if (read_rows(m, path, f, err) != 0) return -1;
    }
    if (config) {
        m->config_json = read_small(dir, "config.json");
        m->summary_json = read_small(dir, "training_summary.json");
    }
    return 0;
}

void tpa_html_model_init(tpa_html_model *m, const char *input)
{
    memset(m, 0, sizeof *m);
    m->input = input;
    tpa_ds_init(&m->step_ms, 1, COLUMNS);
    tpa_ds_init(&m->throughput, 1, COLUMNS);
    tpa_ds_init(&m->memory, TPA_MEM_NV, COLUMNS);
    tpa_ds_init(&m->parts, TPA_HTML_PARTS, BAR_COLUMNS);
}

void tpa_html_model_free(tpa_html_model *m)
{
    tpa_ds_free(&m->step_ms);
    tpa_ds_free(&m->throughput);
    tpa_ds_free(&m->memory);
    tpa_ds_free(&m->parts);
    free(m->config_json);
    free(m->summary_json);
    m->config_json = m->summary_json = NULL;
}

/* ---- where a run directory sits in a job ------------------------------------------- */

/* r of the last "rank<r>/" directory in path, or -1. */
int64_t tpa_html_rank_in_path(const char *path)
{
    int64_t hint = -1;
    for (const char *p = path; (p = strstr(p, "rank")) != NULL; p += 4) {
        if (p != path && p[-1] != '/') continue;
        const char *q = p + 4;
        int64_t v = 0;
        if (!isdigit((unsigned char)*q)) continue;
        while (isdigit((unsigned char)*q) && v < (1LL << 40)) v = v * 10 + (*q++ - '0');
        if (*q == '/') hint = v;
    }
    return hint;
}

int64_t tpa_html_rank_key(bool run_dir, int file, const char *path)
{
    int64_t hint = path ? tpa_html_rank_in_path(path) : -1;
    return run_dir ? 0 : hint >= 0 ? hint : file;
}
