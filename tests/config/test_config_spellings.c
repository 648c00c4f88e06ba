/*
 * Every spelling users bring, each mapped to its canonical key and value.
 * One table row = one spelling: how it is given (flags, YAML, environment,
 * tp_config_set), then the canonical key and the value it must produce.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_test.h"
#include "trainprof.h"

typedef enum { ARGS, YAML, ENV, SET } how;

typedef struct row {
    how how;
    const char *input; /* ARGS: space-separated argv; YAML: text; ENV: VAR=value; SET: key=value */
    const char *key;   /* canonical key to check */
    const char *want;  /* its canonical value */
} row;

static const row ROWS[] = {
    /* RAVE-style flags */
    {ARGS, "--enable_profiling True", "profiling.enabled", "true"},
    {ARGS, "--enable_profiling False", "profiling.enabled", "false"},
    {ARGS, "--enable_profiling", "profiling.enabled", "true"},
    {ARGS, "--enable_profiling=no", "profiling.enabled", "false"},
    {ARGS, "--enable_memory_profiling True", "profiling.memory", "true"},
    {ARGS, "--enable_memory_profiling False", "profiling.memory", "false"},
    {ARGS, "--enable_timing_profiling False", "profiling.timing", "false"},
    {ARGS, "--profile_steps 100", "profiling.active", "100"},
    {ARGS, "--profile_steps 100", "profiling.repeat", "1"},
    /* --profiling.KEY forms */
    {ARGS, "--profiling.wait 1", "profiling.wait", "1"},
    {ARGS, "--profiling.wait=7", "profiling.wait", "7"},
    {ARGS, "-profiling.wait=6", "profiling.wait", "6"},
    {ARGS, "--profiling.skip-first 4", "profiling.skip_first", "4"},
    {ARGS, "--profiling.with_stack", "profiling.with_stack", "true"},
    {ARGS, "--profiling.metrics jsonl,csv", "profiling.metrics", "jsonl,csv"},
    {ARGS, "--profiling.trace_format=both", "profiling.trace_format", "both"},
    {ARGS, "--profiling.gzip on", "profiling.gzip", "true"},
    {ARGS, "--profiling.rank 3", "profiling.rank", "3"},
    {ARGS, "--profiling.top_n 5", "profiling.top_n", "5"},
    /* Hydra / Lightning */
    {ARGS, "profiling.enabled=true", "profiling.enabled", "true"},
    {ARGS, "profiling.enabled=false", "profiling.enabled", "false"},
    {ARGS, "profiling.output_dir=/tmp/prof", "profiling.log_dir", "/tmp/prof"},
    {ARGS, "+profiling.wait_steps=2", "profiling.wait", "2"},
    {ARGS, "++profiling.warmup_steps=3", "profiling.warmup", "3"},
    {ARGS, "profiling.active_steps=4", "profiling.active", "4"},
    {ARGS, "profiling.repeat_cycles=0", "profiling.repeat", "0"},
    {ARGS, "profiling.schedule_every_n_steps=10", "profiling.wait", "6"},
    {ARGS, "profiling.schedule_every_n_steps=10", "profiling.repeat", "0"},
    {ARGS, "profiling.dirpath=out", "profiling.log_dir", "out"},
    /* timer style */
    {ARGS, "--profiling.enable_profiling=0", "profiling.enabled", "false"},
    {ARGS, "--profiling.log_every 50", "profiling.log_every", "50"},
    {ARGS, "--profiling.log_to_wandb true", "profiling.metrics", "jsonl,console"},
    {YAML, "profiling:\n  log_to_wandb: true\n  metrics: csv\n", "profiling.metrics", "jsonl,csv"},
    {YAML, "profiling:\n  log_to_wandb: false\n", "profiling.metrics", "console"},
    /* JAX callback style */
    {YAML, "profiling:\n  log_dir: /tmp/jax\n", "profiling.log_dir", "/tmp/jax"},
    {YAML, "profiling:\n  start_step: 10\n", "profiling.skip_first", "10"},
    {YAML, "profiling:\n  start_step: 10\n", "profiling.wait", "0"},
    {YAML, "profiling:\n  start_step: 10\n", "profiling.warmup", "0"},
    {YAML, "profiling:\n  start_step: 10\n  end_step: 15\n", "profiling.active", "5"},
    {YAML, "profiling:\n  end_step: 15\n  start_step: 10\n", "profiling.repeat", "1"},
    {YAML, "profiling:\n  end_step: 4\n", "profiling.active", "4"},
    {YAML, "profiling:\n  trace_memory: true\n", "profiling.profile_memory", "true"},
    {YAML, "profiling:\n  trace_python: true\n", "profiling.with_stack", "true"},
    {YAML, "profiling:\n  profile_every_n_steps: 100\n", "profiling.wait", "96"},
    {YAML, "profiling:\n  log_device_memory: false\n", "profiling.memory", "false"},
    /* YAML section, as in the issue */
    {YAML, "profiling:\n  wait: 1\n  warmup: 1\n  active: 3\n  repeat: 1\n", "profiling.active", "3"},
    {YAML, "profiling:\n  record_shapes: true\n", "profiling.record_shapes", "true"},
    {YAML, "profiling:\n  profile_memory: true\n", "profiling.profile_memory", "true"},
    {YAML, "profiling:\n  with_stack: false\n", "profiling.with_stack", "false"},
    {YAML, "profiling:\n  metrics: [jsonl, tensorboard]\n", "profiling.metrics", "jsonl,tensorboard"},
    {YAML, "profiling:\n  metrics: []\n", "profiling.metrics", "none"},
    {YAML, "profiling:\n  unit: epoch\n", "profiling.unit", "epoch"},
    {YAML, "profiling:\n  name: \"../../etc/x\"\n", "profiling.name", "../../etc/x"},
    {YAML, "profiling: false\n", "profiling.enabled", "false"},
    {YAML, "profiling.wait: 5\n", "profiling.wait", "5"},
    {YAML, "train: {lr: 0.1}\nprofiling:\n  active: 2\neval: [1, 2]\n", "profiling.active", "2"},
    {YAML, "", "profiling.wait", "1"},
    /* environment: every key has TRAINPROF_<KEY> */
    {ENV, "TRAINPROF_ENABLED=off", "profiling.enabled", "false"},
    {ENV, "TRAINPROF_NAME=exp1", "profiling.name", "exp1"},
    {ENV, "TRAINPROF_LOG_DIR=/tmp/e", "profiling.log_dir", "/tmp/e"},
    {ENV, "TRAINPROF_TIMING=0", "profiling.timing", "false"},
    {ENV, "TRAINPROF_MEMORY=no", "profiling.memory", "false"},
    {ENV, "TRAINPROF_TRACE=False", "profiling.trace", "false"},
    {ENV, "TRAINPROF_SKIP_FIRST=2", "profiling.skip_first", "2"},
    {ENV, "TRAINPROF_WAIT=3", "profiling.wait", "3"},
    {ENV, "TRAINPROF_WARMUP=0", "profiling.warmup", "0"},
    {ENV, "TRAINPROF_ACTIVE=9", "profiling.active", "9"},
    {ENV, "TRAINPROF_REPEAT=0", "profiling.repeat", "0"},
    {ENV, "TRAINPROF_UNIT=epoch", "profiling.unit", "epoch"},
    {ENV, "TRAINPROF_RECORD_SHAPES=yes", "profiling.record_shapes", "true"},
    {ENV, "TRAINPROF_PROFILE_MEMORY=on", "profiling.profile_memory", "true"},
    {ENV, "TRAINPROF_WITH_STACK=1", "profiling.with_stack", "true"},
    {ENV, "TRAINPROF_LOG_EVERY=10", "profiling.log_every", "10"},
    {ENV, "TRAINPROF_MEMORY_EVERY_N_STEPS=0", "profiling.memory_every_n_steps", "0"},
    {ENV, "TRAINPROF_MEMORY_INTERVAL_MS=100ms", "profiling.memory_interval_ms", "100"},
    {ENV, "TRAINPROF_MAX_BUFFER_MB=16MB", "profiling.max_buffer_mb", "16"},
    {ENV, "TRAINPROF_TRACE_FORMAT=perfetto", "profiling.trace_format", "perfetto"},
    {ENV, "TRAINPROF_GZIP=true", "profiling.gzip", "true"},
    {ENV, "TRAINPROF_METRICS=csv console", "profiling.metrics", "csv,console"},
    {ENV, "TRAINPROF_TRACE_FILENAME={rank}_{step}", "profiling.trace_filename", "{rank}_{step}"},
    {ENV, "TRAINPROF_RANK=2", "profiling.rank", "2"},
    {ENV, "TRAINPROF_TOP_N=0", "profiling.top_n", "0"},
    {ENV, "TRAINPROF_START_STEP=7", "profiling.skip_first", "7"},
    {ENV, "TRAINPROF_PROFILE_STEPS=8", "profiling.active", "8"},
    {ENV, "TRAINPROF_OUTPUT_DIR=/tmp/o", "profiling.log_dir", "/tmp/o"},
    {ENV, "TRAINPROF_ENABLE_PROFILING=False", "profiling.enabled", "false"},
    /* values: booleans, durations, sizes */
    {SET, "enabled=True", "profiling.enabled", "true"},
    {SET, "enabled=FALSE", "profiling.enabled", "false"},
    {SET, "enabled=1", "profiling.enabled", "true"},
    {SET, "enabled=0", "profiling.enabled", "false"},
    {SET, "enabled=yes", "profiling.enabled", "true"},
    {SET, "enabled=off", "profiling.enabled", "false"},
    {SET, "memory_interval_ms=100ms", "profiling.memory_interval_ms", "100"},
    {SET, "memory_interval_ms=2s", "profiling.memory_interval_ms", "2000"},
    {SET, "memory_interval_ms=0.5s", "profiling.memory_interval_ms", "500"},
    {SET, "memory_interval_ms=1min", "profiling.memory_interval_ms", "60000"},
    {SET, "memory_interval_ms=250", "profiling.memory_interval_ms", "250"},
    {SET, "memory_interval_ms=1500us", "profiling.memory_interval_ms", "2"},
    {SET, "max_buffer_mb=16MB", "profiling.max_buffer_mb", "16"},
    {SET, "max_buffer_mb=1GiB", "profiling.max_buffer_mb", "1024"},
    {SET, "max_buffer_mb=2GB", "profiling.max_buffer_mb", "2048"},
    {SET, "max_buffer_mb=512KiB", "profiling.max_buffer_mb", "1"},
    {SET, "max_buffer_mb=128", "profiling.max_buffer_mb", "128"},
    {SET, "profiling.trace_format=CHROME_JSON", "profiling.trace_format", "chrome_json"},
    {SET, "metrics=none", "profiling.metrics", "none"},
    {SET, "metrics=console+jsonl", "profiling.metrics", "jsonl,console"},
};

