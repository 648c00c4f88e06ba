/* test_views_tl_rank.c - the Timeline view on a page of several ranks
 * (issue 31 item 7): each rank's own slowest, median and fastest steps,
 * equal to `trainprof steps --json` of each rank's trace, kept through
 * every compaction of the store (a rank whose steps are all faster than
 * another's keeps its slowest); groups and the rank list name the ranks
 * as their traces do; one rank's page has no rank in it. */
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

#define US 1000LL
#define MS 1000000LL

typedef struct gen {
    tpa_tl *t;
    int file;                 /* the trace the events are fed as */
    char raw[256], name[64];
    size_t max_n, max_used;
} gen;

/* One host event (as test_views_tl.c's). */
static void emit(gen *g, const char *name, int64_t ts, int64_t dur, int64_t corr)
{
    tpa_event ev;
    memset(&ev, 0, sizeof ev);
    ev.ph = 'X';
    snprintf(g->name, sizeof g->name, "%s", name);
    ev.name = (tpa_sv){g->name, strlen(g->name)};
    ev.cat = (tpa_sv){"cpu_op", 6};
    ev.ts_ns = ts, ev.dur_ns = dur, ev.has_ts = ev.has_dur = true;
    ev.pid = 1, ev.tid = 1, ev.device = -1, ev.occupancy = -1;
    int n = snprintf(g->raw, sizeof g->raw,
                     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"%s\",\"ts\":%lld,\"dur\":%lld"
                     ",\"args\":{\"correlation\":%lld}}",
                     name, (long long)(ts / US), (long long)(dur / US), (long long)corr);
    ev.raw = (tpa_sv){g->raw, (size_t)n};
    tpa_tl_feed(g->t, g->file, &ev, tpa_classify(&ev));
    if (g->t->n > g->max_n) g->max_n = g->t->n;
    if (g->t->used > g->max_used) g->max_used = g->t->used;
}

enum { OPS = 6 };

/* Step k's duration: a permutation so the slowest, median and fastest are
 * neither first nor last. */
static int64_t step_dur(int k, int steps) { return 2 * MS + (int64_t)((k * 7919) % steps) * 5 * US; }

/* Step k with OPS operators, written after them (as trainprof does). */
static void step_at(gen *g, int k, int64_t start, int64_t dur)
{
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", k);
    for (int i = 0; i < OPS; i++) emit(g, "aten::mm", start + (i + 1) * dur / (OPS + 2), dur / (OPS + 4), k * OPS + i + 1);
    emit(g, name, start, dur, 0);
}

static const char *const pick_name[3] = {"slowest", "median", "fastest"};

/* The step numbers the page's "steps" picks for trace `file`: got[0..2]. */
static void page_picks(const char *js, int file, int64_t got[3])
{
    got[0] = got[1] = got[2] = -1;
    const char *p = strstr(js, "\"steps\":["), *end = p ? strchr(p, ']') : NULL;
    char want_file[32];
    snprintf(want_file, sizeof want_file, "\"file\":%d,", file);
    for (; p && (p = strstr(p + 1, "{\"num\":")) != NULL && p < end;) {
        const char *close = strchr(p, '}');
        if (strncmp(strstr(p, "\"file\":"), want_file, strlen(want_file)) != 0) continue;
        for (int k = 0; k < 3; k++) {
            char key[32];
            snprintf(key, sizeof key, "\"pick\":\"%s\"", pick_name[k]);
            const char *q = strstr(p, key);
            if (q && q < close) got[k] = strtoll(p + 7, NULL, 10);
        }
    }
}

/* Each rank's picks on the page equal its own of `trainprof steps --json`. */
static void check_rank_picks(const char *js, const char *const *paths, int n)
{
    for (int f = 0; f < n; f++) {
        step_ref st[MAX_ST];
        size_t ns = steps_json(paths[f], st, NULL);
        CHECK(ns >= 2);
        int64_t want[3], got[3];
        want_picks(st, ns, want);
        page_picks(js, f, got);
        for (int k = 0; k < 3; k++) {
            if (got[k] != want[k]) fprintf(stderr, "  trace %d %s: page #%lld, steps --json #%lld\n", f + 1,
                                           pick_name[k], (long long)got[k], (long long)want[k]);
            CHECK_EQ_INT(got[k], want[k]);
        }
    }
}

static char *run_view(const char *const *files, int n)
{
    tpa_view_input in = {.input = files[0], .traces = files, .n_traces = n};
    return feed_view_json(&tpa_view_timeline, tpa_view_timeline.begin(&in), files, n);
}

static const char *const rank_files[2] = {FIXTURES "trace_filter__sampled_rank-0.json.gz",
                                          FIXTURES "trace_filter__sampled_rank-1.json.gz"};

/* The two rank fixtures on one page: each rank's own slowest / median /
 * fastest (not the merged 4 steps'), the ranks listed by the rank their
 * traces give, every group saying "rank R". */
