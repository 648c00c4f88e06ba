/* Unit tests of src/util: byte buffer, JSON writer, files. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_test.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/json.h"

TP_TEST(buf_grows_and_formats)
{
    tpu_buf b = {0};
    CHECK_STR(tpu_buf_cstr(&b), "");
    for (int i = 0; i < 1000; i++)
        tpu_buf_printf(&b, "%d,", i);
    CHECK(b.len > 3000);
    CHECK(strncmp(b.data, "0,1,2,", 6) == 0);
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tpu_buf_reset(&b);
    tpu_buf_printf(&b, "<%s>", big); /* longer than the printf fast path */
    CHECK_EQ_INT(b.len, 601);
    CHECK_EQ_INT(b.data[600], '>');
    char *owned = tpu_buf_detach(&b);
    CHECK_EQ_INT(strlen(owned), 601);
    free(owned);
    CHECK_EQ_INT(b.len, 0);
    tpu_buf_free(&b);
}

/* tpu_buf_put_u64(v) against printf; 1 when they agree. */
static int u64_matches_printf(unsigned long long v)
{
    char want[32];
    tpu_buf b = {0};
    tpu_buf_put_u64(&b, v);
    snprintf(want, sizeof want, "%llu", v);
    int ok = strcmp(tpu_buf_cstr(&b), want) == 0;
    if (!ok)
        CHECK_STR(tpu_buf_cstr(&b), want);
    tpu_buf_free(&b);
    return ok;
}

/* The printf-free integer writers agree with printf, the microsecond
 * writer with the "%llu.%03llu minus trailing zeros" form traces use. */
TP_TEST(buf_integers_match_printf)
{
    static const unsigned long long u[] = {0, 1, 9, 10, 999, 1000, 1001, 1010, 1100, 12345678,
                                           999999999999ull, 18446744073709551615ull};
    static const long long i[] = {0, -1, 1, -10, 2147483647, -2147483648LL,
                                  9223372036854775807LL, -9223372036854775807LL - 1};
    char want[64];
    for (size_t k = 0; k < sizeof u / sizeof u[0]; k++) {
        CHECK(u64_matches_printf(u[k]));
        tpu_buf b = {0};
        tpu_buf_put_us(&b, u[k]);
        int n = snprintf(want, sizeof want, "%llu.%03llu", u[k] / 1000, u[k] % 1000);
        while (want[n - 1] == '0')
            want[--n] = '\0';
        if (want[n - 1] == '.')
            want[--n] = '\0';
        CHECK_STR(tpu_buf_cstr(&b), want);
        tpu_buf_free(&b);
    }
    uint64_t x = 88172645463325252ull; /* xorshift: values of every magnitude */
    for (int k = 0; k < 20000; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (!u64_matches_printf(x >> (k % 64)))
            break;
    }
    for (size_t k = 0; k < sizeof i / sizeof i[0]; k++) {
        tpu_buf b = {0};
        tpu_buf_put_i64(&b, i[k]);
        snprintf(want, sizeof want, "%lld", i[k]);
        CHECK_STR(tpu_buf_cstr(&b), want);
        tpu_buf_free(&b);
    }
}

TP_TEST(reserve_grows_and_zeroes)
{
    int *v = NULL;
    size_t cap = 0;
    CHECK_EQ_INT(tpu_reserve_items(&v, &cap, 3, sizeof *v, 4), 0);
    CHECK_EQ_INT(cap, 4);
    CHECK_EQ_INT(tpu_reserve_items(&v, &cap, 9, sizeof *v, 4), 0);
    CHECK_EQ_INT(cap, 16);
    v[15] = 7;
    CHECK_EQ_INT(tpu_reserve_items(&v, &cap, 16, sizeof *v, 4), 0); /* fits: unchanged */
    CHECK_EQ_INT(cap, 16);
    CHECK_EQ_INT(tpu_reserve_index(&v, &cap, 40, sizeof *v, 4), 0);
    CHECK_EQ_INT(cap, 64);
    CHECK_EQ_INT(v[15], 7);
    int zero = 1;
    for (size_t i = 16; i < cap; i++)
        zero &= v[i] == 0;
    CHECK(zero);
    free(v);
}

TP_TEST(json_structure_and_commas)
{
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_int(&j, "a", -3);
    tpu_json_key(&j, "list");
    tpu_json_begin_array(&j);
    tpu_json_uint(&j, 1);
    tpu_json_double(&j, 0.5);
    tpu_json_bool(&j, 1);
    tpu_json_null(&j);
    tpu_json_begin_object(&j);
    tpu_json_end_object(&j);
    tpu_json_end_array(&j);
    tpu_json_kv_string(&j, "s", "x");
    tpu_json_end_object(&j);
    CHECK_STR(tpu_buf_cstr(&b), "{\"a\":-3,\"list\":[1,0.5,true,null,{}],\"s\":\"x\"}");
    tpu_buf_free(&b);
}

