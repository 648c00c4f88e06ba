/* json_scan.h - the json stage's interface: JSON scanning primitives over a
 * contiguous byte window (traces, rank summaries, a run's own JSON files).
 * May include: nothing of the analyzer.
 *
 * Every function takes a cursor *pp and the window end. It returns SC_OK and
 * advances the cursor past what it read, SC_MORE when the window ended before
 * the value did (the caller refills and retries from a saved position), or
 * SC_ERR with e->at/e->msg set. Nothing allocates; decoded strings go to a
 * caller-provided buffer.
 */
#ifndef TRAINPROF_ANALYZE_JSON_JSON_SCAN_H
#define TRAINPROF_ANALYZE_JSON_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* What went wrong, in a scan error (tpa_scanerr.code) and in the analyzer's
 * errors (trace.h). */
enum tpa_errcode {
    TPA_OK = 0,
    TPA_ERR_IO,      /* cannot open/read/write a file */
    TPA_ERR_SYNTAX,  /* malformed JSON */
    TPA_ERR_GZIP,    /* corrupt compressed stream */
    TPA_ERR_LIMIT,   /* nesting too deep, value too large, number out of range */
    TPA_ERR_UTF8,    /* invalid UTF-8 in a string we decode */
    TPA_ERR_EMPTY,   /* empty input */
    TPA_ERR_FORMAT,  /* JSON, but not a trace (no traceEvents array) */
    TPA_ERR_USAGE    /* bad option value */
};

enum { SC_OK = 0, SC_MORE = 1, SC_ERR = 2 };

#define TPA_MAX_DEPTH 128   /* nesting allowed inside one event or member */

typedef struct tpa_scanerr {
    const char *at;    /* where the problem is */
    const char *msg;   /* static text */
    int code;          /* enum tpa_errcode */
} tpa_scanerr;

typedef struct tpa_num {
    uint64_t mant;     /* first 19 significant digits */
    int exp10;         /* value = mant * 10^exp10 (sign separate) */
    bool neg;
    bool is_int;       /* no fraction/exponent in the text */
} tpa_num;

static inline bool tpa_is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Indented traces put a newline and several spaces between members: runs of
 * whitespace are skipped 16 bytes at a time where SSE2 exists (every
 * x86_64 CPU has it). */
static inline const char *tpa_skip_ws(const char *p, const char *end)
{
    if (p < end && (unsigned char)*p > ' ')  /* the usual case: no whitespace */
        return p;
    if (p < end && !tpa_is_ws(*p))
        return p;
#ifdef __SSE2__
    const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n');
    const __m128i cr = _mm_set1_epi8('\r'), tab = _mm_set1_epi8('\t');
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
                                  _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tab)));
        unsigned other = ~(unsigned)_mm_movemask_epi8(ws) & 0xFFFFu;
        if (other)
            return p + __builtin_ctz(other);
        p += 16;
    }
#endif
    while (p < end && tpa_is_ws(*p))
        p++;
    return p;
}

/* After a member's key: the ':' and the whitespace around it, *pp left on
 * the value. ":x" and ": x" take the fast path. */
static inline __attribute__((always_inline)) int tpa_expect_colon(const char **pp, const char *end,
                                                                  tpa_scanerr *e)
{
    const char *p = *pp;
    if (end - p > 2 && p[0] == ':') {
        if ((unsigned char)p[1] > ' ') { *pp = p + 1; return SC_OK; }
        if (p[1] == ' ' && (unsigned char)p[2] > ' ') { *pp = p + 2; return SC_OK; }
    }
    p = tpa_skip_ws(p, end);
    if (p >= end) return SC_MORE;
    if (*p != ':') {
        e->at = p;
        e->code = TPA_ERR_SYNTAX;
        e->msg = "expected ':' after key";
        return SC_ERR;
    }
    p = tpa_skip_ws(p + 1, end);
    if (p >= end) return SC_MORE;
    *pp = p;
    return SC_OK;
}

