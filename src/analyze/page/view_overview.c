/* view_overview.c - the Overview view's collector (key "overview").
 *
 * Of every trace: the step breakdown into the TensorBoard plugin's
 * categories (steps.c: each instant counted once, in the highest category
 * running: Kernel > Memcpy > Memset > Communication > Runtime > DataLoader >
 * CPU Exec > Other) per step and as a run total, the traced step windows,
 * the GPUs of deviceProperties, GPU utilization, est. SM efficiency and
 * est. achieved occupancy, and the last trace's findings (diagnose.c, fed
 * from the builder's one read). Of a run directory: its own step time,
 * throughput, zone breakdown, zone table, configuration and memory findings
 * (html_model.c). */
#include "analyze/page/html.h"
#include "analyze/page/view.h"
#include "analyze/trace/trace.h"
#include "analyze/json/json_scan.h"
#include "util/adaptive_sort.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STEP_COLUMNS 160      /* per-step bars kept (columns of a downsampler) */
#define SM_EDGES_CAP (1u << 21) /* kernel starts and ends held per file for est. SM efficiency */
#define MAX_GPUS 16

#define GPU_RANKS 16
typedef struct gpu_info {
    char name[96];
    double memory, sms, major, minor;
    int64_t id;                        /* deviceProperties' "id", else its index */
    int64_t ranks[GPU_RANKS]; int n_ranks;  /* the ranks (traces) whose kernels ran on it */
} gpu_info;

typedef struct sm_edge { int64_t t; float v; int16_t dev; } sm_edge;

/* One rank's steps and findings, when the page has several ranks (issue 31:
 * a job's ranks are not merged into one series of steps). A rank is the
 * trace's rank<r>/ directory, else the file's place on the command line
 * (as the Distributed view counts them), named by its distributedInfo.rank
 * when it has one; a run directory is one rank. */
#define OV_RANKS 64           /* as many as the builder reads traces */
typedef struct ov_rank {
    int64_t key;                       /* rank<r>/ of its path, else the file's place (as the Distributed view) */
    int64_t rank;                      /* the trace's rank, else key */
    tpa_ds cat, step_ms;               /* per step: the categories (ns); the step time (ms) */
    int64_t cat_total[TPA_P_COUNT], steps_ns;
    uint64_t n_steps;
    int64_t first, last;               /* the first and last step numbers */
    tpa_finding findings[16]; size_t n_findings;  /* of its last file */
    int64_t f_first, f_last; size_t f_n;          /* the steps they come from */
    char path[400];                                /* that file */
} ov_rank;

typedef struct overview {
    tpa_view_input in;
    tpa_html_model own, *m;            /* the run directory's files: the builder's (view.h), or own */
    tpa_diagnosis cur, last;           /* the trace being read; the last one read */
    tpa_diagnose_run *run;
    bool have_last;
    char last_path[400];
    tpa_ds cat;                        /* per step: the categories (ns) */
    int64_t cat_total[TPA_P_COUNT], steps_ns, gpu_busy_ns;
    uint64_t n_steps;
    int step_source;
    char step_name[128];
    bool device_rule;                  /* a file's steps follow the plugin's GPU rule */
    uint64_t tail_dropped;             /* steps the rule left out, all files */
    int64_t windows[TPA_HTML_WINDOWS][2];
    int n_windows;
    gpu_info gpus[MAX_GPUS];
    int n_gpus;
    uint64_t file_devs;                /* this file's kernels ran on devices (bit = args.device < 64) */
    int64_t kernel_ns, occ_kernel_ns;  /* kernel time; of it with an achieved occupancy */
    double occ_weighted;               /* sum of dur * occupancy */
    sm_edge *edges;                    /* this file's kernels: +-min(blocks per SM, 1) at start / end */
    size_t n_edges, cap_edges;
    bool sm_cut;                       /* a file had more kernels than SM_EDGES_CAP / 2 */
    double sm_busy_ns;                 /* integral of min(sum of the running kernels' values, 1) */
    int64_t sm_span_ns;                /* step time of the devices that ran kernels with the value */
    char run_error[400];               /* a run file that could not be read */
    ov_rank *ranks[OV_RANKS];
    int n_ranks;
    int64_t cur_rank;                  /* the rank of the file being read */
} overview;

