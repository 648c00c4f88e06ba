/*
 * Precedence (defaults < YAML < env < flags, whatever the call order),
 * tp_config_parse_args leaving the program's flags, contradictions across
 * and within layers, and the settings the core reads.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/settings.h"
#include "tp_test.h"
#include "trainprof.h"

static char yaml_path[64];

static void write_yaml(const char *text)
{
    snprintf(yaml_path, sizeof yaml_path, "/tmp/tp_layers_XXXXXX");
    int fd = mkstemp(yaml_path);
    CHECK(fd >= 0);
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

/* Loads file, env and flags in the given order ("fea", "aef", ...). */
static tp_config *load_in_order(const char *order)
{
    tp_config *cfg = tp_config_new();
    tp_error err = {0};
    for (const char *o = order; *o; o++) {
        int rc = 0;
        if (*o == 'f') {
            rc = tp_config_load_file(cfg, yaml_path, &err);
        } else if (*o == 'e') {
            rc = tp_config_load_env(cfg, &err);
        } else {
            char *argv[] = {"prog", "--profiling.active=7", NULL};
            int argc = 2;
            rc = tp_config_parse_args(cfg, &argc, argv, &err);
        }
        if (rc)
            fprintf(stderr, "order %s step %c: %s\n", order, *o, err.message);
        CHECK_EQ_INT(rc, 0);
    }
    return cfg;
}

TP_TEST(precedence_whatever_the_order)
{
    static const char *const orders[] = {"fea", "fae", "efa", "eaf", "afe", "aef"};
    write_yaml("profiling:\n  wait: 5\n  warmup: 5\n  active: 5\n  repeat: 5\n");
    setenv("TRAINPROF_WARMUP", "6", 1);
    setenv("TRAINPROF_ACTIVE", "6", 1);
    for (size_t i = 0; i < 6; i++) {
        tp_config *cfg = load_in_order(orders[i]);
        CHECK_STR(tp_config_get(cfg, "skip_first"), "0"); /* default */
        CHECK_STR(tp_config_get(cfg, "wait"), "5");       /* file */
        CHECK_STR(tp_config_get(cfg, "warmup"), "6");     /* env over file */
        CHECK_STR(tp_config_get(cfg, "active"), "7");     /* flag over env */
        char *ex = tp_config_describe(cfg, 1);
        CHECK_CONTAINS(ex, "# default");
        CHECK_CONTAINS(ex, "# env TRAINPROF_WARMUP");
        CHECK_CONTAINS(ex, "# flag --profiling.active");
        CHECK_CONTAINS(ex, ":2"); /* file line of wait */
        tp_free(ex);
        tp_config_free(cfg);
    }
    unsetenv("TRAINPROF_WARMUP");
    unsetenv("TRAINPROF_ACTIVE");
    unlink(yaml_path);
}

TP_TEST(set_has_flag_precedence)
{
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_set(cfg, "wait", "9", NULL), 0);
    setenv("TRAINPROF_WAIT", "2", 1);
    CHECK_EQ_INT(tp_config_load_env(cfg, NULL), 0);
    unsetenv("TRAINPROF_WAIT");
    CHECK_STR(tp_config_get(cfg, "wait"), "9");
    tp_config_free(cfg);
}

TP_TEST(trainprof_config_env_file)
{
    write_yaml("profiling:\n  name: fromenvfile\n");
    setenv("TRAINPROF_CONFIG", yaml_path, 1);
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_load_env(cfg, NULL), 0);
    CHECK_STR(tp_config_get(cfg, "name"), "fromenvfile");
    tp_config_free(cfg);
    unsetenv("TRAINPROF_CONFIG");
    unlink(yaml_path);
}

TP_TEST(parse_args_leaves_program_flags_in_order)
{
    char *argv[] = {"train",      "--max_steps",      "10",         "--profiling.wait", "2",
                    "--batch",    "64",               "profiling.enabled=true",
                    "--log_dir",  "mine",             "--enable_profiling", "True",
                    "data.yaml",  "--profile_steps",  "5",          "--",
                    "--profiling.wait=3", NULL};
    int argc = 17;
    tp_error err = {0};
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_parse_args(cfg, &argc, argv, &err), 0);
    static const char *const want[] = {"train", "--max_steps", "10",     "--batch",
                                       "64",    "--log_dir",   "mine",   "data.yaml",
                                       "--",    "--profiling.wait=3"};
    CHECK_EQ_INT(argc, 10);
    for (int i = 0; i < argc && i < 10; i++)
        CHECK_STR(argv[i], want[i]);
    CHECK(argv[argc] == NULL);
    CHECK_STR(tp_config_get(cfg, "wait"), "2");
    CHECK_STR(tp_config_get(cfg, "active"), "5");
    CHECK_STR(tp_config_get(cfg, "log_dir"), "runs"); /* --log_dir is the program's */
    tp_config_free(cfg);
}

