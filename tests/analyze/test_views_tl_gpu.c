/* test_views_tl_gpu.c - the Timeline's steps on GPU traces (issue 31
 * item 1): the step band and the slowest / median / fastest picks are the
 * steps of `trainprof steps --json`, with its durations (the TensorBoard
 * plugin's rule: each step runs to the end of the GPU work it launched,
 * steps whose kernels were not recorded left out), and the view says so;
 * host-only traces keep their ProfilerStep spans and say nothing; a trace
 * too big to carry whole says how its steps were chosen. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/page/view_timeline.h"
#include "analyze/stats/stats.h"
#include "analyze/text/render.h"
#include "tp_test.h"
#include "views_test_helpers.h"

/* the repository's copies (tests/fixtures/README.md) */
#define FIXTURES TP_SOURCE_DIR "/tests/fixtures/"
#define NS_TRACE FIXTURES "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
#define CONTROL FIXTURES "trace_diff__control__control.json.gz"
#define TEST FIXTURES "trace_diff__test__test.json.gz"


/* The page's steps, in its order: num and dur; pick[k] = step number of
 * pick k (slowest, median, fastest) or -1. */
static const char *const pick_name[3] = {"slowest", "median", "fastest"};

static size_t page_steps(const char *js, step_ref *out, int64_t pick[3])
{
    size_t n = 0;
    pick[0] = pick[1] = pick[2] = -1;
    const char *p = strstr(js, "\"steps\":["), *end = p ? strchr(p, ']') : NULL;
    CHECK(p != NULL);
    for (; p && (p = strstr(p + 1, "{\"num\":")) != NULL && p < end && n < MAX_ST; n++) {
        const char *close = strchr(p, '}');
        out[n].num = strtoll(p + 7, NULL, 10);
        out[n].dur = strtoll(strstr(p, "\"dur\":") + 6, NULL, 10);
        for (int k = 0; k < 3; k++) {
            char key[32];
            snprintf(key, sizeof key, "\"pick\":\"%s\"", pick_name[k]);
            const char *q = strstr(p, key);
            if (q && q < close) pick[k] = out[n].num;
        }
    }
    return n;
}

/* What the page builder does: the file once, every event to the view;
 * store_events 0: the view's own limits. */
static char *run_view(const char *path, size_t store_events)
{
    const char *files[1] = {path};
    const tpa_view_class *vc = &tpa_view_timeline;
    tpa_view_input in = {.input = path, .traces = files, .n_traces = 1};
    void *st = vc->begin(&in);
    CHECK(st != NULL);
    if (store_events) { /* the collector's state begins with its tpa_tl (view_timeline.c) */
        tpa_tl *t = st;
        t->store_events = store_events;
        t->store_bytes = 64 << 10;
        t->carry = store_events / 2;
    }
    return feed_view_json(vc, st, files, 1);
}

/* The page's steps and picks are those of `trainprof steps --json`, ns for ns. */
static void check_as_steps(const char *path, const char *js, bool want_rule)
{
    step_ref want[MAX_ST], got[MAX_ST];
    bool rule = false;
    size_t nw = steps_json(path, want, &rule), ng;
    int64_t wp[3], gp[3];
    CHECK(rule == want_rule && nw > 0);
    ng = page_steps(js, got, gp);
    want_picks(want, nw, wp);
    /* a page carrying the whole trace lists every step; else (the small
     * store of TP_SMALL_LIMITS) the picks only, each one of steps --json */
    bool whole = strstr(js, "\"whole\":true") != NULL;
    if (whole) CHECK_EQ_INT(ng, nw);
    for (size_t i = 0, k = 0; i < ng; i++, k++) {
        while (!whole && k < nw && want[k].num != got[i].num) k++;
        CHECK(k < nw);
        if (k >= nw) break;
        if (got[i].num != want[k].num || got[i].dur != want[k].dur)
            fprintf(stderr, "  %s: page #%" PRId64 " %" PRId64 " ns, steps --json #%" PRId64 " %" PRId64 " ns\n",
                    strrchr(path, '/') + 1, got[i].num, got[i].dur, want[k].num, want[k].dur);
        CHECK_EQ_INT(got[i].num, want[k].num);
        CHECK_EQ_INT(got[i].dur, want[k].dur);
    }
    for (int k = 0; k < 3; k++) CHECK_EQ_INT(gp[k], wp[k]);
    char total[48];
    snprintf(total, sizeof total, "\"steps_total\":%zu", nw);
    CHECK(strstr(js, total) != NULL);
}

/* The ns fixture: #101 runs 101.2 ms to its last kernel (35.1 ms on the
 * host), #102's kernels were not recorded: left out, as steps --json. */
TP_TEST(ns_trace_plugin_steps)
{
    char *js = run_view(NS_TRACE, 0);
    check_as_steps(NS_TRACE, js, true);
    CHECK(strstr(js, "\"step_rule\":\"gpu\"") != NULL);
    CHECK(strstr(js, "as the TensorBoard plugin counts them") != NULL);
    CHECK(strstr(js, "the last 1 step left out: the profiler stopped before its kernels were recorded") != NULL);
    CHECK(strstr(js, "{\"num\":102,") == NULL);
    free(js);
}

/* The A100 ResNet runs: three steps each, the picks by the plugin's durations. */
TP_TEST(trace_diff_plugin_steps)
{
    const char *paths[2] = {CONTROL, TEST};
    for (int i = 0; i < 2; i++) {
        char *js = run_view(paths[i], 0);
        check_as_steps(paths[i], js, true);
        CHECK(strstr(js, "\"step_rule\":\"gpu\"") != NULL);
        CHECK(strstr(js, "left out: the profiler") == NULL);
        free(js);
    }
}

/* Host-only traces: their ProfilerStep spans, as before, and no rule note. */
TP_TEST(host_only_unchanged)
{
    const char *paths[2] = {FIXTURES "mlp_adam.pt.trace.json", FIXTURES "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"};
    for (int i = 0; i < 2; i++) {
        char *js = run_view(paths[i], 0);
        check_as_steps(paths[i], js, false);
        CHECK(strstr(js, "\"step_rule\":\"host\",\"step_note\":\"\"") != NULL);
        free(js);
    }
}

/* Through a store far too small: the steps shown keep the plugin's
 * durations, and the page says they were chosen by host span while read. */
TP_TEST(compacted_says_how_chosen)
{
    step_ref want[MAX_ST], got[MAX_ST];
    bool rule = false;
    size_t nw = steps_json(CONTROL, want, &rule);
    char *js = run_view(CONTROL, 256);
    int64_t gp[3];
    size_t ng = page_steps(js, got, gp);
    CHECK(strstr(js, "\"whole\":false") != NULL);
    CHECK(ng > 0);
    for (size_t i = 0; i < ng; i++) {
        bool found = false;
        for (size_t k = 0; k < nw; k++) found |= want[k].num == got[i].num && want[k].dur == got[i].dur;
        CHECK(found);
    }
    CHECK(strstr(js, "the steps kept were chosen by their host spans while reading") != NULL);
    free(js);
}

int main(void)
{
    RUN(ns_trace_plugin_steps);
    RUN(trace_diff_plugin_steps);
    RUN(host_only_unchanged);
    RUN(compacted_says_how_chosen);
    return tp_test_finish();
}
