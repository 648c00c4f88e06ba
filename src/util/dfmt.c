#include "util/dfmt.h"
#include "util/buf.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

/* Every fraction below stays under 2^125, so 4 * (half a denominator) and
 * the products of the round-trip test cannot overflow. */
#define MAX_BITS 125
#define MAX_K5 30 /* 2^53 * 5^30 < 2^123 */
#define MAX_J10 37 /* 10^37 < 2^123 */

static const uint64_t pow10_64[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
    100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
    10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
    100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull};

/* 5^k, k <= MAX_K5 (5^27 is the last that fits 64 bits). */
static u128 pow5(int k)
{
    u128 p = 1;
    static const uint64_t p5_13 = 1220703125ull; /* 5^13 */
    for (; k >= 13; k -= 13)
        p *= p5_13;
    static const uint32_t small[13] = {1, 5, 25, 125, 625, 3125, 15625, 78125, 390625,
                                       1953125, 9765625, 48828125, 244140625};
    return p * small[k];
}

/* 10^j, j <= MAX_J10. */
static u128 pow10_128(int j)
{
    return j < 20 ? (u128)pow10_64[j] : (u128)pow10_64[19] * pow10_64[j - 19];
}

/* a * 10^k as an exact fraction num / den, den = 2^shift when shift >= 0
 * (then den is not set), and ulp = ulp(a) * 10^k * den (an integer).
 * -1 when it does not fit. */
typedef struct {
    u128 num, den, ulp;
    int shift;
} fraction;

static int bits_of(u128 x)
{
    uint64_t hi = (uint64_t)(x >> 64);
    return hi ? 128 - __builtin_clzll(hi) : (uint64_t)x ? 64 - __builtin_clzll((uint64_t)x) : 0;
}

static int scale(uint64_t m, int e, int k, fraction *f)
{
    f->shift = -1;
    if (k >= 0) {
        if (k > MAX_K5)
            return -1;
        u128 p5 = pow5(k);
        u128 n = (u128)m * p5;
        int t = e + k; /* a * 10^k = m * 5^k * 2^t */
        if (t >= 0) {
            if (bits_of(n) + t > MAX_BITS)
                return -1;
            f->num = n << t;
            f->shift = 0;
            f->ulp = 1; /* exact: the distance is 0 */
        } else {
            if (-t > MAX_BITS)
                return -1;
            f->num = n;
            f->shift = -t;
            f->ulp = p5; /* 2^e * 5^k * 2^k * 2^-t */
        }
        return 0;
    }
    int j = -k; /* a * 10^k = m * 2^e / 10^j */
    if (j > MAX_J10)
        return -1;
    u128 d = pow10_128(j);
    if (e >= 0) {
        if (53 + e > MAX_BITS)
            return -1;
        f->num = (u128)m << e;
        f->den = d;
        f->ulp = (u128)1 << e;
    } else {
        if (bits_of(d) - e > MAX_BITS)
            return -1;
        f->num = m;
        f->den = d << -e;
        f->ulp = 1;
    }
    return 0;
}

/* floor(num / den) and the remainder. */
static void divide(const fraction *f, u128 *q, u128 *r, u128 *den)
{
    if (f->shift >= 0) {
        *den = (u128)1 << f->shift;
        *q = f->num >> f->shift;
        *r = f->num & (*den - 1);
    } else if ((f->num >> 64) == 0 && (f->den >> 64) == 0) {
        uint64_t n = (uint64_t)f->num, d = (uint64_t)f->den;
        *den = d, *q = n / d, *r = n % d;
    } else {
        *den = f->den;
        *q = f->num / f->den;
        *r = f->num - *q * f->den;
    }
}

/* The prec significant digits of a = m * 2^e (normal, a > 0), rounded half
 * to even: a * 10^(prec-1-x) ~ digits with 10^(prec-1) <= digits < 10^prec,
 * *x the decimal exponent after rounding. *round_trips: whether that
 * decimal reads back as a. -1 when a's fractions do not fit. */
typedef struct {
    uint64_t digits;
    int x;
    int round_trips;
} decimal;

static int to_decimal(uint64_t m, int e, int prec, decimal *d)
{
    /* floor(log10(2^(e+52))), the estimate of floor(log10 a) (low by at most 1) */
    int x = ((e + 52) * 78913) >> 18;
    u128 lo = pow10_64[prec - 1], hi = pow10_64[prec];
    for (int tries = 0; tries < 4; tries++) {
        fraction f;
        if (scale(m, e, prec - 1 - x, &f) != 0)
            return -1;
        u128 q, r, den;
        divide(&f, &q, &r, &den);
        if (q >= hi) {
            x++;
            continue;
        }
        if (q < lo) {
            x--;
            continue;
        }
        u128 up = den - r; /* from a * 10^k up to q + 1, times den */
        int round_up = r > up || (r == up && (q & 1));
        u128 dist = round_up ? up : r;
        q += (u128)round_up;
        /* inside [a - ulp/2, a + ulp/2] (the lower half is ulp/4 at a power of
         * two); a tie reads back as a when m is even (strtod: half to even) */
        int below = !round_up && dist != 0;
        u128 lim = f.ulp;
        u128 twice = below && m == (1ull << 52) ? 4 * dist : 2 * dist;
        d->round_trips = twice < lim || (twice == lim && (m & 1) == 0);
        if (q == hi) { /* 9.99..95 rounded up to 10.00..0 */
            q /= 10;
            x++;
        }
        d->digits = (uint64_t)q;
        d->x = x;
        return 0;
    }
    return -1;
}

