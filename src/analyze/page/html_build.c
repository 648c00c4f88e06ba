/* html_build.c - the report page: which traces an input names, one read of
 * each trace that feeds every view's collector (view.h), the page data
 * ({"meta": ..., "<view key>": ...}) and the page around it (the shell,
 * stylesheet and scripts of src/analyze/page/, embedded at build time). */
#include "analyze/page/html.h"
#include "analyze/attrib/attrib.h"
#include "analyze/ranks/ranks.h"
#include "analyze/page/view.h"
#include "util/worker.h"
#include "util/fileio.h"

#include <errno.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const tpa_view_class *const views[] = { TPA_VIEW_LIST };
enum { N_VIEWS = (int)(sizeof views / sizeof views[0]) };

#define MAX_TRACES 64                       /* a run directory's trace windows */
#define TRACE_MAX_BYTES ((off_t)256 << 20)  /* run-directory traces above: left out */
#define MAX_NOTES 16

typedef struct lane_list {
    int views[N_VIEWS], n_views;            /* indexes into views[], begun or not: their file_end,
                                               json and free (view.h: end_on_lane0) */
    void (*feed[N_VIEWS])(void *, const tpa_event *, int);
    void *feed_st[N_VIEWS];
    int n_feed;
} lane_list;

typedef struct page {
    tpa_view_input in;
    char *traces[MAX_TRACES];
    int n_traces;
    char title[300];
    char notes[MAX_NOTES][400];             /* what was left out, and why */
    int n_notes;
    void *state[N_VIEWS];
    lane_list lanes[2];                     /* view.h: which views each thread feeds */
    tpu_worker *helper;                     /* lane 1's thread (worker.h), or NULL */
    bool json_done;                         /* every view's JSON is in json[] */
    tpu_buf json[N_VIEWS];                  /* each view's JSON value */
    tpa_html_model *run_files;              /* a run directory's own files, or NULL */
    char run_error[400];
    tpa_attrib *attrib;                     /* the views' attributor (lane 1's, in.attrib) */
} page;

static void note(page *p, const char *fmt, const char *a)
{
    if (p->n_notes < MAX_NOTES) snprintf(p->notes[p->n_notes++], sizeof p->notes[0], fmt, a);
}

static bool exists_in(const char *dir, const char *name)
{
    char path[1200];
    struct stat st;
    return tpu_path_join(path, sizeof path, dir, name) == 0 && stat(path, &st) == 0;
}

/* A directory with rank<r>/ directories inside is a job directory, job.json
 * or not: the rule `analyze JOB_DIR` follows (tpa_job_inputs). */
static bool is_job_dir(const char *dir)
{
    tpa_rank_input *in;
    size_t n;
    tpa_error e;
    if (tpa_job_inputs(dir, &in, &n, &e) != 0) return false;
    bool ranks = false;
    for (size_t i = 0; i < n; i++) ranks = ranks || tpa_is_dir(in[i].path);
    tpa_job_inputs_free(in, n);
    return ranks;
}

/* The traces directly in dir (tpa_trace_files: sorted by name, the run's
 * own JSON files left out), the first MAX_TRACES of them. Traces over
 * TRACE_MAX_BYTES are left out with a note when cap_size (the close of a
 * session must not spend minutes on a huge window; `trainprof analyze`
 * reads them whole). */
