/*
 * cfg_internal.h - the configuration layer's private interface.
 *
 * One key table (cfg_keys.c) describes every key: canonical keys become
 * fields of tpi_settings; "derived" keys (start_step, end_step,
 * profile_steps, schedule_every_n_steps, log_to_wandb) are spellings of
 * other systems that expand onto canonical keys when the configuration is
 * resolved (cfg_resolve.c).
 *
 * A tp_config keeps, for every key, one slot per layer (file, env, flag).
 * Values are parsed and range-checked when they are stored, so a slot always
 * holds a valid value; resolution picks the highest layer per key, applies
 * the derived keys and fills the typed tpi_settings. Every change is
 * followed by a resolution; a change that makes the configuration invalid
 * is undone, so a tp_config is always valid.
 */
#ifndef TP_CONFIG_INTERNAL_H
#define TP_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "config/settings.h"
#include "trainprof.h"
#include "util/buf.h"

#define TPC_PREFIX "profiling."
#define TPC_STR_MAX 1024 /* longest string value (log_dir) */
#define TPC_SRC_MAX 288  /* "file <path>:<line>" ... */

typedef enum tpc_type {
    TPC_BOOL,
    TPC_INT,
    TPC_DURATION, /* integer milliseconds; text may carry ns/us/ms/s/min/h */
    TPC_SIZE,     /* integer MiB; text may carry B/KB/KiB/MB/MiB/GB/GiB/TB/TiB */
    TPC_ENUM,     /* one of `choices` ("a|b|c"), stored as its index */
    TPC_LIST,     /* subset of `choices`, stored as bits (1 << index) */
    TPC_STRING
} tpc_type;

typedef enum tpc_layer {
    TPC_L_DEFAULT = 0,
    TPC_L_FILE = 1,
    TPC_L_ENV = 2,
    TPC_L_FLAG = 3,
    TPC_NLAYERS = 4
} tpc_layer;

typedef struct tpc_key {
    const char *name;     /* canonical name without "profiling." */
    tpc_type type;
    const char *def;      /* default, in text form ("" for derived keys) */
    int64_t min, max;     /* range for INT / DURATION / SIZE; length for STRING */
    const char *choices;  /* ENUM / LIST: "a|b|c" */
    const char *aliases;  /* other spellings, space separated */
    const char *bare;     /* aliases also accepted as bare --flags (distinctive names) */
    int derived;          /* 1: expands onto canonical keys (not a setting itself) */
    const char *doc;      /* one line */
    const char *example;  /* a typical value, for docs/CONFIG.md */
} tpc_key;

/* A parsed value: i for everything but strings, s for strings. */
typedef struct tpc_value {
    int64_t i;
    char s[TPC_STR_MAX];
} tpc_value;

typedef struct tpc_slot {
    int set;
    tpc_value v;
    char source[TPC_SRC_MAX]; /* "file cfg.yaml:3", "env TRAINPROF_WAIT", "flag --profiling.wait" */
    char spelling[64];        /* the name the user wrote ("wait_steps") */
} tpc_slot;

/* The resolved value of a canonical key. */
typedef struct tpc_eff {
    tpc_value v;
    char text[TPC_STR_MAX]; /* canonical text (tp_config_get) */
    int layer;
    int writer;             /* key whose slot gave the value (itself or a derived key) */
    char source[TPC_SRC_MAX * 2];
} tpc_eff;

/* Index of keys in the table (order of cfg_keys.c). */
enum {
    TPC_K_ENABLED, TPC_K_NAME, TPC_K_LOG_DIR, TPC_K_TIMING, TPC_K_MEMORY, TPC_K_TRACE,
    TPC_K_SKIP_FIRST, TPC_K_WAIT, TPC_K_WARMUP, TPC_K_ACTIVE, TPC_K_REPEAT, TPC_K_UNIT,
    TPC_K_RECORD_SHAPES, TPC_K_PROFILE_MEMORY, TPC_K_WITH_STACK, TPC_K_LOG_EVERY,
    TPC_K_MEMORY_EVERY_N_STEPS, TPC_K_MEMORY_INTERVAL_MS, TPC_K_MAX_BUFFER_MB,
    TPC_K_TRACE_FORMAT, TPC_K_GZIP, TPC_K_METRICS, TPC_K_TRACE_FILENAME, TPC_K_RANK,
    TPC_K_TOP_N, TPC_K_CUDA,
    TPC_K_TORCH_OPS, /* read by the Python package (trainprof.torch) only */
    TPC_K_HANDLE_SIGNALS, /* read by the Python package only */
    TPC_K_JAX_STEP, /* read by the Python package only (auto profiling of JAX) */
    TPC_K_HTML_REPORT, /* report.html at close */
    TPC_K_MAX_TRACE_MB, /* issue 12: per-window trace budget */
    TPC_K_JOB_ID, TPC_K_RANKS, /* multi-rank jobs */
    TPC_K_LIVE, /* issue 30: live.json for trainprof top */
    TPC_K_CAPTURE, TPC_K_CAPTURE_STEPS, TPC_K_CAPTURE_SLOW_STEP, TPC_K_HANG_TIMEOUT,
    TPC_K_CAPTURES_MAX, /* the flight recorder (issue 34) */
    /* derived spellings */
    TPC_K_START_STEP, TPC_K_END_STEP, TPC_K_PROFILE_STEPS, TPC_K_EVERY_N_STEPS,
    TPC_K_LOG_TO_WANDB, TPC_K_ACTIVITIES,
    TPC_NKEYS
};
#define TPC_NCANONICAL TPC_K_START_STEP

