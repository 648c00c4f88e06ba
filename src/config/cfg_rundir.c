/*
 * cfg_rundir.c - rank detection, the run directory, trace file stems.
 *
 * Run directory: <log_dir>/<name>_<YYYY-MM-DD>_<id>/ where id = 1, 2, ...
 * The directory is claimed with an exclusive mkdir(2): whoever gets EEXIST
 * tries the next id, so any number of processes starting in the same second
 * each end up with their own directory, without locks. The search starts
 * after the highest id already present, so a log_dir with many runs costs
 * one readdir, not one mkdir per old run.
 *
 * Ranks of one job: every process (every rank) gets its own run directory,
 * and trace file names carry the rank (`_rank<r>`) so `trainprof merge` can
 * put traces of several directories on one timeline. We chose this over one
 * shared directory because the summary files (timing_profile.json,
 * training_summary.json, ...) have fixed names that ranks would overwrite,
 * and because ranks have no race-free way to agree on a shared name without
 * talking to each other.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/cfg_internal.h"
#include "util/fileio.h"

#define TPC_MAX_RUN_ID 1000000

static int parse_rank(const char *text, int *out)
{
    char *end;
    if (!text || !*text)
        return -1;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < 0 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

int tpi_detect_rank(const tpi_settings *s)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                       "PMI_RANK"};
    int r;
    if (s && s->rank >= 0)
        return s->rank;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (parse_rank(getenv(vars[i]), &r) == 0)
            return r;
    return -1;
}

/* Highest <id> among entries named <prefix><id> in dir (0 when none). */
static long highest_id(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    long best = 0;
    size_t plen = strlen(prefix);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, plen) != 0)
            continue;
        const char *p = de->d_name + plen;
        char *end;
        if (!isdigit((unsigned char)*p))
            continue;
        long id = strtol(p, &end, 10);
        if (*end == '\0' && id > best && id < TPC_MAX_RUN_ID)
            best = id;
    }
    closedir(d);
    return best;
}

static int io_error(tp_error *err, const char *what, const char *path, int e)
{
    return tpc_error(err, TP_ERR_IO, path, 0, 0,
                     "%s `%s`: %s (set profiling.log_dir, TRAINPROF_LOG_DIR or "
                     "--profiling.log_dir to a writable directory)",
                     what, path, strerror(e));
}

int tpi_rundir_create(const tpi_settings *s, int rank, char *out, size_t out_size, tp_error *err)
{
    char errbuf[512], name[sizeof s->name], prefix[sizeof s->name + 32], date[16];
    (void)rank; /* one directory per process: see the comment at the top */
    if (!s || !out || out_size == 0)
        return tpc_error(err, TP_ERR_INVALID, NULL, 0, 0, "tpi_rundir_create: NULL argument");
    const char *log_dir = s->log_dir[0] ? s->log_dir : ".";
    if (tpu_mkdir_p(log_dir, errbuf, sizeof errbuf) != 0)
        return io_error(err, "cannot create log directory", log_dir, errno);
    if (access(log_dir, W_OK | X_OK) != 0)
        return io_error(err, "cannot write into log directory", log_dir, errno);

    snprintf(name, sizeof name, "%s", s->name[0] ? s->name : "trainprof");
    tpu_sanitize_component(name);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    snprintf(prefix, sizeof prefix, "%s_%s_", name, date);

    for (long id = highest_id(log_dir, prefix) + 1; id < TPC_MAX_RUN_ID; id++) {
        char leaf[sizeof prefix + 24];
        snprintf(leaf, sizeof leaf, "%s%ld", prefix, id);
        if (tpu_path_join(out, out_size, log_dir, leaf) != 0)
            return tpc_error(err, TP_ERR_INVALID, log_dir, 0, 0,
                             "run directory path under `%s` is too long", log_dir);
        if (mkdir(out, 0755) == 0)
            return 0;
        if (errno != EEXIST)
            return io_error(err, "cannot create run directory", out, errno);
    }
    return tpc_error(err, TP_ERR_IO, log_dir, 0, 0, "no free run directory id in `%s`", log_dir);
}

/* Appends text to out at *used, truncating at out_size. */
static void put(char *out, size_t out_size, size_t *used, const char *text, size_t n)
{
    if (*used + 1 >= out_size)
        return;
    if (n > out_size - 1 - *used)
        n = out_size - 1 - *used;
    memcpy(out + *used, text, n);
    *used += n;
    out[*used] = '\0';
}

/* The pattern, with _rank{rank} inserted before its first '.' (or at the
 * end) when the rank is known and the pattern does not place {rank}. */
static void effective_pattern(const char *pattern, int rank, char *out, size_t outlen)
{
    if (rank < 0 || strstr(pattern, "{rank}")) {
        snprintf(out, outlen, "%s", pattern);
        return;
    }
    const char *dot = strchr(pattern, '.');
    size_t head = dot ? (size_t)(dot - pattern) : strlen(pattern);
    snprintf(out, outlen, "%.*s_rank{rank}%s", (int)head, pattern, dot ? dot : "");
}

void tpi_trace_stem(const tpi_settings *s, char *out, size_t out_size, const char *host, int pid,
                    int rank, uint64_t step, uint64_t time_ns)
{
    char pattern[512], num[32];
    size_t used = 0;
    if (!out || out_size == 0)
        return;
    out[0] = '\0';
    effective_pattern(s && s->trace_filename[0] ? s->trace_filename : "{host}_{pid}.{time_ns}",
                      rank, pattern, sizeof pattern);
    for (const char *p = pattern; *p;) {
        const char *val = NULL;
        size_t skip = 0;
        if (strncmp(p, "{host}", 6) == 0) {
            val = host && *host ? host : "unknown-host";
            skip = 6;
        } else if (strncmp(p, "{pid}", 5) == 0) {
            snprintf(num, sizeof num, "%d", pid);
            val = num, skip = 5;
        } else if (strncmp(p, "{rank}", 6) == 0) {
            snprintf(num, sizeof num, "%d", rank < 0 ? 0 : rank);
            val = num, skip = 6;
        } else if (strncmp(p, "{step}", 6) == 0) {
            snprintf(num, sizeof num, "%" PRIu64, step);
            val = num, skip = 6;
        } else if (strncmp(p, "{time_ns}", 9) == 0) {
            snprintf(num, sizeof num, "%" PRIu64, time_ns);
            val = num, skip = 9;
        }
        if (val) {
            put(out, out_size, &used, val, strlen(val));
            p += skip;
        } else {
            put(out, out_size, &used, p, 1);
            p++;
        }
    }
    tpu_sanitize_component(out);
}
