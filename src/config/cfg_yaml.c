/*
 * cfg_yaml.c - the `profiling:` section of a YAML file (libyaml events).
 *
 * The file is the user's own training config: only the top-level
 * `profiling:` mapping is ours (and top-level keys spelled
 * `profiling.KEY: value`); every other section is skipped unread. Inside
 * the section nothing is ignored: an unknown key, a nested mapping, a null
 * value, a duplicate key (also through an alias: `wait` and `wait_steps`)
 * are errors with file, line and column. `profiling: false` (a scalar)
 * sets enabled. A list value (metrics: [jsonl, csv]) is joined with ','.
 * Several documents (---), and several files, overlay each other in order
 * (see drop_overlapped). The whole file is one batch: on any error the
 * configuration is unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_internal.h"
#include "util/fileio.h"

#ifndef TP_HAVE_YAML

int tpc_load_yaml_text(tp_config *cfg, const char *path, const char *text, size_t len,
                       tp_error *err)
{
    (void)text, (void)len;
    return tp_config_load_file(cfg, path, err);
}

int tp_config_load_file(tp_config *cfg, const char *yaml_path, tp_error *err)
{
    (void)cfg;
    return tpc_error(err, TP_ERR_UNSUPPORTED, yaml_path, 0, 0,
                     "%s: YAML configuration files need libyaml (built with TP_WITH_YAML=OFF)",
                     yaml_path ? yaml_path : "(null)");
}

#else

#include <yaml.h>

typedef struct yctx {
    yaml_parser_t parser;
    yaml_event_t ev;
    int have_ev;
    const char *path;
    tp_config *cfg;
    tp_error *err;
    int seen_line[TPC_NKEYS]; /* line where a key was set in this file, 0 = not yet */
    int section_line;         /* line of the `profiling:` key, 0 = not seen */
} yctx;

static int line_of(const yaml_event_t *ev)
{
    return (int)ev->start_mark.line + 1;
}

static int col_of(const yaml_event_t *ev)
{
    return (int)ev->start_mark.column + 1;
}

static int fail_at(yctx *y, int code, const yaml_event_t *ev, const char *fmt, const char *a,
                   const char *b)
{
    char msg[600];
    snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
    return tpc_error(y->err, code, y->path, line_of(ev), col_of(ev), "%s:%d:%d: %s", y->path,
                     line_of(ev), col_of(ev), msg);
}

/* Next event into y->ev; a libyaml error becomes TP_ERR_PARSE. */
static int next(yctx *y)
{
    if (y->have_ev)
        yaml_event_delete(&y->ev);
    y->have_ev = 0;
    if (!yaml_parser_parse(&y->parser, &y->ev)) {
        yaml_parser_t *p = &y->parser;
        int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
        return tpc_error(y->err, TP_ERR_PARSE, y->path, line, col,
                         "%s:%d:%d: malformed YAML: %s%s%s", y->path, line, col,
                         p->problem ? p->problem : "syntax error", p->context ? " " : "",
                         p->context ? p->context : "");
    }
    y->have_ev = 1;
    return 0;
}

/* Next item of a sequence or mapping: *done is set when y->ev is the
 * collection's end event (end). */
static int next_item(yctx *y, yaml_event_type_t end, int *done)
{
    int rc = next(y);
    *done = !rc && y->ev.type == end;
    return rc;
}

/* Skips the node whose first event is y->ev. */
static int skip_node(yctx *y)
{
    int depth = 0;
    for (;;) {
        yaml_event_type_t t = y->ev.type;
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT)
            depth++;
        else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT)
            depth--;
        else if (t == YAML_STREAM_END_EVENT || t == YAML_NO_EVENT)
            return tpc_error(y->err, TP_ERR_PARSE, y->path, 0, 0, "%s: truncated YAML", y->path);
        if (depth <= 0)
            return 0;
        int rc = next(y);
        if (rc)
            return rc;
    }
}

static const char *scalar(const yaml_event_t *ev)
{
    return (const char *)ev->data.scalar.value;
}

/* A scalar is used whole or not at all: a "\0" escape or a text longer
 * than any value would otherwise leave an accepted prefix ("7\0junk" as 7). */
static int check_scalar(yctx *y, const yaml_event_t *ev, size_t max, const char *key)
{
    size_t len = ev->data.scalar.length;
    if (memchr(scalar(ev), '\0', len))
        return fail_at(y, TP_ERR_BAD_VALUE, ev, "profiling.%s: text contains a NUL byte%s", key,
                       NULL);
    if (len > max)
        return fail_at(y, TP_ERR_BAD_VALUE, ev, "profiling.%s: text is too long%s", key, NULL);
    return 0;
}

static int is_null(const yaml_event_t *ev)
{
    if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *s = scalar(ev);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
           !strcmp(s, "NULL");
}

