/* run_captures.c - a run directory's captures.json (the flight recorder's
 * index, docs/CAPTURES.md): what was captured, when and why, and its files.
 * Read by `trainprof ranks` (a hung job) and the report page's Captures. */
#include "analyze/trace/trace.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CAPTURES_BYTES ((size_t)16 << 20)
#define MAX_DETAIL 4096

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(MAX_CAPTURES_BYTES + 1);
    if (!buf) abort();
    *n = fread(buf, 1, MAX_CAPTURES_BYTES, f);
    fclose(f);
    buf[*n] = '\0';
    return buf;
}

/* The string at v (a '"'), decoded and cut at cap - 1 bytes; NULL when v is
 * not a well-formed string. The caller frees it. */
static char *decoded(const char *v, const char *end, size_t cap)
{
    const char *s;
    size_t n, got;
    bool esc;
    tpa_scanerr e;
    if (!v || v >= end || *v != '"' || tpa_scan_string(&v, end, &e, &s, &n, &esc) != SC_OK) return NULL;
    char *out = malloc(n + 1);
    if (!out) abort();
    if (tpa_decode_string(s, n, out, &got, &e) != SC_OK) { free(out); return NULL; }
    if (got >= cap) got = cap - 1;
    out[got] = '\0';
    return out;
}

static void copy_member(const char *obj, const char *end, const char *key, char *out, size_t cap)
{
    char *s = decoded(tpa_obj_find(obj, end, key), end, cap);
    snprintf(out, cap, "%s", s ? s : "");
    free(s);
}

static void read_files(tpa_capture *c, const char *obj, const char *end)
{
    const char *p = tpa_obj_find(obj, end, "files");
    tpa_scanerr e;
    if (!p || *p != '[') return;
    size_t cap = 0;
    for (p = tpa_skip_ws(p + 1, end); p < end && *p == '"';) {
        char *f = decoded(p, end, 4096);
        if (!f || tpa_skip_value(&p, end, &e, 0) != SC_OK) { free(f); return; }
        if (c->n_files == cap) {
            cap = cap ? cap * 2 : 4;
            char **nf = realloc(c->files, cap * sizeof *nf);
            if (!nf) abort();
            c->files = nf;
        }
        c->files[c->n_files++] = f;
        p = tpa_skip_ws(p, end);
        if (p < end && *p == ',') p = tpa_skip_ws(p + 1, end);
    }
}

static void read_entry(tpa_captures *out, size_t *cap, const char *obj, const char *end)
{
    if (out->n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        tpa_capture *nv = realloc(out->v, *cap * sizeof *nv);
        if (!nv) abort();
        out->v = nv;
    }
    tpa_capture *c = &out->v[out->n++];
    memset(c, 0, sizeof *c);
    copy_member(obj, end, "reason", c->reason, sizeof c->reason);
    copy_member(obj, end, "time", c->time, sizeof c->time);
    const char *step = tpa_obj_find(obj, end, "step");
    if (!step || !tpa_value_i64(step, end, &c->step)) c->step = -1;
    c->detail = decoded(tpa_obj_find(obj, end, "detail"), end, MAX_DETAIL);
    if (!c->detail && !(c->detail = strdup(""))) abort();
    read_files(c, obj, end);
}

int tpa_captures_read(const char *run_dir, tpa_captures *out)
{
    char path[4200];
    size_t n;
    memset(out, 0, sizeof *out);
    out->rank = out->pid = -1;
    snprintf(path, sizeof path, "%s/captures.json", run_dir);
    char *doc = slurp(path, &n);
    if (!doc) return 0;
    const char *end = doc + n;
    int64_t v;
    const char *m = tpa_obj_find(doc, end, "rank");
    if (m && tpa_value_i64(m, end, &v)) out->rank = v;
    m = tpa_obj_find(doc, end, "pid");
    if (m && tpa_value_i64(m, end, &v)) out->pid = v;
    const char *p = tpa_obj_find(doc, end, "captures");
    tpa_scanerr e;
    int rc = 1;
    size_t cap = 0;
    if (!p || *p != '[') rc = -1;
    for (p = p && *p == '[' ? tpa_skip_ws(p + 1, end) : end; p < end && *p != ']';) {
        const char *obj = p;
        if (*p != '{' || tpa_skip_value(&p, end, &e, 0) != SC_OK) { rc = -1; break; }  /* cut short: keep what came before */
        read_entry(out, &cap, obj, p);
        p = tpa_skip_ws(p, end);
        if (p < end && *p == ',') p = tpa_skip_ws(p + 1, end);
    }
    free(doc);
    return rc;
}

void tpa_captures_free(tpa_captures *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].detail);
        for (size_t f = 0; f < c->v[i].n_files; f++) free(c->v[i].files[f]);
        free(c->v[i].files);
    }
    free(c->v);
    memset(c, 0, sizeof *c);
}
