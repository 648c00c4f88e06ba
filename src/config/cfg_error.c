/* cfg_error.c - the config layer's one way to fill a tp_error (every
 * cfg_*.c reports through it). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config/cfg_internal.h"

int tpc_error(tp_error *err, int code, const char *file, int line, int column, const char *fmt,
              ...)
{
    if (!err)
        return code;
    memset(err, 0, sizeof *err);
    err->code = code;
    err->line = line;
    err->column = column;
    if (file)
        snprintf(err->file, sizeof err->file, "%s", file);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}