/* A list value: scalars joined with ','. */
static int read_sequence(yctx *y, const char *key, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    for (;;) {
        int done, rc = next_item(y, YAML_SEQUENCE_END_EVENT, &done);
        if (rc || done)
            return rc;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return fail_at(y, TP_ERR_BAD_VALUE, &y->ev,
                           "profiling.%s: list items must be plain values", key, NULL);
        rc = check_scalar(y, &y->ev, outlen, key);
        if (rc)
            return rc;
        size_t n = strlen(scalar(&y->ev));
        if (used + n + 2 > outlen)
            return fail_at(y, TP_ERR_BAD_VALUE, &y->ev, "profiling.%s: list too long", key,
                           NULL);
        used += (size_t)snprintf(out + used, outlen - used, "%s%s", used ? "," : "",
                                 scalar(&y->ev));
    }
}

static int check_duplicate(yctx *y, const char *key, const yaml_event_t *kev)
{
    int k = tpc_key_find(key, 0);
    if (k < 0)
        return 0;
    if (y->seen_line[k])
        return tpc_error(y->err, TP_ERR_CONFLICT, y->path, line_of(kev), col_of(kev),
                         "%s:%d:%d: `%s` sets profiling.%s a second time (first set on line "
                         "%d); keep only one of them",
                         y->path, line_of(kev), col_of(kev), key, tpc_key_at(k)->name,
                         y->seen_line[k]);
    y->seen_line[k] = line_of(kev);
    return 0;
}

/* One `key: value` of the section; y->ev is the value's first event. */
static int section_entry(yctx *y, const char *key, const yaml_event_t *kev)
{
    char value[TPC_STR_MAX + 1], source[TPC_SRC_MAX];
    int rc = check_duplicate(y, key, kev);
    if (rc)
        return rc;
    if (tpc_key_find(key, 0) < 0) /* unknown key: error naming it, at the key */
        return tpc_stage(y->cfg, TPC_L_FILE, key, "", "", y->path, line_of(kev), col_of(kev),
                         y->err);
    char accepted[320];
    tpc_value_accepted(tpc_key_find(key, 0), accepted, sizeof accepted);
    switch (y->ev.type) {
    case YAML_SCALAR_EVENT:
        if (is_null(&y->ev))
            return fail_at(y, TP_ERR_BAD_VALUE, &y->ev, "profiling.%s: needs a value; accepted: %s",
                           key, accepted);
        rc = check_scalar(y, &y->ev, sizeof value - 1, key);
        if (rc)
            return rc;
        snprintf(value, sizeof value, "%s", scalar(&y->ev));
        break;
    case YAML_SEQUENCE_START_EVENT:
        rc = read_sequence(y, key, value, sizeof value);
        if (rc)
            return rc;
        break;
    case YAML_MAPPING_START_EVENT:
        return fail_at(y, TP_ERR_BAD_VALUE, &y->ev,
                       "profiling.%s: expected a value, found a mapping; accepted: %s", key,
                       accepted);
    default:
        return fail_at(y, TP_ERR_BAD_VALUE, &y->ev,
                       "profiling.%s: YAML aliases are not supported here", key, NULL);
    }
    snprintf(source, sizeof source, "file %s:%d", y->path, line_of(kev));
    return tpc_stage(y->cfg, TPC_L_FILE, key, value, source, y->path, line_of(&y->ev),
                     col_of(&y->ev), y->err);
}

/* Reads a key event into out; y->ev is consumed into kev. */
static int read_key(yctx *y, char *out, size_t outlen, yaml_event_t *kev)
{
    *kev = y->ev; /* copy of marks only; value pointer not kept */
    if (y->ev.type != YAML_SCALAR_EVENT)
        return fail_at(y, TP_ERR_PARSE, &y->ev, "expected a key name%s%s", NULL, NULL);
    snprintf(out, outlen, "%s", scalar(&y->ev));
    /* "wait\0x" is no key of ours ("profiling\0x" no section): NUL -> '?' */
    for (size_t i = 0; i < y->ev.data.scalar.length && i + 1 < outlen; i++)
        out[i] = scalar(&y->ev)[i] ? scalar(&y->ev)[i] : '?';
    if (y->ev.data.scalar.length + 1 < outlen)
        out[y->ev.data.scalar.length] = '\0';
    return next(y);
}

static int read_section(yctx *y)
{
    char key[128];
    yaml_event_t kev;
    for (;;) {
        int done, rc = next_item(y, YAML_MAPPING_END_EVENT, &done);
        if (rc || done)
            return rc;
        rc = read_key(y, key, sizeof key, &kev);
        if (!rc)
            rc = section_entry(y, key, &kev);
        if (rc)
            return rc;
    }
}