TP_TEST(json_pretty)
{
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 1);
    tpu_json_begin_array(&j);
    tpu_json_begin_object(&j);
    tpu_json_kv_int(&j, "step", 1);
    tpu_json_end_object(&j);
    tpu_json_end_array(&j);
    CHECK_STR(tpu_buf_cstr(&b), "[\n  {\n    \"step\": 1\n  }\n]");
    tpu_buf_free(&b);
}

TP_TEST(json_escapes_and_bad_utf8)
{
    tpu_buf b = {0};
    const char in[] = "q\"b\\n\n\t\x01 \xc3\xa9 \xff \xe2\x82";
    tpu_json_escape(&b, in, sizeof in - 1);
    CHECK_STR(tpu_buf_cstr(&b), "q\\\"b\\\\n\\n\\t\\u0001 \xc3\xa9 \\ufffd \\ufffd\\ufffd");
    tpu_buf_reset(&b);
    const char surrogate[] = "\xed\xa0\x80"; /* UTF-16 surrogate encoded in UTF-8: invalid */
    tpu_json_escape(&b, surrogate, 3);
    CHECK_STR(tpu_buf_cstr(&b), "\\ufffd\\ufffd\\ufffd");
    tpu_buf_free(&b);
}

static char *escaped(const char *s, size_t n)
{
    tpu_buf b = {0};
    tpu_json_escape(&b, s, n);
    return tpu_buf_detach(&b);
}

/* Each byte that needs care, alone in a run of plain ASCII at every
 * position of strings up to 70 bytes (the escaper takes plain runs 16
 * bytes at a time): the run is copied as is, the piece as the table says. */
TP_TEST(json_escape_at_every_position)
{
    static const tp_test_piece piece[] = {
        { "\"", "\\\"" }, { "\\", "\\\\" }, { "\n", "\\n" }, { "\x01", "\\u0001" }, { "\x1f", "\\u001f" },
        { "\xc3\xa9", "\xc3\xa9" }, { "\xe2\x80\xa8", "\xe2\x80\xa8" }, { "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80" },
        { "\xff", "\\ufffd" }, { "\xc3", "\\ufffd" }, { " ", " " }, { "~", "~" }, { "\x7f", "\x7f" },
    };
    CHECK_EQ_INT(tp_test_every_offset(piece, sizeof piece / sizeof *piece, escaped), 0);
}

TP_TEST(json_doubles_round_trip)
{
    double vals[] = {0.1, 1.0 / 3.0, 1e-9, 123456789.123, -2.5, 1e300, 5e-324};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        tpu_buf b = {0};
        tpu_json_format_double(&b, vals[i]);
        CHECK(strtod(tpu_buf_cstr(&b), NULL) == vals[i]);
        tpu_buf_free(&b);
    }
    tpu_buf b = {0};
    tpu_json_format_double(&b, 0.1);
    CHECK_STR(tpu_buf_cstr(&b), "0.1");
    tpu_buf_reset(&b);
    tpu_json_format_double(&b, NAN);
    CHECK_STR(tpu_buf_cstr(&b), "null");
    tpu_buf_reset(&b);
    tpu_json_format_double(&b, -INFINITY);
    CHECK_STR(tpu_buf_cstr(&b), "null");
    tpu_buf_free(&b);
}

/* The integer writers and the fast paths of the double writer skip printf:
 * their output must stay byte for byte what the shortest of %.15g, %.16g,
 * %.17g that reads back as v writes. */
static void printf_double(char *out, size_t n, double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
}

TP_TEST(json_numbers_match_printf)
{
    int64_t ints[] = {0, 1, -1, 9, 10, -10, 99, 100, 123456789, INT64_MAX, INT64_MIN,
                      INT64_MIN + 1, 999999999999999LL, -1000000000000000LL};
    char want[64];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        tpu_buf b = {0};
        tpu_json j;
        tpu_json_init(&j, &b, 0);
        tpu_json_int(&j, ints[i]);
        snprintf(want, sizeof want, "%lld", (long long)ints[i]);
        CHECK_STR(tpu_buf_cstr(&b), want);
        tpu_buf_reset(&b);
        tpu_json_init(&j, &b, 0);
        tpu_json_uint(&j, (uint64_t)ints[i]);
        snprintf(want, sizeof want, "%llu", (unsigned long long)(uint64_t)ints[i]);
        CHECK_STR(tpu_buf_cstr(&b), want);
        tpu_buf_free(&b);
    }
    double dbl[] = {1, -1, 7, 10, 1e14, 999999999999999.0, -999999999999999.0, 1e15,
                    -1e15, 1e15 + 2, 123456789012345.0, 1e16, 1e22, 4503599627370496.0,
                    0.5, -0.5, 2.5, 1e-300, 1234.5678, 9007199254740993.0};
    for (size_t i = 0; i < sizeof dbl / sizeof dbl[0]; i++) {
        tpu_buf b = {0};
        tpu_json_format_double(&b, dbl[i]);
        printf_double(want, sizeof want, dbl[i]);
        CHECK_STR(tpu_buf_cstr(&b), want);
        tpu_buf_free(&b);
    }
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    tpu_json_float(&j, 3.0);
    CHECK_STR(tpu_buf_cstr(&b), "3.0");
    tpu_buf_free(&b);
}

