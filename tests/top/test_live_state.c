/* test_live_state.c - live.json (src/sink/live.c) and the strict JSON reader
 * `trainprof top` reads it with (tools/trainprof/top_json.c):
 *   - a reader hammering live.json while the writer rewrites it as fast as
 *     it can (one write per simulated second) never sees a torn or stale-
 *     then-newer-then-stale state: every read parses, steps never go back;
 *   - the state's numbers (median, shares, data share, the ring) and the
 *     closed state written at close;
 *   - profiling.live false: no sink, nothing written;
 *   - the reader refuses what is not JSON, naming the byte offset. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/settings.h"
#include "core/names.h"
#include "sink/live.h"
#include "top_json.h"
#include "tp_test.h"
#include "util/fileio.h"

typedef struct fixture {
    char dir[256];
    tpi_settings st;
    tpi_job_info job;
    tpi_sink_env env;
} fixture;

static void fixture_init(fixture *f, const char *tag)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/tp_live_%s_%d", tag, (int)getpid());
    tp_test_rm_rf(f->dir);
    tpu_mkdir_p(f->dir, NULL, 0);
    tpi_settings_defaults(&f->st);
    f->job.rank = f->job.local_rank = -1;
    f->job.world_size = 4;
    snprintf(f->job.job_id, sizeof f->job.job_id, "j1");
    f->env.settings = &f->st;
    f->env.run_dir = f->dir;
    f->env.host = "testhost";
    f->env.pid = 4242;
    f->env.rank = 2;
    f->env.wall_base_ns = 1000000000000ull;
    f->env.mono_base_ns = 5000000000ull;
    f->env.job = &f->job;
}

/* One step of dur_ns: forward 60 %, data_wait 20 %, a background zone. */
static void step(tpi_sink *k, uint64_t i, uint64_t dur_ns)
{
    tpi_step_op ops[3] = {
        {tpi_names_intern("forward"), "forward", 1, dur_ns * 6 / 10, 0},
        {tpi_names_intern("data_wait"), "data_wait", 1, dur_ns * 2 / 10, 0},
        {tpi_names_intern("prefetch"), "prefetch", 1, dur_ns, 1},
    };
    tpi_step_info si;
    memset(&si, 0, sizeof si);
    si.step = i;
    si.begin_ns = i * dur_ns;
    si.end_ns = (i + 1) * dur_ns;
    si.samples = 8;
    si.ops = ops;
    si.n_ops = 3;
    k->ops->step(k, &si);
}

static int read_state(const char *dir, tj_doc *d, char *err, size_t n)
{
    char path[400], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/live.json", dir);
    if (tpu_read_file(path, &text, &len, err, n) != 0)
        return -1;
    int rc = tj_parse(d, text, len, err, n);
    free(text);
    return rc;
}

TP_TEST(state_numbers_and_close)
{
    fixture f;
    fixture_init(&f, "numbers");
    tpi_live *L = tpi_sink_live_new(&f.env);
    CHECK(L != NULL);
    if (!L)
        return;
    tpi_sink *k = tpi_live_sink(L);
    for (uint64_t i = 0; i < 40; i++) /* 40 steps: the ring keeps 32 */
        step(k, i, (i % 2 ? 10 : 20) * 1000000ull);
    CHECK_EQ_INT(tpi_live_prepare(L, 7000000000ull, "backward > all_reduce", 1500000000ull), 1);
    CHECK_EQ_INT(tpi_live_prepare(L, 7500000000ull, NULL, 0), 0); /* at most once a second */
    tpi_live_write(L);
    tj_doc d;
    char err[256];
    CHECK_EQ_INT(read_state(f.dir, &d, err, sizeof err), 0);
    const tj_node *o = tj_root(&d);
    CHECK_STR(tj_str(&d, o, "format", ""), "trainprof-live");
    CHECK_EQ_INT((int)tj_u64(&d, o, "steps", 0), 40);
    CHECK_EQ_INT((int)tj_num(&d, o, "pid", 0), 4242);
    CHECK_EQ_INT((int)tj_num(&d, o, "rank", 0), 2);
    CHECK_EQ_INT(tj_bool(&d, o, "closed", 1), 0);
    CHECK_EQ_INT((int)tj_u64(&d, o, "window_steps", 0), 32);
    CHECK_EQ_INT(tj_get(&d, o, "step_times_s")->count, 32);
    CHECK_NEAR(tj_num(&d, o, "median_step_s", 0), 0.015, 1e-9);
    CHECK_NEAR(tj_num(&d, o, "last_step_s", 0), 0.010, 1e-9);
    CHECK_NEAR(tj_num(&d, o, "data_share", 0), 0.2, 1e-9);
    CHECK_NEAR(tj_num(&d, o, "samples_per_s", 0), 8 * 32 / 0.48, 1e-6);
    CHECK(tj_u64(&d, o, "last_step_end_mono_ns", 0) == 5000000000ull + 40 * 10000000ull + 0);
    const tj_node *top = tj_get(&d, o, "top");
    CHECK_EQ_INT(top ? top->count : 0, 2); /* the background zone is not a part of the step */
    CHECK_STR(tj_str(&d, tj_at(&d, top, 0), "name", ""), "forward");
    CHECK_NEAR(tj_num(&d, tj_at(&d, top, 0), "share", 0), 0.6, 1e-9);
    CHECK_STR(tj_str(&d, tj_at(&d, top, 1), "name", ""), "data_wait");
    CHECK(tj_get(&d, o, "rss_bytes")->type == TJ_NUM); /* from /proc/self/statm */
    CHECK(tj_get(&d, o, "gpu_bytes")->type == TJ_NULL);
    CHECK_STR(tj_str(&d, o, "in_zone", ""), "backward > all_reduce");
    CHECK_NEAR(tj_num(&d, o, "in_zone_s", 0), 0.5, 1e-9); /* 7 s - 5 s base - 1.5 s */
    tj_free(&d);

    tpi_summary sum;
    memset(&sum, 0, sizeof sum);
    CHECK_EQ_INT(k->ops->close(k, &sum), 0);
    CHECK_EQ_INT(read_state(f.dir, &d, err, sizeof err), 0);
    CHECK_EQ_INT(tj_bool(&d, tj_root(&d), "closed", 0), 1);
    CHECK(tj_get(&d, tj_root(&d), "in_zone")->type == TJ_NULL);
    tj_free(&d);
    CHECK_EQ_INT(tpi_live_prepare(L, 9000000000ull, NULL, 0), 0); /* closed: nothing more */
    CHECK(access(f.dir, F_OK) == 0);
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s/.live.json.tmp", f.dir);
    CHECK(access(tmp, F_OK) != 0); /* renamed, nothing left beside it */
    k->ops->destroy(k);
    tp_test_rm_rf(f.dir);
}

