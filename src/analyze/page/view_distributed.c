/* view_distributed.c - the Distributed view: the ranks of a job directory
 * (rank<r>/ inside) or of several rank traces named together, each mapped
 * while the page builder reads its traces (ranks_map.c's mapper, fed event
 * by event: no second read), then reduced as `trainprof ranks` does.
 *
 * The value: "job" is exactly `trainprof ranks --json` of the same ranks
 * (straggler, clock, per-rank rows, findings, warnings); "ranks" adds per
 * rank the per-step split into computation, overlap, communication and
 * other, the collectives by name, and where its first step starts on the
 * job's aligned clock. Per-step rows are at most TPA_DIST_STEPS per rank
 * (evenly spaced when there are more; the note says so).
 */
#include "analyze/ranks/ranks.h"
#include "analyze/text/render.h" /* the ranks JSON, as `trainprof ranks --json` */
#include "analyze/page/view.h"
#include "analyze/page/html.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TPA_DIST_STEPS 1000
#define TPA_DIST_RANKS 1024

typedef struct dist_rank {
    int64_t hint;                 /* rank<r> in the path, else -1 */
    char source[512];
    tpa_rank_summary sum;
    tpa_rank_mapper *mp;
    int64_t *compute;             /* per step of sum, after finish */
} dist_rank;

typedef struct dist {
    bool active;
    dist_rank **r; size_t n;      /* each its own block: its mapper points into it */
    dist_rank *cur;
    uint64_t ranks_lost;
} dist;

static void *d_begin(const tpa_view_input *in)
{
    dist *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    /* a run directory is one rank; a job, or several traces named together, are ranks */
    d->active = in->job_dir || (!in->run_dir && in->n_traces >= 2);
    return d;
}

static void d_file_begin(void *state, int file, const char *path)
{
    dist *d = state;
    (void)file;
    d->cur = NULL;
    if (!d->active) return;
    int64_t hint = tpa_html_rank_in_path(path);
    for (size_t i = 0; i < d->n && hint >= 0; i++)
        if (d->r[i]->hint == hint) d->cur = d->r[i];
    if (!d->cur) {
        if (d->n == TPA_DIST_RANKS) { d->ranks_lost++; return; }
        dist_rank **nr = realloc(d->r, (d->n + 1) * sizeof *nr);
        if (!nr) return;
        d->r = nr;
        d->cur = calloc(1, sizeof *d->cur);
        if (!d->cur) return;
        d->r[d->n] = d->cur;
        d->cur->hint = hint;
        /* the rank's directory when there is one (as `trainprof ranks` names it) */
        snprintf(d->cur->source, sizeof d->cur->source, "%s", path);
        if (hint >= 0) {
            char pat[32];
            snprintf(pat, sizeof pat, "rank%lld/", (long long)hint);
            char *at = strstr(d->cur->source, pat);
            if (at) at[strlen(pat) - 1] = '\0';
        }
        d->cur->mp = tpa_rank_mapper_new(d->cur->source, &d->cur->sum);
        if (!d->cur->mp) { free(d->cur); d->cur = NULL; return; }
        d->n++;
    }
    tpa_rank_mapper_file_begin(d->cur->mp);
}

static void d_feed(void *state, const tpa_event *ev, int kind)
{
    dist *d = state;
    (void)kind;
    if (d->cur) tpa_rank_mapper_feed(d->cur->mp, ev);
}

static void d_file_end(void *state, int file, const tpa_meta *meta)
{
    dist *d = state;
    (void)file;
    if (d->cur) tpa_rank_mapper_file_end(d->cur->mp, meta);
    d->cur = NULL;
}

/* The reduce's JSON (`trainprof ranks --json`), as a raw value. */
static void job_json(dist *d, tpu_json *j)
{
    tpa_ranks *r = tpa_ranks_new();
    for (size_t i = 0; i < d->n; i++) tpa_ranks_add(r, &d->r[i]->sum);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        tpa_ranks_render_json(r, f);
        fclose(f);
    }
    while (len && (text[len - 1] == '\n' || text[len - 1] == ' ')) len--;
    tpu_json_key(j, "job");
    if (text && len) tpu_json_raw(j, text, len);
    else tpu_json_null(j);
    free(text);
    tpa_ranks_free(r);
}

