/* json_scan.h - JSON scanning primitives over a contiguous byte window.
 *
 * Every function takes a cursor *pp and the window end. It returns SC_OK and
 * advances the cursor past what it read, SC_MORE when the window ended before
 * the value did (the caller refills and retries from a saved position), or
 * SC_ERR with e->at/e->msg set. Nothing allocates; decoded strings go to a
 * caller-provided buffer.
 */
#ifndef TRAINPROF_ANALYZE_JSON_SCAN_H
#define TRAINPROF_ANALYZE_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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
 * escaped quote never ends the string. */
static inline int tpa_scan_string(const char **pp, const char *end, tpa_scanerr *e,
                    const char **s, size_t *n, bool *escaped)
{
    const char *start = *pp + 1;
    const char *q = start;
    bool esc = false;
    for (;;) {
        q = find_quote_or_backslash(q, end);
        if (q >= end) return SC_MORE;
        if (*q == '"') break;
        esc = true;
        q += 2;  /* the escaped byte, whatever it is */
        if (q >= end) return SC_MORE;
    }
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
size_t tpa_scan_small_uint(const char *p, const char *end, uint64_t *v);
size_t tpa_scan_us_fast(const char *p, const char *end, int64_t *ns);
/* Decimal text such as "123.5" (a quoted timestamp) -> tpa_num. */
bool tpa_parse_num_text(const char *p, size_t n, tpa_num *num);

#endif
