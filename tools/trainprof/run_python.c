/*
 * run_python.c - `trainprof run` on a Python program: every Python process
 * the command starts profiles itself (docs/RUN.md).
 *
 * The command is Python when its program is python/python3.X/pypy or a
 * script whose #! line names python (torchrun, accelerate, a ./train.py).
 * Then the directory trainprof/_bootstrap of the trainprof package beside
 * this CLI goes first on PYTHONPATH (its sitecustomize.py runs in every
 * Python process at startup, chains the one it hides, and imports
 * trainprof._auto) and the --profiling flags given before the command go
 * into TRAINPROF_RUN_ARGS as a JSON list, where each process reads them
 * with flag precedence, as if they were on its own command line.
 */
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_python.h"
#include "trainprof.h"
#include "util/json.h"

#define BOOTSTRAP_REL "trainprof/_bootstrap"

static const char *const BARE[] = {"--enable_profiling", "--enable_timing_profiling",
                                   "--enable_memory_profiling", "--profile_steps"};

int run_is_profiling_flag(const char *a)
{
    if (!strncmp(a, "--profiling.", 12) || !strncmp(a, "-profiling.", 11))
        return 1;
    size_t n = strcspn(a, "=");
    for (size_t i = 0; i < sizeof BARE / sizeof BARE[0]; i++)
        if (strlen(BARE[i]) == n && !strncmp(a, BARE[i], n))
            return 1;
    return 0;
}

int run_take_flag(tp_config *cfg, int argc, char **argv, int i, tp_error *err)
{
    char *pair[4] = {"trainprof", argv[i], i + 1 < argc ? argv[i + 1] : NULL, NULL};
    /* no separate value after KEY=V, nor when another flag or "--" follows */
    if (strchr(argv[i], '=') || (pair[2] && (run_is_profiling_flag(pair[2]) || !strcmp(pair[2], "--"))))
        pair[2] = NULL;
    int n = pair[2] ? 3 : 2;
    int left = n;
    if (tp_config_parse_args(cfg, &left, pair, err) != 0)
        return -1;
    return n - left;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* python, python3, python3.12, pypy3: the interpreter itself. */
static int python_name(const char *name)
{
    if (!strncmp(name, "pypy", 4))
        return 1;
    if (strncmp(name, "python", 6) != 0)
        return 0;
    return strspn(name + 6, "0123456789.") == strlen(name + 6);
}

/* The file execvp would run for `cmd`, in out; -1 when none. */
static int resolve(const char *cmd, char *out, size_t n)
{
    if (strchr(cmd, '/'))
        return snprintf(out, n, "%s", cmd) < (int)n ? 0 : -1;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        if (snprintf(out, n, "%.*s%s%s", (int)len, p, len ? "/" : "", cmd) < (int)n &&
            access(out, X_OK) == 0)
            return 0;
        p += len;
        p += *p == ':';
    }
    return -1;
}

int run_is_python(char *const *cmd)
{
    if (python_name(base_name(cmd[0])))
        return 1;
    char path[PATH_MAX], line[256];
    if (resolve(cmd[0], path, sizeof path) != 0)
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[got] = '\0';
    line[strcspn(line, "\n")] = '\0';
    return got > 2 && line[0] == '#' && line[1] == '!' && strstr(line, "python") != NULL;
}

static int has_bootstrap(const char *dir, char *out, size_t n)
{
    char file[PATH_MAX + 64];
    if (snprintf(file, sizeof file, "%s/sitecustomize.py", dir) >= (int)sizeof file ||
        access(file, R_OK) != 0)
        return 0;
    char *real = realpath(dir, NULL);
    int ok = real && snprintf(out, n, "%s", real) < (int)n;
    free(real);
    return ok;
}

/* Candidates around the CLI at `exe` (a path to it): the package's bin/
 * (wheel, build tree link), the build tree's python/, a venv's lib/. */
static int beside(const char *exe, char *out, size_t n)
{
    char dir[PATH_MAX], cand[PATH_MAX + 64];
    if (snprintf(dir, sizeof dir, "%s", exe) >= (int)sizeof dir)
        return 0;
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    snprintf(cand, sizeof cand, "%s/../_bootstrap", dir); /* <pkg>/bin/trainprof */
    if (has_bootstrap(cand, out, n))
        return 1;
    snprintf(cand, sizeof cand, "%s/python/" BOOTSTRAP_REL, dir); /* build/trainprof */
    if (has_bootstrap(cand, out, n))
        return 1;
    glob_t g;
    snprintf(cand, sizeof cand, "%s/../lib/python3*/site-packages/" BOOTSTRAP_REL, dir);
    int found = 0;
    if (glob(cand, 0, NULL, &g) == 0)
        for (size_t i = 0; !found && i < g.gl_pathc; i++)
            found = has_bootstrap(g.gl_pathv[i], out, n);
    globfree(&g);
    return found;
}

/* A sanitizer build's package beside the CLI holds an instrumented
 * extension that an uninstrumented python cannot load (ASan aborts at its
 * import): such a CLI profiles no Python. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

int run_find_bootstrap(const char *argv0, char *out, size_t n)
{
#ifdef SANITIZED
    (void)argv0, (void)out, (void)n, (void)beside;
    return -2;
#endif
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        if (beside(exe, out, n))
            return 0;
    }
    if (argv0 && strchr(argv0, '/') && beside(argv0, out, n))
        return 0;
    const char *pp = getenv("PYTHONPATH");
    for (const char *p = pp ? pp : ""; *p;) {
        size_t l = strcspn(p, ":");
        char cand[PATH_MAX + 64];
        if (l && snprintf(cand, sizeof cand, "%.*s/" BOOTSTRAP_REL, (int)l, p) < (int)sizeof cand &&
            has_bootstrap(cand, out, n))
            return 0;
        p += l;
        p += *p == ':';
    }
    return -1;
}

int run_python_env(const char *bootstrap, char *const *flags, int nflags)
{
    const char *old = getenv("PYTHONPATH");
    size_t need = strlen(bootstrap) + (old && *old ? strlen(old) + 2 : 1);
    char *path = malloc(need);
    if (!path)
        return -1;
    snprintf(path, need, "%s%s%s", bootstrap, old && *old ? ":" : "", old && *old ? old : "");
    int rc = setenv("PYTHONPATH", path, 1);
    free(path);
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    tpu_json_begin_array(&j);
    for (int i = 0; i < nflags; i++)
        tpu_json_string(&j, flags[i]);
    tpu_json_end_array(&j);
    tpu_buf_putc(&b, '\0');
    if (rc == 0)
        rc = b.data ? setenv("TRAINPROF_RUN_ARGS", b.data, 1) : -1;
    tpu_buf_free(&b);
    return rc;
}