static void list_traces(page *p, const char *dir, bool cap_size)
{
    char **files;
    size_t n;
    tpa_error e;
    if (tpa_trace_files(dir, &files, &n, &e) != 0) return;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        const char *name = strrchr(files[i], '/') + 1;
        if (p->n_traces >= MAX_TRACES) {
            note(p, "%.300s: over the page's 64 traces, left out", name);
        } else if (stat(files[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (cap_size && st.st_size > TRACE_MAX_BYTES) {
                note(p, "%.300s is over 256 MB and left out: run `trainprof analyze` on it", name);
            } else {
                p->traces[p->n_traces++] = files[i];
                continue;
            }
        }
        free(files[i]);
    }
    free(files);
}

/* A job directory's traces: each rank's (rank<r>/profiler_traces/ or the
 * trace files of the job directory itself), in rank order. */
static void list_job_traces(page *p, const char *dir)
{
    tpa_rank_input *in;
    size_t n;
    tpa_error e;
    if (tpa_job_inputs(dir, &in, &n, &e) != 0) return;
    for (size_t i = 0; i < n; i++) {
        char **files = NULL;
        size_t nf = 0;
        if (!tpa_is_dir(in[i].path)) {
            if (p->n_traces < MAX_TRACES && !(p->traces[p->n_traces++] = strdup(in[i].path))) abort();
        } else if (tpa_job_trace_files(in[i].path, &files, &nf, &e) == 0) {
            for (size_t f = 0; f < nf; f++) {
                if (p->n_traces < MAX_TRACES) p->traces[p->n_traces++] = files[f];
                else { note(p, "%.300s: over the page's 64 traces, left out", files[f]); free(files[f]); }
            }
            free(files);
        }
    }
    tpa_job_inputs_free(in, n);
}

/* What input names: a run directory, a directory of traces, or one trace. */
static int resolve(page *p, const char *input, tpa_error *err)
{
    struct stat st;
    p->in.input = input;
    size_t n = strlen(input);
    while (n > 1 && input[n - 1] == '/') n--;  /* "dir/" names dir */
    size_t b = n;
    while (b && input[b - 1] != '/') b--;
    snprintf(p->title, sizeof p->title, "%.*s", (int)(n - b), input + b);
    if (stat(input, &st) != 0) {
        tpa_error_set(err, TPA_ERR_IO, "cannot read %s: %s", input, strerror(errno));
        snprintf(err->file, sizeof err->file, "%s", input);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (!(p->traces[p->n_traces++] = strdup(input))) abort();
    } else {
        p->in.run_dir = exists_in(input, "timing_profile.json") || exists_in(input, "memory_profile.json") ||
                        exists_in(input, "operations.json") || exists_in(input, "profiler_traces");
        p->in.job_dir = exists_in(input, "job.json") || (!p->in.run_dir && is_job_dir(input));
        char dir[1200];
        if (p->in.run_dir && tpu_path_join(dir, sizeof dir, input, "profiler_traces") == 0)
            list_traces(p, dir, true);
        else if (!p->in.job_dir)
            list_traces(p, input, false);
        else
            list_job_traces(p, input);
        if (!p->in.run_dir && !p->in.job_dir && !p->n_traces) {
            tpa_error_set(err, TPA_ERR_FORMAT,
                          "expected a trace file, a run directory (timing_profile.json, memory_profile.json, "
                          "operations.json or profiler_traces/ inside) or a directory of traces "
                          "(*.json, *.json.gz); found none of them");
            snprintf(err->file, sizeof err->file, "%s", input);
            return -1;
        }
    }
    p->in.traces = (const char *const *)p->traces;
    p->in.n_traces = p->n_traces;
    return 0;
}

/* ---- the two lanes (view.h): lane 1 on a second thread ------------------------------ */

#define BLOCK_EVENTS 8192   /* events handed out at once, at most */
#ifndef LANE1_LAG
#define LANE1_LAG 4         /* blocks lane 1 may lag behind lane 0 (feed_all) */
#endif
#define MIN_SHARED 64       /* smaller blocks are fed on one thread */

/* What both lanes do in turn: feed a block, end a file, write their JSON. */
typedef struct lane_job {
    enum { JOB_FEED, JOB_FILE_END, JOB_JSON, JOB_FREE } what;
    const tpa_event *evs;   /* JOB_FEED */
    size_t n;
    int file;               /* JOB_FILE_END */
    bool then_json;         /* JOB_FILE_END of the last file: each lane goes on to its JSON */
    const tpa_meta *meta;
} lane_job;

/* Each view's value in its own buffer: data_json joins them in key order. */
static void lane_json(page *p, const lane_list *l)
{
    for (int i = 0; i < l->n_views; i++) {
        int v = l->views[i];
        tpu_json j;
        tpu_json_init(&j, &p->json[v], 0);
        if (p->state[v]) views[v]->json(p->state[v], &j);
        else tpu_json_null(&j);
    }
}

/* One lane's part of job: its collectors, in list order. */
/* The attributor's collectors (view_operators, _kernels, _modules) are fed
 * on lane 1, so it is freed there with them. */
enum { ATTRIB_LANE = 1 };

static void free_attrib(page *p)
{
    tpa_attrib_free(p->attrib);
    p->attrib = p->in.attrib = NULL;
}

static void lane_run(page *p, int lane, const lane_job *job)
{
    const lane_list *l = &p->lanes[lane];
    switch (job->what) {
    case JOB_FEED:
        for (size_t e = 0; e < job->n; e++) {
            int kind = tpa_event_kind(&job->evs[e]);  /* the reader's: classified as it was parsed */
            for (int i = 0; i < l->n_feed; i++) l->feed[i](l->feed_st[i], &job->evs[e], kind);
        }
        break;
    case JOB_FILE_END:
        for (int i = 0; i < l->n_views; i++) {
            int v = l->views[i];
            if (p->state[v] && views[v]->file_end) views[v]->file_end(p->state[v], job->file, job->meta);
        }
        if (job->then_json) lane_json(p, l);  /* no wait between: lane 0 writes while lane 1 nests */
        break;
    case JOB_FREE:  /* the views' states, no longer read once their JSON is written */
        for (int i = 0; i < l->n_views; i++) {
            int v = l->views[i];
            if (p->state[v]) views[v]->free(p->state[v]);
            p->state[v] = NULL;
        }
        if (lane == ATTRIB_LANE) free_attrib(p);  /* after the views that joined it */
        break;
    case JOB_JSON:
        lane_json(p, l);
        break;
    }
}

/* Lane 1's part of a job, on the second thread (tpu_worker) while the
 * builder's thread runs lane 0's. */
typedef struct lane1_call { page *p; const lane_job *job; } lane1_call;

static void run_lane1(void *arg)
{
    const lane1_call *c = arg;
    lane_run(c->p, 1, c->job);
}

/* job on both lanes: at once when there is a helper and share is set.
 * Returns once both are done. */
static void both_lanes(page *p, const lane_job *job, bool share)
{
    tpu_worker_wait(p->helper);  /* lane 1 takes its jobs in order */
    if (!p->helper || !share) {
        lane_run(p, 0, job);
        lane_run(p, 1, job);
        return;
    }
    lane1_call call = { p, job };
    tpu_worker_post(p->helper, run_lane1, &call);
    lane_run(p, 0, job);
    tpu_worker_wait(p->helper);
}

/* The lanes of the views begun, and lane 1's thread when the reader has
 * threads to spare (-j > 1) and both lanes have collectors to feed. */
static void lanes_begin(page *p)
{
    for (int v = 0; v < N_VIEWS; v++) {
        lane_list *ends = &p->lanes[views[v]->lane == 1 && !views[v]->end_on_lane0];
        ends->views[ends->n_views++] = v;
        lane_list *l = &p->lanes[views[v]->lane == 1];
        if (p->state[v] && views[v]->feed) {
            l->feed[l->n_feed] = views[v]->feed;
            l->feed_st[l->n_feed++] = p->state[v];
        }
    }
    if (tpa_jobs() > 1 && p->lanes[0].n_feed && p->lanes[1].n_feed) p->helper = tpu_worker_start(LANE1_LAG);
}

/* The reader's release (tpa_reader_keep_last): lane 1 is done with the
 * blocks it was given. */
static void wait_lane1(void *p) { tpu_worker_wait(((page *)p)->helper); }

/* Every event of r to every collector, a block at a time. With a helper,
 * lane 1 is fed from a queue of up to LANE1_LAG blocks while this thread
 * feeds lane 0 and reads the next block: each block has its own job, and
 * the reader keeps its events, until lane 1 is done with it (in step, one
 * block at a time, each wake-up of lane 1 cost this thread a scheduler's
 * delay: the page's largest wait). */
static int feed_all(page *p, tpa_reader *r, tpa_error *err)
{
    enum { SLOTS = LANE1_LAG + 1 };  /* the blocks queued, and the one read */
    lane_job jobs[SLOTS];
    lane1_call calls[SLOTS];
    for (int b = 0; b < SLOTS; b++) {
        jobs[b] = (lane_job){ .what = JOB_FEED };
        calls[b] = (lane1_call){ p, &jobs[b] };
    }
    if (p->helper) tpa_reader_keep_last(r, LANE1_LAG, wait_lane1, p);
    long n;
    for (int b = 0; (n = tpa_reader_next_block(r, &jobs[b].evs, BLOCK_EVENTS, err)) > 0; b = (b + 1) % SLOTS) {
        jobs[b].n = (size_t)n;
        if (p->helper && n >= MIN_SHARED) {
            tpu_worker_post(p->helper, run_lane1, &calls[b]);
            lane_run(p, 0, &jobs[b]);
        } else {
            both_lanes(p, &jobs[b], false);
        }
    }
    tpu_worker_wait(p->helper);
    return (int)n;
}

/* One read of path (from r, closed here) for every collector. */
static int read_trace(page *p, int file, const char *path, tpa_reader *r, tpa_error *err)
{
    if (!r) return -1;
    for (int v = 0; v < N_VIEWS; v++)
        if (p->state[v] && views[v]->file_begin) views[v]->file_begin(p->state[v], file, path);
    int rc = feed_all(p, r, err);
    const tpa_meta *meta = tpa_reader_meta(r);
    lane_job end = { .what = JOB_FILE_END, .file = file, .meta = meta, .then_json = file == p->n_traces - 1 };
    both_lanes(p, &end, true);
    p->json_done |= end.then_json;
    if (rc >= 0 && meta->truncated) note(p, "%.300s ends early (cut short): the views show what was read", path);
    if (rc >= 0 && !meta->events) {
        if (!p->in.run_dir && p->n_traces == 1) {  /* the one input: say what was expected */
            tpa_error_set(err, TPA_ERR_FORMAT, "no trace events: expected a trace (a JSON array of events, or "
                          "an object with a traceEvents array of them)");
            snprintf(err->file, sizeof err->file, "%s", path);
            rc = -1;
        } else {
            note(p, "%.300s holds no trace events", path);
        }
    }
    tpa_reader_close(r);
    return rc < 0 ? -1 : 0;
}

static void meta_json(const page *p, tpu_json *j)
{
    tpu_json_key(j, "meta");
    tpu_json_begin_object(j);
    tpu_json_kv_string(j, "title", p->title);
    tpu_json_kv_string(j, "input", p->in.input);
    tpu_json_kv_string(j, "kind", p->in.job_dir ? "job directory" : p->in.run_dir ? "run directory"
                                  : p->n_traces == 1 && !strcmp(p->traces[0], p->in.input) ? "trace file" : "traces");
    tpu_json_key(j, "traces");
    tpu_json_begin_array(j);
    for (int i = 0; i < p->n_traces; i++) tpu_json_string(j, p->traces[i]);
    tpu_json_end_array(j);
    tpu_json_key(j, "left_out");
    tpu_json_begin_array(j);
    for (int i = 0; i < p->n_notes; i++) tpu_json_string(j, p->notes[i]);
    tpu_json_end_array(j);
    tpu_json_end_object(j);
}

static int data_json(page *p, tpu_buf *data);

/* A run directory's own files, once for every view (view.h). */
static void read_run_files(page *p)
{
    if (!p->in.run_dir || !(p->run_files = calloc(1, sizeof *p->run_files))) return;
    tpa_html_model_init(p->run_files, p->in.input);
    tpa_error err;
    memset(&err, 0, sizeof err);
    unsigned all = 1u << TPA_HTML_OPERATIONS | 1u << TPA_HTML_TIMING | 1u << TPA_HTML_MEMORY;
    if (tpa_html_read_run(p->run_files, p->in.input, all, true, &err) != 0)  /* shown, the rest still drawn */
        snprintf(p->run_error, sizeof p->run_error, "%.200s: byte %llu: %.180s", err.file,
                 (unsigned long long)err.offset, err.msg);
    tpa_html_memory_findings(p->run_files);
    p->in.run_files = p->run_files;
    p->in.run_error = p->run_error;
}

static void begin_views(page *p)
{
    read_run_files(p);
    p->in.attrib = p->attrib = tpa_attrib_new();
    for (int v = 0; v < N_VIEWS; v++) p->state[v] = views[v]->begin(&p->in);
    lanes_begin(p);
}

static int build(page *p, tpu_buf *data, tpa_error *err)
{
    begin_views(p);
    for (int i = 0; i < p->n_traces; i++)
        if (read_trace(p, i, p->traces[i], tpa_reader_open(p->traces[i], err), err) != 0) return -1;
    return data_json(p, data);
}

static void free_page(page *p)
{
    tpu_worker_stop(p->helper);
    for (int v = 0; v < N_VIEWS; v++) {
        if (p->state[v]) views[v]->free(p->state[v]);
        tpu_buf_free(&p->json[v]);
    }
    free_attrib(p);
    for (int i = 0; i < p->n_traces; i++) free(p->traces[i]);
    if (p->run_files) tpa_html_model_free(p->run_files);
    free(p->run_files);
    free(p);
}

int tpa_html_build_mem(const void *trace, size_t n, size_t max_read, tpu_buf *data, tpa_error *err)
{
    page *p = calloc(1, sizeof *p);
    if (!p) abort();
    p->in.input = "(memory)";
    snprintf(p->title, sizeof p->title, "(memory)");
    if (!(p->traces[p->n_traces++] = strdup(p->in.input))) abort();
    p->in.traces = (const char *const *)p->traces;
    p->in.n_traces = 1;
    begin_views(p);
    tpa_reader *r = tpa_reader_open_mem(trace, n, err);
    if (r && max_read) tpa_reader_set_max_read(r, max_read);
    int rc = read_trace(p, 0, p->in.input, r, err);
    if (rc == 0) rc = data_json(p, data);
    free_page(p);
    return rc;
}

static int data_json(page *p, tpu_buf *data)
{
    tpu_json j;
    tpu_json_init(&j, data, 0);
    lane_job job = { .what = JOB_JSON };
    if (!p->json_done) both_lanes(p, &job, true);  /* done after the last file's end, when there was one */
    tpu_json_begin_object(&j);
    meta_json(p, &j);
    for (int v = 0; v < N_VIEWS; v++) {
        tpu_json_key(&j, views[v]->key);
        tpu_json_raw(&j, p->json[v].data ? p->json[v].data : "null", p->json[v].data ? p->json[v].len : 4);
        tpu_buf_free(&p->json[v]);
    }
    tpu_json_end_object(&j);
    return 0;
}

/* Writes the page when rc is 0, then frees p and data; returns rc or the
 * write's error. Lane 1's views are freed on its thread meanwhile (the
 * attributor's and the Timeline's hundreds of MB take a while to unmap). */
int tpa_html_not_input(const char *out, const char *const *in, size_t n, tpa_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!in[i] || !tpu_same_file(in[i], out)) continue;
        tpa_error_set(err, TPA_ERR_USAGE, "the output is the input %s (the same file): writing the page "
                      "would destroy it; choose another output", in[i]);
        snprintf(err->file, sizeof err->file, "%s", out);
        return -1;
    }
    return 0;
}

