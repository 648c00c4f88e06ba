/*
 * Error messages: they name the key, where it was given, and what is
 * accepted; a failing call leaves the configuration as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "trainprof.h"

static tp_error set_err(const char *key, const char *value, int want_code)
{
    tp_config *cfg = tp_config_new();
    tp_error err = {0};
    int rc = tp_config_set(cfg, key, value, &err);
    CHECK_EQ_INT(rc, want_code);
    CHECK_EQ_INT(err.code, want_code);
    tp_config_free(cfg);
    return err;
}

TP_TEST(unknown_key_suggests)
{
    tp_error e = set_err("warmpu", "1", TP_ERR_UNKNOWN_KEY);
    CHECK_CONTAINS(e.message, "unknown key `profiling.warmpu`");
    CHECK_CONTAINS(e.message, "did you mean `warmup`?");
    e = set_err("profiling.activ", "1", TP_ERR_UNKNOWN_KEY);
    CHECK_CONTAINS(e.message, "did you mean `active`?");
    e = set_err("wait_step", "1", TP_ERR_UNKNOWN_KEY);
    CHECK_CONTAINS(e.message, "did you mean `wait_steps`?");
    e = set_err("completely_unrelated_thing", "1", TP_ERR_UNKNOWN_KEY);
    CHECK(strstr(e.message, "did you mean") == NULL);
    CHECK_CONTAINS(e.message, "docs/CONFIG.md");
}

TP_TEST(bad_values_list_what_is_accepted)
{
    tp_error e = set_err("with_stack", "maybe", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "profiling.with_stack: `maybe` is not a boolean");
    CHECK_CONTAINS(e.message, "true/false, yes/no, on/off, 1/0");
    e = set_err("wait", "-1", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "out of range");
    CHECK_CONTAINS(e.message, "an integer from 0 to");
    e = set_err("wait", "1.5", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "is not an integer");
    e = set_err("wait", "99999999999999999999999", TP_ERR_BAD_VALUE);
    e = set_err("active", "0", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "from 1 to");
    e = set_err("unit", "epochs", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "one of step, epoch");
    CHECK_CONTAINS(e.message, "did you mean `epoch`?");
    e = set_err("metrics", "jsonl,wandb", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "jsonl, csv, tensorboard, console");
    e = set_err("memory_interval_ms", "10 parsecs", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "is not a duration");
    CHECK_CONTAINS(e.message, "100ms, 2s");
    e = set_err("memory_interval_ms", "2h", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "out of range");
    e = set_err("max_buffer_mb", "16XB", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "16MB, 1GiB");
    e = set_err("max_buffer_mb", "-5MB", TP_ERR_BAD_VALUE);
    e = set_err("max_buffer_mb", "1e3", TP_ERR_BAD_VALUE);
    e = set_err("log_dir", "", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "is empty");
    e = set_err("log_dir", "a\nb", TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "control characters");
    e = set_err("rank", "-2", TP_ERR_BAD_VALUE);
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
