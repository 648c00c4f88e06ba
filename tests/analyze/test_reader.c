/* test_reader.c - the streaming reader on small in-memory documents, read
 * with every chunk size from 1 byte up so each refill path runs. */
#include "analyze/trace/trace.h"
#include "analyze/json/json_scan.h"
#include "tp_test.h"

#include <stdlib.h>
#include <string.h>

typedef struct result {
    int rc, code, n;
    uint64_t offset;
    bool truncated;
    char names[8][32];
    int64_t ts[8], dur[8], pid[8];
    char ph[8];
} result;

static result read_doc(const char *doc, size_t max_read)
{
    result res;
    memset(&res, 0, sizeof res);
    tpa_error err;
    memset(&err, 0, sizeof err);
    tpa_reader *r = tpa_reader_open_mem(doc, strlen(doc), &err);
    tpa_reader_set_max_read(r, max_read);
    tpa_event ev;
    while ((res.rc = tpa_reader_next(r, &ev, &err)) > 0) {
        if (res.n < 8) {
            snprintf(res.names[res.n], sizeof res.names[0], "%.*s", (int)ev.name.n, ev.name.p);
            res.ts[res.n] = ev.ts_ns;
            res.dur[res.n] = ev.dur_ns;
            res.pid[res.n] = ev.pid;
            res.ph[res.n] = ev.ph;
        }
        res.n++;
    }
    res.code = res.rc < 0 ? err.code : 0;
    res.offset = err.offset;
    res.truncated = tpa_reader_meta(r)->truncated;
    tpa_reader_close(r);
    return res;
}

/* Same answer for every chunk size. */
static result read_all_sizes(const char *doc)
{
    result first = read_doc(doc, 0);
    for (size_t k = 1; k < 40; k++) {
        result again = read_doc(doc, k);
        CHECK_EQ_INT(again.rc, first.rc);
        CHECK_EQ_INT(again.n, first.n);
        CHECK_EQ_INT(again.code, first.code);
        CHECK_EQ_INT(again.truncated, first.truncated);
        if (again.n == first.n && again.n > 0) CHECK_STR(again.names[0], first.names[0]);
    }
    return first;
}

TP_TEST(array_form)
{
    result r = read_all_sizes("[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 97, \"dur\": 26, \"pid\": 1, \"tid\": 1},\n"
                              " {\"ph\":\"i\",\"name\":\"mark\",\"ts\":100.5}]");
    CHECK_EQ_INT(r.rc, 0);
    CHECK_EQ_INT(r.n, 2);
    CHECK_STR(r.names[0], "aten::mm");
    CHECK_EQ_INT(r.ts[0], 97000);
    CHECK_EQ_INT(r.dur[0], 26000);
    CHECK_EQ_INT(r.ts[1], 100500);
    CHECK(r.ph[1] == 'i');
    CHECK(!r.truncated);
}

TP_TEST(object_form_with_metadata_after_events)
{
    const char *doc = "{\"schemaVersion\": 1, \"traceEvents\": [{\"name\":\"k\",\"ph\":\"X\",\"ts\":1234.567,"
                      "\"dur\":0.001,\"pid\":\"CPU functions\",\"tid\":3,\"args\":{\"device\":2,\"x\":[1,{\"y\":null}]}}],"
                      " \"baseTimeNanoseconds\": 1735632360000000000, \"distributedInfo\": {\"rank\": 3}}";
    result r = read_all_sizes(doc);
    CHECK_EQ_INT(r.n, 1);
    CHECK_EQ_INT(r.ts[0], 1234567);
    CHECK_EQ_INT(r.dur[0], 1);
    CHECK(r.pid[0] > (1LL << 60));  /* string pid hashed apart */
    tpa_error err;
    tpa_reader *rd = tpa_reader_open_mem(doc, strlen(doc), &err);
    tpa_reader_drain(rd, &err);
    const tpa_meta *m = tpa_reader_meta(rd);
    CHECK(m->has_base);
    CHECK_EQ_INT(m->base_ns, 1735632360000000000LL);
    CHECK(m->has_rank);
    CHECK_EQ_INT(m->rank, 3);
    CHECK_EQ_INT(m->n_members, 3);
    tpa_reader_close(rd);
}

