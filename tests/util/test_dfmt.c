/* Unit tests of src/util/dfmt.c: byte for byte what printf writes ("%.Ng"
 * for every precision, and the shortest of %.15g/%.16g/%.17g that strtod
 * reads back), on millions of doubles: random bit patterns (every exponent,
 * subnormals, NaN and infinities), nanosecond counts in seconds as the
 * collector computes them, exact ties, powers of two and of ten and their
 * neighbours, and the edges of %g's two styles; and tpu_dparse against
 * strtod on what those writers write and on text strtod rejects. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "util/dfmt.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static long bad, checked;

static void report(const char *what, int prec, double v, const char *got, const char *want)
{
    if (bad++ < 10)
        fprintf(stderr, "  %s %d of %a (%.17g): wrote %s, printf %s\n", what, prec, v, v, got, want);
}

/* "%.*g" at prec, and at a few others (all 17 for every 8th value). */
static void check_g(double v, int prec)
{
    char got[TPU_DFMT_MAX], want[64];
    int n = tpu_dfmt_g(got, v, prec);
    snprintf(want, sizeof want, "%.*g", prec, v);
    checked++;
    if (strcmp(got, want) != 0 || n != (int)strlen(want))
        report("%.*g", prec, v, got, want);
}

static void check_round_trip(double v)
{
    char got[TPU_DFMT_MAX], want[64];
    int n = tpu_dfmt_round_trip(got, v);
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(want, sizeof want, "%.*g", prec, v);
        if (strtod(want, NULL) == v)
            break;
    }
    checked++;
    if (strcmp(got, want) != 0 || n != (int)strlen(want) || strtod(got, NULL) != v)
        report("round trip", 0, v, got, want);
}

static void check(double v)
{
    check_g(v, 12); /* the report page's series */
    check_g(v, 1 + (int)(next() % 17));
    if ((next() & 7) == 0)
        for (int prec = 1; prec <= 17; prec++)
            check_g(v, prec);
    if (isfinite(v))
        check_round_trip(v);
}