TP_TEST(two_ranks_page)
{
    char *js = run_view(rank_files, 2);
    check_rank_picks(js, rank_files, 2);
    CHECK(strstr(js, "\"ranks\":[{\"name\":\"rank 0\",\"rank\":0,\"files\":[0]},"
                     "{\"name\":\"rank 1\",\"rank\":1,\"files\":[1]}]") != NULL);
    /* every group says whose: rank 0's rows before rank 1's (a small
     * store's build carries a few of each rank's longest events only) */
    int seen[2] = {0, 0};
    for (const char *p = js; (p = strstr(p, "\"group\":\"")) != NULL; p++) {
        bool r0 = !strncmp(p + 9, "rank 0 \xc2\xb7 ", 9), r1 = !strncmp(p + 9, "rank 1 \xc2\xb7 ", 9);
        CHECK(r0 || r1);
        CHECK(!(r0 && seen[1]));
        seen[r1]++;
    }
    CHECK(seen[0] > 0 && seen[1] > 0);
#ifndef TP_SMALL_LIMITS
    CHECK(strstr(js, "\"group\":\"rank 0 \xc2\xb7 GPU 0\",\"label\":\"stream 7\"") != NULL);
    CHECK(strstr(js, "\"group\":\"rank 1 \xc2\xb7 GPU 1\",\"label\":\"stream 7\"") != NULL);
    CHECK(strstr(js, "{\"name\":\"rank 1 \xc2\xb7 GPU 1\",\"file\":1,") != NULL); /* its track */
#endif
    CHECK(strstr(js, "trace 1 \xc2\xb7") == NULL && strstr(js, "trace 2 \xc2\xb7") == NULL);
    free(js);
    /* one rank: no rank list, no rank in the names */
    js = run_view(rank_files, 1);
    CHECK(strstr(js, "\"ranks\":null") != NULL);
    CHECK(strstr(js, "\"group\":\"GPU 0\"") != NULL && strstr(js, "rank 0") == NULL);
    free(js);
}

/* The same traces through a store far too small (its last resort keeps one
 * slowest, one fastest and one middle step): each rank's own, so rank 0's
 * slowest step (#552, 622.9 ms) stays though rank 1's #552 is slower and
 * its #551 nearer the 4 steps' median (merged, #552 of rank 0 was lost). */
TP_TEST(two_ranks_compacted)
{
    tpa_tl t;
    tpa_view_input in = {.traces = rank_files, .n_traces = 2};
    tpa_tl_init(&t, &in);
    t.store_events = 256;
    t.store_bytes = 64 << 10;
    t.carry = 120;
    for (int f = 0; f < 2; f++) {
        tpa_error err;
        tpa_reader *r = tpa_reader_open(rank_files[f], &err);
        CHECK(r != NULL);
        if (!r) continue;
        tpa_event ev;
        while (tpa_reader_next(r, &ev, &err) > 0) tpa_tl_feed(&t, f, &ev, tpa_classify(&ev));
        tpa_reader_close(r);
    }
    CHECK(t.compactions > 0);
    for (size_t i = 0; i < t.n_steps; i++) CHECK(t.steps[i].intact); /* 2 steps a rank: all its candidates */
    char *js = json_of(&t);
    check_rank_picks(js, rank_files, 2);
    CHECK(strstr(js, "\"whole\":false") != NULL);
    CHECK(strstr(js, "each rank's slowest, median and fastest step (4 steps of 2 ranks)") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* Two ranks, every step of rank 1 slower than every step of rank 0, 1200
 * steps each through a small store: each rank's own slowest, median and
 * fastest are carried whole (the global 3 slowest are all rank 1's). */
TP_TEST(ranks_keep_own_steps)
{
    tpa_tl t;
    const char *paths[2] = {"a.json", "b.json"};
    tpa_view_input in = {.traces = paths, .n_traces = 2};
    tpa_tl_init(&t, &in);
    t.store_events = 400;
    t.store_bytes = 64 << 10;
    t.carry = 120;
    gen g = {.t = &t};
    int steps = 1201;
    for (int f = 0; f < 2; f++) {
        g.file = f;
        for (int k = 0; k < steps; k++)
            step_at(&g, k, (int64_t)k * 20 * MS, step_dur(k, steps) + f * 10 * MS);
    }
    CHECK(t.compactions > 5);
    CHECK(g.max_n <= t.store_events && g.max_used <= t.store_bytes);
    long pick[6] = {-1, -1, -1, -1, -1, -1};
    CHECK_EQ_INT(tpa_tl_pick(&t, pick), 6);
    int slow = 0, fast = 0;
    for (int k = 0; k < steps; k++) {
        if (step_dur(k, steps) > step_dur(slow, steps)) slow = k;
        if (step_dur(k, steps) < step_dur(fast, steps)) fast = k;
    }
    for (int f = 0; f < 2; f++) {
        const long *p = &pick[3 * f];
        CHECK(p[0] >= 0 && p[1] >= 0 && p[2] >= 0);
        if (p[0] < 0 || p[1] < 0 || p[2] < 0) continue;
        CHECK_EQ_INT(t.steps[p[0]].file, f);
        CHECK_EQ_INT(t.steps[p[0]].num, slow);
        CHECK_EQ_INT(t.steps[p[2]].num, fast);
        CHECK_EQ_INT(t.steps[p[1]].file, f);
        int64_t med = 2 * MS + (int64_t)((steps - 1) / 2) * 5 * US + f * 10 * MS; /* durations: 0..steps-1 x 5 us */
        CHECK(llabs(t.steps[p[1]].dur - med) <= (int64_t)steps / 100 * 5 * US);
        for (int k = 0; k < 3; k++) CHECK_EQ_INT(held_in(&t, &t.steps[p[k]]), OPS + 1);
    }
    char *js = json_of(&t);
    CHECK(strstr(js, "\"ranks\":[{\"name\":\"trace 1\",\"rank\":null,\"files\":[0]},") != NULL);
    char want[64];
    snprintf(want, sizeof want, "{\"num\":%d,\"file\":0,", slow);
    CHECK(strstr(js, want) != NULL);
    free(js);
    tpa_tl_free(&t);
}

int main(void)
{
    RUN(two_ranks_page);
    RUN(two_ranks_compacted);
    RUN(ranks_keep_own_steps);
    return tp_test_finish();
}
