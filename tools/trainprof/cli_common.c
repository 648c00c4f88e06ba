/* cli_common.c - see cli_common.h. */
#include "cli_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_init(void)
{
    tpa_set_progress(isatty(2));
}

bool cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

bool cli_opt(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] == '=') { *val = a + n + 1; return true; }
    if (a[n] != 0) return false;
    *val = *i + 1 < argc ? argv[++*i] : NULL;
    return true;
}

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "trainprof %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'trainprof %s --help')\n", cmd);
    return CLI_BAD_INPUT;
}

int cli_fail_missing(const char *cmd, const char *opt)
{
    return cli_fail(cmd, "option %s needs a value", opt);
}

int cli_error(const tpa_error *err)
{
    tpa_error_print(stderr, err);
    return CLI_BAD_INPUT;
}

bool cli_parse_size(const char *s, size_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 0) return false;
    *out = (size_t)v;
    return true;
}

bool cli_parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 0);
    if (end == s || *end) return false;
    *out = v;
    return true;
}