TP_TEST(escapes_and_unicode)
{
    result r = read_all_sizes("[{\"name\":\"a\\\"b\\\\c\\u00e9\\ud83d\\ude00\",\"ph\":\"X\",\"ts\":1}]");
    CHECK_EQ_INT(r.n, 1);
    CHECK_STR(r.names[0], "a\"b\\c\xc3\xa9\xf0\x9f\x98\x80");
    r = read_all_sizes("[{\"name\":\"\\ud83d\",\"ph\":\"X\",\"ts\":1}]");
    CHECK_EQ_INT(r.code, TPA_ERR_UTF8);
    r = read_all_sizes("[{\"name\":\"\xc3\x28\",\"ph\":\"X\",\"ts\":1}]");
    CHECK_EQ_INT(r.code, TPA_ERR_UTF8);
}

/* A UTF-8 byte order mark is skipped also when a read splits it. */
TP_TEST(bom_split_by_reads)
{
    result r = read_all_sizes("\xEF\xBB\xBF[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":2}]");
    CHECK_EQ_INT(r.rc, 0);
    CHECK_EQ_INT(r.n, 1);
    r = read_all_sizes("\xEF\xBB");
    CHECK_EQ_INT(r.code, TPA_ERR_FORMAT);
}

TP_TEST(truncated_inputs_keep_complete_events)
{
    result r = read_all_sizes("{\"traceEvents\": [{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":1},\n"
                              "{\"name\":\"b\",\"ph\":\"X\",\"ts\":2,\"dur\":1},\n");
    CHECK_EQ_INT(r.rc, 0);
    CHECK_EQ_INT(r.n, 2);
    CHECK(r.truncated);
    r = read_all_sizes("[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":1},{\"name\":\"b\",\"ph");
    CHECK_EQ_INT(r.n, 1);
    CHECK(r.truncated);
}

TP_TEST(bad_inputs_fail_with_offsets)
{
    result r = read_all_sizes("");
    CHECK_EQ_INT(r.code, TPA_ERR_EMPTY);
    r = read_all_sizes("not json");
    CHECK_EQ_INT(r.code, TPA_ERR_FORMAT);
    r = read_all_sizes("[{\"name\":\"a\",\"ts\":1} {\"name\":\"b\"}]");
    CHECK_EQ_INT(r.code, TPA_ERR_SYNTAX);
    CHECK_EQ_INT(r.offset, 21);
    r = read_all_sizes("[{\"ts\": 99999999999999999999999999}]");
    CHECK_EQ_INT(r.code, TPA_ERR_LIMIT);
    /* in int64 but so large that ts + dur or end - begin would overflow */
    r = read_all_sizes("[{\"ph\":\"X\",\"ts\": 9223372036854775.807, \"dur\": 1}]");
    CHECK_EQ_INT(r.code, TPA_ERR_LIMIT);
    r = read_all_sizes("[{\"ph\":\"B\",\"ts\": -9223372036854775.000}]");
    CHECK_EQ_INT(r.code, TPA_ERR_LIMIT);
    r = read_all_sizes("[{\"ph\":\"X\",\"ts\": 1, \"dur\": \"5000000000000000\"}]");
    CHECK_EQ_INT(r.code, TPA_ERR_LIMIT);
    r = read_all_sizes("[{\"ph\":\"X\",\"ts\": 4000000000000000, \"dur\": -4000000000000000}]");
    CHECK_EQ_INT(r.rc, 0);
    CHECK_EQ_INT(r.ts[0], 4000000000000000000LL);
    r = read_all_sizes("[{\"ts\": 1, \"args\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}]");
    CHECK_EQ_INT(r.code, TPA_ERR_LIMIT);
    r = read_all_sizes("[{\"ts\": tru}]");
    CHECK_EQ_INT(r.code, TPA_ERR_SYNTAX);
    r = read_all_sizes("[1, \"x\", {\"ph\":\"X\",\"ts\":1}] trailing");
    CHECK_EQ_INT(r.code, TPA_ERR_SYNTAX);
    CHECK_EQ_INT(r.n, 1);
}