static int write_and_free(page *p, tpu_buf *data, int rc, const char *out, tpa_error *err)
{
    static const lane_job free_job = { .what = JOB_FREE };
    lane1_call call = { p, &free_job };
    if (p->helper) tpu_worker_post(p->helper, run_lane1, &call);
    if (rc == 0) rc = tpa_html_not_input(out, (const char *const *)p->traces, (size_t)p->n_traces, err);
    if (rc == 0) rc = tpa_html_write_page(data, out, err);
    free_page(p);  /* waits for lane 1's frees first */
    tpu_buf_free(data);
    return rc;
}

int tpa_report_html(const char *input, const char *out, tpa_error *err)
{
    page *p = calloc(1, sizeof *p);
    if (!p) abort();
    tpu_buf data = {0};
    int rc = resolve(p, input, err);
    p->in.out = out;
    if (rc == 0) rc = build(p, &data, err);
    return write_and_free(p, &data, rc, out, err);
}

/* Several trace files named together (the ranks of a job). */
int tpa_report_html_traces(const char *const *inputs, int n, const char *out, tpa_error *err)
{
    page *p = calloc(1, sizeof *p);
    if (!p) abort();
    tpu_buf data = {0};
    int rc = 0;
    for (int i = 0; i < n && i < MAX_TRACES && rc == 0; i++) {
        rc = resolve(p, inputs[i], err);
        if (rc == 0 && (p->in.run_dir || p->in.job_dir || tpa_is_dir(inputs[i]))) {
            tpa_error_set(err, TPA_ERR_USAGE, "several inputs must all be trace files (a directory is one input alone)");
            snprintf(err->file, sizeof err->file, "%s", inputs[i]);
            rc = -1;
        }
    }
    if (rc == 0) {
        p->in.input = inputs[0];
        snprintf(p->title, sizeof p->title, "%d traces", n);
        rc = build(p, &data, err);
    }
    return write_and_free(p, &data, rc, out, err);
}