/* Value of the top-level `profiling` key; y->ev is its first event. */
static int profiling_value(yctx *y, const yaml_event_t *kev)
{
    char source[TPC_SRC_MAX];
    if (y->section_line)
        return fail_at(y, TP_ERR_CONFLICT, kev, "a second `profiling:` section%s%s", NULL, NULL);
    y->section_line = line_of(kev);
    if (y->ev.type == YAML_MAPPING_START_EVENT)
        return read_section(y);
    if (is_null(&y->ev))
        return 0;
    if (y->ev.type == YAML_SCALAR_EVENT) { /* profiling: false */
        int rc = check_scalar(y, &y->ev, TPC_STR_MAX, "enabled");
        if (rc)
            return rc;
        snprintf(source, sizeof source, "file %s:%d", y->path, line_of(kev));
        y->seen_line[TPC_K_ENABLED] = line_of(kev);
        return tpc_stage(y->cfg, TPC_L_FILE, "enabled", scalar(&y->ev), source, y->path,
                         line_of(&y->ev), col_of(&y->ev), y->err);
    }
    return fail_at(y, TP_ERR_BAD_VALUE, &y->ev,
                   "`profiling:` must be a mapping of keys (or true/false)%s%s", NULL, NULL);
}

static int top_mapping(yctx *y)
{
    char key[128];
    yaml_event_t kev;
    size_t plen = strlen(TPC_PREFIX);
    for (;;) {
        int done, rc = next_item(y, YAML_MAPPING_END_EVENT, &done);
        if (rc || done)
            return rc;
        if (y->ev.type != YAML_SCALAR_EVENT) { /* complex key: not ours */
            rc = skip_node(y);
            rc = rc ? rc : next(y);
            rc = rc ? rc : skip_node(y);
        } else {
            rc = read_key(y, key, sizeof key, &kev);
            if (!rc && strcmp(key, "profiling") == 0)
                rc = profiling_value(y, &kev);
            else if (!rc && strncmp(key, TPC_PREFIX, plen) == 0)
                rc = section_entry(y, key, &kev);
            else if (!rc)
                rc = skip_node(y);
        }
        if (rc)
            return rc;
    }
}

/* A later document or file replaces what an earlier one said: keys given
 * here drop the file-layer values of keys they would contradict (wait from
 * an earlier file when this one gives start_step). Inside one document both
 * are given together, and that stays an error. */
static void drop_overlapped(yctx *y)
{
    for (int k = 0; k < TPC_NKEYS; k++) {
        if (!y->seen_line[k])
            continue;
        for (int j = 0; j < TPC_NKEYS; j++)
            if (!y->seen_line[j] && tpc_keys_overlap(k, j))
                y->cfg->slot[j][TPC_L_FILE].set = 0;
    }
}

static int read_stream(yctx *y)
{
    int rc = next(y); /* STREAM_START */
    while (!rc) {
        rc = next(y);
        if (rc || y->ev.type == YAML_STREAM_END_EVENT)
            return rc;
        if (y->ev.type != YAML_DOCUMENT_START_EVENT)
            continue;
        /* each document overlays the previous one */
        memset(y->seen_line, 0, sizeof y->seen_line);
        y->section_line = 0;
        rc = next(y);
        if (!rc && y->ev.type == YAML_MAPPING_START_EVENT)
            rc = top_mapping(y);
        else if (!rc && !is_null(&y->ev))
            rc = fail_at(y, TP_ERR_PARSE, &y->ev,
                         "expected a mapping at the top level (with a `profiling:` section)%s%s",
                         NULL, NULL);
        if (!rc)
            drop_overlapped(y);
        if (!rc)
            rc = next(y); /* DOCUMENT_END */
    }
    return rc;
}

int tpc_load_yaml_text(tp_config *cfg, const char *path, const char *text, size_t len,
                       tp_error *err)
{
    tpc_batch b;
    yctx *y = calloc(1, sizeof *y);
    if (!y)
        return tpc_error(err, TP_ERR_NOMEM, path, 0, 0, "out of memory");
    int rc = tpc_batch_begin(cfg, TPC_L_FILE, &b, err);
    if (rc) {
        free(y);
        return rc;
    }
    y->path = path;
    y->cfg = cfg;
    y->err = err;
    if (!yaml_parser_initialize(&y->parser)) {
        rc = tpc_error(err, TP_ERR_NOMEM, path, 0, 0, "out of memory");
    } else {
        yaml_parser_set_input_string(&y->parser, (const unsigned char *)text, len);
        rc = read_stream(y);
        if (y->have_ev)
            yaml_event_delete(&y->ev);
        yaml_parser_delete(&y->parser);
    }
    free(y);
    return tpc_batch_end(cfg, &b, rc, path, err);
}

int tp_config_load_file(tp_config *cfg, const char *yaml_path, tp_error *err)
{
    char errbuf[512];
    char *text = NULL;
    size_t len = 0;
    if (!cfg || !yaml_path)
        return tpc_error(err, TP_ERR_INVALID, NULL, 0, 0, "tp_config_load_file: NULL argument");
    if (tpu_read_file(yaml_path, &text, &len, errbuf, sizeof errbuf) != 0)
        return tpc_error(err, TP_ERR_IO, yaml_path, 0, 0, "%s", errbuf);
    int rc = tpc_load_yaml_text(cfg, yaml_path, text, len, err);
    free(text);
    return rc;
}

#endif