static char *write_temp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/tp_spell_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        close(fd);
        return NULL;
    }
    close(fd);
    return path;
}

/* Applies one row's input; returns the library's result. */
static int apply(tp_config *cfg, const row *r, tp_error *err)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", r->input);
    switch (r->how) {
    case ARGS: {
        char *argv[16] = {"prog"};
        int argc = 1;
        for (char *t = strtok(buf, " "); t && argc < 15; t = strtok(NULL, " "))
            argv[argc++] = t;
        int rc = tp_config_parse_args(cfg, &argc, argv, err);
        CHECK_EQ_INT(argc, rc == 0 ? 1 : argc);
        return rc;
    }
    case YAML: {
        char *path = write_temp(r->input);
        int rc = path ? tp_config_load_file(cfg, path, err) : -1;
        if (path)
            unlink(path);
        return rc;
    }
    case ENV: {
        char *eq = strchr(buf, '=');
        *eq = '\0';
        setenv(buf, eq + 1, 1);
        int rc = tp_config_load_env(cfg, err);
        unsetenv(buf);
        return rc;
    }
    case SET: {
        char *eq = strchr(buf, '=');
        *eq = '\0';
        return tp_config_set(cfg, buf, eq + 1, err);
    }
    }
    return -1;
}

TP_TEST(every_spelling_maps_to_its_key)
{
    for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) {
        const row *r = &ROWS[i];
        tp_config *cfg = tp_config_new();
        tp_error err = {0};
        int rc = apply(cfg, r, &err);
        const char *got = tp_config_get(cfg, r->key);
        if (rc != 0 || !got || strcmp(got, r->want) != 0)
            fprintf(stderr, "row %zu `%s`: rc %d (%s), %s = %s, want %s\n", i, r->input, rc,
                    err.message, r->key, got ? got : "(null)", r->want);
        CHECK_EQ_INT(rc, 0);
        CHECK_STR(got, r->want);
        tp_config_free(cfg);
    }
}

