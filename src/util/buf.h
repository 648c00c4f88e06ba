/*
 * buf.h - growable byte buffer.
 *
 * A tpu_buf starts zeroed ({0}) and grows on demand. When an allocation
 * fails the buffer keeps what it had, sets `oom` and ignores further
 * appends, so callers check once at the end instead of after every append.
 */
#ifndef TP_UTIL_BUF_H
#define TP_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct tpu_buf {
    char *data;  /* NUL-terminated when len > 0 or after tpu_buf_cstr */
    size_t len;
    size_t cap;
    int oom;     /* an allocation failed; contents are truncated */
} tpu_buf;

/* Ensures room for `extra` more bytes (+ a NUL). Returns 0, or -1 on OOM. */
int tpu_buf_reserve(tpu_buf *b, size_t extra);
void tpu_buf_append_slow(tpu_buf *b, const void *data, size_t n);

/* Inline when the bytes fit (the trace writers append ~10 pieces per
 * event; the calls cost more than the copies). An OOM buffer has cap 0
 * left unchanged or len + n + 1 > cap, so it takes the slow path. */
static inline void tpu_buf_append(tpu_buf *b, const void *data, size_t n)
{
    if (__builtin_expect(b->len + n < b->cap && !b->oom, 1)) {
        if (n) memcpy(b->data + b->len, data, n);  /* data may be NULL when n is 0 */
        b->len += n;
        b->data[b->len] = '\0';
        return;
    }
    tpu_buf_append_slow(b, data, n);
}

static inline void tpu_buf_puts(tpu_buf *b, const char *s) { tpu_buf_append(b, s, strlen(s)); }

static inline void tpu_buf_putc(tpu_buf *b, char c) { tpu_buf_append(b, &c, 1); }
/* "00" "01" ... "99": two decimal digits at 2 * v, for writers that take
 * digits two at a time. */
extern const char tpu_digit_pairs[201];
/* Decimal integers without printf (trace writers format several per event). */
void tpu_buf_put_u64(tpu_buf *b, unsigned long long v);
void tpu_buf_put_i64(tpu_buf *b, long long v);
/* ns as microseconds: "12", "12.5", "12.05", "12.345" (no trailing zeros). */
void tpu_buf_put_us(tpu_buf *b, unsigned long long ns);
void tpu_buf_printf(tpu_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tpu_buf_vprintf(tpu_buf *b, const char *fmt, va_list ap);
/* Grows the array *items (a T **, of *cap elements of `elem` bytes, doubling from
 * `first`) to hold at least `need`. Returns 0, or -1 on OOM (array kept). */
int tpu_reserve_items(void *items, size_t *cap, size_t need, size_t elem, size_t first);

/* tpu_reserve_items for a table indexed by id: room for index `id`, the
 * new elements zeroed. */
int tpu_reserve_index(void *items, size_t *cap, size_t id, size_t elem, size_t first);

/* Always returns a NUL-terminated string ("" for an empty buffer). */
const char *tpu_buf_cstr(tpu_buf *b);
/* Empties the buffer, keeping its memory. */
void tpu_buf_reset(tpu_buf *b);
/* Hands the memory to the caller (free() it) and empties the buffer. */
char *tpu_buf_detach(tpu_buf *b);
void tpu_buf_free(tpu_buf *b);

/* Room for need elements of elem bytes in the array p of *cap: p itself
 * when it has them, else p grown (at least doubled, 64 at first; *cap
 * updated). Aborts when memory runs out, as the buffer does. */
void *tpu_array_grow(void *p, size_t *cap, size_t need, size_t elem);

#endif