static void series(tpu_json *j, const char *key, const dist_rank *k, size_t stride, int what)
{
    tpu_json_key(j, key);
    tpu_json_begin_array(j);
    for (size_t i = 0; i < k->sum.n_steps; i += stride) {
        const tpa_rank_step *s = &k->sum.steps[i];
        int64_t compute = k->compute[i] < s->dur_ns ? k->compute[i] : s->dur_ns;
        int64_t ov = s->overlap_ns, comm_only = s->comm_ns - ov, comp_only = compute - ov;
        if (comp_only < 0) comp_only = 0;
        if (comm_only < 0) comm_only = 0;
        int64_t other = s->dur_ns - comp_only - ov - comm_only;
        int64_t v[] = {s->num, s->dur_ns, comp_only, ov, comm_only, other < 0 ? 0 : other,
                       s->start_ns, s->bytes};
        tpu_json_int(j, v[what]);
    }
    tpu_json_end_array(j);
}

static void rank_json(tpu_json *j, const dist_rank *k, int64_t t0)
{
    const tpa_rank_summary *s = &k->sum;
    size_t stride = s->n_steps > TPA_DIST_STEPS ? (s->n_steps + TPA_DIST_STEPS - 1) / TPA_DIST_STEPS : 1;
    tpu_json_begin_object(j);
    tpu_json_kv_int(j, "rank", s->rank);
    tpu_json_kv_string(j, "host", s->host);
    tpu_json_kv_string(j, "source", s->source);
    tpu_json_kv_bool(j, "wall_clock", s->has_base);
    tpu_json_kv_bool(j, "synced", s->synced);
    tpu_json_kv_int(j, "clock_error_ns", s->clock_error_ns);
    tpu_json_kv_bool(j, "device_comm", s->device_comm);
    tpu_json_kv_bool(j, "truncated", s->truncated);
    tpu_json_kv_uint(j, "steps_total", s->n_steps);
    tpu_json_kv_uint(j, "stride", stride);
    if (s->n_steps) tpu_json_kv_int(j, "first_start_ns", s->steps[0].start_ns - t0);
    static const char *const keys[] = {"num", "dur", "computation", "overlap", "communication", "other", "start", "bytes"};
    tpu_json_key(j, "steps");
    tpu_json_begin_object(j);
    for (int w = 0; w < 8; w++) series(j, keys[w], k, stride, w);
    tpu_json_end_object(j);
    tpu_json_key(j, "collectives");
    tpu_json_begin_array(j);
    for (size_t c = 0; c < s->n_comm; c++) {
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "name", s->comm[c].name);
        tpu_json_kv_uint(j, "calls", s->comm[c].count);
        tpu_json_kv_int(j, "total_ns", s->comm[c].total_ns);
        tpu_json_kv_int(j, "bytes", s->comm[c].bytes);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    tpu_json_end_object(j);
}

static int by_rank(const void *a, const void *b)
{
    const dist_rank *x = *(dist_rank *const *)a, *y = *(dist_rank *const *)b;
    return x->sum.rank < y->sum.rank ? -1 : x->sum.rank > y->sum.rank;
}

static void d_json(void *state, tpu_json *j)
{
    dist *d = state;
    for (size_t i = 0; i < d->n; i++) {
        d->r[i]->compute = tpa_rank_mapper_finish(d->r[i]->mp, d->r[i]->hint);
        d->r[i]->mp = NULL;
    }
    if (d->n < 2) { tpu_json_null(j); return; }
    if (d->n) qsort(d->r, d->n, sizeof *d->r, by_rank);
    int64_t t0 = INT64_MAX;
    for (size_t i = 0; i < d->n; i++)
        if (d->r[i]->sum.n_steps && d->r[i]->sum.steps[0].start_ns < t0) t0 = d->r[i]->sum.steps[0].start_ns;
    tpu_json_begin_object(j);
    job_json(d, j);
    tpu_json_key(j, "ranks");
    tpu_json_begin_array(j);
    for (size_t i = 0; i < d->n; i++) rank_json(j, d->r[i], t0);
    tpu_json_end_array(j);
    tpu_json_kv_uint(j, "ranks_left_out", d->ranks_lost);
    tpu_json_kv_int(j, "steps_per_rank_max", TPA_DIST_STEPS);
    tpu_json_end_object(j);
}

static void d_free(void *state)
{
    dist *d = state;
    if (!d) return;
    for (size_t i = 0; i < d->n; i++) {
        if (d->r[i]->mp) free(tpa_rank_mapper_finish(d->r[i]->mp, d->r[i]->hint));
        tpa_rank_summary_free(&d->r[i]->sum);
        free(d->r[i]->compute);
        free(d->r[i]);
    }
    free(d->r);
    free(d);
}

const tpa_view_class tpa_view_distributed = {
    .key = "distributed",
    .begin = d_begin,
    .file_begin = d_file_begin,
    .feed = d_feed,
    .file_end = d_file_end,
    .json = d_json,
    .free = d_free,
};
