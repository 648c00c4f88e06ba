/* views_test_helpers.h - what the page collectors' tests share: the files
 * fed to a collector as the page builder feeds them, the Timeline store's
 * held events and JSON, and the steps `trainprof steps --json` writes.
 * Header-only (static inline): each test is one translation unit. */
#ifndef TRAINPROF_TESTS_VIEWS_TEST_HELPERS_H
#define TRAINPROF_TESTS_VIEWS_TEST_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/page/view_timeline.h"
#include "analyze/stats/stats.h"
#include "analyze/text/render.h"
#include "tp_test.h"

/* What the builder does with a begun collector st: every file once, every
 * event to it, then its JSON; st is freed. */
static inline char *feed_view_json(const tpa_view_class *vc, void *st, const char *const *files, int n)
{
    for (int f = 0; f < n; f++) {
        tpa_error err;
        tpa_reader *r = tpa_reader_open(files[f], &err);
        CHECK(r != NULL);
        if (!r) continue;
        if (vc->file_begin) vc->file_begin(st, f, files[f]);
        tpa_event ev;
        while (tpa_reader_next(r, &ev, &err) > 0)
            if (vc->feed) vc->feed(st, &ev, tpa_classify(&ev));
        if (vc->file_end) vc->file_end(st, f, tpa_reader_meta(r));
        tpa_reader_close(r);
    }
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    vc->json(st, &j);
    vc->free(st);
    return tpu_buf_detach(&b);
}

/* Events of step s's trace overlapping it that the Timeline's store still holds. */
static inline size_t held_in(const tpa_tl *t, const tpa_tl_step *s)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const tpa_tl_rec *r = &t->rec[i];
        if (r->file == s->file && r->ts < s->start + s->dur && r->ts + r->dur >= s->start) n++;
    }
    return n;
}

/* The Timeline's JSON with each rank's three picks. */
static inline char *json_of(tpa_tl *t)
{
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    long *pick = malloc(3 * (size_t)t->n_files * sizeof *pick);
    for (int k = 0; k < 3 * t->n_files; k++) pick[k] = -1;
    int np = t->seen ? tpa_tl_pick(t, pick) : 0;
    tpa_tl_json(t, pick, np, &j);
    free(pick);
    return tpu_buf_detach(&b);
}

enum { MAX_ST = 64 };

typedef struct step_ref { int64_t num, start, dur; } step_ref;

/* "12.345" (us, as steps --json writes them) in ns. */
static inline int64_t us_ns(const char *p)
{
    char *end;
    int64_t v = strtoll(p, &end, 10) * 1000;
    if (*end == '.') {
        int64_t scale = 100;
        for (const char *q = end + 1; *q >= '0' && *q <= '9' && scale; q++, scale /= 10) v += (*q - '0') * scale;
    }
    return v;
}

/* The steps of `trainprof steps --json` of one trace (the CLI's own
 * renderer), at most MAX_ST; device_rule (may be NULL): whether the GPU rule
 * made them. */
static inline size_t steps_json(const char *path, step_ref *out, bool *device_rule)
{
    tpa_steps_result res;
    tpa_error err;
    CHECK(tpa_steps_file(path, &res, &err) == 0);
    if (device_rule) *device_rule = res.device_rule;
    char *text = NULL;
    size_t len = 0, n = 0;
    FILE *f = open_memstream(&text, &len);
    tpa_render_steps_json(f, &res);
    fclose(f);
    tpa_steps_free(&res);
    for (const char *p = text; (p = strstr(p, "{\"step\": ")) != NULL && n < MAX_ST; p++) {
        out[n].num = strtoll(p + 9, NULL, 10);
        out[n].start = us_ns(strstr(p, "\"start_us\": ") + 12);
        out[n].dur = us_ns(strstr(p, "\"dur_us\": ") + 10);
        n++;
    }
    free(text);
    return n;
}

/* The picks from steps --json by the view's rules (of equal durations the
 * earlier step; a step picked once, first as the slowest, then the median). */
static inline void want_picks(const step_ref *st, size_t n, int64_t want[3])
{
    int64_t d[MAX_ST];
    for (size_t i = 0; i < n; i++) d[i] = st[i].dur;
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && d[k] < d[k - 1]; k--) { int64_t x = d[k]; d[k] = d[k - 1]; d[k - 1] = x; }
    int64_t med = n ? d[(n - 1) / 2] : 0;
    size_t b[3] = {0, 0, 0};
    for (size_t i = 1; i < n; i++) {
        const step_ref *x = &st[i];
        if (x->dur > st[b[0]].dur || (x->dur == st[b[0]].dur && x->start < st[b[0]].start)) b[0] = i;
        int64_t dx = llabs(x->dur - med), db = llabs(st[b[1]].dur - med);
        if (dx < db || (dx == db && (x->dur < st[b[1]].dur || (x->dur == st[b[1]].dur && x->start < st[b[1]].start))))
            b[1] = i;
        if (x->dur < st[b[2]].dur || (x->dur == st[b[2]].dur && x->start < st[b[2]].start)) b[2] = i;
    }
    for (int k = 0; k < 3; k++) {
        want[k] = n ? st[b[k]].num : -1;
        for (int m = 0; m < k; m++)
            if (n && b[m] == b[k]) want[k] = -1;
    }
}

#endif
