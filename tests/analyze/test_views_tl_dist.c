/* test_views_tl_dist.c - the Distributed view's collector, fed as the page
 * builder feeds it (one read of each trace), says exactly what `trainprof
 * ranks --json` says of the same rank traces, and each step's split into
 * computation, overlap, communication and other adds up to the step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks/ranks.h"
#include "analyze/text/render.h"
#include "analyze/page/view.h"
#include "tp_test.h"
#include "views_test_helpers.h"

/* the repository's copies (tests/fixtures/README.md): the test needs nothing beside the checkout */
#define FIXTURES TP_SOURCE_DIR "/tests/fixtures/"


/* What the builder does: every file once, every event to the collector. */
static char *run_view(const tpa_view_class *vc, const char *const *files, int n, bool job_dir)
{
    tpa_view_input in = {.input = files[0], .job_dir = job_dir, .traces = files, .n_traces = n};
    return feed_view_json(vc, vc->begin(&in), files, n);
}

/* `trainprof ranks --json` of the same files, through the file map. */
static char *ranks_json(const char *const *files, int n)
{
    tpa_ranks *r = tpa_ranks_new();
    for (int i = 0; i < n; i++) {
        tpa_rank_summary s;
        tpa_error err;
        CHECK(tpa_rank_map(files[i], -1, &s, &err) == 0);
        tpa_ranks_add(r, &s);
        tpa_rank_summary_free(&s);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpa_ranks_render_json(r, f);
    fclose(f);
    tpa_ranks_free(r);
    while (len && text[len - 1] == '\n') text[--len] = '\0';
    return text;
}

/* The integers of array `key` inside the object at p. */
static size_t ints(const char *p, const char *key, long long *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":[", key);
    const char *q = strstr(p, pat);
    size_t n = 0;
    if (!q) return 0;
    q += strlen(pat);
    while (*q && *q != ']' && n < cap) {
        char *end;
        out[n++] = strtoll(q, &end, 10);
        q = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void check_split(const char *js)
{
    const char *p = strstr(js, "\"ranks\":[");
    int ranks = 0;
    static long long dur[2000], a[2000], b[2000], c[2000], d[2000];
    while (p && (p = strstr(p, "\"steps\":{")) != NULL) {
        size_t n = ints(p, "dur", dur, 2000);
        CHECK(n > 0);
        CHECK_EQ_INT(ints(p, "computation", a, 2000), n);
        CHECK_EQ_INT(ints(p, "overlap", b, 2000), n);
        CHECK_EQ_INT(ints(p, "communication", c, 2000), n);
        CHECK_EQ_INT(ints(p, "other", d, 2000), n);
        long long comm = 0;
        for (size_t i = 0; i < n; i++) {
            CHECK_EQ_INT(a[i] + b[i] + c[i] + d[i], dur[i]);
            CHECK(a[i] >= 0 && b[i] >= 0 && c[i] >= 0 && d[i] >= 0);
            comm += b[i] + c[i];
        }
        CHECK(comm > 0); /* these ranks do communicate */
        ranks++;
        p++;
    }
    CHECK_EQ_INT(ranks, 2);
}

TP_TEST(kineto_ranks_match_ranks_json)
{
    const char *files[] = {FIXTURES "trace_filter__sampled_rank-0.json.gz",
                           FIXTURES "trace_filter__sampled_rank-1.json.gz"};
    char *page = run_view(&tpa_view_distributed, files, 2, false), *cli = ranks_json(files, 2);
    const char *job = strstr(page, "{\"job\":");
    CHECK(job != NULL);
    CHECK(job && strncmp(job + 7, cli, strlen(cli)) == 0);
    CHECK(strstr(page, "\"collectives\":[{\"name\":") != NULL);
    check_split(page);
    free(page);
    free(cli);
}

/* One trace, or a run directory's windows: one rank, no view. */
TP_TEST(one_rank_is_null)
{
    const char *files[] = {FIXTURES "trace_filter__sampled_rank-0.json.gz"};
    char *page = run_view(&tpa_view_distributed, files, 1, false);
    CHECK_STR(page, "null");
    free(page);
}

int main(void)
{
    RUN(kineto_ranks_match_ranks_json);
    RUN(one_rank_is_null);
    return tp_test_finish();
}
