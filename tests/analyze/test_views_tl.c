/* test_views_tl.c - the Timeline view's collector: a small trace is carried
 * whole; a big one keeps bounded memory, and the steps it carries are the
 * slowest, the median and the fastest, each with all its events, whatever
 * order the trace writes them in (children before their step as trainprof
 * does, or all GPU events last as Kineto does). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/page/view_timeline.h"
#include "tp_test.h"
#include "views_test_helpers.h"

#define US 1000LL
#define MS 1000000LL

typedef struct gen {
    tpa_tl *t;
    char raw[256], name[64];
    size_t max_n, max_used;
} gen;

static void emit(gen *g, char ph, const char *name, int64_t pid, int64_t tid, int64_t ts, int64_t dur, int64_t corr)
{
    tpa_event ev;
    memset(&ev, 0, sizeof ev);
    ev.ph = ph;
    snprintf(g->name, sizeof g->name, "%s", name);
    ev.name = (tpa_sv){g->name, strlen(g->name)};
    bool gpu = pid == 0;
    ev.cat = gpu ? (tpa_sv){"kernel", 6} : (tpa_sv){"cpu_op", 6};
    ev.ts_ns = ts, ev.dur_ns = dur, ev.has_ts = ev.has_dur = true;
    ev.pid = pid, ev.tid = tid, ev.device = -1, ev.occupancy = -1;
    int n = snprintf(g->raw, sizeof g->raw,
                     "{\"ph\":\"%c\",\"cat\":\"%s\",\"name\":\"%s\",\"ts\":%lld,\"dur\":%lld"
                     ",\"args\":{\"correlation\":%lld}}",
                     ph, gpu ? "kernel" : "cpu_op", name, (long long)(ts / US), (long long)(dur / US), (long long)corr);
    ev.raw = (tpa_sv){g->raw, (size_t)n};
    tpa_tl_feed(g->t, 0, &ev, tpa_classify(&ev));
    if (g->t->n > g->max_n) g->max_n = g->t->n;
    if (g->t->used > g->max_used) g->max_used = g->t->used;
}

enum { OPS = 6 };

/* Step k's duration: a permutation so the slowest, median and fastest are
 * neither first nor last. */
static int64_t step_dur(int k, int steps) { return 2 * MS + (int64_t)((k * 7919) % steps) * 5 * US; }

static int64_t step_start(int k, int steps) { return (int64_t)k * (3 * MS + (int64_t)steps * 5 * US); }

/* Step k on the host with OPS operators, before or after them. */
static void step_at(gen *g, int k, int64_t start, int64_t dur, bool children_first)
{
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", k);
    if (!children_first) emit(g, 'X', name, 1, 1, start, dur, 0);
    for (int i = 0; i < OPS; i++)
        emit(g, 'X', "aten::mm", 1, 1, start + (i + 1) * dur / (OPS + 2), dur / (OPS + 4), k * OPS + i + 1);
    if (children_first) emit(g, 'X', name, 1, 1, start, dur, 0);
}

static void host_step(gen *g, int k, int steps, bool children_first)
{
    step_at(g, k, step_start(k, steps), step_dur(k, steps), children_first);
}

static void gpu_step(gen *g, int k, int steps)
{
    int64_t start = step_start(k, steps), dur = step_dur(k, steps);
    for (int i = 0; i < OPS; i++)
        emit(g, 'X', "gemm_kernel", 0, 7, start + (i + 1) * dur / (OPS + 2) + 10 * US, dur / (OPS + 4), k * OPS + i + 1);
}

/* A store of `events` records and 64 KB that carries 120 events. */
static void small_store(tpa_tl *t, size_t events)
{
    tpa_tl_init(t, NULL);
    t->store_events = events;
    t->store_bytes = 64 << 10;
    t->carry = 120;
}

