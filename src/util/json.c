#include "util/json.h"

#include "util/dfmt.h"

#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

void tpu_json_init(tpu_json *j, tpu_buf *out, int pretty)
{
    memset(j, 0, sizeof *j);
    j->out = out;
    j->pretty = pretty;
}

static void newline_indent(tpu_json *j)
{
    if (!j->pretty)
        return;
    tpu_buf_putc(j->out, '\n');
    for (int i = 0; i < j->depth; i++)
        tpu_buf_append(j->out, "  ", 2);
}

/* Emits the separator owed before a new value or key at the current depth. */
static void before_item(tpu_json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth > 0 && j->depth <= TPU_JSON_MAX_DEPTH) {
        if (j->has_items[j->depth - 1])
            tpu_buf_putc(j->out, ',');
        j->has_items[j->depth - 1] = 1;
        newline_indent(j);
    }
}

static void open_container(tpu_json *j, char c)
{
    before_item(j);
    tpu_buf_putc(j->out, c);
    if (j->depth < TPU_JSON_MAX_DEPTH)
        j->has_items[j->depth] = 0;
    j->depth++;
}

static void close_container(tpu_json *j, char c)
{
    int had = j->depth > 0 && j->depth <= TPU_JSON_MAX_DEPTH && j->has_items[j->depth - 1];
    if (j->depth > 0)
        j->depth--;
    if (had)
        newline_indent(j);
    tpu_buf_putc(j->out, c);
}

void tpu_json_begin_object(tpu_json *j) { open_container(j, '{'); }
void tpu_json_end_object(tpu_json *j) { close_container(j, '}'); }
void tpu_json_begin_array(tpu_json *j) { open_container(j, '['); }
void tpu_json_end_array(tpu_json *j) { close_container(j, ']'); }

void tpu_json_key(tpu_json *j, const char *key)
{
    before_item(j);
    tpu_buf_putc(j->out, '"');
    tpu_json_escape(j->out, key, strlen(key));
    tpu_buf_append(j->out, j->pretty ? "\": " : "\":", j->pretty ? 3 : 2);
    j->after_key = 1;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; }
    else return 0;
    if (len > n)
        return 0;
    unsigned cp = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* Bytes from p[0] on that need no escape and no UTF-8 check (printable
 * ASCII other than '"' and '\\'), 16 at a time: a page's strings are
 * mostly such bytes (a trace's args, a kernel's name). */
static size_t plain_ascii_run(const unsigned char *p, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        /* signed: bytes from 0x80 are negative, so one compare finds them and the controls */
        __m128i special = _mm_or_si128(_mm_cmplt_epi8(v, space),
                                       _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
        unsigned mask = (unsigned)_mm_movemask_epi8(special);
        if (mask) return i + (size_t)__builtin_ctz(mask);
    }
#endif
    while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\') i++;
    return i;
}

void tpu_json_escape(tpu_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;
    if (!n) return;  /* s may be NULL: no pointer arithmetic on it */
    while (i < n) {
        size_t plain = plain_ascii_run(p + i, n - i);
        i += plain;
        run += plain;
        if (i >= n) break;
        unsigned char c = p[i];  /* a control, '"', '\\', or a byte from 0x80 */
        size_t seq = c >= 0x80 ? utf8_seq_len(p + i, n - i) : 0;
        if (seq > 1) {
            i += seq;
            run += seq;
            continue;
        }
        tpu_buf_append(b, p + i - run, run);
        run = 0;
        switch (c) {
        case '"': tpu_buf_append(b, "\\\"", 2); break;
        case '\\': tpu_buf_append(b, "\\\\", 2); break;
        case '\n': tpu_buf_append(b, "\\n", 2); break;
        case '\r': tpu_buf_append(b, "\\r", 2); break;
        case '\t': tpu_buf_append(b, "\\t", 2); break;
        default:
            if (c < 0x20)
                tpu_buf_printf(b, "\\u%04x", c);
            else
                tpu_buf_append(b, "\\ufffd", 6); /* invalid UTF-8 byte */
        }
        i++;
    }
    tpu_buf_append(b, p + i - run, run);
}

void tpu_json_format_double(tpu_buf *b, double v)
{
    if (!isfinite(v)) {
        tpu_buf_append(b, "null", 4);
        return;
    }
    if (v == 0) {
        tpu_buf_putc(b, '0');
        return;
    }
    /* A whole number below 1e15 has at most 15 digits: "%.15g" writes it
     * as its plain digits, and that string reads back as v. */
    if (v > -1e15 && v < 1e15 && v == (double)(int64_t)v) {
        tpu_buf_put_i64(b, (long long)v);
        return;
    }
    char tmp[TPU_DFMT_MAX];
    tpu_buf_append(b, tmp, (size_t)tpu_dfmt_round_trip(tmp, v));
}

void tpu_json_string_n(tpu_json *j, const char *s, size_t n)
{
    before_item(j);
    tpu_buf_putc(j->out, '"');
    tpu_json_escape(j->out, s, n);
    tpu_buf_putc(j->out, '"');
}

void tpu_json_string(tpu_json *j, const char *s)
{
    if (!s) {
        tpu_json_null(j);
        return;
    }
    tpu_json_string_n(j, s, strlen(s));
}

void tpu_json_int(tpu_json *j, int64_t v)
{
    before_item(j);
    tpu_buf_put_i64(j->out, v);
}

void tpu_json_uint(tpu_json *j, uint64_t v)
{
    before_item(j);
    tpu_buf_put_u64(j->out, v);
}

void tpu_json_double(tpu_json *j, double v)
{
    before_item(j);
    tpu_json_format_double(j->out, v);
}

void tpu_json_float(tpu_json *j, double v)
{
    before_item(j);
    size_t at = j->out->len;
    tpu_json_format_double(j->out, v);
    if (!j->out->oom && !memchr(j->out->data + at, '.', j->out->len - at) &&
        !memchr(j->out->data + at, 'e', j->out->len - at) && isfinite(v))
        tpu_buf_puts(j->out, ".0");
}

void tpu_json_bool(tpu_json *j, int v)
{
    before_item(j);
    tpu_buf_puts(j->out, v ? "true" : "false");
}

void tpu_json_null(tpu_json *j)
{
    before_item(j);
    tpu_buf_append(j->out, "null", 4);
}

void tpu_json_kv_string(tpu_json *j, const char *k, const char *v) { tpu_json_key(j, k); tpu_json_string(j, v); }
void tpu_json_kv_int(tpu_json *j, const char *k, int64_t v) { tpu_json_key(j, k); tpu_json_int(j, v); }
void tpu_json_kv_uint(tpu_json *j, const char *k, uint64_t v) { tpu_json_key(j, k); tpu_json_uint(j, v); }
void tpu_json_kv_double(tpu_json *j, const char *k, double v) { tpu_json_key(j, k); tpu_json_double(j, v); }
void tpu_json_kv_float(tpu_json *j, const char *k, double v) { tpu_json_key(j, k); tpu_json_float(j, v); }
void tpu_json_kv_bool(tpu_json *j, const char *k, int v) { tpu_json_key(j, k); tpu_json_bool(j, v); }

void tpu_json_raw(tpu_json *j, const char *text, size_t n)
{
    before_item(j);
    tpu_buf_append(j->out, text, n);
}