static char *put_n(char *o, const char *from, int n)
{
    for (int i = 0; i < n; i++)
        o[i] = from[i];
    return o + n;
}

/* digits (prec of them, trailing zeros allowed) as %g writes them. */
static int put_g(char *out, int neg, uint64_t digits, int prec, int x)
{
    char d[20];
    int i = prec;
    for (; i >= 2; i -= 2, digits /= 100) {
        const char *two = tpu_digit_pairs + 2 * (digits % 100);
        d[i - 2] = two[0];
        d[i - 1] = two[1];
    }
    if (i == 1)
        d[0] = (char)('0' + digits);
    int nd = prec;
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    char *o = out;
    if (neg)
        *o++ = '-';
    if (x < prec && x >= -4) {
        if (x >= 0) {
            o = put_n(o, d, x + 1);
            if (nd > x + 1) {
                *o++ = '.';
                o = put_n(o, d + x + 1, nd - x - 1);
            }
        } else {
            *o++ = '0';
            *o++ = '.';
            for (int z = 0; z < -x - 1; z++)
                *o++ = '0';
            o = put_n(o, d, nd);
        }
    } else {
        *o++ = d[0];
        if (nd > 1) {
            *o++ = '.';
            o = put_n(o, d + 1, nd - 1);
        }
        *o++ = 'e';
        *o++ = x < 0 ? '-' : '+';
        int ax = x < 0 ? -x : x;
        if (ax >= 100)
            *o++ = (char)('0' + ax / 100);
        *o++ = (char)('0' + ax / 10 % 10);
        *o++ = (char)('0' + ax % 10);
    }
    *o = '\0';
    return (int)(o - out);
}

/* v's mantissa and exponent (v = +-m * 2^e); 0 for a normal v. */
static int split(double v, uint64_t *m, int *e, int *neg)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    *neg = (int)(bits >> 63);
    int be = (int)(bits >> 52 & 0x7ff);
    if (be == 0 || be == 0x7ff)
        return -1; /* zero, subnormal, inf, nan */
    *m = (bits & ((1ull << 52) - 1)) | (1ull << 52);
    *e = be - 1075;
    return 0;
}

int tpu_dfmt_g(char *out, double v, int prec)
{
    prec = prec < 1 ? 1 : prec > 17 ? 17 : prec;
    if (v == 0) /* "0", "-0" */
        return put_g(out, signbit(v) != 0, 0, 1, 0);
    uint64_t m;
    int e, neg;
    decimal d;
    if (split(v, &m, &e, &neg) == 0 && to_decimal(m, e, prec, &d) == 0)
        return put_g(out, neg, d.digits, prec, d.x);
    return snprintf(out, TPU_DFMT_MAX, "%.*g", prec, v);
}

int tpu_dfmt_round_trip(char *out, double v)
{
    uint64_t m;
    int e, neg;
    if (split(v, &m, &e, &neg) == 0) {
        for (int prec = 15; prec <= 17; prec++) {
            decimal d;
            if (to_decimal(m, e, prec, &d) != 0)
                break;
            if (d.round_trips || prec == 17)
                return put_g(out, neg, d.digits, prec, d.x);
        }
    }
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, TPU_DFMT_MAX, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    return n;
}

/* 10^0 .. 10^22: every one exact in a double. */
static const double exact_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The fast path of tpu_dparse: 0 when s[0..n) is not a short plain decimal. */
static int parse_short(const char *s, size_t n, double *out)
{
    size_t i = 0;
    int neg = 0, digits = 0, significant = 0, exp10 = 0;
    uint64_t m = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        if (m == 0 && s[i] == '0')
            continue;
        if (++significant > 19)
            return 0;
        m = m * 10 + (uint64_t)(s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
            exp10--;
            if (m == 0 && s[i] == '0')
                continue;
            if (++significant > 19)
                return 0;
            m = m * 10 + (uint64_t)(s[i] - '0');
        }
    }
    if (digits == 0)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0, e = 0, edigits = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, edigits++)
            if ((e = e * 10 + (s[i] - '0')) > 9999)
                return 0;
        if (edigits == 0)
            return 0;
        exp10 += eneg ? -e : e;
    }
    if (i != n)
        return 0;
    double v;
    if (m == 0)
        v = 0.0;
    else if (m > (1ull << 53) || exp10 < -22 || exp10 > 22)
        return 0;
    else
        v = exp10 >= 0 ? (double)m * exact_pow10[exp10] : (double)m / exact_pow10[-exp10];
    *out = neg ? -v : v;
    return 1;
}

int tpu_dparse(const char *s, size_t n, double *out)
{
    if (parse_short(s, n, out))
        return 1;
    char tmp[64];
    size_t k = n < sizeof tmp ? n : sizeof tmp - 1; /* longer: strtod reads a cut copy */
    memcpy(tmp, s, k);
    tmp[k] = '\0';
    char *stop;
    *out = strtod(tmp, &stop);
    return k == n && k > 0 && stop == tmp + k;
}