static double from_bits(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

TP_TEST(random_bit_patterns)
{
    for (int i = 0; i < 300000; i++)
        check(from_bits(next()));
    /* exponents near the exact range's edges (1e-14 .. 1e37) and zero's */
    for (int i = 0; i < 100000; i++) {
        int e = (int)(next() % 300) - 150;
        double v = ldexp(1.0 + (double)(next() >> 12) / 4503599627370496.0, e);
        check(i & 1 ? v : -v);
    }
    for (int i = 0; i < 2000; i++) /* subnormals */
        check(from_bits(next() & ((1ull << 52) - 1)));
    CHECK_EQ_INT(bad, 0);
}

/* Times in seconds, as the collector and the page compute them: n * 1e-9,
 * n / 1e9, and their sums and means. */
TP_TEST(nanoseconds_in_seconds)
{
    for (int i = 0; i < 300000; i++) {
        uint64_t ns = next() % (i % 3 == 2 ? 2000000000000000ull : i % 3 ? 5000000000ull : 200000ull);
        double sign = i % 7 ? 1 : -1;
        check(sign * (double)ns * 1e-9);
        check(sign * (double)ns / 1e9);
        check((double)ns / 1e9 / (double)(1 + next() % 300));
        check(sign * (double)ns);
    }
    CHECK_EQ_INT(bad, 0);
}

/* Decimal ties at the digit printf drops (half to even decides), values
 * that round up to the next power of ten, and %g's switch between the
 * fixed and the exponent style. */
TP_TEST(ties_carries_and_styles)
{
    for (int i = 0; i < 200000; i++) {
        double half = (double)(next() % 100000000) + 0.5; /* exact in binary */
        check(half);
        check(ldexp(half, -(int)(next() % 8)));
        check((double)(next() % 1000) + 0.125);
        check(ldexp((double)(next() % 10000), (int)(next() % 120) - 60));
    }
    for (int p = -40; p <= 40; p++) {
        double t = pow(10, p);
        double near[] = {t, nextafter(t, 0), nextafter(t, INFINITY), t * 0.99999999999995,
                         t * 0.999999999999995, t * 0.9999995, t * 9.5, t * 0.5, t * 1.5};
        for (size_t i = 0; i < sizeof near / sizeof near[0]; i++)
            for (int prec = 1; prec <= 17; prec++)
                check_g(near[i], prec), check_g(-near[i], prec);
        for (size_t i = 0; i < sizeof near / sizeof near[0]; i++)
            check_round_trip(near[i]);
    }
    for (int e = -1074; e <= 1023; e++) { /* powers of two: the narrower interval below */
        double t = ldexp(1.0, e);
        check(t);
        check(nextafter(t, 0));
        check(nextafter(t, INFINITY));
    }
    const double specials[] = {0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, 1e-4, 9.99999999999e-5,
                               1e-5, 1e12, 999999999999.5, 1e17, 123456789012345678.0,
                               5e-324, 2.2250738585072014e-308, 1.7976931348623157e308};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        for (int prec = 1; prec <= 17; prec++)
            check_g(specials[i], prec);
    char out[TPU_DFMT_MAX];
    tpu_dfmt_g(out, 0.1, 12);
    CHECK_STR(out, "0.1");
    tpu_dfmt_g(out, 2.5, 1);
    CHECK_STR(out, "2"); /* half to even */
    tpu_dfmt_g(out, 3.5, 1);
    CHECK_STR(out, "4");
    tpu_dfmt_g(out, 9.9999999999995, 12);
    CHECK_STR(out, "10");
    tpu_dfmt_g(out, 1234567.0, 3);
    CHECK_STR(out, "1.23e+06");
    tpu_dfmt_round_trip(out, 230 * 1e-9);
    CHECK_STR(out, "2.3000000000000002e-07");
    tpu_dfmt_round_trip(out, 230 / 1e9);
    CHECK_STR(out, "2.3e-07");
    CHECK_EQ_INT(bad, 0);
}

/* s read by tpu_dparse and by strtod: the same verdict (all of s consumed)
 * and, when accepted, the same double to the bit. */
static void check_parse(const char *s)
{
    double got = 0, want;
    int ok = tpu_dparse(s, strlen(s), &got);
    char *stop;
    want = strtod(s, &stop);
    int want_ok = *s && stop == s + strlen(s);
    checked++;
    if (ok != want_ok || (ok && memcmp(&got, &want, sizeof got) != 0 && !(isnan(got) && isnan(want))))
        if (bad++ < 10)
            fprintf(stderr, "  parse '%s': %d %.17g, strtod %d %.17g\n", s, ok, got, want_ok, want);
}

/* What the writers write (every printf style and precision of random and
 * nanosecond values), random digit strings with exponents, and text strtod
 * reads only in part or not at all. */
TP_TEST(parse_as_strtod_reads)
{
    char s[96];
    for (int i = 0; i < 300000; i++) {
        double v = i % 3 == 0 ? from_bits(next())
                 : i % 3 == 1 ? (double)(next() % 5000000000ull) / 1e9
                              : (double)(next() % 100000000) * pow(10, (int)(next() % 60) - 30);
        if (!isfinite(v))
            continue;
        snprintf(s, sizeof s, "%.*g", 1 + (int)(next() % 17), v), check_parse(s);
        tpu_dfmt_round_trip(s, v), check_parse(s);
        snprintf(s, sizeof s, "%.*f", (int)(next() % 12), fmod(v, 1e12)), check_parse(s);
        snprintf(s, sizeof s, "%.*e", (int)(next() % 20), v), check_parse(s);
        int nd = 1 + (int)(next() % 24), at = (int)(next() % (uint64_t)(nd + 1)), len = 0;
        if (next() & 1)
            s[len++] = next() & 1 ? '-' : '+';
        for (int d = 0; d < nd; d++) {
            if (d == at)
                s[len++] = '.';
            s[len++] = (char)('0' + next() % (d < 3 && (next() & 1) ? 1 : 10));
        }
        len += snprintf(s + len, sizeof s - (size_t)len, "e%d", (int)(next() % 70) - 35);
        check_parse(s);
    }
    static const char *odd[] = {"0", "-0", "+0", "0.0", "-0.000e5", ".5", "5.", ".", "-", "+",
                                "1e", "1e+", "e5", "1e5", "1E-5", "1.5e+3", "+-1", "1-2",
                                "9007199254740992", "9007199254740993", "9007199254740994",
                                "1e22", "1e23", "12345678901234567890", "1234567890123456789",
                                "0.000000000000000000000001", "1e-22", "4.9e-324", "1e400",
                                "inf", "nan", "0x10", " 1", "1 ", "00000000000000000000000001.5"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
        check_parse(odd[i]);
    double v;
    CHECK_EQ_INT(tpu_dparse("2.5e-07xyz", 7, &v), 1); /* only the n bytes */
    CHECK(v == 2.5e-07);
    CHECK_EQ_INT(tpu_dparse("", 0, &v), 0);
    CHECK_EQ_INT(bad, 0);
}

int main(void)
{
    RUN(random_bit_patterns);
    RUN(nanoseconds_in_seconds);
    RUN(ties_carries_and_styles);
    RUN(parse_as_strtod_reads);
    fprintf(stderr, "%ld values checked against printf\n", checked);
    return tp_test_finish();
}