/* How many of the 8 bytes at p are ASCII digits before the first one that
 * is not (8 when all are), without a loop: ids such as pid 3113936 have
 * fewer than 8 digits. */
static inline __attribute__((always_inline)) unsigned tpa_digit_run8(const char *p)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, p, 8);
    /* a digit byte maps to 0x33: high nibble 3, and still 3 after adding 6
     * (a carry out of a byte only disturbs bytes after a non-digit) */
    uint64_t x = (w & 0xF0F0F0F0F0F0F0F0ULL) | (((w + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4);
    uint64_t z = x ^ 0x3333333333333333ULL;
    uint64_t nonzero = (((z & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) | z) & 0x8080808080808080ULL;
    return nonzero ? (unsigned)__builtin_ctzll(nonzero) >> 3 : 8;
#else
    unsigned n = 0;
    while (n < 8 && p[n] >= '0' && p[n] <= '9') n++;
    return n;
#endif
}

/* The value of the n (1..8) ASCII digits at p; 8 bytes at p readable. */
static inline __attribute__((always_inline)) uint64_t tpa_digits_value(const char *p, unsigned n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, p, 8);
    /* digits to the top bytes (leading zeros below them); the bytes after
     * the digits, and any borrow among them, are shifted out */
    w = (w - 0x3030303030303030ULL) << (8 * (8 - n));
    w = w * 10 + (w >> 8);  /* pairs of digits */
    return (((w & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
            (((w >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
#else
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v = v * 10 + (uint64_t)(p[i] - '0');
    return v;
#endif
}

/* String scanning is inline: keys and short values make it the hottest
 * call of the reader. */
/* Bytes of w equal to c have their high bit set in the result (the
 * classic "has zero byte" test on w ^ c...c). */
static inline uint64_t bytes_eq(uint64_t w, uint64_t c)
{
    uint64_t x = w ^ c;
    return (x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL;
}

/* The first '"' or '\\' in [q, end), or end: 16 bytes at a time with SSE2
 * (every x86_64 CPU has it), else 8 at a time in a 64-bit word. */
static inline const char *find_quote_or_backslash(const char *q, const char *end)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    while (end - q >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
        unsigned hit = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
        if (hit)
            return q + __builtin_ctz(hit);
        q += 16;
    }
#endif
    while (end - q >= 8) {
        uint64_t w;
        memcpy(&w, q, 8);
        uint64_t hit = bytes_eq(w, 0x2222222222222222ULL) | bytes_eq(w, 0x5C5C5C5C5C5C5C5CULL);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (hit)
            return q + (__builtin_ctzll(hit) >> 3);  /* the lowest hit is exact */
#else
        if (hit) break;
#endif
        q += 8;
    }
    while (q < end && *q != '"' && *q != '\\') q++;
    return q;
}

/* Finds the closing quote; a backslash skips the byte after it, so an
 * escaped quote never ends the string. With SSE2 the quote and backslash
 * masks of each 16 bytes tell at once whether a quote comes before any
 * backslash (the common case: done, without reading the byte again). */
static inline __attribute__((always_inline)) int tpa_scan_string(const char **pp, const char *end, tpa_scanerr *e,
                    const char **s, size_t *n, bool *escaped)
{
    const char *start = *pp + 1;
    const char *q = start;
    bool esc = false;
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    while (end - q >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
        unsigned qm = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote));
        unsigned bm = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, bslash));
        if (qm & (bm - 1)) {  /* a quote before the first backslash (or none) */
            q += __builtin_ctz(qm);
            goto found;
        }
        if (bm) {
            esc = true;
            q += __builtin_ctz(bm) + 2;  /* the escaped byte, whatever it is */
        } else {
            q += 16;
        }
    }
#endif
    for (;;) {
        if (q >= end) return SC_MORE;
        q = find_quote_or_backslash(q, end);
        if (q >= end) return SC_MORE;
        if (*q == '"') break;
        esc = true;
        q += 2;
    }
#ifdef __SSE2__
found:
#endif
    *s = start;
    *n = (size_t)(q - start);
    *escaped = esc;
    *pp = q + 1;
    (void)e;
    return SC_OK;
}

/* Decodes escapes of src[0..n) into dst (capacity >= n) and validates UTF-8. */
int tpa_decode_string(const char *src, size_t n, char *dst, size_t *out_n,
                      tpa_scanerr *e);
bool tpa_utf8_valid(const char *p, size_t n, size_t *bad_at);
int tpa_skip_value(const char **pp, const char *end, tpa_scanerr *e, int depth);
int tpa_scan_number(const char **pp, const char *end, tpa_scanerr *e, tpa_num *num);
/* value (in microseconds) -> ns; false when out of int64 range. */
bool tpa_num_us_to_ns(const tpa_num *num, int64_t *ns);
bool tpa_num_to_i64(const tpa_num *num, int64_t *v);
/* Fast paths for the common shapes, 0 when the text has another shape (the
 * caller then takes tpa_scan_number): a plain unsigned integer of at most
 * 18 digits (its length; value in *v), and a non-negative time in
 * microseconds below TPA_FAST_MAX_US with at most 3 decimals (its length;
 * exact nanoseconds in *ns). Both need 24 readable bytes from p. */
#define TPA_FAST_MAX_US 4000000000000000ULL
/* (inline: they are the reader's per-event number conversions) */
static inline bool tpa_is_digit(char c) { return c >= '0' && c <= '9'; }

/* The digits of a plain unsigned integer at p (at most 18, no leading
 * zero): their count, value in *v; 0 for anything else. p[0..19] must be
 * readable. */
static inline __attribute__((always_inline)) size_t tpa_uint_run(const char *p, uint64_t *v)
{
    static const uint64_t pow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    if (p[0] == '0') {
        *v = 0;
        return tpa_is_digit(p[1]) ? 0 : 1;
    }
    unsigned a = tpa_digit_run8(p);
    if (a < 8) {
        if (!a) return 0;
        *v = tpa_digits_value(p, a);
        return a;
    }
    uint64_t m = tpa_digits_value(p, 8);
    unsigned b = tpa_digit_run8(p + 8);
    if (b) m = m * pow10[b] + tpa_digits_value(p + 8, b);
    size_t n = 8 + b;
    while (n < 19 && tpa_is_digit(p[n])) { m = m * 10 + (uint64_t)(p[n] - '0'); n++; }
    if (n > 18) return 0;
    *v = m;
    return n;
}

static inline bool tpa_ends_number(char c) { return !tpa_is_digit(c) && c != '.' && c != 'e' && c != 'E'; }

static inline __attribute__((always_inline)) size_t tpa_scan_small_uint(const char *p, const char *end, uint64_t *v)
{
    if (end - p < 20) return 0;
    size_t n = tpa_uint_run(p, v);
    return n && tpa_ends_number(p[n]) ? n : 0;
}

static inline __attribute__((always_inline)) size_t tpa_scan_us_fast(const char *p, const char *end, int64_t *ns)
{
    static const uint64_t frac_scale[4] = {1000, 100, 10, 1};
    uint64_t us, frac = 0;
    if (end - p < 24) return 0;
    size_t n = tpa_uint_run(p, &us), k = 0;
    if (!n || us >= TPA_FAST_MAX_US) return 0;
    if (p[n] == '.') {
        while (k < 3 && tpa_is_digit(p[n + 1 + k])) { frac = frac * 10 + (uint64_t)(p[n + 1 + k] - '0'); k++; }
        if (k == 0) return 0;
        n += 1 + k;
    }
    if (!tpa_ends_number(p[n])) return 0;
    *ns = (int64_t)(us * 1000 + frac * frac_scale[k]);
    return n;
}

/* Decimal text such as "123.5" (a quoted timestamp) -> tpa_num. */
bool tpa_parse_num_text(const char *p, size_t n, tpa_num *num);

#endif