static void *ov_begin(const tpa_view_input *in)
{
    overview *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->in = *in;
    o->m = in->run_files;
    if (!o->m) {
        tpa_html_model_init(&o->own, in->input);
        o->m = &o->own;
    }
    snprintf(o->run_error, sizeof o->run_error, "%s", in->run_error ? in->run_error : "");
    tpa_ds_init(&o->cat, TPA_P_COUNT, STEP_COLUMNS);
    return o;
}

static void ov_file_begin(void *state, int file, const char *path)
{
    overview *o = state;
    o->cur_rank = tpa_html_rank_key(o->in.run_dir, file, path);
    o->run = tpa_diagnose_begin(&o->cur, path);
    snprintf(o->last_path, sizeof o->last_path, "%s", path);
}

/* args["blocks per SM"] of a kernel; -1 when absent */
static double blocks_per_sm(const tpa_event *ev)
{
    double v;
    if (!tpa_value_f64(tpa_event_arg(ev, TPA_ARG_BLOCKS_PER_SM, NULL), ev->raw.p + ev->raw.n, &v)) return -1;
    return v;
}

static void ov_feed(void *state, const tpa_event *ev, int kind)
{
    overview *o = state;
    tpa_diagnose_feed(o->run, ev, kind);
    if ((kind != TPA_K_KERNEL && kind != TPA_K_COMM) || ev->ph != 'X' || !ev->has_dur || ev->dur_ns <= 0) return;
    if (kind == TPA_K_KERNEL) o->kernel_ns = tpa_sat_add(o->kernel_ns, ev->dur_ns);
    int64_t dv = ev->device >= 0 ? ev->device : ev->pid;  /* Kineto: a GPU event's pid is its device */
    if (dv >= 0 && dv < 64) o->file_devs |= (uint64_t)1 << dv;
    if (kind == TPA_K_KERNEL && ev->occupancy >= 0) {
        o->occ_kernel_ns = tpa_sat_add(o->occ_kernel_ns, ev->dur_ns);
        o->occ_weighted += ev->occupancy * (double)ev->dur_ns;
    }
    double b = blocks_per_sm(ev);
    if (b < 0) return;
    if (o->n_edges + 2 > SM_EDGES_CAP) { o->sm_cut = true; return; }
    if (o->n_edges + 2 > o->cap_edges) {
        o->cap_edges = o->cap_edges ? 2 * o->cap_edges : 1024;
        if (!(o->edges = realloc(o->edges, o->cap_edges * sizeof *o->edges))) abort();
    }
    float v = (float)(b < 1 ? b : 1);
    int16_t dev = (int16_t)(ev->device >= 0 && ev->device < 4096 ? ev->device : ev->pid & 0xfff);
    o->edges[o->n_edges++] = (sm_edge){ ev->ts_ns, v, dev };
    o->edges[o->n_edges++] = (sm_edge){ tpa_sat_add(ev->ts_ns, ev->dur_ns), -v, dev };
}

