/* gen_trace.c - makes a large Kineto-like trace for benchmarks by repeating
 * a real trace's events with shifted timestamps.
 *
 *   tp_gen_trace FIXTURE OUT SIZE_MB
 *
 * Reads FIXTURE (.json or .json.gz) with the analyzer's reader, keeps its
 * events' text in memory, and writes copies until OUT reaches SIZE_MB; copy k
 * has every ts moved by k times the fixture's time span, so steps and ops
 * repeat back to back as in a long run. Metadata (M) events are written once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"

typedef struct saved { char *text; size_t n; uint32_t ts_off, ts_len; int64_t ts; bool meta; } saved;

static int load(const char *path, saved **out, size_t *n, int64_t *span)
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
        s->ts_off = ev.v_ts.off;
        s->ts_len = ev.v_ts.len;
        s->ts = ev.ts_ns;
        s->meta = ev.ph == 'M' || !ev.v_ts.len;
        if (!s->meta) {
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

static size_t write_event(FILE *f, const saved *s, int64_t shift)
{
    if (s->meta || !shift) return fwrite(s->text, 1, s->n, f);
    int64_t ts = s->ts + shift;
    char num[48];
    int k = snprintf(num, sizeof num, "%" PRId64 ".%03" PRId64, ts / 1000, ts % 1000);
    size_t w = fwrite(s->text, 1, s->ts_off, f);
    w += fwrite(num, 1, (size_t)k, f);
    w += fwrite(s->text + s->ts_off + s->ts_len, 1, s->n - s->ts_off - s->ts_len, f);
    return w;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: tp_gen_trace FIXTURE OUT SIZE_MB\n");
        return 2;
    }
    saved *ev;
    size_t n;
    int64_t span;
    if (load(argv[1], &ev, &n, &span) != 0) return 2;
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
            total += write_event(f, &ev[i], copies * span);
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