/* ---- the page ------------------------------------------------------------------------ */

/* The first '<' or 0xE2 (the lead byte of U+2028 and U+2029) from data[i]
 * on, or len: 16 bytes at a time, as the page's data is mostly neither. */
static size_t next_unsafe(const char *data, size_t i, size_t len)
{
#ifdef __SSE2__
    const __m128i lt = _mm_set1_epi8('<'), e2 = _mm_set1_epi8((char)0xE2);
    for (; i + 16 <= len; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(data + i));
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lt), _mm_cmpeq_epi8(v, e2)));
        if (mask) return i + (size_t)__builtin_ctz(mask);
    }
#endif
    while (i < len && data[i] != '<' && (unsigned char)data[i] != 0xE2) i++;
    return i;
}

void tpa_html_script_safe(tpu_buf *out, const char *data, size_t len)
{
    size_t from = 0;
    for (size_t i = next_unsafe(data, 0, len); i < len; i = next_unsafe(data, i + 1, len)) {
        const char *esc = NULL;
        size_t skip = 1;
        if (data[i] == '<') esc = "\\u003c";
        else if ((unsigned char)data[i] == 0xE2 && i + 2 < len && (unsigned char)data[i + 1] == 0x80 &&
                 ((unsigned char)data[i + 2] == 0xA8 || (unsigned char)data[i + 2] == 0xA9)) {
            esc = (unsigned char)data[i + 2] == 0xA8 ? "\\u2028" : "\\u2029";
            skip = 3;
        }
        if (!esc) continue;
        tpu_buf_append(out, data + from, i - from);
        tpu_buf_puts(out, esc);
        from = i + skip;
        i += skip - 1;
    }
    tpu_buf_append(out, data + from, len - from);
}

