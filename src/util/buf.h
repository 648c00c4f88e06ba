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

typedef struct tpu_buf {
    char *data;  /* NUL-terminated when len > 0 or after tpu_buf_cstr */
    size_t len;
    size_t cap;
    int oom;     /* an allocation failed; contents are truncated */
} tpu_buf;

/* Ensures room for `extra` more bytes (+ a NUL). Returns 0, or -1 on OOM. */
int tpu_buf_reserve(tpu_buf *b, size_t extra);
void tpu_buf_append(tpu_buf *b, const void *data, size_t n);
void tpu_buf_puts(tpu_buf *b, const char *s);
void tpu_buf_putc(tpu_buf *b, char c);
void tpu_buf_printf(tpu_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tpu_buf_vprintf(tpu_buf *b, const char *fmt, va_list ap);
/* Always returns a NUL-terminated string ("" for an empty buffer). */
const char *tpu_buf_cstr(tpu_buf *b);
/* Empties the buffer, keeping its memory. */
void tpu_buf_reset(tpu_buf *b);
/* Hands the memory to the caller (free() it) and empties the buffer. */
char *tpu_buf_detach(tpu_buf *b);
void tpu_buf_free(tpu_buf *b);

#endif
