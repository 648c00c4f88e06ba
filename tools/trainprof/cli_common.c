/* cli_common.c - see cli_common.h. */
#include "cli_common.h"

#include <sched.h>   /* sched_getaffinity, CPU_COUNT (_GNU_SOURCE: set by the build) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_stdin_copy[4096];

static void remove_stdin_copy(void)
{
    if (g_stdin_copy[0]) unlink(g_stdin_copy);
}

void cli_init(void)
{
    tpa_set_progress(isatty(2));
    tpa_set_jobs((int)cli_default_jobs());
}

long cli_default_jobs(void)
{
    /* The cores this process may run on, not every core online: under
     * taskset, a cgroup cpuset or SLURM's --cpu-bind a rank sees its share,
     * and more threads than that only wait for each other. */
    long n = -1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > TPA_MAX_JOBS ? TPA_MAX_JOBS : n;
}

int cli_jobs_opt(int argc, char **argv, int *i, long *jobs)
{
    const char *v;
    if (!cli_opt(argc, argv, i, "-j", &v) && !cli_opt(argc, argv, i, "--jobs", &v)) return CLI_ARG_NONE;
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || n < 1 || n > TPA_MAX_JOBS) {
        cli_fail(argv[0], "-j needs a number from 1 to %d", TPA_MAX_JOBS);
        return CLI_ARG_ERROR;
    }
    if (jobs) *jobs = n;
    tpa_set_jobs((int)n);
    return CLI_ARG_USED;
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

int cli_common_arg(int argc, char **argv, int *i, const char *usage, bool *json, const char **out)
{
    const char *v;
    if (cli_is_help(argv[*i])) { fputs(usage, stdout); return CLI_ARG_HELP; }
    if (!strcmp(argv[*i], "--json")) { *json = true; return CLI_ARG_USED; }
    int k = cli_jobs_opt(argc, argv, i, NULL);
    if (k != CLI_ARG_NONE) return k;
    if (out && (cli_opt(argc, argv, i, "-o", &v) || cli_opt(argc, argv, i, "--output", &v))) {
        if (!v) { cli_fail_missing(argv[0], "-o"); return CLI_ARG_ERROR; }
        *out = v;
        return CLI_ARG_USED;
    }
    return CLI_ARG_NONE;
}

int cli_arg_exit(int k)
{
    return k == CLI_ARG_HELP ? CLI_OK : CLI_BAD_INPUT;
}

int cli_positional(const char *cmd, const char *arg, const char **in)
{
    if (arg[0] == '-' && arg[1]) return cli_fail(cmd, "unknown option %s", arg);
    if (*in) return cli_fail(cmd, "one trace file at a time");
    *in = arg;
    return 0;
}

int cli_parse_one_file(int argc, char **argv, const char *usage, const char **file, bool *json,
                       size_t *top)
{
    const char *cmd = argv[0], *v;
    for (int i = 1; i < argc; i++) {
        int k = cli_common_arg(argc, argv, &i, usage, json, NULL);
        if (k == CLI_ARG_USED) continue;
        if (k != CLI_ARG_NONE) return k == CLI_ARG_HELP ? -1 : CLI_BAD_INPUT;
        if (top && cli_opt(argc, argv, &i, "--top", &v)) {
            if (!v || !cli_parse_size(v, top)) return cli_fail(cmd, "--top needs a number");
        } else if (cli_positional(cmd, argv[i], file) != 0) {
            return CLI_BAD_INPUT;
        }
    }
    if (!*file) return cli_fail(cmd, "no trace file given");
    return 0;
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

int cli_stdin_to_file(const char **path)
{
    if (strcmp(*path, "-") != 0) return 0;
    if (g_stdin_copy[0]) { *path = g_stdin_copy; return 0; }
    const char *dir = getenv("TMPDIR");
    char name[sizeof g_stdin_copy];
    snprintf(name, sizeof name, "%s/trainprof-stdin-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(name);
    if (fd < 0) {
        fprintf(stderr, "trainprof: -: cannot create a temporary copy of stdin in %s\n", dir && *dir ? dir : "/tmp");
        return CLI_BAD_INPUT;
    }
    snprintf(g_stdin_copy, sizeof g_stdin_copy, "%s", name);
    atexit(remove_stdin_copy);
    char buf[1 << 16];
    ssize_t got;
    bool ok = true;
    while (ok && (got = read(0, buf, sizeof buf)) != 0) {
        if (got < 0) { ok = false; break; }
        for (ssize_t off = 0; ok && off < got;) {
            ssize_t w = write(fd, buf + off, (size_t)(got - off));
            if (w <= 0) ok = false;
            else off += w;
        }
    }
    if (close(fd) != 0) ok = false;
    if (!ok) {
        fprintf(stderr, "trainprof: -: cannot copy stdin to %s\n", name);
        return CLI_BAD_INPUT;
    }
    *path = g_stdin_copy;
    return 0;
}