TP_TEST(parse_args_error_leaves_everything)
{
    char *argv[] = {"train", "--profiling.wait", "4", "--profiling.wramup", "1", "--x", NULL};
    int argc = 6;
    tp_error err = {0};
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_parse_args(cfg, &argc, argv, &err), TP_ERR_UNKNOWN_KEY);
    CHECK_EQ_INT(argc, 6);
    CHECK_STR(argv[1], "--profiling.wait");
    CHECK_STR(tp_config_get(cfg, "wait"), "1"); /* the batch was undone */
    CHECK_CONTAINS(err.message, "did you mean `warmup`?");
    CHECK_CONTAINS(err.message, "--profiling.wramup");
    tp_config_free(cfg);
}

TP_TEST(parse_args_value_missing)
{
    char *argv[] = {"train", "--profiling.wait", NULL};
    int argc = 2;
    tp_error err = {0};
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_parse_args(cfg, &argc, argv, &err), TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(err.message, "needs a value");
    tp_config_free(cfg);
}

TP_TEST(bool_flag_before_program_flag)
{
    char *argv[] = {"train", "--enable_profiling", "--max_steps", "3", NULL};
    int argc = 4;
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_parse_args(cfg, &argc, argv, NULL), 0);
    CHECK_EQ_INT(argc, 3);
    CHECK_STR(argv[1], "--max_steps");
    tp_config_free(cfg);
}

TP_TEST(derived_keys_across_layers)
{
    /* start_step as a flag beats wait from the file: no contradiction */
    write_yaml("profiling:\n  wait: 2\n  skip_first: 1\n");
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_load_file(cfg, yaml_path, NULL), 0);
    CHECK_EQ_INT(tp_config_set(cfg, "start_step", "10", NULL), 0);
    CHECK_STR(tp_config_get(cfg, "wait"), "0");
    CHECK_STR(tp_config_get(cfg, "skip_first"), "10");
    /* a flag for wait beats start_step's wait=0 only when in a higher layer;
     * in the same layer it is a contradiction */
    tp_error err = {0};
    CHECK_EQ_INT(tp_config_set(cfg, "wait", "3", &err), TP_ERR_CONFLICT);
    CHECK_CONTAINS(err.message, "start_step");
    CHECK_CONTAINS(err.message, "wait");
    CHECK_STR(tp_config_get(cfg, "wait"), "0"); /* unchanged */
    tp_config_free(cfg);
    unlink(yaml_path);

    cfg = tp_config_new();
    setenv("TRAINPROF_START_STEP", "4", 1);
    CHECK_EQ_INT(tp_config_load_env(cfg, NULL), 0);
    unsetenv("TRAINPROF_START_STEP");
    CHECK_EQ_INT(tp_config_set(cfg, "wait", "3", NULL), 0); /* flag over env */
    CHECK_STR(tp_config_get(cfg, "wait"), "3");
    CHECK_STR(tp_config_get(cfg, "skip_first"), "4");
    tp_config_free(cfg);
}

TP_TEST(later_file_replaces_earlier_file)
{
    tp_config *cfg = tp_config_new();
    write_yaml("profiling:\n  wait: 2\n  warmup: 2\n  name: first\n");
    CHECK_EQ_INT(tp_config_load_file(cfg, yaml_path, NULL), 0);
    unlink(yaml_path);
    write_yaml("profiling:\n  start_step: 7\n");
    tp_error err = {0};
    CHECK_EQ_INT(tp_config_load_file(cfg, yaml_path, &err), 0);
    unlink(yaml_path);
    CHECK_STR(tp_config_get(cfg, "skip_first"), "7");
    CHECK_STR(tp_config_get(cfg, "wait"), "0");
    CHECK_STR(tp_config_get(cfg, "name"), "first"); /* untouched keys stay */
    write_yaml("profiling:\n  wait: 4\n");
    CHECK_EQ_INT(tp_config_load_file(cfg, yaml_path, &err), 0);
    unlink(yaml_path);
    CHECK_STR(tp_config_get(cfg, "wait"), "4");
    CHECK_STR(tp_config_get(cfg, "skip_first"), "0"); /* start_step was dropped */
    tp_config_free(cfg);
}