struct tp_config {
    tpc_slot slot[TPC_NKEYS][TPC_NLAYERS]; /* [k][TPC_L_DEFAULT] unused */
    tpc_eff eff[TPC_NCANONICAL];
    char derived_text[TPC_NKEYS - TPC_NCANONICAL][32]; /* "" when not set */
    tpi_settings settings;
};

/* ---- cfg_keys.c: the table and lookups ---- */
const tpc_key *tpc_key_at(int index);
/* Looks a name up: canonical, alias or derived, with or without the
 * "profiling." prefix, '-' read as '_'. Returns the index or -1. When
 * bare_only is set, only aliases listed in `bare` match. */
int tpc_key_find(const char *name, int bare_only);
/* The nearest known spelling within a small edit distance, or NULL. */
const char *tpc_key_suggest(const char *name);
/* Optimal-string-alignment edit distance (small strings). */
int tpc_edit_distance(const char *a, const char *b);

/* ---- cfg_values.c: text <-> values ---- */
/* Parses text for key k; on failure writes a message that lists the
 * accepted values into msg and returns TP_ERR_BAD_VALUE. */
int tpc_value_parse(int k, const char *text, tpc_value *out, char *msg, size_t msglen);
/* Canonical text of a value. */
void tpc_value_format(int k, const tpc_value *v, char *out, size_t outlen);
/* "an integer from 0 to 1000000", "one of: step, epoch", ... */
void tpc_value_accepted(int k, char *out, size_t outlen);
int tpc_parse_bool(const char *text, int *out);

/* ---- cfg_config.c ---- */
/* Stores one value at a layer and re-resolves; undoes on failure.
 * spelling is what the user wrote; source names where. file/line/column
 * are copied into err on failure (file may be NULL). */
int tpc_set_layer(tp_config *cfg, int layer, const char *spelling, const char *value,
                  const char *source, const char *file, int line, int column, tp_error *err);
/* Fills err (may be NULL) with code and a formatted message; returns code. */
int tpc_error(tp_error *err, int code, const char *file, int line, int column,
              const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Parses and stores one value at a layer WITHOUT resolving (batch loads:
 * a YAML file, the environment, argv are checked as a whole, so the order
 * of keys inside one of them does not matter). */
int tpc_stage(tp_config *cfg, int layer, const char *spelling, const char *value,
              const char *source, const char *file, int line, int column, tp_error *err);

/* A batch: saves a layer, and on failure (rc != 0 or an invalid result)
 * puts it back so the tp_config stays as it was. */
typedef struct tpc_batch {
    tpc_slot *saved; /* TPC_NKEYS slots of `layer` */
    int layer;
} tpc_batch;
int tpc_batch_begin(tp_config *cfg, int layer, tpc_batch *b, tp_error *err);
/* Ends a batch: rc is the result of staging; returns the final result. */
int tpc_batch_end(tp_config *cfg, tpc_batch *b, int rc, const char *file, tp_error *err);

/* ---- cfg_yaml.c ---- */
/* Loads YAML text (path names it in messages) into the file layer. */
int tpc_load_yaml_text(tp_config *cfg, const char *path, const char *text, size_t len,
                       tp_error *err);

/* ---- cfg_resolve.c ---- */
/* Do keys a and b set a common canonical key (start_step and wait ...)? */
int tpc_keys_overlap(int a, int b);
/* Computes cfg->eff and cfg->settings from the slots. */
int tpc_resolve(tp_config *cfg, tp_error *err);

#endif
