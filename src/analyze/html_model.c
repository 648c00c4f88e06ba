/* html_model.c - what the HTML report shows, gathered from a run directory
 * (its JSON files and traces) or from one trace file. Every per-step series
 * goes through a downsampler (html_ds.c), so memory is bounded by the
 * columns kept, not by the run's length. */
#include "html.h"
#include "event_parse.h"
#include "util/fileio.h"

#include <dirent.h>
#include <errno.h>
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

/* ---- operations.json: the table, and which zones are top level ------------------- */

static void op_row(tpa_html_model *m, const char *obj, const char *end)
{
    if (m->n_ops == TPA_HTML_OPS) return;
    tpa_html_op *o = &m->ops[m->n_ops];
    memset(o, 0, sizeof *o);
    if (!tpa_value_str(tpa_obj_find(obj, end, "name"), end, o->name, sizeof o->name)) return;
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

/* ---- traces ------------------------------------------------------------------------- */

static void ops_from_report(tpa_html_model *m, const tpa_report *rep)
{
    for (size_t i = 0; i < rep->n_ops && m->n_ops < TPA_HTML_OPS; i++) {
        const tpa_op *o = &rep->ops[i];
        if (o->table == TPA_TABLE_ASYNC) continue;
        tpa_html_op *h = &m->ops[m->n_ops++];
        snprintf(h->name, sizeof h->name, "%s", o->name);
        if (o->table < 0) snprintf(h->where, sizeof h->where, "host");
        else snprintf(h->where, sizeof h->where, "gpu%d", o->table);
        h->count = o->count;
        h->total_ms = (double)o->total_ns / 1e6;
        h->self_ms = (double)o->self_ns / 1e6;
        h->avg_ms = o->count ? h->total_ms / (double)o->count : 0;
        h->min_ms = (double)o->min_ns / 1e6;
        h->max_ms = (double)o->max_ns / 1e6;
    }
}

static void copy_findings(tpa_html_model *m, const tpa_diagnosis *d, const char *path)
{
    for (size_t i = 0; i < d->n_findings && m->n_findings < (int)(sizeof m->findings / sizeof m->findings[0]); i++)
        m->findings[m->n_findings++] = d->findings[i];
    snprintf(m->findings_from, sizeof m->findings_from, "%.290s", path); /* a label */
    const tpa_steps_result *s = &d->steps;
    if (s->step_source == TPA_STEPS_ANNOTATION)
        snprintf(m->step_note, sizeof m->step_note, "no ProfilerStep#N in the trace: steps are the repeated annotation \"%.200s\"", s->step_name);
    else if (s->step_source == TPA_STEPS_STEP_NUM)
        snprintf(m->step_note, sizeof m->step_note, "steps are the \"%s\" spans numbered by args.step_num", s->step_name);
}

/* One trace file as the whole report: steps, parts, ops, findings. */
static int build_from_trace(tpa_html_model *m, const char *path, tpa_error *err)
{
    tpa_diagnosis d;
    if (tpa_diagnose_file(path, &d, err) != 0) return -1;
    for (int p = 0; p < TPA_P_COUNT; p++)
        snprintf(m->part_names[p], sizeof m->part_names[0], "%s", tpa_part_names[p]);
    m->n_parts = TPA_P_COUNT;
    m->parts_fixed = true;
    for (size_t i = 0; i < d.steps.n; i++) {
        const tpa_step_row *r = &d.steps.rows[i];
        double ms = (double)r->dur_ns / 1e6, v[TPA_HTML_PARTS] = {0};
        for (int p = 0; p < TPA_P_COUNT; p++) v[p] = (double)r->part_ns[p] / 1e6;
        tpa_ds_add(&m->step_ms, r->num, &ms);
        tpa_ds_add(&m->parts, r->num, v);
    }
    ops_from_report(m, &d.rep);
    copy_findings(m, &d, path);
    tpa_diagnosis_free(&d);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_trace_name(const char *n)
{
    size_t k = strlen(n);
    return (k > 5 && !strcmp(n + k - 5, ".json")) || (k > 8 && !strcmp(n + k - 8, ".json.gz"));
}

/* Run-directory traces bigger than this are left out of the page (the close
 * of a session must not spend minutes on a huge window); `trainprof analyze`
 * reads them whole. */
#define TRACE_MAX_BYTES ((off_t)256 << 20)

static bool too_big(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > TRACE_MAX_BYTES;
}

/* The run's traces, sorted by name (their stems end in the start time):
 * each one's steps become a marked window; the last one's findings are shown. */
static int read_traces(tpa_html_model *m, const char *run_dir, tpa_error *err)
{
    char dir[1200];
    if (tpu_path_join(dir, sizeof dir, run_dir, "profiler_traces") != 0) return 0;
    DIR *dh = opendir(dir);
    if (!dh) return 0;
    char *names[TPA_HTML_WINDOWS];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dh)) && n < TPA_HTML_WINDOWS) {
        if (!is_trace_name(de->d_name)) continue;
        if (!(names[n++] = strdup(de->d_name))) abort();
    }
    closedir(dh);
    qsort(names, (size_t)n, sizeof *names, name_cmp);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char path[1500];
        tpa_step *steps = NULL;
        size_t ns = 0;
        int64_t lo;
        if (tpu_path_join(path, sizeof path, dir, names[i]) != 0) continue;
        if (too_big(path)) {
            snprintf(m->findings_from, sizeof m->findings_from,
                     "(%s is over 256 MB: run trainprof analyze on it for its findings)", names[i]);
            continue;
        }
        if (tpa_find_steps(path, &steps, &ns, &lo, err) != 0) { rc = -1; break; }
        if (ns) {
            m->windows[m->n_windows][0] = steps[0].num;
            m->windows[m->n_windows][1] = steps[ns - 1].num;
            m->n_windows++;
        }
        free(steps);
        if (i == n - 1) {
            tpa_diagnosis d;
            if (tpa_diagnose_file(path, &d, err) != 0) { rc = -1; break; }
            copy_findings(m, &d, path);
            tpa_diagnosis_free(&d);
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    return rc;
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

static int build_from_run(tpa_html_model *m, const char *dir, tpa_error *err)
{
    char path[1200];
    int rc = 0;
    if (tpu_path_join(path, sizeof path, dir, "operations.json") == 0)
        rc = read_rows(m, path, TPA_HTML_OPERATIONS, err);
    if (rc == 0 && tpu_path_join(path, sizeof path, dir, "timing_profile.json") == 0)
        rc = read_rows(m, path, TPA_HTML_TIMING, err);
    if (rc == 0 && tpu_path_join(path, sizeof path, dir, "memory_profile.json") == 0)
        rc = read_rows(m, path, TPA_HTML_MEMORY, err);
    if (rc == 0) rc = read_traces(m, dir, err);
    m->config_json = read_small(dir, "config.json");
    m->summary_json = read_small(dir, "training_summary.json");
    return rc;
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

int tpa_html_model_build(tpa_html_model *m, const char *input, tpa_error *err)
{
    tpa_html_model_init(m, input);
    struct stat st;
    if (stat(input, &st) != 0) {
        tpa_error_set(err, TPA_ERR_IO, "cannot read %s: %s", input, strerror(errno));
        snprintf(err->file, sizeof err->file, "%s", input);
        return -1;
    }
    m->run_dir = S_ISDIR(st.st_mode);
    const char *base = strrchr(input, '/');
    base = base && base[1] ? base + 1 : input;
    snprintf(m->title, sizeof m->title, "%s", base);
    return m->run_dir ? build_from_run(m, input, err) : build_from_trace(m, input, err);
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