TP_TEST(live_off_writes_nothing)
{
    fixture f;
    fixture_init(&f, "off");
    f.st.live = 0;
    CHECK(tpi_sink_live_new(&f.env) == NULL);
    tp_test_rm_rf(f.dir);
}

/* A write that fails (here live.json is a directory: the rename fails)
 * warns once and stops the live state; the sink is then failed, so the
 * collector skips it, and close writes nothing. */
TP_TEST(failed_write_stops_the_live_state)
{
    fixture f;
    fixture_init(&f, "fail");
    char path[400];
    snprintf(path, sizeof path, "%s/live.json", f.dir);
    tpu_mkdir_p(path, NULL, 0);
    tpi_live *L = tpi_sink_live_new(&f.env);
    CHECK(L != NULL);
    if (!L)
        return;
    tpi_sink *k = tpi_live_sink(L);
    step(k, 0, 1000000);
    CHECK_EQ_INT(tpi_live_prepare(L, 2000000000ull, NULL, 0), 1);
    tpi_live_write(L); /* warns */
    CHECK_EQ_INT(k->failed, 0); /* set by the next prepare, under the collector lock */
    CHECK_EQ_INT(tpi_live_prepare(L, 4000000000ull, NULL, 0), 0);
    CHECK_EQ_INT(k->failed, 1);
    CHECK_EQ_INT((int)k->io_errors, 0); /* not an I/O error of the run */
    tpi_summary sum;
    memset(&sum, 0, sizeof sum);
    CHECK_EQ_INT(k->ops->close(k, &sum), 0);
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s/.live.json.tmp", f.dir);
    CHECK(access(tmp, F_OK) != 0);
    k->ops->destroy(k);
    tp_test_rm_rf(f.dir);
}

/* ---- hammer ----------------------------------------------------------------- */

typedef struct hammer hammer;
typedef struct reader_stats { /* one per reader thread: no shared counters */
    hammer *h;
    uint64_t reads, missing, bad, went_back;
    char first_error[300];
} reader_stats;

struct hammer {
    fixture f;
    tpi_live *L;
    int stop;                /* atomic */
    uint64_t writes;         /* atomic: the writer counts, the main thread reads */
};