static void check_picks(tpa_tl *t, int steps)
{
    long pick[3];
    CHECK_EQ_INT(tpa_tl_pick(t, pick), 3);
    int slow = 0, fast = 0;
    for (int k = 0; k < steps; k++) {
        if (step_dur(k, steps) > step_dur(slow, steps)) slow = k;
        if (step_dur(k, steps) < step_dur(fast, steps)) fast = k;
    }
    CHECK(pick[0] >= 0 && pick[1] >= 0 && pick[2] >= 0);
    if (pick[0] < 0 || pick[1] < 0 || pick[2] < 0) return;
    CHECK_EQ_INT(t->steps[pick[0]].num, slow);
    CHECK_EQ_INT(t->steps[pick[2]].num, fast);
    /* durations are distinct multiples of 5 us: the median is (steps-1)/2 of
     * them; the one carried is within 1 % of the steps of it */
    int64_t rank = (t->steps[pick[1]].dur - 2 * MS) / (5 * US), mid = (steps - 1) / 2;
    CHECK(rank - mid <= steps / 100 && mid - rank <= steps / 100);
    for (int k = 0; k < 3; k++) CHECK_EQ_INT(held_in(t, &t->steps[pick[k]]), 2 * OPS + 1);
}

TP_TEST(small_trace_is_whole)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    gen g = {.t = &t};
    for (int k = 0; k < 5; k++) host_step(&g, k, 5, false);
    for (int k = 0; k < 5; k++) gpu_step(&g, k, 5);
    CHECK_EQ_INT(t.compactions, 0);
    char *js = json_of(&t);
    CHECK(strstr(js, "\"whole\":true") != NULL);
    CHECK(strstr(js, "\"events_carried\":65") != NULL);
    CHECK(strstr(js, "\"pick\":\"slowest\"") != NULL);
    /* launch and kernel of step 2's first op share correlation 13 */
    CHECK(strstr(js, "{\\\"correlation\\\":13}") != NULL);
    free(js);
    tpa_tl_free(&t);
}

static void big(bool kineto_order, int steps)
{
    tpa_tl t;
    small_store(&t, 400);
    gen g = {.t = &t};
    for (int k = 0; k < steps; k++) {
        host_step(&g, k, steps, !kineto_order);
        if (!kineto_order) gpu_step(&g, k, steps);
    }
    for (int k = 0; kineto_order && k < steps; k++) gpu_step(&g, k, steps);
    CHECK(t.compactions > (kineto_order ? 0 : 10));
    /* steps read before their events: most are left out on arrival, uncopied */
    if (kineto_order) CHECK(t.early > (uint64_t)steps / 2);
    CHECK(g.max_n <= t.store_events);
    CHECK(g.max_used <= t.store_bytes);
    CHECK_EQ_INT(t.seen, (uint64_t)steps * (2 * OPS + 1));
    check_picks(&t, steps);
    char *js = json_of(&t);
    CHECK(strstr(js, "\"whole\":false") != NULL);
    CHECK(strstr(js, "\"events_carried\":39") != NULL);
    CHECK(strstr(js, "left out") != NULL);
    free(js);
    tpa_tl_free(&t);
}

TP_TEST(big_trace_trainprof_order) { big(false, 3001); }
TP_TEST(big_trace_kineto_order) { big(true, 3001); }

/* 400,000 events through a store of 1000: memory stays put. */
TP_TEST(huge_trace_bounded)
{
    tpa_tl t;
    small_store(&t, 1000);
    gen g = {.t = &t};
    int steps = 30011;
    for (int k = 0; k < steps; k++) {
        host_step(&g, k, steps, true);
        gpu_step(&g, k, steps);
    }
    CHECK(g.max_n <= 1000);
    CHECK(g.max_used <= 64 << 10);
    CHECK(t.arena_cap <= 64 << 10);
    check_picks(&t, steps);
    tpa_tl_free(&t);
}

/* The store holds what the page writes of an event (name, args, string
 * ids), not the rest of its text (a 3 KB stack here). */
