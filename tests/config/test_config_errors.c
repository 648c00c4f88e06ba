/*
 * Error messages: they name the key, where it was given, and what is
 * accepted; a failing call leaves the configuration as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "trainprof.h"

/* One tp_config_set that must fail with code, and what its message must
 * (want, want2) and must not (absent) contain; NULL = no check. */
typedef struct set_case {
    const char *key, *value;
    int code;
    const char *want, *want2, *absent;
} set_case;

static void check_set_cases(const set_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const set_case *c = &cases[i];
        tp_config *cfg = tp_config_new();
        tp_error err = {0};
        int rc = tp_config_set(cfg, c->key, c->value, &err);
        CHECK_EQ_INT(rc, c->code);
        CHECK_EQ_INT(err.code, c->code);
        if (c->want)
            CHECK_CONTAINS(err.message, c->want);
        if (c->want2)
            CHECK_CONTAINS(err.message, c->want2);
        if (c->absent)
            CHECK(strstr(err.message, c->absent) == NULL);
        tp_config_free(cfg);
    }
}

#define UNKNOWN TP_ERR_UNKNOWN_KEY
#define BAD TP_ERR_BAD_VALUE

TP_TEST(unknown_key_suggests)
{
    static const set_case cases[] = {
        {"warmpu", "1", UNKNOWN, "unknown key `profiling.warmpu`", "did you mean `warmup`?", NULL},
        {"profiling.activ", "1", UNKNOWN, "did you mean `active`?", NULL, NULL},
        {"wait_step", "1", UNKNOWN, "did you mean `wait_steps`?", NULL, NULL},
        {"completely_unrelated_thing", "1", UNKNOWN, "docs/CONFIG.md", NULL, "did you mean"},
    };
    check_set_cases(cases, sizeof cases / sizeof cases[0]);
}

TP_TEST(bad_values_list_what_is_accepted)
{
    static const set_case cases[] = {
        {"with_stack", "maybe", BAD, "profiling.with_stack: `maybe` is not a boolean",
         "true/false, yes/no, on/off, 1/0", NULL},
        {"wait", "-1", BAD, "out of range", "an integer from 0 to", NULL},
        {"wait", "1.5", BAD, "is not an integer", NULL, NULL},
        {"wait", "99999999999999999999999", BAD, NULL, NULL, NULL},
        {"active", "0", BAD, "from 1 to", NULL, NULL},
        {"unit", "epochs", BAD, "one of step, epoch", "did you mean `epoch`?", NULL},
        {"metrics", "jsonl,wandb", BAD, "jsonl, csv, tensorboard, console", NULL, NULL},
        {"memory_interval_ms", "10 parsecs", BAD, "is not a duration", "100ms, 2s", NULL},
        {"memory_interval_ms", "2h", BAD, "out of range", NULL, NULL},
        {"max_buffer_mb", "16XB", BAD, "16MB, 1GiB", NULL, NULL},
        {"max_buffer_mb", "-5MB", BAD, NULL, NULL, NULL},
        {"max_buffer_mb", "1e3", BAD, NULL, NULL, NULL},
        {"log_dir", "", BAD, "is empty", NULL, NULL},
        {"log_dir", "a\nb", BAD, "control characters", NULL, NULL},
        {"rank", "-2", BAD, NULL, NULL, NULL},
    };
    check_set_cases(cases, sizeof cases / sizeof cases[0]);
}

TP_TEST(contradictions_say_why)
{
    tp_config *cfg = tp_config_new();
    tp_error err = {0};
    char *argv[] = {"p", "--profiling.start_step", "5", "--profiling.wait", "2", NULL};
    int argc = 5;
    CHECK_EQ_INT(tp_config_parse_args(cfg, &argc, argv, &err), TP_ERR_CONFLICT);
    CHECK_CONTAINS(err.message, "`start_step` (flag --profiling.start_step) contradicts `wait`");
    CHECK_CONTAINS(err.message, "places the trace window itself");
    CHECK_EQ_INT(argc, 5);

    char *argv2[] = {"p", "--profiling.end_step=9", "--profile_steps", "3", NULL};
    argc = 4;
    CHECK_EQ_INT(tp_config_parse_args(cfg, &argc, argv2, &err), TP_ERR_CONFLICT);
    CHECK_CONTAINS(err.message, "end_step");
    CHECK_CONTAINS(err.message, "profile_steps");

    CHECK_EQ_INT(tp_config_set(cfg, "schedule_every_n_steps", "3", &err), TP_ERR_CONFLICT);
    CHECK_CONTAINS(err.message, "shorter than one cycle");
    CHECK_EQ_INT(tp_config_set(cfg, "end_step", "0", &err), TP_ERR_BAD_VALUE);
    CHECK_EQ_INT(tp_config_set(cfg, "start_step", "4", &err), 0);
    CHECK_EQ_INT(tp_config_set(cfg, "end_step", "3", &err), TP_ERR_CONFLICT);
    CHECK_CONTAINS(err.message, "must be greater than start_step");
    CHECK_STR(tp_config_get(cfg, "end_step"), "");
    tp_config_free(cfg);
}

TP_TEST(env_errors)
{
    tp_config *cfg = tp_config_new();
    tp_error err = {0};
    setenv("TRAINPROF_WIAT", "3", 1);
    CHECK_EQ_INT(tp_config_load_env(cfg, &err), TP_ERR_UNKNOWN_KEY);
    CHECK_CONTAINS(err.message, "TRAINPROF_WIAT");
    CHECK_CONTAINS(err.message, "TRAINPROF_WAIT");
    unsetenv("TRAINPROF_WIAT");
    setenv("TRAINPROF_ACTIVE", "lots", 1);
    CHECK_EQ_INT(tp_config_load_env(cfg, &err), TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(err.message, "env TRAINPROF_ACTIVE: profiling.active: `lots`");
    unsetenv("TRAINPROF_ACTIVE");
    setenv("TRAINPROF_BIN", "/usr/bin/whatever", 1); /* not ours, not close: ignored */
    CHECK_EQ_INT(tp_config_load_env(cfg, &err), 0);
    setenv("TRAINPROF_CONFIG", "/nonexistent/dir/cfg.yaml", 1);
    CHECK_EQ_INT(tp_config_load_env(cfg, &err), TP_ERR_IO);
    CHECK_CONTAINS(err.message, "/nonexistent/dir/cfg.yaml");
    unsetenv("TRAINPROF_CONFIG");
    tp_config_free(cfg);
}

TP_TEST(null_arguments)
{
    tp_error err = {0};
    CHECK_EQ_INT(tp_config_set(NULL, "wait", "1", &err), TP_ERR_INVALID);
    CHECK_EQ_INT(tp_config_load_file(NULL, "x", &err), TP_ERR_INVALID);
    CHECK_EQ_INT(tp_config_parse_args(NULL, NULL, NULL, NULL), TP_ERR_INVALID);
    CHECK_EQ_INT(tp_config_load_env(NULL, NULL), TP_ERR_INVALID);
    CHECK(tp_config_get(NULL, "wait") == NULL);
    CHECK(tp_config_to_json(NULL) == NULL);
}

int main(void)
{
    unsetenv("TRAINPROF_CONFIG");
    RUN(unknown_key_suggests);
    RUN(bad_values_list_what_is_accepted);
    RUN(contradictions_say_why);
    RUN(env_errors);
    RUN(null_arguments);
    return tp_test_finish();
}
