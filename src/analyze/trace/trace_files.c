/* trace_files.c - which files of a directory are traces: one rule for the
 * page builder, the job directory's ranks and every CLI command. */
#include "analyze/trace/trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool tpa_is_dir(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* The JSON files trainprof writes beside its traces, which are not traces. */
static bool is_own_file(const char *name, size_t n)
{
    static const char *const own[] = { "job.json", "clock.json", "config.json", "operations.json",
                                       "training_summary.json", "run_summary.json", "captures.json",
                                       "live.json" };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcmp(name, own[i])) return true;
    return ends_with(name, n, "_profile.json");  /* timing_profile.json, memory_profile.json */
}

bool tpa_is_trace_file_name(const char *name)
{
    size_t n = strlen(name);
    if (name[0] == '.' || strstr(name, "stacks")) return false;  /* hidden; folded-stack side files */
    if (!ends_with(name, n, ".json") && !ends_with(name, n, ".json.gz")) return false;
    return !is_own_file(name, n);
}

bool tpa_trace_file_usable(const char *path)
{
    struct stat st;
    const char *why = NULL;
    int fd = -1;
    if (stat(path, &st) != 0) why = strerror(errno);  /* ELOOP, ENOENT (dangling link), EACCES */
    else if (!S_ISREG(st.st_mode)) why = "not a regular file";
    else if (st.st_size == 0) why = "empty file (0 bytes: the disk was full, or the writer died before writing)";
    else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) why = strerror(errno);
    if (fd >= 0) close(fd);
    if (why) fprintf(stderr, "trainprof: warning: %s: skipped: %s\n", path, why);
    return why == NULL;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tpa_trace_files(const char *dir, char ***files, size_t *n, tpa_error *err)
{
    *files = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        tpa_error_set(err, TPA_ERR_IO, "cannot read directory");
        snprintf(err->file, sizeof err->file, "%s", dir);
        return -1;
    }
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!tpa_is_trace_file_name(de->d_name)) continue;
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *path = malloc(len);
        if (!path) abort();
        snprintf(path, len, "%s/%s", dir, de->d_name);
        if (tpa_is_dir(path) || !tpa_trace_file_usable(path)) { free(path); continue; }
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nf = realloc(*files, cap * sizeof *nf);
            if (!nf) abort();
            *files = nf;
        }
        (*files)[(*n)++] = path;
    }
    closedir(d);
    if (*n) qsort(*files, *n, sizeof **files, cmp_str);
    return 0;
}