static void *writer(void *arg)
{
    hammer *h = arg;
    tpi_sink *k = tpi_live_sink(h->L);
    uint64_t now = 1;
    for (uint64_t i = 0; !__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE); i++) {
        step(k, i, 1000000ull + (i % 7) * 1000ull);
        now += 1000000000ull; /* a simulated second per step: a write every time */
        if (tpi_live_prepare(h->L, now, (i & 1) ? "forward" : NULL, 0)) {
            tpi_live_write(h->L);
            __atomic_fetch_add(&h->writes, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void *reader(void *arg)
{
    reader_stats *rs = arg;
    hammer *h = rs->h;
    uint64_t last = 0;
    while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
        tj_doc d;
        char err[256];
        char path[400], *text;
        size_t len;
        snprintf(path, sizeof path, "%s/live.json", h->f.dir);
        if (tpu_read_file(path, &text, &len, err, sizeof err) != 0) {
            rs->missing++; /* before the first write only */
            continue;
        }
        int rc = tj_parse(&d, text, len, err, sizeof err);
        rs->reads++;
        if (rc != 0 || len == 0 || text[len - 1] != '\n') {
            if (!rs->bad++)
                snprintf(rs->first_error, sizeof rs->first_error, "%s (%zu bytes)", err, len);
        } else {
            uint64_t steps = tj_u64(&d, tj_root(&d), "steps", 0);
            if (steps < last)
                rs->went_back++;
            last = steps;
            tj_free(&d);
        }
        free(text);
    }
    return NULL;
}

TP_TEST(reader_never_sees_a_torn_state)
{
    hammer *h = calloc(1, sizeof *h);
    fixture_init(&h->f, "hammer");
    h->L = tpi_sink_live_new(&h->f.env);
    CHECK(h->L != NULL);
    if (!h->L) {
        free(h);
        return;
    }
    pthread_t w, r[2];
    reader_stats rs[2];
    memset(rs, 0, sizeof rs);
    rs[0].h = rs[1].h = h;
    pthread_create(&w, NULL, writer, h);
    pthread_create(&r[0], NULL, reader, &rs[0]);
    pthread_create(&r[1], NULL, reader, &rs[1]);
    for (int i = 0; i < 30 && __atomic_load_n(&h->writes, __ATOMIC_RELAXED) < 2000; i++)
        usleep(100000);
    __atomic_store_n(&h->stop, 1, __ATOMIC_RELEASE);
    pthread_join(w, NULL);
    pthread_join(r[0], NULL);
    pthread_join(r[1], NULL);
    uint64_t reads = rs[0].reads + rs[1].reads, bad = rs[0].bad + rs[1].bad;
    printf("hammer: %llu writes, %llu reads, %llu before the first write, %llu bad%s%s%s\n",
           (unsigned long long)h->writes, (unsigned long long)reads,
           (unsigned long long)(rs[0].missing + rs[1].missing), (unsigned long long)bad,
           bad ? ": " : "", rs[0].first_error, rs[1].first_error);
    CHECK(h->writes > 100);
    CHECK(reads > 100);
    CHECK(bad == 0);
    CHECK(rs[0].went_back == 0 && rs[1].went_back == 0);
    tpi_sink *k = tpi_live_sink(h->L);
    k->ops->destroy(k);
    tp_test_rm_rf(h->f.dir);
    free(h);
}

/* ---- the reader --------------------------------------------------------------- */

static int parses(const char *text, char *err, size_t n)
{
    tj_doc d;
    int rc = tj_parse(&d, text, strlen(text), err, n);
    if (rc == 0)
        tj_free(&d);
    return rc == 0;
}

TP_TEST(strict_reader)
{
    char err[256];
    static const char *const good[] = {
        "{}", "[]", " {\"a\": [1, -2.5e3, true, false, null, \"x\"]} \n", "0", "\"\\u00e9\\ud83d\\ude00\"",
        "{\"a\":{\"b\":{\"c\":[[[]]]}}}", NULL};
    for (int i = 0; good[i]; i++) {
        int ok = parses(good[i], err, sizeof err);
        if (!ok)
            fprintf(stderr, "refused %s: %s\n", good[i], err);
        CHECK(ok);
    }
    static const char *const bad[][2] = {
        {"{\"a\":1,}", "byte offset 7"}, {"[1,]", "byte offset 3"}, {"01", "byte offset 1"},
        {"1.", "byte offset 2"}, {"{\"a\" 1}", "expected ':'"}, {"\"abc", "unterminated"},
        {"\"a\tb\"", "control character"}, {"[1] x", "text after"}, {"", "unexpected end"},
        {"{'a':1}", "member name"}, {"\"\\ud800\"", "surrogate"}, {"nul", "expected a value"},
        {"[1 2]", "expected ','"}, {NULL, NULL}};
    for (int i = 0; bad[i][0]; i++) {
        CHECK(!parses(bad[i][0], err, sizeof err));
        CHECK_CONTAINS(err, bad[i][1]);
    }
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 99);
    deep[199] = '\0';
    CHECK(!parses(deep, err, sizeof err));
    CHECK_CONTAINS(err, "nested too deeply");
    tj_doc d;
    const char *t = "{\"ns\": 18446744073709551615, \"s\": \"\\u00e9\", \"f\": 0.5}";
    CHECK_EQ_INT(tj_parse(&d, t, strlen(t), err, sizeof err), 0);
    CHECK(tj_u64(&d, tj_root(&d), "ns", 0) == UINT64_MAX); /* exact, not through a double */
    CHECK_STR(tj_str(&d, tj_root(&d), "s", ""), "\xc3\xa9");
    CHECK(tj_u64(&d, tj_root(&d), "f", 7) == 7);
    CHECK(tj_num(&d, tj_root(&d), "missing", -1) == -1);
    tj_free(&d);
}

int main(void)
{
    RUN(strict_reader);
    RUN(state_numbers_and_close);
    RUN(live_off_writes_nothing);
    RUN(failed_write_stops_the_live_state);
    RUN(reader_never_sees_a_torn_state);
    return tp_test_finish();
}
