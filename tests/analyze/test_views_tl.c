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

/* Events of the trace overlapping step s that the store still holds. */
static size_t held_in(const tpa_tl *t, const tpa_tl_step *s)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const tpa_tl_rec *r = &t->rec[i];
        if (r->ts < s->start + s->dur && r->ts + r->dur >= s->start) n++;
    }
    return n;
}

static char *json_of(tpa_tl *t)
{
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    long pick[3] = {-1, -1, -1};
    int np = t->seen ? tpa_tl_pick(t, pick) : 0;
    tpa_tl_json(t, pick, np, &j);
    return tpu_buf_detach(&b);
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
    return tp_test_finish();
}
