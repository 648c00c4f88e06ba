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
 * Ranks of one job: when the launcher names the job (TORCHELASTIC_RUN_ID,
 * SLURM_JOB_ID[.SLURM_STEP_ID], PMIX_NAMESPACE, or profiling.job_id; see
 * cfg_job.c) and the
 * rank is known, the ranks share one job directory
 * <log_dir>/<name>_<YYYY-MM-DD>_job-<job id>/ and each claims its own
 * rank<r>/ inside it. The job directory's name depends only on what every
 * rank reads from its environment, so the ranks agree on it without talking
 * to each other; mkdir's EEXIST just means another rank was first. The rank
 * directory is claimed with an exclusive mkdir (rank<r>_2, _3, ... when a
 * restart or a reused job id finds it taken), so the summary files, which
 * have fixed names, are never shared. Without a job id every process gets
 * its own <name>_<YYYY-MM-DD>_<id>[_rank<r>]/ as above. Trace file names
 * carry the rank (`_rank<r>`) either way, so `trainprof merge` can put the
 * traces of all ranks on one timeline.
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

int tpi_detect_rank(const tpi_settings *s)
{
    tpi_job_info job;
    tpi_job_detect(s, &job);
    return job.rank;
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
        if (strncmp(end, "_rank", 5) == 0 && isdigit((unsigned char)end[5]))
            end += 5 + strspn(end + 5, "0123456789"); /* <id>_rank<r> */
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

static void local_date(time_t t, char *out, size_t outlen)
{
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(out, outlen, "%Y-%m-%d", &tm);
}

static int path_error(tp_error *err, const char *log_dir)
{
    return tpc_error(err, TP_ERR_INVALID, log_dir, 0, 0, "run directory path under `%s` is too long",
                     log_dir);
}

/* Claims <parent>/<first> (when first is not NULL), else the first free
 * <parent>/<prefix><n><suffix> for n = from, from+1, ..., each with an
 * exclusive mkdir: EEXIST means someone else has it, try the next. */
static int claim(const char *parent, const char *first, const char *prefix, long from,
                 const char *suffix, char *out, size_t out_size, tp_error *err)
{
    for (long id = from; id < TPC_MAX_RUN_ID; id++) {
        char leaf[TPC_SRC_MAX];
        if (first && id == from)
            snprintf(leaf, sizeof leaf, "%s", first);
        else
            snprintf(leaf, sizeof leaf, "%s%ld%s", prefix, id, suffix);
        if (tpu_path_join(out, out_size, parent, leaf) != 0)
            return path_error(err, parent);
        if (mkdir(out, 0755) == 0)
            return 0;
        if (errno != EEXIST)
            return io_error(err, "cannot create run directory", out, errno);
    }
    return tpc_error(err, TP_ERR_IO, parent, 0, 0, "no free run directory id in `%s`", parent);
}

/* <log_dir>/<name>_<date>_job-<job>/: shared, so EEXIST is success. A job
 * that started yesterday keeps yesterday's directory (ranks straddling
 * midnight). */
static int job_dir(const char *log_dir, const char *name, const char *job, char *out,
                   size_t out_size, tp_error *err)
{
    char date[16], leaf[TPC_SRC_MAX];
    struct stat st;
    time_t now = time(NULL);
    for (int back = 1; back >= 0; back--) {
        local_date(now - back * 86400, date, sizeof date);
        snprintf(leaf, sizeof leaf, "%s_%s_job-%s", name, date, job);
        if (tpu_path_join(out, out_size, log_dir, leaf) != 0)
            return path_error(err, log_dir);
        if (back && (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)))
            continue;
        if (!back && mkdir(out, 0755) != 0 && errno != EEXIST)
            return io_error(err, "cannot create job directory", out, errno);
        if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode))
            return io_error(err, "cannot use job directory", out, ENOTDIR);
        return 0;
    }
    return 0; /* not reached */
}

int tpi_rundir_create(const tpi_settings *s, int rank, char *out, size_t out_size, tp_error *err)
{
    char errbuf[512], name[sizeof s->name], prefix[sizeof s->name + 32], date[16];
    char suffix[24] = "";
    if (!s || !out || out_size == 0)
        return tpc_error(err, TP_ERR_INVALID, NULL, 0, 0, "tpi_rundir_create: NULL argument");
    const char *log_dir = s->log_dir[0] ? s->log_dir : ".";
    if (tpu_mkdir_p(log_dir, errbuf, sizeof errbuf) != 0)
        return io_error(err, "cannot create log directory", log_dir, errno);
    if (access(log_dir, W_OK | X_OK) != 0)
        return io_error(err, "cannot write into log directory", log_dir, errno);

    snprintf(name, sizeof name, "%s", s->name[0] ? s->name : "trainprof");
    tpu_sanitize_component(name);
    tpi_job_info info;
    tpi_job_detect(s, &info);
    const char *job = info.job_id;
    if (rank >= 0 && job[0]) { /* one job directory, one rank<r>/ inside per rank */
        char jdir[PATH_MAX], first[24];
        int rc = job_dir(log_dir, name, job, jdir, sizeof jdir, err);
        snprintf(first, sizeof first, "rank%d", rank); /* then rank<r>_2, _3, ... */
        snprintf(prefix, sizeof prefix, "rank%d_", rank);
        return rc ? rc : claim(jdir, first, prefix, 1, "", out, out_size, err);
    }
    local_date(time(NULL), date, sizeof date);
    snprintf(prefix, sizeof prefix, "%s_%s_", name, date);
    if (rank >= 0)
        snprintf(suffix, sizeof suffix, "_rank%d", rank);
    return claim(log_dir, NULL, prefix, highest_id(log_dir, prefix) + 1, suffix, out, out_size,
                 err);
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