TP_TEST(aliases_read_back_through_get)
{
    tp_config *cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_set(cfg, "wait_steps", "4", NULL), 0);
    CHECK_STR(tp_config_get(cfg, "wait_steps"), "4");
    CHECK_STR(tp_config_get(cfg, "profiling.wait"), "4");
    CHECK_STR(tp_config_get(cfg, "wait"), "4");
    CHECK(tp_config_get(cfg, "nonsense") == NULL);
    CHECK_STR(tp_config_get(cfg, "start_step"), "");
    tp_config_free(cfg);
    cfg = tp_config_new();
    CHECK_EQ_INT(tp_config_set(cfg, "start_step", "3", NULL), 0);
    CHECK_STR(tp_config_get(cfg, "start_step"), "3");
    CHECK_STR(tp_config_get(cfg, "profiling.start_step"), "3");
    tp_config_free(cfg);
}

TP_TEST(defaults)
{
    tp_config *cfg = tp_config_new();
    CHECK_STR(tp_config_get(cfg, "enabled"), "true");
    CHECK_STR(tp_config_get(cfg, "log_dir"), "runs");
    CHECK_STR(tp_config_get(cfg, "name"), "trainprof");
    CHECK_STR(tp_config_get(cfg, "wait"), "1");
    CHECK_STR(tp_config_get(cfg, "warmup"), "1");
    CHECK_STR(tp_config_get(cfg, "active"), "3");
    CHECK_STR(tp_config_get(cfg, "repeat"), "1");
    CHECK_STR(tp_config_get(cfg, "trace_format"), "chrome_json");
    CHECK_STR(tp_config_get(cfg, "metrics"), "console");
    CHECK_STR(tp_config_get(cfg, "max_buffer_mb"), "64");
    CHECK_STR(tp_config_get(cfg, "trace_filename"), "{host}_{pid}.{time_ns}");
    tp_config_free(cfg);
}

int main(void)
{
    /* the rows must not see variables of the environment the test runs in */
    unsetenv("TRAINPROF_CONFIG");
    RUN(every_spelling_maps_to_its_key);
    RUN(aliases_read_back_through_get);
    RUN(defaults);
    return tp_test_finish();
}
