/*
 * cfg_config.c - the tp_config object: create, set one key at a layer, get,
 * and the settings the rest of the library reads.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_internal.h"

tp_config *tp_config_new(void)
{
    tp_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return NULL;
    if (tpc_resolve(cfg, NULL) != 0) { /* defaults are valid: cannot fail */
        free(cfg);
        return NULL;
    }
    return cfg;
}

void tp_config_free(tp_config *cfg)
{
    free(cfg);
}

/* "<file>:<line>:<col>: " or "<source>: " in front of a message. */
static void location_prefix(char *out, size_t outlen, const char *file, int line, int column,
                            const char *source)
{
    if (file && line > 0)
        snprintf(out, outlen, "%s:%d:%d: ", file, line, column);
    else if (file)
        snprintf(out, outlen, "%s: ", file);
    else if (source && *source)
        snprintf(out, outlen, "%s: ", source);
    else
        out[0] = '\0';
}

static int unknown_key(const char *spelling, const char *where, const char *file, int line,
                       int column, tp_error *err)
{
    const char *near = tpc_key_suggest(spelling);
    const char *bare = spelling;
    if (strncmp(bare, TPC_PREFIX, strlen(TPC_PREFIX)) == 0)
        bare += strlen(TPC_PREFIX);
    if (near)
        return tpc_error(err, TP_ERR_UNKNOWN_KEY, file, line, column,
                         "%sunknown key `profiling.%.100s`; did you mean `%s`?", where, bare, near);
    return tpc_error(err, TP_ERR_UNKNOWN_KEY, file, line, column,
                     "%sunknown key `profiling.%.100s` (the keys are listed in docs/CONFIG.md "
                     "and by `trainprof config --explain`)",
                     where, bare);
}

int tpc_stage(tp_config *cfg, int layer, const char *spelling, const char *value,
              const char *source, const char *file, int line, int column, tp_error *err)
{
    char where[TPC_SRC_MAX + 32];
    char msg[600];
    tpc_value v;
    location_prefix(where, sizeof where, file, line, column, source);
    if (!cfg || !spelling || layer <= TPC_L_DEFAULT || layer >= TPC_NLAYERS)
        return tpc_error(err, TP_ERR_INVALID, file, line, column, "%sinvalid argument", where);
    int k = tpc_key_find(spelling, 0);
    if (k < 0)
        return unknown_key(spelling, where, file, line, column, err);
    int rc = tpc_value_parse(k, value, &v, msg, sizeof msg);
    if (rc != 0)
        return tpc_error(err, rc, file, line, column, "%s%s", where, msg);
    tpc_slot *slot = &cfg->slot[k][layer];
    slot->set = 1;
    slot->v = v;
    snprintf(slot->source, sizeof slot->source, "%s", source ? source : "");
    const char *sp = spelling;
    if (strncmp(sp, TPC_PREFIX, strlen(TPC_PREFIX)) == 0)
        sp += strlen(TPC_PREFIX);
    snprintf(slot->spelling, sizeof slot->spelling, "%s", sp);
    for (char *p = slot->spelling; *p; p++)
        if (*p == '-')
            *p = '_';
    return 0;
}

int tpc_batch_begin(tp_config *cfg, int layer, tpc_batch *b, tp_error *err)
{
    b->layer = layer;
    b->saved = malloc(sizeof(tpc_slot) * TPC_NKEYS);
    if (!b->saved)
        return tpc_error(err, TP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int k = 0; k < TPC_NKEYS; k++)
        b->saved[k] = cfg->slot[k][layer];
    return 0;
}

int tpc_batch_end(tp_config *cfg, tpc_batch *b, int rc, const char *file, tp_error *err)
{
    if (rc == 0) {
        tp_error rerr;
        rc = tpc_resolve(cfg, &rerr);
        if (rc != 0)
            tpc_error(err, rc, file, 0, 0, "%s%s%s", file ? file : "", file ? ": " : "",
                      rerr.message);
    }
    if (rc != 0) {
        for (int k = 0; k < TPC_NKEYS; k++)
            cfg->slot[k][b->layer] = b->saved[k];
        tpc_resolve(cfg, NULL);
    }
    free(b->saved);
    b->saved = NULL;
    return rc;
}

int tpc_set_layer(tp_config *cfg, int layer, const char *spelling, const char *value,
                  const char *source, const char *file, int line, int column, tp_error *err)
{
    tpc_batch b;
    if (!cfg)
        return tpc_error(err, TP_ERR_INVALID, NULL, 0, 0, "NULL configuration");
    int rc = tpc_batch_begin(cfg, layer, &b, err);
    if (rc != 0)
        return rc;
    rc = tpc_stage(cfg, layer, spelling, value, source, file, line, column, err);
    return tpc_batch_end(cfg, &b, rc, file, err);
}

int tp_config_set(tp_config *cfg, const char *key, const char *value, tp_error *err)
{
    char source[TPC_SRC_MAX];
    if (!cfg || !key || !value)
        return tpc_error(err, TP_ERR_INVALID, NULL, 0, 0, "tp_config_set: NULL argument");
    snprintf(source, sizeof source, "set %.200s", key);
    return tpc_set_layer(cfg, TPC_L_FLAG, key, value, source, NULL, 0, 0, err);
}

const char *tp_config_get(const tp_config *cfg, const char *key)
{
    if (!cfg || !key)
        return NULL;
    int k = tpc_key_find(key, 0);
    if (k < 0)
        return NULL;
    if (k < TPC_NCANONICAL)
        return cfg->eff[k].text;
    return cfg->derived_text[k - TPC_NCANONICAL];
}

const tpi_settings *tpi_config_settings(const tp_config *cfg)
{
    return cfg ? &cfg->settings : NULL;
}

void tpi_settings_defaults(tpi_settings *out)
{
    tp_config *cfg = tp_config_new();
    if (cfg) {
        *out = cfg->settings;
        tp_config_free(cfg);
        return;
    }
    /* out of memory: the same defaults, by hand */
    memset(out, 0, sizeof *out);
    out->enabled = out->timing = out->memory = out->trace = 1;
    snprintf(out->name, sizeof out->name, "trainprof");
    snprintf(out->log_dir, sizeof out->log_dir, "runs");
    out->wait = out->warmup = out->repeat = 1;
    out->active = 3;
    out->log_every = 100;
    out->memory_every_n_steps = 1;
    out->max_buffer_mb = 64;
    out->trace_formats = TPI_TRACE_CHROME;
    out->metrics = TPI_METRIC_CONSOLE;
    snprintf(out->trace_filename, sizeof out->trace_filename, "{host}_{pid}.{time_ns}");
    out->rank = -1;
    out->top_n = 20;
    out->html_report = 1;
    out->live = 1;
    snprintf(out->job_id, sizeof out->job_id, "auto");
    snprintf(out->ranks, sizeof out->ranks, "all");
    out->capture = 1;
    out->capture_steps = 10;
    out->capture_slow_step = 3;
    out->hang_timeout_ms = 300000;
    out->captures_max = 20;
}
