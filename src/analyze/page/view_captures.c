/* view_captures.c - the Captures view: what the flight recorder captured
 * in a run (or in each rank of a job): why (slow step, exception, signal,
 * hang), when, which step, the first line of its detail, and links to its
 * files (the trace first), relative to where the page is written. Read from captures.json (trace/run_captures.c);
 * nothing from the traces, so no feed. */
#include "analyze/ranks/ranks.h"
#include "analyze/page/view.h"

#include <stdlib.h>
#include <string.h>

#define MAX_RUNS 1024

typedef struct cap_run {
    char dir[1024];      /* as the files' prefix: the input, or input/rank<r> */
    tpa_captures caps;
} cap_run;

typedef struct cap_view {
    cap_run *runs; size_t n;
    size_t damaged;      /* captures.json files cut short or garbled */
    char page_dir[4096]; /* the page's directory, absolute ("" when unknown) */
} cap_view;

/* The absolute form of path (which exists), or "" when it cannot be had. */
static void absolute(const char *path, char *out, size_t cap)
{
    char *r = realpath(path, NULL);
    snprintf(out, cap, "%s", r ? r : "");
    free(r);
}

/* The directory the page is written to, absolute (the page itself may not
 * exist yet). */
static void page_dir_of(const char *out, char *dir, size_t cap)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", out);
    char *slash = strrchr(tmp, '/');
    if (slash) *slash = '\0';
    absolute(slash ? (tmp[0] ? tmp : "/") : ".", dir, cap);
}

/* target (absolute) as a link from the page's directory: "../rank0/x",
 * or target itself when the page's place is unknown. */
static void link_from(const char *page_dir, const char *target, char *out, size_t cap)
{
    if (!page_dir[0] || target[0] != '/') { snprintf(out, cap, "%s", target); return; }
    size_t common = 0;
    for (size_t i = 0; page_dir[i] && page_dir[i] == target[i]; i++)
        if (page_dir[i] == '/') common = i;
    if (strncmp(page_dir, target, strlen(page_dir)) == 0 && target[strlen(page_dir)] == '/')
        common = strlen(page_dir);  /* target is under the page's directory */
    size_t ups = 0;
    for (const char *q = page_dir + common; *q; q++) ups += *q == '/';
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ups && used + 3 < cap; i++) used += (size_t)snprintf(out + used, cap - used, "../");
    snprintf(out + used, cap - used, "%s", target + common + 1);
}

static void add_dir(cap_view *v, const char *dir)
{
    if (v->n >= MAX_RUNS) return;
    cap_run *r = &v->runs[v->n];
    int rc = tpa_captures_read(dir, &r->caps);
    if (rc == 0) return;
    if (rc < 0) v->damaged++;
    absolute(dir, r->dir, sizeof r->dir);
    if (!r->dir[0]) snprintf(r->dir, sizeof r->dir, "%s", dir);
    v->n++;
}

static void *c_begin(const tpa_view_input *in)
{
    cap_view *v = calloc(1, sizeof *v);
    if (!v || !(v->runs = calloc(MAX_RUNS, sizeof *v->runs))) { free(v); return NULL; }
    if (in->out) page_dir_of(in->out, v->page_dir, sizeof v->page_dir);
    if (in->run_dir) {
        add_dir(v, in->input);
    } else if (in->job_dir) {
        tpa_rank_input *ranks;
        size_t n;
        tpa_error err;
        if (tpa_job_inputs(in->input, &ranks, &n, &err) == 0) {
            for (size_t i = 0; i < n; i++)
                if (tpa_is_dir(ranks[i].path)) add_dir(v, ranks[i].path);
            tpa_job_inputs_free(ranks, n);
        }
    }
    return v;
}

/* The detail's first line (an exception's message), at most 300 bytes. */
static void first_line(tpu_json *j, const char *s)
{
    size_t n = strcspn(s, "\n");
    tpu_json_string_n(j, s, n > 300 ? 300 : n);
}

static void capture_json(tpu_json *j, const cap_view *v, const cap_run *r, const tpa_capture *c)
{
    tpu_json_begin_object(j);
    tpu_json_kv_int(j, "rank", r->caps.rank);
    tpu_json_kv_string(j, "reason", c->reason);
    tpu_json_kv_int(j, "step", c->step);
    tpu_json_kv_string(j, "time", c->time);
    tpu_json_key(j, "detail");
    first_line(j, c->detail);
    tpu_json_kv_bool(j, "detail_more", strchr(c->detail, '\n') != NULL);
    tpu_json_key(j, "files");
    tpu_json_begin_array(j);
    for (size_t f = 0; f < c->n_files; f++) {
        char path[5200], link[5400];
        snprintf(path, sizeof path, "%s/%s", r->dir, c->files[f]);
        link_from(v->page_dir, path, link, sizeof link);
        tpu_json_string(j, link);
    }
    tpu_json_end_array(j);
    tpu_json_end_object(j);
}

static void c_json(void *state, tpu_json *j)
{
    cap_view *v = state;
    size_t total = 0;
    for (size_t i = 0; i < v->n; i++) total += v->runs[i].caps.n;
    if (!total && !v->damaged) { tpu_json_null(j); return; }
    tpu_json_begin_object(j);
    tpu_json_kv_uint(j, "damaged", v->damaged);
    tpu_json_key(j, "captures");
    tpu_json_begin_array(j);
    for (size_t i = 0; i < v->n; i++)
        for (size_t k = 0; k < v->runs[i].caps.n; k++) capture_json(j, v, &v->runs[i], &v->runs[i].caps.v[k]);
    tpu_json_end_array(j);
    tpu_json_end_object(j);
}

static void c_free(void *state)
{
    cap_view *v = state;
    for (size_t i = 0; i < v->n; i++) tpa_captures_free(&v->runs[i].caps);
    free(v->runs);
    free(v);
}

const tpa_view_class tpa_view_captures = {
    .key = "captures",
    .begin = c_begin,
    .json = c_json,
    .free = c_free,
};