static int same_as_reference(double v)
{
    char want[40];
    tpu_buf b = {0};
    printf_double(want, sizeof want, v);
    tpu_json_format_double(&b, v);
    int same = strcmp(tpu_buf_cstr(&b), want) == 0;
    if (!same)
        fprintf(stderr, "  %.17g written as %s, not %s\n", v, tpu_buf_cstr(&b), want);
    tpu_buf_free(&b);
    return same;
}

/* Nanosecond counts in seconds (divided and multiplied, as the collector
 * does), integers, the edges of the decimal fast path, and other doubles:
 * byte for byte what the printf round trip writes. */
TP_TEST(json_doubles_as_printf_writes_them)
{
    int bad = 0;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 200000 && bad < 5; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t ns = x % (i % 3 == 2 ? 2000000000000000ull : i % 3 ? 5000000000ull : 200000ull);
        double sign = i % 7 ? 1 : -1;
        bad += !same_as_reference(sign * (double)ns * 1e-9);
        bad += !same_as_reference(sign * (double)ns / 1e9);
        bad += !same_as_reference(sign * (double)(ns % 1000000000000000ull));
        bad += !same_as_reference((double)(x >> 11) / 9007199254740992.0 * pow(10, i % 40 - 20));
    }
    static const double edges[] = {1e-9, 1e-8, 1.5e-9, 9.9999e-5, 1.2e-5, 1e-5, 1e-4, 0.00012, 1e6, 999999.999999999, 1e15,
                                    999999999999999.0, 1e15 + 1, 0.5, 1.0, 2.000000001, -0.1};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        bad += !same_as_reference(edges[i]);
    CHECK(bad == 0);
}

TP_TEST(files_mkdir_atomic_read)
{
    char dir[] = "/tmp/tp_util_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char deep[512], file[600], err[256];
    snprintf(deep, sizeof deep, "%s/a/b/c", dir);
    CHECK_EQ_INT(tpu_mkdir_p(deep, err, sizeof err), 0);
    CHECK_EQ_INT(tpu_mkdir_p(deep, err, sizeof err), 0); /* exists: fine */
    CHECK_EQ_INT(tpu_path_join(file, sizeof file, deep, "x.json"), 0);
    CHECK_EQ_INT(tpu_write_file_atomic(file, "{\"a\":1}", 7, err, sizeof err), 0);
    char *data;
    size_t len;
    CHECK_EQ_INT(tpu_read_file(file, &data, &len, err, sizeof err), 0);
    CHECK_EQ_INT(len, 7);
    CHECK_STR(data, "{\"a\":1}");
    free(data);
    /* a file where a directory is wanted: error names the path */
    char under_file[700];
    snprintf(under_file, sizeof under_file, "%s/sub", file);
    CHECK_EQ_INT(tpu_mkdir_p(under_file, err, sizeof err), -1);
    CHECK_CONTAINS(err, file);
    CHECK_EQ_INT(tpu_read_file("/nonexistent/x", &data, &len, err, sizeof err), -1);
    CHECK_CONTAINS(err, "/nonexistent/x");
    unlink(file);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

TP_TEST(write_all_reports_disk_full)
{
    int fd = open("/dev/full", O_WRONLY);
    if (fd < 0)
        return; /* no /dev/full in this sandbox */
    errno = 0;
    CHECK_EQ_INT(tpu_write_all(fd, "abc", 3), -1);
    CHECK_EQ_INT(errno, ENOSPC);
    close(fd);
}

TP_TEST(sanitize_component)
{
    char a[] = "../etc/passwd";
    tpu_sanitize_component(a);
    CHECK_STR(a, ".._etc_passwd");
    char b[] = "..";
    tpu_sanitize_component(b);
    CHECK_STR(b, "_");
    char c[] = "run\n\x01 name";
    tpu_sanitize_component(c);
    CHECK_STR(c, "run___name");
    char host[64];
    tpu_hostname(host, sizeof host);
    CHECK(host[0] != '\0');
    CHECK(strchr(host, '/') == NULL);
}

int main(void)
{
    RUN(buf_grows_and_formats);
    RUN(buf_integers_match_printf);
    RUN(reserve_grows_and_zeroes);
    RUN(json_structure_and_commas);
    RUN(json_pretty);
    RUN(json_escapes_and_bad_utf8);
    RUN(json_escape_at_every_position);
    RUN(json_doubles_round_trip);
    RUN(json_numbers_match_printf);
    RUN(json_doubles_as_printf_writes_them);
    RUN(files_mkdir_atomic_read);
    RUN(write_all_reports_disk_full);
    RUN(sanitize_component);
    return tp_test_finish();
}
