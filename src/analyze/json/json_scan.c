/* json_scan.c - JSON scanning primitives (see json_scan.h). */
#include "analyze/json/json_scan.h"

#include <string.h>

#define FAIL(e_, at_, code_, msg_) \
    do { (e_)->at = (at_); (e_)->code = (code_); (e_)->msg = (msg_); return SC_ERR; } while (0)

bool tpa_utf8_valid(const char *p, size_t n, size_t *bad_at)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {  /* ASCII fast path, 8 bytes at a time */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) { i += 8; continue; }
        }
        unsigned c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t need;
        unsigned min;
        if (c >= 0xC2 && c <= 0xDF) { need = 1; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; min = 0x10000; }
        else goto bad;
        if (i + need >= n)
            goto bad;
        unsigned cp = c & (0x3F >> need);
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                goto bad;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            goto bad;
        i += need + 1;
    }
    return true;
bad:
    if (bad_at)
        *bad_at = i;
    return false;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_hex4(const char *p, const char *end, unsigned *out)
{
    if (end - p < 4)
        return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return false;
        v = (v << 4) | (unsigned)h;
    }
    *out = v;
    return true;
}

static size_t put_utf8(char *d, unsigned cp)
{
    if (cp < 0x80) { d[0] = (char)cp; return 1; }
    if (cp < 0x800) { d[0] = (char)(0xC0 | (cp >> 6)); d[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | (cp >> 12)); d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    d[0] = (char)(0xF0 | (cp >> 18)); d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* One escape sequence at src (just after the backslash). A \u escape of
 * 6 bytes decodes to at most 3 bytes, a surrogate pair of 12 to 4, so the
 * output never outgrows the input. */
static int decode_escape(const char **ps, const char *end, char **pd, tpa_scanerr *e)
{
    const char *s = *ps;
    char *d = *pd;
    if (s >= end)
        FAIL(e, s, TPA_ERR_SYNTAX, "unfinished escape in string");
    char c = *s++;
    switch (c) {
    case '"': *d++ = '"'; break;
    case '\\': *d++ = '\\'; break;
    case '/': *d++ = '/'; break;
    case 'b': *d++ = '\b'; break;
    case 'f': *d++ = '\f'; break;
    case 'n': *d++ = '\n'; break;
    case 'r': *d++ = '\r'; break;
    case 't': *d++ = '\t'; break;
    case 'u': {
        unsigned cp, lo;
        if (!read_hex4(s, end, &cp))
            FAIL(e, s, TPA_ERR_SYNTAX, "bad \\u escape in string");
        s += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            FAIL(e, s - 6, TPA_ERR_UTF8, "unpaired low surrogate in string");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - s < 6 || s[0] != '\\' || s[1] != 'u' || !read_hex4(s + 2, end, &lo) ||
                lo < 0xDC00 || lo > 0xDFFF)
                FAIL(e, s - 6, TPA_ERR_UTF8, "unpaired high surrogate in string");
            s += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        d += put_utf8(d, cp);
        break;
    }
    default:
        FAIL(e, s - 2, TPA_ERR_SYNTAX, "invalid escape in string");
    }
    *ps = s;
    *pd = d;
    return SC_OK;
}

int tpa_decode_string(const char *src, size_t n, char *dst, size_t *out_n, tpa_scanerr *e)
{
    const char *s = src, *end = src + n;
    char *d = dst;
    while (s < end) {
        if (*s != '\\') {
            *d++ = *s++;
            continue;
        }
        s++;
        if (decode_escape(&s, end, &d, e) != SC_OK)
            return SC_ERR;
    }
    size_t bad;
    if (!tpa_utf8_valid(dst, (size_t)(d - dst), &bad)) {
        /* Map the position back roughly: good enough for an error excerpt. */
        FAIL(e, src + (bad < n ? bad : n), TPA_ERR_UTF8, "invalid UTF-8 in string");
    }
    *out_n = (size_t)(d - dst);
    return SC_OK;
}

static inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Eight ASCII digits at p as a number (false when they are not all
 * digits), with a few word-wide operations instead of a loop: timestamps
 * have 16 digits. */
static inline bool eight_digits(const char *p, uint64_t *out)
{
    uint64_t w;
    memcpy(&w, p, 8);
    if (((w & 0xF0F0F0F0F0F0F0F0ULL) |
         (((w + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) != 0x3333333333333333ULL)
        return false;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    w -= 0x3030303030303030ULL;
    w = w * 10 + (w >> 8);  /* pairs of digits */
    w = (((w & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
         (((w >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
    *out = w;
#else
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v * 10 + (uint64_t)(p[i] - '0');
    *out = v;
#endif
    return true;
}

int tpa_scan_number(const char **pp, const char *end, tpa_scanerr *e, tpa_num *num)
{
    const char *p = *pp;
    num->mant = 0; num->exp10 = 0; num->neg = false; num->is_int = true;
    int sig = 0;
    if (p < end && *p == '-') { num->neg = true; p++; }
    if (p >= end) return SC_MORE;
    if (!is_digit(*p))
        FAIL(e, p, TPA_ERR_SYNTAX, "invalid number");
    if (*p == '0') {
        p++;
    } else {
        uint64_t eight;  /* the first digit is not 0: every digit is significant */
        while (sig <= 11 && end - p >= 8 && eight_digits(p, &eight)) {
            num->mant = num->mant * 100000000u + eight;
            sig += 8;
            p += 8;
        }
        while (p < end && is_digit(*p)) {
            if (sig < 19) { num->mant = num->mant * 10 + (uint64_t)(*p - '0'); if (num->mant) sig++; }
            else num->exp10++;
            p++;
        }
    }
    if (p < end && *p == '.') {
        num->is_int = false;
        p++;
        if (p >= end) return SC_MORE;
        if (!is_digit(*p))
            FAIL(e, p, TPA_ERR_SYNTAX, "invalid number: digit expected after '.'");
        while (p < end && is_digit(*p)) {
            if (sig < 19) { num->mant = num->mant * 10 + (uint64_t)(*p - '0'); num->exp10--; if (num->mant) sig++; }
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        num->is_int = false;
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-')) { eneg = *p == '-'; p++; }
        if (p >= end) return SC_MORE;
        if (!is_digit(*p))
            FAIL(e, p, TPA_ERR_SYNTAX, "invalid number: exponent digits expected");
        int ev = 0;
        while (p < end && is_digit(*p)) {
            if (ev < 100000) ev = ev * 10 + (*p - '0');
            p++;
        }
        num->exp10 += eneg ? -ev : ev;
    }
    if (p >= end) return SC_MORE;  /* the number may continue in the next chunk */
    *pp = p;
    return SC_OK;
}

bool tpa_parse_num_text(const char *p, size_t n, tpa_num *num)
{
    tpa_scanerr e;
    char tmp[64];
    if (n == 0 || n >= sizeof tmp - 1)
        return false;
    memcpy(tmp, p, n);
    tmp[n] = ' ';  /* terminator so the scanner does not ask for more */
    const char *q = tmp;
    return tpa_scan_number(&q, tmp + n + 1, &e, num) == SC_OK && q == tmp + n;
}

static bool scale(uint64_t m, int exp10, uint64_t *out)
{
    if (m == 0) { *out = 0; return true; }
    while (exp10 > 0) {
        if (m > UINT64_MAX / 10) return false;
        m *= 10; exp10--;
    }
    if (exp10 < -19) { *out = 0; return true; }
    uint64_t div = 1;
    for (int i = 0; i < -exp10; i++) div *= 10;
    uint64_t q = m / div, r = m % div;
    if (div > 1 && r >= div - r) q++;  /* round half up */
    *out = q;
    return true;
}

bool tpa_num_us_to_ns(const tpa_num *num, int64_t *ns)
{
    uint64_t v;
    if (!scale(num->mant, num->exp10 + 3, &v) || v > (uint64_t)INT64_MAX)
        return false;
    *ns = num->neg ? -(int64_t)v : (int64_t)v;
    return true;
}

bool tpa_num_to_i64(const tpa_num *num, int64_t *out)
{
    uint64_t v;
    if (!scale(num->mant, num->exp10, &v) || v > (uint64_t)INT64_MAX)
        return false;
    *out = num->neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static int expect_lit(const char **pp, const char *end, const char *lit, size_t n, tpa_scanerr *e)
{
    const char *p = *pp;
    size_t have = (size_t)(end - p);
    if (memcmp(p, lit, have < n ? have : n) != 0)
        FAIL(e, p, TPA_ERR_SYNTAX, "invalid literal");
    if (have < n)
        return SC_MORE;
    *pp = p + n;
    return SC_OK;
}

static int skip_number(const char **pp, const char *end, tpa_scanerr *e);

/* A plain integer of at most 7 digits (0 or no leading zero) ending the
 * value, as in "Input Dims" and kernel grids: its end, else NULL (the
 * caller takes the full number grammar). */
static inline const char *short_int_end(const char *p, const char *end)
{
    if (end - p <= 8 || *p < '0' || *p > '9')
        return NULL;
    const char *q = p + (*p == '0' ? 1 : tpa_digit_run8(p));
    if (q == p + 8 || tpa_is_digit(*q) || *q == '.' || *q == 'e' || *q == 'E')
        return NULL;
    return q;
}

/* Skips a whole array or object, validating it, in one loop with an explicit
 * stack (one bit per level: 1 = object) instead of one call per value:
 * Kineto's `args` hold many small nested arrays ("Input Dims"). The usual
 * separators (",", ", ", ":", ": ") and short integers are taken without a
 * call; anything else goes the general way. */
static int skip_container(const char **pp, const char *end, tpa_scanerr *e, int depth)
{
    const char *p = *pp;
    uint64_t is_obj[(TPA_MAX_DEPTH + 63) / 64];
    int d = 0;  /* levels open */
    bool obj;   /* the innermost open level is an object */
    int rc;
open:
    if (depth + d >= TPA_MAX_DEPTH)
        FAIL(e, p, TPA_ERR_LIMIT, "nesting too deep");
    obj = *p == '{';
    if (obj) is_obj[d >> 6] |= 1ULL << (d & 63);
    else is_obj[d >> 6] &= ~(1ULL << (d & 63));
    d++;
    p = tpa_skip_ws(p + 1, end);
    if (p >= end) return SC_MORE;
    if (*p == '}' || *p == ']')
        goto close;
member:
    if (obj) {
        const char *s; size_t n; bool esc;
        if (*p != '"')
            FAIL(e, p, TPA_ERR_SYNTAX, "expected a string key");
        if ((rc = tpa_scan_string(&p, end, e, &s, &n, &esc)) != SC_OK) return rc;
        if ((rc = tpa_expect_colon(&p, end, e)) != SC_OK) return rc;
    }
    switch (*p) {
    case '{': case '[':
        goto open;
    case '"': {
        const char *s; size_t n; bool esc;
        rc = tpa_scan_string(&p, end, e, &s, &n, &esc);
        break;
    }
    case 't': rc = expect_lit(&p, end, "true", 4, e); break;
    case 'f': rc = expect_lit(&p, end, "false", 5, e); break;
    case 'n': rc = expect_lit(&p, end, "null", 4, e); break;
    default: {
        const char *q = short_int_end(p, end);
        if (q) { p = q; rc = SC_OK; }
        else rc = skip_number(&p, end, e);
        break;
    }
    }
    if (rc != SC_OK) return rc;
after_value:
    if (end - p > 2 && p[0] == ',') {
        if ((unsigned char)p[1] > ' ') { p++; goto member; }
        if (p[1] == ' ' && (unsigned char)p[2] > ' ') { p += 2; goto member; }
    }
    p = tpa_skip_ws(p, end);
    if (p >= end) return SC_MORE;
    if (*p == ',') {
        p = tpa_skip_ws(p + 1, end);
        if (p >= end) return SC_MORE;
        goto member;
    }
close:
    if (*p != (obj ? '}' : ']'))
        FAIL(e, p, TPA_ERR_SYNTAX, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    p++;
    if (--d == 0) { *pp = p; return SC_OK; }
    obj = is_obj[(d - 1) >> 6] >> ((d - 1) & 63) & 1;
    goto after_value;
}

/* The number grammar of tpa_scan_number, without computing the value. */
static int skip_number(const char **pp, const char *end, tpa_scanerr *e)
{
    const char *p = *pp;
    if (p < end && *p == '-') p++;
    if (p >= end) return SC_MORE;
    if (!is_digit(*p))
        FAIL(e, p, TPA_ERR_SYNTAX, "invalid number");
    if (*p == '0') p++;
    else while (p < end && is_digit(*p)) p++;
    if (p < end && *p == '.') {
        p++;
        if (p >= end) return SC_MORE;
        if (!is_digit(*p))
            FAIL(e, p, TPA_ERR_SYNTAX, "invalid number: digit expected after '.'");
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end) return SC_MORE;
        if (!is_digit(*p))
            FAIL(e, p, TPA_ERR_SYNTAX, "invalid number: exponent digits expected");
        while (p < end && is_digit(*p)) p++;
    }
    if (p >= end) return SC_MORE;
    *pp = p;
    return SC_OK;
}

int tpa_skip_value(const char **pp, const char *end, tpa_scanerr *e, int depth)
{
    const char *p = *pp;
    if (p >= end) return SC_MORE;
    switch (*p) {
    case '"': {
        const char *s; size_t n; bool esc;
        return tpa_scan_string(pp, end, e, &s, &n, &esc);
    }
    case '{': case '[':
        return skip_container(pp, end, e, depth);
    case 't': return expect_lit(pp, end, "true", 4, e);
    case 'f': return expect_lit(pp, end, "false", 5, e);
    case 'n': return expect_lit(pp, end, "null", 4, e);
    default:
        return skip_number(pp, end, e);
    }
}
