/* test_views_tl_diff.c - the Diff view's data on two real Kineto runs
 * (control vs test): operators most changed first, those in one run only
 * included and marked, the step breakdown of each run adding up to its
 * mean step, and the findings that moved with their verdicts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/page/view_diff.h"
#include "tp_test.h"
#include "analyze/stats/stats.h"

/* the repository's copies (tests/fixtures/README.md): the test needs nothing beside the checkout */
#define FIXTURES TP_SOURCE_DIR "/tests/fixtures/"

static long long num_after(const char *p, const char *key)
{
    const char *q = strstr(p, key);
    return q ? strtoll(q + strlen(key), NULL, 10) : -1;
}

TP_TEST(control_vs_test)
{
    const char *a = FIXTURES "trace_diff__control__control.json.gz";
    const char *b = FIXTURES "trace_diff__test__test.json.gz";
    tpa_diagnosis da, db;
    tpa_error err;
    CHECK(tpa_diagnose_file(a, &da, &err) == 0);
    CHECK(tpa_diagnose_file(b, &db, &err) == 0);
    tpa_diff d;
    tpa_diff_compute(&d, &da.rep, &db.rep, &da.steps, &db.steps);
    tpa_diff_findings(&d, &da, &db);
    tpu_buf buf = {0};
    tpu_json j;
    tpu_json_init(&j, &buf, 0);
    tpa_view_diff_json(&j, &d, &da, &db);
    const char *js = tpu_buf_cstr(&buf);
    CHECK(js[0] == '{');
    /* the rows in the page, in the page's order, are diff's rows */
    const char *p = strstr(js, "\"ops\":[");
    CHECK(p != NULL);
    long long last = -1;
    size_t rows = 0, one_run = 0;
    for (const char *q = p; q && (q = strstr(q, "{\"name\":")) != NULL && rows < d.n; q++, rows++) {
        long long ch = num_after(q, "\"change_ns\":");
        if (ch < 0) ch = -ch;
        CHECK(last < 0 || ch <= last);
        last = ch;
        if (strstr(q, "\"status\":\"new\"") == strstr(q, "\"status\":") ||
            strstr(q, "\"status\":\"gone\"") == strstr(q, "\"status\":"))
            one_run++;
        CHECK_EQ_INT(num_after(q, "\"total_a_ns\":"), d.rows[rows].total_a);
    }
    CHECK_EQ_INT(rows, d.n < TPA_DIFF_OPS ? d.n : TPA_DIFF_OPS);
    CHECK(one_run > 0); /* operators in one run only are listed */
    /* each run's breakdown sums to its mean step (within rounding per part) */
    long long sa = 0, sb = 0;
    const char *q = strstr(js, "\"parts\":["), *end = q ? strchr(q, ']') : NULL;
    for (; q && (q = strstr(q, "\"a_ns\":")) != NULL && q < end; q++) {
        sa += num_after(q, "\"a_ns\":");
        sb += num_after(q, "\"b_ns\":");
    }
    CHECK(da.steps.n > 0 && db.steps.n > 0);
    CHECK(llabs(sa - tpa_steps_mean(&da.steps, -1)) <= TPA_P_COUNT);
    CHECK(llabs(sb - tpa_steps_mean(&db.steps, -1)) <= TPA_P_COUNT);
    CHECK(strstr(js, "\"findings\":[") != NULL);
    CHECK(d.n_moves == 0 || strstr(js, "\"verdict\":") != NULL);
    tpu_buf_free(&buf);
    tpa_diff_free(&d);
    tpa_diagnosis_free(&da);
    tpa_diagnosis_free(&db);
}

int main(void)
{
    RUN(control_vs_test);
    return tp_test_finish();
}