TP_TEST(settings_follow_the_config)
{
    tpi_settings d;
    tpi_settings_defaults(&d);
    CHECK_EQ_INT(d.enabled, 1);
    CHECK_EQ_INT(d.wait, 1);
    CHECK_EQ_INT(d.active, 3);
    CHECK_EQ_INT(d.trace_formats, TPI_TRACE_CHROME);
    CHECK_EQ_INT(d.metrics, TPI_METRIC_CONSOLE);
    CHECK_EQ_INT(d.rank, -1);
    CHECK_STR(d.log_dir, "runs");

    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_set(cfg, "trace_format", "both", NULL), 0);
    CHECK_EQ_INT(tp_config_set(cfg, "metrics", "jsonl,tensorboard", NULL), 0);
    CHECK_EQ_INT(tp_config_set(cfg, "unit", "epoch", NULL), 0);
    CHECK_EQ_INT(tp_config_set(cfg, "name", "../../etc/pa\x7fss", NULL), TP_ERR_BAD_VALUE);
    CHECK_EQ_INT(tp_config_set(cfg, "name", "../../etc/passwd", NULL), 0);
    CHECK_EQ_INT(tp_config_set(cfg, "max_buffer_mb", "1GiB", NULL), 0);
    const tpi_settings *s = tpi_config_settings(cfg);
    CHECK_EQ_INT(s->trace_formats, TPI_TRACE_CHROME | TPI_TRACE_PERFETTO);
    CHECK_EQ_INT(s->metrics, TPI_METRIC_JSONL | TPI_METRIC_TENSORBOARD);
    CHECK_EQ_INT(s->unit, TPI_UNIT_EPOCH);
    CHECK_EQ_INT(s->max_buffer_mb, 1024);
    CHECK(strchr(s->name, '/') == NULL);
    CHECK_STR(s->name, ".._.._etc_passwd");
    tp_config_free(cfg);
}

TP_TEST(json_and_describe)
{
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_set(cfg, "metrics", "jsonl,csv", NULL), 0);
    CHECK_EQ_INT(tp_config_set(cfg, "profile_steps", "4", NULL), 0);
    char *j = tp_config_to_json(cfg);
    CHECK_CONTAINS(j, "\"profiling.wait\": {");
    CHECK_CONTAINS(j, "\"value\": 1");
    CHECK_CONTAINS(j, "\"source\": \"default\"");
    CHECK_CONTAINS(j, "\"jsonl\"");
    CHECK_CONTAINS(j, "\"profiling.profile_steps\"");
    CHECK_CONTAINS(j, "\"value\": true");
    tp_free(j);
    char *d = tp_config_describe(cfg, 0);
    CHECK_CONTAINS(d, "profiling.active = 4\n");
    CHECK(strstr(d, "# default") == NULL);
    tp_free(d);
    tp_config_free(cfg);
    tp_config_free(NULL);
    CHECK(tp_config_describe(NULL, 0) == NULL);
}

/* A YAML value is the whole scalar: a "\0" escape or a value longer than
 * any key takes must not leave an accepted prefix ("7\0junk" read as 7). */
TP_TEST(yaml_scalar_is_taken_whole)
{
    static const char *const bad[] = {
        "profiling:\n  wait: \"7\\0junk\"\n",
        "profiling:\n  log_dir: \"/tmp/ok\\0/../../etc\"\n",
        "profiling:\n  metrics: [jsonl, \"csv\\0x\"]\n",
        "profiling: \"false\\0x\"\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tp_config *cfg = tp_config_new();
        tp_error err = {0};
        write_yaml(bad[i]);
        CHECK(tp_config_load_file(cfg, yaml_path, &err) != 0);
        CHECK_CONTAINS(err.message, "NUL");
        unlink(yaml_path);
        CHECK_STR(tp_config_get(cfg, "wait"), "1");
        tp_config_free(cfg);
    }
    tp_config *kc = tp_config_new();
    tp_error kerr = {0};
    write_yaml("profiling:\n  \"wait\\0x\": 3\n");
    CHECK_EQ_INT(tp_config_load_file(kc, yaml_path, &kerr), TP_ERR_UNKNOWN_KEY);
    unlink(yaml_path);
    CHECK_STR(tp_config_get(kc, "wait"), "1");
    tp_config_free(kc);
    /* "5", 1100 spaces, "x": cut at the value buffer it used to read as 5 */
    char text[1300];
    int n = snprintf(text, sizeof text, "profiling:\n  wait: \"5");
    memset(text + n, ' ', 1100);
    snprintf(text + n + 1100, sizeof text - (size_t)n - 1100, "x\"\n");
    tp_config *cfg = tp_config_new();
    tp_error err = {0};
    write_yaml(text);
    CHECK(tp_config_load_file(cfg, yaml_path, &err) != 0);
    CHECK_CONTAINS(err.message, "too long");
    unlink(yaml_path);
    CHECK_STR(tp_config_get(cfg, "wait"), "1");
    tp_config_free(cfg);
}

int main(void)
{
    unsetenv("TRAINPROF_CONFIG");
    RUN(precedence_whatever_the_order);
    RUN(set_has_flag_precedence);
    RUN(trainprof_config_env_file);
    RUN(parse_args_leaves_program_flags_in_order);
    RUN(parse_args_error_leaves_everything);
    RUN(parse_args_value_missing);
    RUN(bool_flag_before_program_flag);
    RUN(derived_keys_across_layers);
    RUN(later_file_replaces_earlier_file);
    RUN(settings_follow_the_config);
    RUN(json_and_describe);
    RUN(yaml_scalar_is_taken_whole);
    return tp_test_finish();
}
