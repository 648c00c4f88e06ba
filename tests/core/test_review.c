/* Contracts and edge cases of the session found in review: close without
 * an error struct, zone args that are not valid JSON, several sessions
 * used from one thread. */
#include <sys/stat.h>
#include <dirent.h>

#include "test_common.h"
#include "tp_test.h"

/* The content of the first trace file in <dir>/profiler_traces. */
static char *read_trace(const char *dir)
{
    char tdir[1200], name[1400];
    snprintf(tdir, sizeof tdir, "%s/profiler_traces", dir);
    DIR *d = opendir(tdir);
    if (!d)
        return NULL;
    struct dirent *e;
    name[0] = '\0';
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".pt.trace.json")) {
            snprintf(name, sizeof name, "profiler_traces/%s", e->d_name);
            break;
        }
    closedir(d);
    return name[0] ? read_in(dir, name) : NULL;
}

/* "Functions that can fail return ... a negative tp_error_code on failure,
 * and fill the optional tp_error": the code is returned without err too. */
TP_TEST(close_without_err_returns_io_error)
{
    static const char *const kv[] = {"wait", "1", "active", "2", "repeat", "1", NULL};
    char dir[1024], path[1200];
    tp_session *s = open_test_session("closenull", kv, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    snprintf(path, sizeof path, "%s/profiler_traces", dir);
    FILE *f = fopen(path, "w"); /* trace opens fail: one I/O error */
    CHECK(f != NULL);
    if (f)
        fclose(f);
    for (int step = 0; step < 4; step++) {
        { TP_ZONE(s, "work"); }
        tp_step_end(s, 1);
    }
    CHECK_EQ_INT(tp_session_close(s, NULL), TP_ERR_IO);
    rm_rf(dir);
}

/* record_shapes args are emitted raw only when they are a JSON array of
 * numbers; anything else (truncated at 240 bytes, malformed) is a string. */
TP_TEST(zone_args_always_valid_json)
{
    static const char *const kv[] = {"wait",          "0",    "warmup", "0",     "active", "1",
                                     "repeat",        "1",    "gzip",   "false",
                                     "record_shapes", "true", NULL};
    char dir[1024], longargs[600];
    tp_session *s = open_test_session("args", kv, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    size_t o = (size_t)snprintf(longargs, sizeof longargs, "[");
    for (int i = 0; i < 30; i++)
        o += (size_t)snprintf(longargs + o, sizeof longargs - o, "[64, 128], ");
    snprintf(longargs + o, sizeof longargs - o, "[1]]");
    tp_zone_begin_args(s, "ok", "[[64, 128], [128]]");
    tp_zone_end(s);
    tp_zone_begin_args(s, "long", longargs); /* cut at 240 bytes: unbalanced */
    tp_zone_end(s);
    tp_zone_begin_args(s, "bad1", "[1,,2]");
    tp_zone_end(s);
    tp_zone_begin_args(s, "bad2", "[[1]");
    tp_zone_end(s);
    tp_zone_begin_args(s, "bad3", "[-]");
    tp_zone_end(s);
    /* a 2-byte character straddling the 240-byte cut, and an invalid byte */
    char utf8[300];
    memset(utf8, 'x', 239);
    memcpy(utf8 + 239, "\xc3\xa9tail", 7);
    utf8[10] = (char)0xff;
    tp_zone_begin_args(s, "utf8", utf8);
    tp_zone_end(s);
    tp_step_end(s, 1);
    CHECK_EQ_INT(tp_session_close(s, NULL), 0);
    char *t = read_trace(dir);
    CHECK(t != NULL);
    CHECK_CONTAINS(t, "\"Input Dims\":[[64, 128], [128]]}");
    CHECK_CONTAINS(t, "\"Input Dims\":\"[[64, 128], [64, 128]");
    CHECK_CONTAINS(t, "\"Input Dims\":\"[1,,2]\"}");
    CHECK_CONTAINS(t, "\"Input Dims\":\"[[1]\"}");
    CHECK_CONTAINS(t, "\"Input Dims\":\"[-]\"}");
    /* the cut falls before the character, the invalid byte is replaced */
    CHECK_CONTAINS(t, "xxxxxxxxxx\\ufffdxxx");
    CHECK_CONTAINS(t, "xxxxx\"}");
    CHECK(t && !strchr(t, (char)0xff) && !strchr(t, (char)0xc3));
    free(t);
    rm_rf(dir);
}

/* Two sessions open at once, both used from this thread: each keeps one
 * buffer for the thread, zones stay balanced in both. */
TP_TEST(two_sessions_one_thread)
{
    static const char *const kv[] = {"trace", "false", NULL};
    char d1[1024], d2[1024];
    tp_session *a = open_test_session("two_a", kv, d1, sizeof d1);
    tp_session *b = open_test_session("two_b", kv, d2, sizeof d2);
    CHECK(a != NULL && b != NULL);
    if (!a || !b) {
        tp_session_close(a, NULL);
        tp_session_close(b, NULL);
        return;
    }
    for (int step = 0; step < 50; step++) {
        tp_zone_begin_dyn(a, "za");
        tp_zone_begin_dyn(b, "zb");
        tp_zone_end(a);
        tp_zone_end(b);
        tp_step_end(a, 1);
        tp_step_end(b, 1);
    }
    CHECK_EQ_INT(tp_session_close(a, NULL), 0);
    CHECK_EQ_INT(tp_session_close(b, NULL), 0);
    char *s1 = read_in(d1, "training_summary.json");
    char *s2 = read_in(d2, "training_summary.json");
    CHECK_CONTAINS(s1, "\"unbalanced_zones\": 0");
    CHECK_CONTAINS(s2, "\"unbalanced_zones\": 0");
    CHECK_CONTAINS(s1, "\"dropped_events\": 0");
    CHECK_CONTAINS(s2, "\"dropped_events\": 0");
    CHECK_CONTAINS(s1, "\"total_steps\": 50");
    free(s1);
    free(s2);
    char *o1 = read_in(d1, "operations.json");
    CHECK_CONTAINS(o1, "\"count\": 50");
    free(o1);
    rm_rf(d1);
    rm_rf(d2);
}

/* Trace paths are never cut: a log_dir deep enough to need ~1000 bytes is
 * written in full, and a configuration whose trace paths cannot fit is
 * refused at open with an error that names the keys. */
TP_TEST(long_trace_paths_fit_or_are_refused)
{
    char deep[1000];
    size_t o = (size_t)snprintf(deep, sizeof deep, "/tmp/tp_core_longpath_%d", (int)getpid());
    for (int i = 0; i < 9; i++) {
        deep[o++] = '/';
        memset(deep + o, 'd', 90);
        o += 90;
    }
    deep[o] = '\0';
    tp_error err;
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_set(cfg, "log_dir", deep, &err), 0);
    tp_config_set(cfg, "metrics", "none", &err);
    tp_config_set(cfg, "wait", "0", &err);
    tp_config_set(cfg, "warmup", "0", &err);
    tp_config_set(cfg, "active", "1", &err);
    tp_session *s = tp_session_open(cfg, &err);
    CHECK(s != NULL);
    if (s) {
        char traces[1200];
        snprintf(traces, sizeof traces, "%s/profiler_traces", tp_session_dir(s));
        tp_step_end(s, 1);
        CHECK_EQ_INT(tp_session_close(s, &err), 0); /* no write error: full path */
        struct stat st;
        CHECK(stat(traces, &st) == 0);
    }
    char pattern[200];
    snprintf(pattern, sizeof pattern, "{host}_%0150d_{step}", 0);
    CHECK_EQ_INT(tp_config_set(cfg, "trace_filename", pattern, &err), 0);
    s = tp_session_open(cfg, &err);
    CHECK(s == NULL);
    CHECK_EQ_INT(err.code, TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(err.message, "profiling.trace_filename");
    tp_session_close(s, NULL);
    tp_config_free(cfg);
    snprintf(deep, sizeof deep, "/tmp/tp_core_longpath_%d", (int)getpid());
    tp_test_rm_rf(deep);
}

/* Memory events take their device from the pool name, also when the caller
 * reuses one buffer for several pool names. */
TP_TEST(pool_name_in_reused_buffer)
{
    static const char *const kv[] = {"wait",           "0",    "warmup", "0",     "active", "1",
                                     "gzip",           "false", "metrics", "none",
                                     "profile_memory", "true", NULL};
    char dir[1024];
    tp_session *s = open_test_session("pools", kv, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    char pool[16], blocks[2];
    strcpy(pool, "cuda:0");
    tp_mem_alloc(s, &blocks[0], 100, pool);
    strcpy(pool, "cuda:1");
    tp_mem_alloc(s, &blocks[1], 40, pool);
    tp_step_end(s, 1);
    CHECK_EQ_INT(tp_session_close(s, NULL), 0);
    char *t = read_trace(dir);
    CHECK_CONTAINS(t, "\"Bytes\":100,");
    CHECK_CONTAINS(t, "\"Bytes\":40,");
    CHECK_CONTAINS(t, "\"Device Type\":1,\"Device Id\":0}");
    CHECK_CONTAINS(t, "\"Device Type\":1,\"Device Id\":1}");
    free(t);
    rm_rf(dir);
}

int main(void)
{
    RUN(close_without_err_returns_io_error);
    RUN(zone_args_always_valid_json);
    RUN(two_sessions_one_thread);
    RUN(long_trace_paths_fit_or_are_refused);
    RUN(pool_name_in_reused_buffer);
    return tp_test_finish();
}
