/* session API: NULL session, counts, unbalanced zones, output files. */
#include "test_common.h"
#include "tp_test.h"

TP_TEST(null_session_is_noop)
{
    tp_session *s = NULL;
    tp_step_begin(s);
    { TP_ZONE(s, "x"); }
    TP_ZONE_BEGIN(s, "y");
    TP_ZONE_END(s);
    tp_zone_begin_dyn(s, "d");
    tp_zone_end(s);
    tp_counter(s, "c", 1);
    tp_mark(s, "m");
    tp_thread_name(s, "t");
    tp_mem_alloc(s, &s, 10, NULL);
    tp_mem_free(s, &s, NULL);
    tp_step_end(s, 1);
    tp_epoch_end(s);
    CHECK_EQ_INT(tp_session_steps(s), 0);
    CHECK(tp_session_dir(s) == NULL);
    CHECK_EQ_INT(tp_session_close(s, NULL), 0);
}

TP_TEST(disabled_returns_null_ok)
{
    static const char *const kv[] = {"enabled", "false", NULL};
    tp_config *cfg = test_config("off", kv);
    tp_error err;
    tp_session *s = tp_session_open(cfg, &err);
    CHECK(s == NULL);
    CHECK_EQ_INT(err.code, TP_OK);
    tp_config_free(cfg);
}

TP_TEST(unwritable_log_dir_fails)
{
    static const char *const kv[] = {"log_dir", "/proc/trainprof_cannot_be_here", NULL};
    tp_config *cfg = test_config("bad", kv);
    tp_error err;
    tp_session *s = tp_session_open(cfg, &err);
    CHECK(s == NULL);
    CHECK(err.code != TP_OK);
    CHECK(err.message[0] != '\0');
    tp_config_free(cfg);
}

TP_TEST(counts_and_unbalanced)
{
    static const char *const kv[] = {"active", "2", "wait", "1", "repeat", "1", NULL};
    char dir[1024];
    tp_error err;
    tp_session *s = open_test_session("counts", kv, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    for (int step = 0; step < 5; step++) {
        tp_step_begin(s);
        for (int i = 0; i < 3; i++) {
            TP_ZONE(s, "outer");
            { TP_ZONE(s, "inner"); }
            tp_zone_begin_dyn(s, "dyn");
            tp_zone_end(s);
        }
        tp_counter(s, "loss", 1.0 / (step + 1));
        tp_mark(s, "mark");
        if (step == 2)
            tp_zone_begin_dyn(s, "left_open"); /* unbalanced: open at step end */
        tp_step_end(s, 8);
        if (step == 3)
            tp_zone_end(s); /* ends "left_open" after it was closed: not double counted */
    }
    tp_zone_end(s); /* END without BEGIN */
    tp_zone_begin_dyn(s, "open_at_close");
    CHECK_EQ_INT(tp_session_steps(s), 5);
    CHECK_EQ_INT(tp_session_close(s, &err), 0);

    char *sum = read_in(dir, "training_summary.json");
    CHECK_CONTAINS(sum, "\"total_steps\": 5");
    CHECK_CONTAINS(sum, "\"unbalanced_zones\": 3");
    CHECK_CONTAINS(sum, "\"trace_files\": 1");
    CHECK_CONTAINS(sum, "\"dropped_events\": 0");
    free(sum);
    char *ops = read_in(dir, "operations.json");
    CHECK_CONTAINS(ops, "\"name\": \"outer\"");
    CHECK_CONTAINS(ops, "\"count\": 15");
    free(ops);
    char *tp = read_in(dir, "timing_profile.json");
    CHECK_CONTAINS(tp, "\"step\":4");
    CHECK_CONTAINS(tp, "\"samples\":8");
    free(tp);
    rm_rf(dir);
}

/* A trace sink whose window_begin fails: chrome_json fails silently (the
 * core reports it), perfetto reports it itself (the core must not count it
 * a second time). Each failed sink is one I/O error, training goes on. */
TP_TEST(window_begin_failure_counted_once)
{
    static const char *const kv[] = {"wait", "1", "active", "2", "repeat", "1",
                                     "trace_format", "both", NULL};
    char dir[1024], path[1200];
    tp_error err;
    tp_session *s = open_test_session("winfail", kv, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    /* a regular file where the trace directory goes: every trace open fails */
    snprintf(path, sizeof path, "%s/profiler_traces", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    for (int step = 0; step < 4; step++) {
        { TP_ZONE(s, "work"); }
        tp_step_end(s, 1);
    }
    CHECK(tp_session_close(s, &err) == TP_ERR_IO);
    CHECK_CONTAINS(err.message, "2 write error(s)");
    char *sum = read_in(dir, "training_summary.json");
    CHECK_CONTAINS(sum, "\"io_errors\": 2");
    CHECK_CONTAINS(sum, "\"total_steps\": 4");
    free(sum);
    rm_rf(dir);
}

int main(void)
{
    RUN(null_session_is_noop);
    RUN(disabled_returns_null_ok);
    RUN(unwritable_log_dir_fails);
    RUN(counts_and_unbalanced);
    RUN(window_begin_failure_counted_once);
    return tp_test_finish();
}
