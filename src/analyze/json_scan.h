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

static inline const char *tpa_skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

int tpa_scan_string(const char **pp, const char *end, tpa_scanerr *e,
                    const char **s, size_t *n, bool *escaped);
/* Decodes escapes of src[0..n) into dst (capacity >= n) and validates UTF-8. */
int tpa_decode_string(const char *src, size_t n, char *dst, size_t *out_n,
                      tpa_scanerr *e);
bool tpa_utf8_valid(const char *p, size_t n, size_t *bad_at);
int tpa_skip_value(const char **pp, const char *end, tpa_scanerr *e, int depth);
int tpa_scan_number(const char **pp, const char *end, tpa_scanerr *e, tpa_num *num);
/* value (in microseconds) -> ns; false when out of int64 range. */
bool tpa_num_us_to_ns(const tpa_num *num, int64_t *ns);
bool tpa_num_to_i64(const tpa_num *num, int64_t *v);
/* Decimal text such as "123.5" (a quoted timestamp) -> tpa_num. */
bool tpa_parse_num_text(const char *p, size_t n, tpa_num *num);

#endif
