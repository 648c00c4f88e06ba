/* gen_trace.c - makes a large Kineto-like trace for benchmarks by repeating
 * a real trace's events with shifted timestamps.
 *
 *   tp_gen_trace FIXTURE OUT SIZE_MB
 *
 * Reads FIXTURE (.json or .json.gz) with the analyzer's reader, keeps its
 * events' text in memory, and writes copies until OUT reaches SIZE_MB; copy k
 * has every ts moved by k times the fixture's time span, so steps and ops
 * repeat back to back as in a long run, and every id that ties events
 * together (args correlation and External id, a flow's id) moved past the
 * fixture's largest: each copy launches its own kernels, as one long run
 * does. Metadata (M) events are written once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/trace/trace.h"

/* A number in an event's text that each copy moves: its ts, or an id. */
enum { MAX_FIELDS = 5 };
typedef struct field { uint32_t off, len; int64_t val; bool is_ts; } field;
typedef struct saved { char *text; size_t n; field f[MAX_FIELDS]; int nf; bool meta; } saved;

/* A plain non-negative integer (an id), or -1. */
static int64_t plain_int(const char *p, uint32_t n)
{
    if (n == 0 || n > 18) return -1;
    int64_t v = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

static void add_field(saved *s, tpa_span32 at, int64_t val, bool is_ts)
{
    if (!at.len || s->nf == MAX_FIELDS) return;
    int i = s->nf++;
    while (i > 0 && s->f[i - 1].off > at.off) { s->f[i] = s->f[i - 1]; i--; }  /* in text order */
    s->f[i] = (field){ at.off, at.len, val, is_ts };
}

/* The ids of ev (correlation, External id, a flow's id) into s; returns the largest. */
static int64_t note_ids(saved *s, const tpa_event *ev)
{
    int64_t top = -1, v;
    if ((v = plain_int(ev->raw.p + ev->v_id.off, ev->v_id.len)) >= 0) { add_field(s, ev->v_id, v, false); top = v; }
    if (!ev->args_marked) return top;
    const int ids[] = { TPA_ARG_CORRELATION, TPA_ARG_EXTERNAL_ID, TPA_ARG_EXTERNAL_ID_LC };
    unsigned seen = ev->arg_seen;
    for (const tpa_span32 *sp = ev->v_arg; seen; seen &= seen - 1, sp++) {
        int a = __builtin_ctz(seen);
        for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
            if (a == ids[k] && (v = plain_int(ev->raw.p + sp->off, sp->len)) >= 0) {
                add_field(s, *sp, v, false);
                if (v > top) top = v;
            }
    }
    return top;
}

static int load(const char *path, saved **out, size_t *n, int64_t *span, int64_t *id_span)
{
    tpa_error err;
    tpa_reader *r = tpa_reader_open(path, &err);
    if (!r) { tpa_error_print(stderr, &err); return -1; }
    size_t cap = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    tpa_event ev;
    int rc;
    *out = NULL;
    *n = 0;
    while ((rc = tpa_reader_next(r, &ev, &err)) > 0) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 4096;
            *out = realloc(*out, cap * sizeof **out);
            if (!*out) abort();
        }
        saved *s = &(*out)[(*n)++];
        s->text = malloc(ev.raw.n);
        if (!s->text) abort();
        memcpy(s->text, ev.raw.p, ev.raw.n);
        s->n = ev.raw.n;
        s->nf = 0;
        s->meta = ev.ph == 'M' || !ev.v_ts.len;
        if (!s->meta) {
            add_field(s, ev.v_ts, ev.ts_ns, true);
            int64_t top = note_ids(s, &ev);
            if (top >= *id_span) *id_span = top + 1;
            if (ev.ts_ns < lo) lo = ev.ts_ns;
            int64_t end = ev.ts_ns + (ev.has_dur ? ev.dur_ns : 0);
            if (end > hi) hi = end;
        }
    }
    tpa_reader_close(r);
    if (rc < 0) { tpa_error_print(stderr, &err); return -1; }
    *span = hi > lo ? hi - lo + 1000 : 1000;
    return 0;
}

static size_t write_event(FILE *f, const saved *s, int64_t copy, int64_t span, int64_t id_span)
{
    if (s->meta || !copy) return fwrite(s->text, 1, s->n, f);
    size_t w = 0, at = 0;
    for (int i = 0; i < s->nf; i++) {
        const field *x = &s->f[i];
        char num[48];
        int k;
        if (x->is_ts) {
            int64_t ts = x->val + copy * span;
            k = snprintf(num, sizeof num, "%" PRId64 ".%03" PRId64, ts / 1000, ts % 1000);
        } else {
            k = snprintf(num, sizeof num, "%" PRId64, x->val + copy * id_span);
        }
        w += fwrite(s->text + at, 1, x->off - at, f);
        w += fwrite(num, 1, (size_t)k, f);
        at = x->off + x->len;
    }
    return w + fwrite(s->text + at, 1, s->n - at, f);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: tp_gen_trace FIXTURE OUT SIZE_MB\n");
        return 2;
    }
    saved *ev;
    size_t n;
    int64_t span, id_span = 0;
    if (load(argv[1], &ev, &n, &span, &id_span) != 0) return 2;
    double target = atof(argv[3]) * 1e6;
    FILE *f = fopen(argv[2], "wb");
    if (!f) { perror(argv[2]); return 2; }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    size_t total = (size_t)fprintf(f, "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n");
    bool first = true;
    int64_t copies = 0;
    while ((double)total < target) {
        for (size_t i = 0; i < n; i++) {
            if (ev[i].meta && copies > 0) continue;
            if (!first) total += fwrite(",\n  ", 1, 4, f);
            first = false;
            total += write_event(f, &ev[i], copies, span, id_span);
        }
        copies++;
    }
    total += (size_t)fprintf(f, "\n  ],\n  \"displayTimeUnit\": \"ms\"\n}\n");
    if (fclose(f) != 0) { perror(argv[2]); return 2; }
    fprintf(stderr, "wrote %s: %.1f MB, %" PRId64 " copies of %zu events\n", argv[2], (double)total / 1e6, copies, n);
    for (size_t i = 0; i < n; i++) free(ev[i].text);
    free(ev);
    return 0;
}
