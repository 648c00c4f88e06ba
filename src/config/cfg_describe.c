/*
 * cfg_describe.c - the effective configuration as text and as JSON.
 */
#include <stdio.h>
#include <string.h>

#include "config/cfg_internal.h"
#include "util/fileio.h"
#include "util/json.h"

/* Derived spellings that were given, as "# start_step = 10  (flag --start_step)". */
static void describe_derived(const tp_config *cfg, tpu_buf *b, int explain)
{
    for (int k = TPC_NCANONICAL; k < TPC_NKEYS; k++) {
        const char *text = cfg->derived_text[k - TPC_NCANONICAL];
        if (!text[0])
            continue;
        for (int l = TPC_NLAYERS - 1; l > TPC_L_DEFAULT; l--) {
            const tpc_slot *s = &cfg->slot[k][l];
            if (!s->set)
                continue;
            tpu_buf_printf(b, "# %s = %s", s->spelling, text);
            if (explain)
                tpu_buf_printf(b, "  (%s)", s->source);
            tpu_buf_puts(b, "\n");
            break;
        }
    }
}

char *tp_config_describe(const tp_config *cfg, int explain)
{
    tpu_buf b = {0};
    if (!cfg)
        return NULL;
    for (int k = 0; k < TPC_NCANONICAL; k++) {
        const tpc_eff *e = &cfg->eff[k];
        char key[64];
        snprintf(key, sizeof key, TPC_PREFIX "%s", tpc_key_at(k)->name);
        if (explain)
            tpu_buf_printf(&b, "%-32s = %-24s # %s\n", key, e->text, e->source);
        else
            tpu_buf_printf(&b, "%s = %s\n", key, e->text);
    }
    describe_derived(cfg, &b, explain);
    if (b.oom) {
        tpu_buf_free(&b);
        return NULL;
    }
    tpu_buf_cstr(&b);
    return tpu_buf_detach(&b);
}

/* A list value as a JSON array of its choice names. */
static void json_list(tpu_json *j, const char *text)
{
    tpu_json_begin_array(j);
    if (strcmp(text, "none") != 0) {
        for (const char *p = text; *p;) {
            size_t n = strcspn(p, ",");
            tpu_json_string_n(j, p, n);
            p += n;
            p += (*p == ',');
        }
    }
    tpu_json_end_array(j);
}

static void json_value(tpu_json *j, int k, const tpc_value *v, const char *text)
{
    switch (tpc_key_at(k)->type) {
    case TPC_BOOL:
        if (v->i > 1) /* an extra word of a bool key (with_stack: native) */
            tpu_json_string(j, text);
        else
            tpu_json_bool(j, (int)v->i);
        break;
    case TPC_INT:
    case TPC_DURATION:
    case TPC_SIZE:
        tpu_json_int(j, v->i);
        break;
    case TPC_LIST:
        json_list(j, text);
        break;
    default:
        tpu_json_string(j, text);
        break;
    }
}

char *tp_config_to_json(const tp_config *cfg)
{
    tpu_buf b = {0};
    tpu_json j;
    if (!cfg)
        return NULL;
    tpu_json_init(&j, &b, 1);
    tpu_json_begin_object(&j);
    for (int k = 0; k < TPC_NKEYS; k++) {
        char key[64];
        const tpc_value *v;
        const char *text, *source;
        if (k < TPC_NCANONICAL) {
            v = &cfg->eff[k].v;
            text = cfg->eff[k].text;
            source = cfg->eff[k].source;
        } else {
            text = cfg->derived_text[k - TPC_NCANONICAL];
            int l = TPC_NLAYERS - 1;
            while (l > TPC_L_DEFAULT && !cfg->slot[k][l].set)
                l--;
            if (!text[0] || l == TPC_L_DEFAULT)
                continue; /* derived spellings appear only when given */
            v = &cfg->slot[k][l].v;
            source = cfg->slot[k][l].source;
        }
        snprintf(key, sizeof key, TPC_PREFIX "%s", tpc_key_at(k)->name);
        tpu_json_key(&j, key);
        tpu_json_begin_object(&j);
        tpu_json_key(&j, "value");
        json_value(&j, k, v, text);
        tpu_json_kv_string(&j, "source", source);
        tpu_json_end_object(&j);
    }
    tpu_json_end_object(&j);
    tpu_buf_puts(&b, "\n");
    if (b.oom) {
        tpu_buf_free(&b);
        return NULL;
    }
    return tpu_buf_detach(&b);
}

int tpi_config_write_json(const tp_config *cfg, const char *run_dir, tp_error *err)
{
    char path[4096], errbuf[512];
    tp_config *own = NULL;
    if (!run_dir)
        return tpc_error(err, TP_ERR_INVALID, NULL, 0, 0, "tpi_config_write_json: NULL run_dir");
    if (!cfg)
        cfg = own = tp_config_new();
    char *json = cfg ? tp_config_to_json(cfg) : NULL;
    tp_config_free(own);
    if (!json)
        return tpc_error(err, TP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int rc = 0;
    if (tpu_path_join(path, sizeof path, run_dir, "config.json") != 0)
        rc = tpc_error(err, TP_ERR_IO, run_dir, 0, 0, "%s: path too long", run_dir);
    else if (tpu_write_file_atomic(path, json, strlen(json), errbuf, sizeof errbuf) != 0)
        rc = tpc_error(err, TP_ERR_IO, path, 0, 0, "%s", errbuf);
    tp_free(json);
    return rc;
}