/* Appends shell text up to marker (or the rest when marker is NULL); returns
 * what follows the marker. */
static const char *shell_to(tpu_buf *page, const char *shell, const char *marker)
{
    const char *at = marker ? strstr(shell, marker) : NULL;
    size_t n = at ? (size_t)(at - shell) : strlen(shell);
    tpu_buf_append(page, shell, n);
    return at ? at + strlen(marker) : shell + n;
}

int tpa_html_write_page(const tpu_buf *data, const char *out, tpa_error *err)
{
    tpu_buf page = {0};
    const char *s = shell_to(&page, tpa_web_shell, "/*TP:STYLE*/");
    tpu_buf_puts(&page, tpa_web_style);
    s = shell_to(&page, s, "/*TP:DATA*/");
    tpa_html_script_safe(&page, data->data ? data->data : "null", data->data ? data->len : 4);
    s = shell_to(&page, s, "/*TP:SCRIPTS*/");
    tpu_buf_puts(&page, "<script>\n");
    tpu_buf_puts(&page, tpa_web_common);
    tpu_buf_puts(&page, "</script>\n");
    for (const char *const *v = tpa_web_views; *v; v++) {  /* one element each: a failing view stays alone */
        tpu_buf_puts(&page, "<script>\n");
        tpu_buf_puts(&page, *v);
        tpu_buf_puts(&page, "</script>\n");
    }
    tpu_buf_puts(&page, "<script>TP.start();</script>\n");
    shell_to(&page, s, NULL);
    char eb[256];
    int rc = tpu_write_file_atomic(out, page.data, page.len, eb, sizeof eb);
    if (rc != 0) {
        tpa_error_set(err, TPA_ERR_IO, "cannot write the report: %s", eb);
        snprintf(err->file, sizeof err->file, "%s", out);
    }
    tpu_buf_free(&page);
    return rc != 0 ? -1 : 0;
}