TP_TEST(store_keeps_args_not_raw)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    static char raw[4000];
    char stack[3001];
    memset(stack, 'a', 3000);
    stack[3000] = '\0';
    int n = snprintf(raw, sizeof raw, "{\"ph\":\"X\",\"pid\":\"Spans\",\"tid\":\"PyTorch Profiler\",\"name\":\"op\","
                     "\"stack\":\"%s\",\"args\":{\"correlation\":7}}", stack);
    tpa_event ev;
    memset(&ev, 0, sizeof ev);
    ev.ph = 'X';
    ev.name = (tpa_sv){"op", 2};
    ev.cat = (tpa_sv){"cpu_op", 6};
    ev.ts_ns = 5 * US, ev.dur_ns = 2 * US, ev.has_ts = ev.has_dur = true;
    ev.pid = 11, ev.tid = 12, ev.device = -1, ev.occupancy = -1;
    ev.pid_str = (tpa_sv){strstr(raw, "Spans"), 5};
    ev.tid_str = (tpa_sv){strstr(raw, "PyTorch Profiler"), 16};
    ev.raw = (tpa_sv){raw, (size_t)n};
    tpa_tl_feed(&t, 0, &ev, tpa_classify(&ev));
    CHECK_EQ_INT(t.n, 1);
    CHECK_EQ_INT(t.used, strlen("op") + strlen("{\"correlation\":7}") + strlen("Spans") + strlen("PyTorch Profiler"));
    char *js = json_of(&t);
    CHECK(strstr(js, "\"name\":\"Spans / PyTorch Profiler\"") != NULL);
    CHECK(strstr(js, "{\\\"correlation\\\":7}") != NULL);
    CHECK(strstr(js, "\"ev\":[0,0,2000,0,0,7,0]") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* The three steps picked (into pick), by number: slowest, median, fastest. */
static void check_pick(const tpa_tl *t, long pick[3], int64_t slowest, int64_t median, int64_t fastest)
{
    CHECK_EQ_INT(tpa_tl_pick(t, pick), 3);
    CHECK_EQ_INT(t->steps[pick[0]].num, slowest);
    CHECK_EQ_INT(t->steps[pick[1]].num, median);
    CHECK_EQ_INT(t->steps[pick[2]].num, fastest);
}

/* Steps of equal duration: the earlier one is the slower, the faster and
 * the nearer the median, whether or not the store was ever compacted. */
TP_TEST(ties_pick_the_earlier_step)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    gen g = {.t = &t};
    int64_t durs[6] = {3 * MS, 2 * MS, 3 * MS, 1 * MS, 2 * MS, 1 * MS};
    for (int k = 0; k < 6; k++) {
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", k);
        emit(&g, 'X', name, 1, 1, k * 4 * MS, durs[k], 0);
    }
    long pick[3];
    check_pick(&t, pick, 0, 1, 3);
    tpa_tl_free(&t);
}

/* 6 step durations repeated 100 times (as tp_gen_trace's copies do): once the
 * store was compacted, a step that only ties earlier candidates can never be
 * shown, so it is left out on arrival and its events are not copied (one
 * compaction in all); the steps shown are the first of each duration. */