TP_TEST(numbers_convert_exactly)
{
    tpa_num n;
    int64_t ns;
    CHECK(tpa_parse_num_text("1712195495519689.0", 18, &n));
    CHECK(tpa_num_us_to_ns(&n, &ns));
    CHECK_EQ_INT(ns, 1712195495519689000LL);
    CHECK(tpa_parse_num_text("4203669604595.407", 17, &n));
    CHECK(tpa_num_us_to_ns(&n, &ns));
    CHECK_EQ_INT(ns, 4203669604595407LL);
    CHECK(tpa_parse_num_text("1.5e3", 5, &n));
    CHECK(tpa_num_us_to_ns(&n, &ns));
    CHECK_EQ_INT(ns, 1500000);
    CHECK(tpa_parse_num_text("0.0004", 6, &n));
    CHECK(tpa_num_us_to_ns(&n, &ns));
    CHECK_EQ_INT(ns, 0);
    CHECK(!tpa_parse_num_text("01", 2, &n) || n.mant == 0);
}

/* The fast paths for plain integers and microsecond times agree with the
 * general number scanner, and decline every other shape. */
TP_TEST(number_fast_paths_match_general)
{
    static const char *texts[] = {"0", "7", "3113936", "12345678", "123456789", "1661203462602416",
                                  "1661203462602416.1", "1712195495519689.0", "4203669604595.407",
                                  "999999999999999999", "3999999999999999.999", "0.5"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char doc[64];
        snprintf(doc, sizeof doc, "%s, \"next\": 1}, {\"more\": \"x\"}", texts[i]);
        size_t n = strlen(texts[i]);
        tpa_num num;
        CHECK(tpa_parse_num_text(texts[i], n, &num));
        int64_t want, got = 0;
        if (tpa_num_us_to_ns(&num, &want) && want < 4000000000000000000LL) {
            CHECK_EQ_INT(tpa_scan_us_fast(doc, doc + strlen(doc), &got), n);
            CHECK_EQ_INT(got, want);
        }
        uint64_t v = 0;
        if (num.is_int && tpa_num_to_i64(&num, &want) && n <= 18) {
            CHECK_EQ_INT(tpa_scan_small_uint(doc, doc + strlen(doc), &v), n);
            CHECK_EQ_INT((int64_t)v, want);
        } else {
            CHECK_EQ_INT(tpa_scan_small_uint(doc, doc + strlen(doc), &v), 0);
        }
    }
    static const char *declined[] = {"01", "1.", "1e3", "1.2345", "-1", "1234567890123456789",
                                     "\"1\""};
    for (size_t i = 0; i < sizeof declined / sizeof declined[0]; i++) {
        char doc[64];
        snprintf(doc, sizeof doc, "%s, \"next\": 1}, {\"more\": \"x\"}", declined[i]);
        int64_t ns;
        uint64_t v = 0;
        CHECK_EQ_INT(tpa_scan_us_fast(doc, doc + strlen(doc), &ns), 0);
        CHECK_EQ_INT(tpa_scan_small_uint(doc, doc + strlen(doc), &v), 0);
    }
    /* a time at the range limit, or too close to the window end: the
     * general path decides */
    int64_t ns;
    static const char at_limit[] = "4000000000000000, \"a\": 1, \"b\": 2}", near_end[] = "12, 3}";
    CHECK_EQ_INT(tpa_scan_us_fast(at_limit, at_limit + 32, &ns), 0);
    CHECK_EQ_INT(tpa_scan_us_fast(near_end, near_end + 6, &ns), 0);
}

int main(void)
{
    RUN(array_form);
    RUN(object_form_with_metadata_after_events);
    RUN(escapes_and_unicode);
    RUN(bom_split_by_reads);
    RUN(truncated_inputs_keep_complete_events);
    RUN(bad_inputs_fail_with_offsets);
    RUN(numbers_convert_exactly);
    RUN(number_fast_paths_match_general);
    return tp_test_finish();
}