/* deviceProperties: [{"name", "totalGlobalMem", "numSms", "computeMajor", "computeMinor"}, ...] */
static void read_gpus(overview *o, const tpa_meta *meta)
{
    for (size_t i = 0; i < meta->n_members && !o->n_gpus; i++) {
        if (strcmp(meta->members[i].key, "deviceProperties") != 0) continue;
        const char *p = meta->members[i].raw, *end = p + meta->members[i].raw_len;
        while (p < end && *p != '[') p++;
        for (p++; p < end && o->n_gpus < MAX_GPUS;) {
            while (p < end && (*p == ' ' || *p == ',' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
            if (p >= end || *p != '{') break;
            const char *obj = p;
            tpa_scanerr e;
            if (tpa_skip_value(&p, end, &e, 0) != SC_OK) break;
            gpu_info *g = &o->gpus[o->n_gpus++];
            if (!tpa_value_str(tpa_obj_find(obj, p, "name"), p, g->name, sizeof g->name)) g->name[0] = 0;
            if (!tpa_value_f64(tpa_obj_find(obj, p, "totalGlobalMem"), p, &g->memory)) g->memory = NAN;
            if (!tpa_value_f64(tpa_obj_find(obj, p, "numSms"), p, &g->sms)) g->sms = NAN;
            if (!tpa_value_f64(tpa_obj_find(obj, p, "computeMajor"), p, &g->major)) g->major = NAN;
            if (!tpa_value_f64(tpa_obj_find(obj, p, "computeMinor"), p, &g->minor)) g->minor = NAN;
            if (!tpa_value_i64(tpa_obj_find(obj, p, "id"), p, &g->id)) g->id = o->n_gpus - 1;
            g->n_ranks = 0;
        }
    }
}

static void add_steps(overview *o, const tpa_steps_result *s)
{
    for (size_t i = 0; i < s->n; i++) {
        const tpa_step_row *r = &s->rows[i];
        double v[TPA_P_COUNT];
        for (int p = 0; p < TPA_P_COUNT; p++) {
            v[p] = (double)r->part_ns[p];
            o->cat_total[p] = tpa_sat_add(o->cat_total[p], r->part_ns[p]);
        }
        tpa_ds_add(&o->cat, r->num, v);
        o->steps_ns = tpa_sat_add(o->steps_ns, r->dur_ns);
        o->gpu_busy_ns = tpa_sat_add(o->gpu_busy_ns, r->gpu_busy_ns);
        o->n_steps++;
        if (!o->in.run_dir) {  /* a run directory's own files give its step time */
            double ms = (double)r->dur_ns / 1e6;
            tpa_ds_add(&o->m->step_ms, r->num, &ms);
        }
    }
    if (s->n && o->n_windows < TPA_HTML_WINDOWS) {
        o->windows[o->n_windows][0] = s->rows[0].num;
        o->windows[o->n_windows][1] = s->rows[s->n - 1].num;
        o->n_windows++;
    }
    o->device_rule |= s->device_rule;
    o->tail_dropped += s->tail_dropped;
    o->step_source = s->step_source;
    snprintf(o->step_name, sizeof o->step_name, "%s", s->step_name);
}

static ov_rank *rank_of(overview *o, int64_t rank)
{
    for (int i = 0; i < o->n_ranks; i++)
        if (o->ranks[i]->key == rank) return o->ranks[i];
    if (o->n_ranks == OV_RANKS) return NULL;
    ov_rank *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->key = r->rank = rank;
    tpa_ds_init(&r->cat, TPA_P_COUNT, STEP_COLUMNS);
    tpa_ds_init(&r->step_ms, 1, STEP_COLUMNS);
    return o->ranks[o->n_ranks++] = r;
}

/* A file's steps and findings into its rank's own series. */
static void add_rank(overview *o, const tpa_diagnosis *d, const tpa_meta *meta)
{
    ov_rank *r = rank_of(o, o->cur_rank);
    if (!r) return;
    if (meta->has_rank) r->rank = meta->rank;
    const tpa_steps_result *s = &d->steps;
    for (size_t i = 0; i < s->n; i++) {
        const tpa_step_row *row = &s->rows[i];
        double v[TPA_P_COUNT], ms = (double)row->dur_ns / 1e6;
        for (int p = 0; p < TPA_P_COUNT; p++) {
            v[p] = (double)row->part_ns[p];
            r->cat_total[p] = tpa_sat_add(r->cat_total[p], row->part_ns[p]);
        }
        tpa_ds_add(&r->cat, row->num, v);
        tpa_ds_add(&r->step_ms, row->num, &ms);
        r->steps_ns = tpa_sat_add(r->steps_ns, row->dur_ns);
        if (!r->n_steps++) r->first = row->num;
        r->last = row->num;
    }
    memcpy(r->findings, d->findings, d->n_findings * sizeof *d->findings);
    r->n_findings = d->n_findings;
    r->f_n = s->n;
    snprintf(r->path, sizeof r->path, "%s", o->last_path);
    r->f_first = s->n ? s->rows[0].num : 0;
    r->f_last = s->n ? s->rows[s->n - 1].num : 0;
}

/* By device, then time; equal ones in the order fed (the level's sums
 * add up in that order). */
static inline bool edge_before(const sm_edge *x, const sm_edge *y)
{
    return x->dev != y->dev ? x->dev < y->dev : x->t < y->t;
}

ADAPTIVE_SORT(sort_edges, sm_edge, edge_before)

/* o->edges sorted: kernels come in order of start, their ends mostly too. */
static void sort_all_edges(overview *o)
{
    sm_edge *tmp = NULL;
    size_t cap = 0;
    sort_edges_scratched(o->edges, o->n_edges, &tmp, &cap);
    free(tmp);
}

/* est. SM efficiency as the TensorBoard plugin estimated it: at each
 * instant, the sum of min(blocks per SM, 1) of the kernels running on a
 * device, capped at 1, integrated over the file's steps, per device. */
static void sm_sweep(overview *o, const tpa_steps_result *s)
{
    if (!s->n || !o->n_edges) { o->n_edges = 0; return; }
    int64_t lo = s->rows[0].start_ns, hi = lo;
    for (size_t i = 0; i < s->n; i++) {
        int64_t end = tpa_sat_add(s->rows[i].start_ns, s->rows[i].dur_ns);
        if (s->rows[i].start_ns < lo) lo = s->rows[i].start_ns;
        if (end > hi) hi = end;
    }
    int64_t steps_ns = 0;
    for (size_t i = 0; i < s->n; i++) steps_ns = tpa_sat_add(steps_ns, s->rows[i].dur_ns);
    sort_all_edges(o);
    double level = 0;
    for (size_t i = 0; i < o->n_edges; i++) {
        const sm_edge *e = &o->edges[i];
        if (i == 0 || e->dev != o->edges[i - 1].dev) { level = 0; o->sm_span_ns = tpa_sat_add(o->sm_span_ns, steps_ns); }
        level += e->v;
        if (i + 1 < o->n_edges && o->edges[i + 1].dev == e->dev && level > 1e-6) {
            int64_t a = e->t < lo ? lo : e->t, b = o->edges[i + 1].t > hi ? hi : o->edges[i + 1].t;
            if (b > a) o->sm_busy_ns += (level < 1 ? level : 1) * (double)(b - a);
        }
    }
    o->n_edges = 0;
}

static void ov_file_end(void *state, int file, const tpa_meta *meta)
{
    overview *o = state;
    read_gpus(o, meta);
    for (int i = 0; i < o->n_gpus; i++) {  /* mark the devices this rank used */
        gpu_info *g = &o->gpus[i];
        if (g->id < 0 || g->id >= 64 || !(o->file_devs >> g->id & 1) || g->n_ranks == GPU_RANKS) continue;
        g->ranks[g->n_ranks++] = meta->has_rank ? meta->rank : file;
    }
    o->file_devs = 0;
    tpa_error err;
    if (tpa_diagnose_end(o->run, meta, false, &err) != 0) { o->run = NULL; o->n_edges = 0; return; }
    o->run = NULL;
    sm_sweep(o, &o->cur.steps);
    add_steps(o, &o->cur.steps);
    add_rank(o, &o->cur, meta);
    if (o->have_last) tpa_diagnosis_free(&o->last);
    o->last = o->cur;
    o->have_last = true;
}

static void kv_num(tpu_json *j, const char *key, double v)
{
    if (isnan(v)) { tpu_json_key(j, key); tpu_json_null(j); }
    else tpu_json_kv_double(j, key, v);
}

static void categories_json(const overview *o, tpu_json *j)
{
    tpu_json_key(j, "categories");
    if (!o->n_steps) { tpu_json_null(j); return; }
    tpu_json_begin_object(j);
    tpu_json_key(j, "names");
    tpu_json_begin_array(j);
    for (int p = 0; p < TPA_P_COUNT; p++) tpu_json_string(j, tpa_part_names[p]);
    tpu_json_end_array(j);
    tpu_json_key(j, "total_ns");
    tpu_json_begin_array(j);
    for (int p = 0; p < TPA_P_COUNT; p++) tpu_json_int(j, o->cat_total[p]);
    tpu_json_end_array(j);
    tpu_json_kv_int(j, "steps_ns", o->steps_ns);
    tpu_json_kv_uint(j, "n_steps", o->n_steps);
    tpa_html_ds_member(j, "steps", &o->cat, TPA_P_COUNT);
    tpu_json_end_object(j);
}

static void gpu_json(const overview *o, tpu_json *j)
{
    tpu_json_key(j, "gpus");
    tpu_json_begin_array(j);
    for (int i = 0; i < o->n_gpus; i++) {
        const gpu_info *g = &o->gpus[i];
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "name", g->name);
        kv_num(j, "memory_bytes", g->memory);
        kv_num(j, "sms", g->sms);
        kv_num(j, "cc_major", g->major);
        kv_num(j, "cc_minor", g->minor);
        tpu_json_kv_int(j, "id", g->id);
        tpu_json_key(j, "ranks");  /* the ranks whose kernels ran on it */
        tpu_json_begin_array(j);
        for (int k = 0; k < g->n_ranks; k++) tpu_json_int(j, g->ranks[k]);
        tpu_json_end_array(j);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    tpu_json_key(j, "gpu");
    bool any = o->have_last && (o->kernel_ns > 0 || o->last.has_gpu);
    if (!any) { tpu_json_null(j); return; }
    tpu_json_begin_object(j);
    tpu_json_kv_int(j, "kernel_ns", o->kernel_ns);
    kv_num(j, "utilization_pct", o->steps_ns > 0 ? 100.0 * (double)o->gpu_busy_ns / (double)o->steps_ns : NAN);
    kv_num(j, "sm_efficiency_pct", o->sm_span_ns > 0 && !o->sm_cut ? 100.0 * o->sm_busy_ns / (double)o->sm_span_ns : NAN);
    kv_num(j, "occupancy_pct", o->occ_kernel_ns > 0 ? o->occ_weighted / (double)o->occ_kernel_ns : NAN);
    tpu_json_kv_int(j, "occupancy_kernel_ns", o->occ_kernel_ns);
    tpu_json_end_object(j);
}

static void step_note(const overview *o, tpu_json *j)
{
    char buf[640] = "";
    size_t n = 0;
    if (o->step_source == TPA_STEPS_ANNOTATION)
        n = (size_t)snprintf(buf, sizeof buf, "no ProfilerStep#N in the trace: steps are the repeated annotation \"%.200s\"", o->step_name);
    else if (o->step_source == TPA_STEPS_STEP_NUM)
        n = (size_t)snprintf(buf, sizeof buf, "steps are the \"%.200s\" spans numbered by args.step_num", o->step_name);
    if (o->device_rule) {  /* which rule the step times follow (issue 31) */
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%sGPU steps as the TensorBoard plugin counts them: each step runs to the"
                              " end of the GPU work it launched, the next starts after it", n ? ". " : "");
        if (o->tail_dropped && n < sizeof buf)
            snprintf(buf + n, sizeof buf - n, " (the last %" PRIu64 " step%s left out: the profiler stopped before %s kernels were recorded)",
                     o->tail_dropped, o->tail_dropped == 1 ? "" : "s", o->tail_dropped == 1 ? "its" : "their");
    }
    tpu_json_kv_string(j, "step_note", buf);
}

/* "the 3 traced steps (#0-#2)" of a trace's findings. */
static void traced_steps(char *buf, size_t cap, const tpa_steps_result *s)
{
    if (!s->n) { snprintf(buf, cap, "the traced span (no steps)"); return; }
    if (s->n == 1) snprintf(buf, cap, "the traced step #%" PRId64, s->rows[0].num);
    else snprintf(buf, cap, "the %zu traced steps (#%" PRId64 "-#%" PRId64 ")", s->n, s->rows[0].num, s->rows[s->n - 1].num);
}

static const tpa_finding *traced_finding(const overview *o, const char *id)
{
    for (size_t i = 0; o->have_last && i < o->last.n_findings; i++)
        if (!strcmp(o->last.findings[i].id, id)) return &o->last.findings[i];
    return NULL;
}

static bool is_optimizer_part(const char *name)
{
    for (const char *p = name; *p; p++)
        if ((p[0] | 0x20) == 'o' && (p[1] | 0x20) == 'p' && (p[2] | 0x20) == 't' && (p[3] | 0x20) == 'i' && (p[4] | 0x20) == 'm')
            return true;
    return false;
}

/* The run's zone (timing_profile.json) of a finding's kind with the most
 * time: a data-loading name, or one naming the optimizer; -1 when none. */
static int run_part(const tpa_html_model *m, bool loader)
{
    int best = -1;
    for (int i = 0; i + 1 < m->n_parts; i++) {
        tpa_sv nm = { m->part_names[i], strlen(m->part_names[i]) };
        bool is = loader ? tpa_name_is_data_loading(nm) : is_optimizer_part(m->part_names[i]);
        if (is && (best < 0 || m->part_sum_ms[i] > m->part_sum_ms[best])) best = i;
    }
    return best;
}

/* The traced steps' figure of a finding the run's files remake, beside it. */
static void traced_figure(const overview *o, const char *id, char *buf, size_t cap)
{
    const tpa_finding *t = traced_finding(o, id);
    char steps[96];
    traced_steps(steps, sizeof steps, &o->last.steps);
    if (t && !strcmp(id, "step_variance")) snprintf(buf, cap, "%s: %.200s", steps, t->evidence);
    else if (t) snprintf(buf, cap, "%s: %.1f%%", steps, 100 * t->share);
    else if (!strcmp(id, "data_loading") && o->last.mean_ns > 0)
        snprintf(buf, cap, "%s: %.1f%%", steps, 100.0 * (double)o->last.part_mean_ns[TPA_P_DATALOAD] / (double)o->last.mean_ns);
    else snprintf(buf, cap, "%s: below the threshold", steps);
}

/* The findings a run directory's own files make for the whole run
 * (timing_profile.json: every step's time and zones): data loading and the
 * optimizer from the zones' share of step time, step variance from every
 * step's time. made[k] is set for each kind whose statistic the run has:
 * the trace's finding of that kind is replaced (with or without a finding
 * of the whole run), not shown beside it. Returns how many were written. */
static int run_findings(const overview *o, tpu_json *j, bool made[3])
{
    static const char *const ids[3] = { "data_loading", "optimizer", "step_variance" };
    static const double mins[2] = { TPA_DATALOAD_MIN, TPA_OPTIM_MIN };
    const tpa_html_model *m = o->m;
    int n = 0;
    made[0] = made[1] = made[2] = false;
    if (!o->in.run_dir || !m->n_timed || m->step_sum_ms <= 0) return 0;
    bool torch = o->have_last && o->last.torch;
    for (int k = 0; k < 3; k++) {
        tpa_finding f;
        char traced[340];
        if (o->have_last) traced_figure(o, ids[k], traced, sizeof traced);
        else snprintf(traced, sizeof traced, "no traced step");
        if (k < 2) {
            int part = run_part(m, k == 0);
            if (part < 0) continue;
            made[k] = true;
            double whole = m->part_sum_ms[part] / m->step_sum_ms;
            if (whole < mins[k] || !tpa_finding_init(&f, ids[k], torch, whole)) continue;
            snprintf(f.evidence, sizeof f.evidence, "whole run, %" PRIu64 " steps: %.1f%% of step time in %.60s "
                     "(timing_profile.json); %s", m->n_timed, 100 * whole, m->part_names[part], traced);
        } else {
            if (m->n_timed < TPA_VARIANCE_MIN_STEPS) continue;
            made[k] = true;
            double med = tpa_html_step_quantile(m, 0.5), p90 = tpa_html_step_quantile(m, 0.9);
            if (!(med > 0) || p90 / med <= TPA_VARIANCE_RATIO) continue;
            if (!tpa_finding_init(&f, ids[k], torch, tpa_html_slow_share(m, med))) continue;
            char a[32], b[32];
            tpa_fmt_dur(a, sizeof a, (int64_t)(med * 1e6));
            tpa_fmt_dur(b, sizeof b, (int64_t)(p90 * 1e6));
            snprintf(f.evidence, sizeof f.evidence, "whole run, %" PRIu64 " steps: median step %s, p90 %s (x%.2f) "
                     "(timing_profile.json); %s", m->n_timed, a, b, p90 / med, traced);
        }
        tpa_html_finding_json(j, &f, "run");
        n++;
    }
    return n;
}

static void findings_json(const overview *o, tpu_json *j)
{
    tpu_json_key(j, "findings");
    tpu_json_begin_array(j);
    bool made[3];
    run_findings(o, j, made);
    for (size_t i = 0; o->have_last && i < o->last.n_findings; i++) {
        const tpa_finding *f = &o->last.findings[i];
        if ((made[0] && !strcmp(f->id, "data_loading")) || (made[1] && !strcmp(f->id, "optimizer")) ||
            (made[2] && !strcmp(f->id, "step_variance"))) continue;
        tpa_html_finding_json(j, f, "trace");
    }
    for (int i = 0; i < o->m->n_findings; i++) tpa_html_finding_json(j, &o->m->findings[i], "run");
    tpu_json_end_array(j);
    const tpa_steps_result *s = o->have_last ? &o->last.steps : NULL;
    tpu_json_key(j, "findings_steps");  /* the steps the trace's findings come from */
    if (!s || !s->n) { tpu_json_null(j); return; }
    tpu_json_begin_array(j);
    tpu_json_int(j, s->rows[0].num);
    tpu_json_int(j, s->rows[s->n - 1].num);
    tpu_json_uint(j, s->n);
    tpu_json_end_array(j);
}

static int by_rank(const void *a, const void *b)
{
    const ov_rank *x = *(ov_rank *const *)a, *y = *(ov_rank *const *)b;
    return x->rank != y->rank ? (x->rank < y->rank ? -1 : 1) : (x->key < y->key ? -1 : x->key > y->key);
}

/* Each rank's steps, categories and findings (several ranks only), in rank order. */
static void ranks_json(overview *o, tpu_json *j)
{
    tpu_json_key(j, "ranks");
    if (o->n_ranks < 2) { tpu_json_null(j); return; }
    qsort(o->ranks, (size_t)o->n_ranks, sizeof *o->ranks, by_rank);
    tpu_json_begin_array(j);
    for (int i = 0; i < o->n_ranks; i++) {
        const ov_rank *r = o->ranks[i];
        tpu_json_begin_object(j);
        tpu_json_kv_int(j, "rank", r->rank);
        tpu_json_kv_string(j, "findings_from", r->path);
        tpu_json_kv_uint(j, "n_steps", r->n_steps);
        tpu_json_kv_int(j, "steps_ns", r->steps_ns);
        tpu_json_key(j, "total_ns");
        tpu_json_begin_array(j);
        for (int p = 0; p < TPA_P_COUNT; p++) tpu_json_int(j, r->cat_total[p]);
        tpu_json_end_array(j);
        tpa_html_ds_member(j, "steps", &r->cat, TPA_P_COUNT);
        tpa_html_ds_member(j, "step_ms", &r->step_ms, 1);
        tpu_json_key(j, "findings");
        tpu_json_begin_array(j);
        for (size_t k = 0; k < r->n_findings; k++) tpa_html_finding_json(j, &r->findings[k], "trace");
        tpu_json_end_array(j);
        tpu_json_key(j, "findings_steps");
        if (!r->f_n) tpu_json_null(j);
        else {
            tpu_json_begin_array(j);
            tpu_json_int(j, r->f_first);
            tpu_json_int(j, r->f_last);
            tpu_json_uint(j, r->f_n);
            tpu_json_end_array(j);
        }
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
}

static void ov_json(void *state, tpu_json *j)
{
    overview *o = state;
    tpu_json_begin_object(j);
    tpu_json_kv_bool(j, "run_dir", o->in.run_dir);
    step_note(o, j);
    tpu_json_kv_string(j, "findings_from", o->have_last ? o->last_path : "");
    tpu_json_kv_string(j, "run_error", o->run_error);
    tpa_html_model_members(o->m, j);
    tpu_json_key(j, "windows");
    tpu_json_begin_array(j);
    for (int i = 0; i < o->n_windows && o->in.run_dir; i++) {
        tpu_json_begin_array(j);
        tpu_json_int(j, o->windows[i][0]);
        tpu_json_int(j, o->windows[i][1]);
        tpu_json_end_array(j);
    }
    tpu_json_end_array(j);
    findings_json(o, j);
    categories_json(o, j);
    ranks_json(o, j);
    gpu_json(o, j);
    tpu_json_end_object(j);
}

static void ov_free(void *state)
{
    overview *o = state;
    if (o->run) {  /* a read stopped early: finish it to free it */
        tpa_meta meta;
        memset(&meta, 0, sizeof meta);
        tpa_error err;
        if (tpa_diagnose_end(o->run, &meta, true, &err) == 0) tpa_diagnosis_free(&o->cur);
    }
    if (o->have_last) tpa_diagnosis_free(&o->last);
    if (o->m == &o->own) tpa_html_model_free(&o->own);
    tpa_ds_free(&o->cat);
    for (int i = 0; i < o->n_ranks; i++) {
        tpa_ds_free(&o->ranks[i]->cat);
        tpa_ds_free(&o->ranks[i]->step_ms);
        free(o->ranks[i]);
    }
    free(o->edges);
    free(o);
}

const tpa_view_class tpa_view_overview = {
    .key = "overview",
    .begin = ov_begin,
    .file_begin = ov_file_begin,
    .feed = ov_feed,
    .file_end = ov_file_end,
    .json = ov_json,
    .free = ov_free,
};