TP_TEST(tied_steps_left_out_on_arrival)
{
    tpa_tl t;
    small_store(&t, 400);
    gen g = {.t = &t};
    int steps = 600;
    for (int k = 0; k < steps; k++) step_at(&g, k, (int64_t)k * 3 * MS, 2 * MS + (int64_t)(k % 6) * 5 * US, false);
    CHECK_EQ_INT(t.compactions, 1);
    CHECK(t.early > (uint64_t)steps * 4 / 5);
    long pick[3];
    check_pick(&t, pick, 5, 2, 0);
    for (int k = 0; k < 3; k++) CHECK_EQ_INT(held_in(&t, &t.steps[pick[k]]), OPS + 1);
    char *js = json_of(&t);
    CHECK(strstr(js, "slowest step (#5), median step (#2), fastest step (#0)") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* No steps: the earliest events, and the note says the rest is left out. */
TP_TEST(no_steps_keeps_earliest)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    t.store_events = 400;
    t.carry = 100;
    gen g = {.t = &t};
    for (int i = 0; i < 5000; i++) emit(&g, 'X', "op", 1, 1, i * 10 * US, 5 * US, 0);
    char *js = json_of(&t);
    CHECK(strstr(js, "\"events_carried\":100") != NULL);
    CHECK(strstr(js, "\"t0_ns\":0") != NULL);
    CHECK(strstr(js, "no steps") != NULL);
    CHECK(strstr(js, "4900 later ones left out") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* ---- issue 31: rows grouped and named, junk folded, fwdbwd flows, GPU tracks ---- */

/* Feeds one hand-made event whose raw text is `raw` (args read from it). */
static void feed_raw(tpa_tl *t, const char *raw, char ph, const char *name, const char *cat, int64_t pid, int64_t tid,
                     int64_t ts, int64_t dur, const char *arg_name)
{
    tpa_event ev;
    memset(&ev, 0, sizeof ev);
    ev.ph = ph;
    ev.name = (tpa_sv){name, strlen(name)};
    ev.cat = (tpa_sv){cat, strlen(cat)};
    ev.ts_ns = ts, ev.dur_ns = dur, ev.has_ts = true, ev.has_dur = ph == 'X';
    ev.pid = pid, ev.tid = tid, ev.device = -1, ev.occupancy = -1;
    if (arg_name) ev.arg_name = (tpa_sv){arg_name, strlen(arg_name)};
    ev.raw = (tpa_sv){raw, strlen(raw)};
    tpa_tl_feed(t, 0, &ev, tpa_classify(&ev));
}

static void meta(tpa_tl *t, const char *what, int64_t pid, int64_t tid, const char *key, const char *value)
{
    char raw[256];
    snprintf(raw, sizeof raw, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%lld,\"tid\":%lld,\"args\":{\"%s\":\"%s\"}}", what,
             (long long)pid, (long long)tid, key, value);
    feed_raw(t, raw, 'M', what, "", pid, tid, 0, 0, strcmp(key, "name") ? NULL : value);
}

static void span(tpa_tl *t, const char *name, const char *cat, int64_t pid, int64_t tid, int64_t ts, int64_t dur,
                 const char *args)
{
    char raw[512];
    snprintf(raw, sizeof raw, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%lld,\"tid\":%lld,\"args\":%s}", cat,
             name, (long long)pid, (long long)tid, args ? args : "{}");
    feed_raw(t, raw, 'X', name, cat, pid, tid, ts, dur, NULL);
}

/* The text of the row object labelled `label` in js (up to its '}'), or "". */
static const char *row_text(const char *js, const char *label, char *out, size_t cap)
{
    char key[128];
    snprintf(key, sizeof key, "\"label\":\"%s\"", label);
    const char *p = strstr(js, key);
    out[0] = '\0';
    if (!p) return out;
    const char *e = strchr(p, '}');
    snprintf(out, cap, "%.*s", (int)(e ? e - p : 0), p);
    return out;
}

/* Rows named by what they are and grouped (Kineto: a GPU's process_name is
 * the host's, its process_labels says "GPU 0"; a thread keeps its last
 * name; "stream 7 " is trimmed); rows with nothing to read are folded. */
TP_TEST(rows_grouped_named_folded)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    meta(&t, "process_name", 100, 0, "name", "python3");
    meta(&t, "process_labels", 100, 0, "labels", "CPU");
    meta(&t, "process_name", 0, 0, "name", "python3");
    meta(&t, "process_labels", 0, 0, "labels", "GPU 0");
    meta(&t, "thread_name", 0, 7, "name", "stream 7 ");
    meta(&t, "thread_name", 100, 1, "name", "pt_main_thread");
    meta(&t, "thread_name", 100, 1, "name", "MainThread");
    span(&t, "aten::mm", "cpu_op", 100, 1, 0, 1000 * US, NULL);
    span(&t, "gemm", "kernel", 0, 7, 100 * US, 200 * US, "{\"device\":0,\"stream\":7}");
    char raw[128] = "{\"ph\":\"i\",\"name\":\"Record Window End\",\"pid\":100,\"tid\":2}";
    feed_raw(&t, raw, 'i', "Record Window End", "", 100, 2, 900 * US, 0, NULL);
    span(&t, "cudaEventQuery", "cuda_runtime", 100, 3, 10 * US, 900, NULL); /* 0.09 % of 1 ms */
    span(&t, "cudaEventQuery", "cuda_runtime", 100, 5, 10 * US, 1000, NULL); /* 0.1 %: kept */
    char sp[160] = "{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"PyTorch Profiler (0)\",\"pid\":\"Spans\",\"tid\":\"PyTorch Profiler\"}";
    tpa_event ev;
    memset(&ev, 0, sizeof ev);
    ev.ph = 'X', ev.name = (tpa_sv){"PyTorch Profiler (0)", 20}, ev.cat = (tpa_sv){"Trace", 5};
    ev.ts_ns = 0, ev.dur_ns = 50 * MS, ev.has_ts = ev.has_dur = true, ev.pid = 11, ev.tid = 12, ev.device = -1;
    ev.pid_str = (tpa_sv){strstr(sp, "Spans"), 5}, ev.tid_str = (tpa_sv){strstr(sp, "PyTorch Profiler\""), 16};
    ev.raw = (tpa_sv){sp, strlen(sp)};
    tpa_tl_feed(&t, 0, &ev, tpa_classify(&ev));
    /* trainprof's own traces: process_name "GPU 1", process_labels "GPU" */
    meta(&t, "process_name", 1, 0, "name", "GPU 1");
    meta(&t, "process_labels", 1, 0, "labels", "GPU");
    span(&t, "gemm", "kernel", 1, 3, 100 * US, 200 * US, "{\"device\":1,\"stream\":3}");
    span(&t, "gemm", "kernel", 2, 3, 100 * US, 200 * US, "{\"device\":2,\"stream\":3}"); /* no names */
    char *js = json_of(&t), row[512];
    CHECK(strstr(js, "\"name\":\"GPU 0 / stream 7\",\"group\":\"GPU 0\",\"label\":\"stream 7\"") != NULL);
    CHECK(strstr(js, "\"name\":\"GPU 1 / stream 3\",\"group\":\"GPU 1\"") != NULL);
    CHECK(strstr(js, "\"name\":\"GPU 2 / stream 3\",\"group\":\"GPU 2\"") != NULL);
    CHECK(strstr(js, "\"group\":\"python3 (pid 100)\",\"label\":\"MainThread\"") != NULL);
    CHECK(strstr(js, "pt_main_thread") == NULL);
    CHECK(strstr(row_text(js, "MainThread", row, sizeof row), "\"folded\":false") != NULL);
    CHECK(strstr(row_text(js, "stream 7", row, sizeof row), "\"folded\":false") != NULL);
    CHECK(strstr(row_text(js, "thread 2", row, sizeof row), "\"folded\":true") != NULL);  /* an instant only */
    CHECK(strstr(row_text(js, "thread 3", row, sizeof row), "\"folded\":true") != NULL);  /* under 0.1 % busy */
    CHECK(strstr(row_text(js, "thread 5", row, sizeof row), "\"folded\":false") != NULL); /* 0.1 % */
    /* the "Spans" row: folded, and its 50 ms span no part of the drawn span (1 ms) */
    CHECK(strstr(row_text(js, "PyTorch Profiler", row, sizeof row), "\"folded\":true") != NULL);
    CHECK(strstr(row_text(js, "MainThread", row, sizeof row), "\"busy\":1,") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* All rows junk: none is folded (the page would show nothing). */
TP_TEST(all_junk_folds_nothing)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    char raw[128] = "{\"ph\":\"i\",\"name\":\"mark\",\"pid\":1,\"tid\":1}";
    feed_raw(&t, raw, 'i', "mark", "", 1, 1, 5 * US, 0, NULL);
    char *js = json_of(&t);
    CHECK(strstr(js, "\"folded\":false") != NULL);
    CHECK(strstr(js, "\"folded\":true") == NULL);
    free(js);
    tpa_tl_free(&t);
}

static void flow(tpa_tl *t, char ph, int64_t id, int64_t pid, int64_t tid, int64_t ts)
{
    char raw[160];
    snprintf(raw, sizeof raw, "{\"ph\":\"%c\",\"id\":%lld,\"pid\":%lld,\"tid\":%lld,\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\"%s}",
             ph, (long long)id, (long long)pid, (long long)tid, ph == 'f' ? ",\"bp\":\"e\"" : "");
    feed_raw(t, raw, ph, "fwdbwd", "fwdbwd", pid, tid, ts, 0, NULL);
}

/* Kineto's forward-to-backward flows: 's' at the forward op's start, 'f'
 * inside the backward op (on another thread here, as the autograd engine's):
 * a pair of event indexes, the innermost op at each end; a pair whose
 * backward op is not carried is counted as left out. */
TP_TEST(fwdbwd_pairs)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    span(&t, "forward", "user_annotation", 1, 1, 0, 90 * US, NULL);      /* ev 0 */
    span(&t, "aten::linear", "cpu_op", 1, 1, 10 * US, 40 * US, NULL);     /* ev 1 */
    span(&t, "LinearBackward0", "cpu_op", 1, 2, 100 * US, 20 * US, NULL); /* ev 2 */
    span(&t, "aten::mm", "cpu_op", 1, 2, 105 * US, 5 * US, NULL);         /* ev 3 */
    flow(&t, 's', 5, 1, 1, 10 * US);
    flow(&t, 'f', 5, 1, 2, 100 * US);
    flow(&t, 'f', 6, 1, 2, 500 * US); /* its op is not in the trace */
    flow(&t, 's', 6, 1, 1, 30 * US);
    CHECK_EQ_INT(t.n_flows, 4);
    char *js = json_of(&t);
    CHECK(strstr(js, "\"fwdbwd\":[1,2]") != NULL);
    CHECK(strstr(js, "\"fwdbwd_left_out\":1") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* The flow ends are bounded: past the cap they are counted, not kept. */
TP_TEST(fwdbwd_bounded)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    t.max_flows = 10;
    span(&t, "op", "cpu_op", 1, 1, 0, 1000 * US, NULL);
    for (int i = 0; i < 30; i++) flow(&t, i % 2 ? 'f' : 's', i / 2, 1, 1, (int64_t)i * US);
    CHECK_EQ_INT(t.n_flows, 10);
    CHECK_EQ_INT(t.flows_lost, 20);
    char *js = json_of(&t);
    /* the 20 ends past the cap, and the 5 pairs kept: both ends in one op, not drawn */
    CHECK(strstr(js, "\"fwdbwd\":[]") != NULL);
    CHECK(strstr(js, "\"fwdbwd_left_out\":25") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* The TensorBoard plugin's tracks: 10 us buckets over the 1 ms drawn (at
 * most 100 of a power of ten us); utilization = share with a kernel
 * running (the two streams' overlap counted once); est. SM efficiency =
 * min(sum of the running kernels' blocks per SM, 1) averaged per bucket. */
TP_TEST(gpu_tracks_plugin_rules)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    meta(&t, "process_labels", 0, 0, "labels", "GPU 0");
    span(&t, "aten::mm", "cpu_op", 100, 1, 0, 1000 * US, NULL);
    span(&t, "k1", "kernel", 0, 7, 100 * US, 200 * US, "{\"device\":0,\"stream\":7,\"blocks per SM\":0.5}");
    span(&t, "k2", "kernel", 0, 8, 200 * US, 200 * US, "{\"device\":0,\"stream\":8,\"blocks per SM\":0.8}");
    span(&t, "copy", "gpu_memcpy", 0, 8, 600 * US, 100 * US, "{\"device\":0,\"stream\":8}"); /* no kernel */
    char *js = json_of(&t);
    char want_u[1024] = "\"util\":[", want_s[1024] = "\"sm\":[";
    for (int i = 0; i < 100; i++) {
        bool busy = i >= 10 && i < 40;
        const char *sm = i < 10 || i >= 40 ? "0" : i < 20 ? "0.5" : i < 30 ? "1" : "0.8";
        strcat(want_u, busy ? "1" : "0");
        strcat(want_s, sm);
        strcat(want_u, i < 99 ? "," : "]");
        strcat(want_s, i < 99 ? "," : "]");
    }
    CHECK(strstr(js, "\"gpu_tracks\":[{\"name\":\"GPU 0\",\"file\":0,\"pid\":0,\"start\":0,\"bucket\":10000,\"end\":1000000,") != NULL);
    CHECK(strstr(js, want_u) != NULL);
    CHECK(strstr(js, want_s) != NULL);
    CHECK(strstr(js, "\"util_mean\":0.3") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* Times near the reader's limits (fuzz corpus 20cceb08): a drawn span no
 * bucket of int64 ns fits gets no track, and nothing overflows. */
TP_TEST(gpu_tracks_huge_span)
{
    tpa_tl t;
    tpa_tl_init(&t, NULL);
    int64_t far = 4000000000000000000LL;
    span(&t, "k", "kernel", 0, 7, -far, far, "{}");
    span(&t, "a", "cpu_op", 1, 1, far, far, NULL);
    span(&t, "z", "kernel", 0, 8, far / 2, 0, "{}"); /* a zero-length kernel outside every bucket */
    char *js = json_of(&t);
    CHECK(strstr(js, "\"gpu_tracks\":[]") != NULL);
    free(js);
    tpa_tl_free(&t);
    tpa_tl_init(&t, NULL); /* a span that fits, and a zero-length kernel past it */
    span(&t, "a", "cpu_op", 1, 1, 0, 1000 * US, NULL);
    span(&t, "k", "kernel", 0, 7, 0, 500 * US, "{}");
    span(&t, "z", "kernel", 0, 9, far, 0, "{}");
    js = json_of(&t);
    CHECK(strstr(js, "\"util_mean\":0.5") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* A page of chosen steps: a track per step window (the gaps between them
 * carry no kernel: no bucket there says 0 % busy), each step's own. */
TP_TEST(gpu_tracks_per_chosen_step)
{
    tpa_tl t;
    small_store(&t, 400);
    gen g = {.t = &t};
    int steps = 60;
    for (int k = 0; k < steps; k++) host_step(&g, k, steps, false);
    for (int k = 0; k < steps; k++) gpu_step(&g, k, steps);
    long pick[3];
    CHECK_EQ_INT(tpa_tl_pick(&t, pick), 3);
    char *js = json_of(&t);
    const char *p = strstr(js, "\"gpu_tracks\":[");
    CHECK(p != NULL);
    int n = 0;
    for (const char *q = p; q && (q = strstr(q, "{\"name\":\"GPU 0\"")) != NULL; q++) n++;
    CHECK_EQ_INT(n, 3);
    for (int k = 0; k < 3 && p; k++) {
        char want[64];
        snprintf(want, sizeof want, "\"step\":%" PRId64 ",", t.steps[pick[k]].num);
        CHECK(strstr(p, want) != NULL);
    }
    /* each window busy: 6 kernels of dur/10 in a 2 ms step, none idle at 0 */
    CHECK(strstr(p, "\"util_mean\":0,") == NULL);
    free(js);
    tpa_tl_free(&t);
}

/* Two traces (two ranks): each one's GPU and process groups say whose. */
TP_TEST(two_traces_name_their_groups)
{
    tpa_tl t;
    const char *paths[2] = {"rank0.json", "rank1.json"};
    tpa_view_input in = {.traces = paths, .n_traces = 2};
    tpa_tl_init(&t, &in);
    for (int f = 0; f < 2; f++) {
        char raw[256];
        snprintf(raw, sizeof raw, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"args\":{\"blocks per SM\":1}}");
        tpa_event ev;
        memset(&ev, 0, sizeof ev);
        ev.ph = 'X', ev.name = (tpa_sv){"k", 1}, ev.cat = (tpa_sv){"kernel", 6};
        ev.ts_ns = 0, ev.dur_ns = 10 * US, ev.has_ts = ev.has_dur = true, ev.pid = 0, ev.tid = 7, ev.device = -1;
        ev.raw = (tpa_sv){raw, strlen(raw)};
        tpa_tl_feed(&t, f, &ev, tpa_classify(&ev));
    }
    char *js = json_of(&t);
    CHECK(strstr(js, "\"group\":\"trace 1 \xc2\xb7 GPU 0\",\"label\":\"stream 7\"") != NULL);
    CHECK(strstr(js, "\"group\":\"trace 2 \xc2\xb7 GPU 0\",\"label\":\"stream 7\"") != NULL);
    CHECK(strstr(js, "{\"name\":\"trace 2 \xc2\xb7 GPU 0\",\"file\":1,") != NULL);
    free(js);
    tpa_tl_free(&t);
}

/* A trace far over the store with a forward-backward pair in every step:
 * compactions keep the flow ends of the candidate steps, so each step
 * shown draws its pair, and the ends held stay bounded. */
TP_TEST(fwdbwd_survive_compaction)
{
    tpa_tl t;
    small_store(&t, 256);
    int steps = 300;
    size_t most = 0;
    for (int k = 0; k < steps; k++) {
        int64_t s0 = step_start(k, steps), d = step_dur(k, steps);
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", k);
        span(&t, name, "cpu_op", 1, 1, s0, d, NULL);
        span(&t, "aten::linear", "cpu_op", 1, 1, s0 + 10 * US, 50 * US, NULL);
        span(&t, "LinearBackward0", "cpu_op", 1, 2, s0 + 100 * US, 50 * US, NULL);
        flow(&t, 's', k + 1, 1, 1, s0 + 10 * US);
        flow(&t, 'f', k + 1, 1, 2, s0 + 120 * US);
        if (t.n_flows > most) most = t.n_flows;
    }
    CHECK(t.compactions > 0);
    CHECK(most <= t.max_flows && most < 200); /* the dropped steps' ends went with them */
    char *js = json_of(&t);
    const char *f = strstr(js, "\"fwdbwd\":[");
    CHECK(f != NULL);
    int commas = 0;
    for (const char *p = f; p && *p && *p != ']'; p++) commas += *p == ',';
    CHECK_EQ_INT(commas, 5); /* 3 pairs: the slowest, median and fastest steps' */
    free(js);
    tpa_tl_free(&t);
}

int main(void)
{
    RUN(small_trace_is_whole);
    RUN(big_trace_trainprof_order);
    RUN(big_trace_kineto_order);
    RUN(huge_trace_bounded);
    RUN(store_keeps_args_not_raw);
    RUN(ties_pick_the_earlier_step);
    RUN(tied_steps_left_out_on_arrival);
    RUN(no_steps_keeps_earliest);
    RUN(rows_grouped_named_folded);
    RUN(all_junk_folds_nothing);
    RUN(fwdbwd_pairs);
    RUN(fwdbwd_bounded);
    RUN(gpu_tracks_plugin_rules);
    RUN(fwdbwd_survive_compaction);
    RUN(two_traces_name_their_groups);
    RUN(gpu_tracks_huge_span);
    RUN(gpu_tracks_per_chosen_step);
    return tp_test_finish();
}
