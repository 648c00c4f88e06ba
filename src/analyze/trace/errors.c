/* errors.c - the analyzer's errors (trace.h): set, print, and the
 * printable excerpt around a byte offset that the reader attaches. */
#include "analyze/trace/trace.h"

#include <stdarg.h>
#include <stdio.h>

void tpa_error_set(tpa_error *err, int code, const char *fmt, ...)
{
    if (!err) return;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

void tpa_error_print(FILE *out, const tpa_error *err)
{
    fprintf(out, "trainprof: %s", err->file[0] ? err->file : "error");
    if (err->code == TPA_ERR_SYNTAX || err->code == TPA_ERR_UTF8 || err->code == TPA_ERR_LIMIT ||
        err->code == TPA_ERR_FORMAT || err->code == TPA_ERR_GZIP)
        fprintf(out, ": byte %llu", (unsigned long long)err->offset);
    fprintf(out, ": %s", err->msg);
    if (err->excerpt[0])
        fprintf(out, " near `%s`", err->excerpt);
    fputc('\n', out);
}

void tpa_error_excerpt(tpa_error *err, const char *lo, const char *at, const char *hi)
{
    const char *a = at - lo > 20 ? at - 20 : lo;
    const char *b = hi - at > 30 ? at + 30 : hi;
    size_t n = 0;
    for (const char *p = a; p < b && n + 1 < sizeof err->excerpt; p++) {
        unsigned char c = (unsigned char)*p;
        err->excerpt[n++] = (c >= 0x20 && c < 0x7f && c != '`') ? (char)c : '.';
    }
    err->excerpt[n] = 0;
}
