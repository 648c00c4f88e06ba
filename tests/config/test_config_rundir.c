/*
 * Run directory: race-free creation (8 processes in the same second),
 * 8 ranks of one job (one job directory, rank<r>/ each), ranks without a
 * job id, missing log_dir, unwritable log_dir, sanitized names; rank detection;
 * trace file stems.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/settings.h"
#include "tp_test.h"
#include "trainprof.h"

static char base[64];

static void make_base(void)
{
    snprintf(base, sizeof base, "/tmp/tp_rundir_XXXXXX");
    CHECK(mkdtemp(base) != NULL);
}

static int rm_rf(const char *path)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    return system(cmd);
}

static int count_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static const char *const job_vars[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_STEP_ID",
                                        "PMIX_NAMESPACE", "RANK"};

static void unset_job_vars(void)
{
    for (size_t i = 0; i < sizeof job_vars / sizeof job_vars[0]; i++)
        unsetenv(job_vars[i]);
}

enum { NPROC = 8 };

/* Forks NPROC processes that start together; process i creates a run
 * directory (with RANK=i and its rank detected when ranks is set, else with
 * rank -1). Their paths go into paths[]; returns how many came back. */
static int create_in_processes(const tpi_settings *s, int ranks, char paths[NPROC][1100])
{
    int go[2], results[2], status, ok = 1, got = 0;
    CHECK_EQ_INT(pipe(go), 0);
    CHECK_EQ_INT(pipe(results), 0);
    for (int i = 0; i < NPROC; i++) {
        if (fork() == 0) {
            char c, path[1024] = {0}, num[16];
            close(go[1]);
            if (read(go[0], &c, 1) != 0) /* wait until the parent closes the pipe */
                _exit(3);
            snprintf(num, sizeof num, "%d", i);
            if (ranks)
                setenv("RANK", num, 1);
            tp_error err;
            int rc = tpi_rundir_create(s, ranks ? tpi_detect_rank(s) : -1, path, sizeof path, &err);
            if (rc != 0)
                snprintf(path, sizeof path, "ERR %s", err.message);
            char line[1100];
            int n = snprintf(line, sizeof line, "%-1023s\n", path);
            if (write(results[1], line, (size_t)n) != n) /* < PIPE_BUF: atomic */
                _exit(2);
            _exit(rc != 0);
        }
    }
    close(go[0]);
    close(go[1]); /* all children start now */
    close(results[1]);
    FILE *f = fdopen(results[0], "r");
    while (got < NPROC && f && fgets(paths[got], sizeof paths[got], f)) {
        char *end = paths[got] + strlen(paths[got]);
        while (end > paths[got] && (end[-1] == '\n' || end[-1] == ' '))
            *--end = '\0';
        got++;
    }
    if (f)
        fclose(f);
    for (int i = 0; i < NPROC; i++) {
        wait(&status);
        ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK(ok);
    return got;
}

static void today(char *date, size_t n)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, n, "%Y-%m-%d", &tm);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* No job variables, a new base directory, defaults with log_dir <base>/<sub>. */
static void fresh_logs(tpi_settings *s, const char *sub)
{
    unset_job_vars();
    make_base();
    tpi_settings_defaults(s);
    snprintf(s->log_dir, sizeof s->log_dir, "%s/%s", base, sub);
}

TP_TEST(eight_processes_same_second)
{
    char paths[NPROC][1100];
    tpi_settings s;
    fresh_logs(&s, "logs/nested"); /* missing: created */
    int got = create_in_processes(&s, 0, paths);
    CHECK_EQ_INT(got, NPROC);
    for (int i = 0; i < got; i++) {
        CHECK(is_dir(paths[i]));
        CHECK_CONTAINS(paths[i], "/logs/nested/trainprof_");
        for (int j = 0; j < i; j++)
            CHECK(strcmp(paths[i], paths[j]) != 0);
    }
    CHECK_EQ_INT(count_entries(s.log_dir), NPROC);

    /* the name: <name>_<YYYY-MM-DD>_<id> */
    char date[16], want[1100];
    today(date, sizeof date);
    char path[1024];
    CHECK_EQ_INT(tpi_rundir_create(&s, -1, path, sizeof path, NULL), 0);
    snprintf(want, sizeof want, "%s/trainprof_%s_%d", s.log_dir, date, NPROC + 1);
    CHECK_STR(path, want);
    rm_rf(base);
}

/* torchrun --nproc_per_node 8: one job directory, rank0/ ... rank7/ in it. */
TP_TEST(ranks_of_one_job_share_a_job_directory)
{
    char paths[NPROC][1100], date[16], want[1400], path[1024];
    tpi_settings s;
    fresh_logs(&s, "logs");
    setenv("TORCHELASTIC_RUN_ID", "job/42", 1); /* sanitized: job_42 */
    CHECK_EQ_INT(create_in_processes(&s, 1, paths), NPROC);
    CHECK_EQ_INT(count_entries(s.log_dir), 1);
    today(date, sizeof date);
    char job[1200];
    snprintf(job, sizeof job, "%s/trainprof_%s_job-job_42", s.log_dir, date);
    CHECK_EQ_INT(count_entries(job), NPROC);
    for (int r = 0; r < NPROC; r++) {
        snprintf(want, sizeof want, "%s/rank%d", job, r);
        CHECK(is_dir(want));
        int found = 0;
        for (int i = 0; i < NPROC; i++)
            found += strcmp(paths[i], want) == 0;
        CHECK_EQ_INT(found, 1);
    }
    /* a restart (or a reused job id) finds rank3 taken: rank3_2 */
    setenv("RANK", "3", 1);
    CHECK_EQ_INT(tpi_rundir_create(&s, tpi_detect_rank(&s), path, sizeof path, NULL), 0);
    snprintf(want, sizeof want, "%s/rank3_2", job);
    CHECK_STR(path, want);
    /* no rank: a directory of its own, as without a job id */
    CHECK_EQ_INT(tpi_rundir_create(&s, -1, path, sizeof path, NULL), 0);
    snprintf(want, sizeof want, "%s/trainprof_%s_1", s.log_dir, date);
    CHECK_STR(path, want);
    /* torchrun without a rendezvous id: the agent (our parent) names the job */
    setenv("TORCHELASTIC_RUN_ID", "none", 1);
    CHECK_EQ_INT(tpi_rundir_create(&s, 0, path, sizeof path, NULL), 0);
    snprintf(want, sizeof want, "%s/trainprof_%s_job-torchrun-%ld/rank0", s.log_dir, date,
             (long)getppid());
    CHECK_STR(path, want);
    /* Slurm: job and step */
    unsetenv("TORCHELASTIC_RUN_ID");
    setenv("SLURM_JOB_ID", "881", 1);
    setenv("SLURM_STEP_ID", "2", 1);
    CHECK_EQ_INT(tpi_rundir_create(&s, 5, path, sizeof path, NULL), 0);
    snprintf(want, sizeof want, "%s/trainprof_%s_job-881.2/rank5", s.log_dir, date);
    CHECK_STR(path, want);
    /* the job directory's name is taken by a file: an error naming it */
    unsetenv("SLURM_STEP_ID");
    snprintf(want, sizeof want, "%s/trainprof_%s_job-881", s.log_dir, date);
    FILE *f = fopen(want, "w");
    if (f)
        fclose(f);
    tp_error err = {0};
    CHECK_EQ_INT(tpi_rundir_create(&s, 1, path, sizeof path, &err), TP_ERR_IO);
    CHECK_CONTAINS(err.message, want);
    unset_job_vars();
    rm_rf(base);
}

/* Ranks without a job id: a directory each, named with the rank. */
TP_TEST(ranks_without_a_job_id)
{
    char paths[NPROC][1100], date[16], path[1024], want[1100];
    tpi_settings s;
    fresh_logs(&s, "logs");
    CHECK_EQ_INT(create_in_processes(&s, 1, paths), NPROC);
    CHECK_EQ_INT(count_entries(s.log_dir), NPROC);
    today(date, sizeof date);
    for (int i = 0; i < NPROC; i++) {
        CHECK(is_dir(paths[i]));
        CHECK_CONTAINS(paths[i], date);
        CHECK(strstr(paths[i], "_rank") != NULL);
    }
    /* ids after <id>_rank<r> entries go on from the highest */
    CHECK_EQ_INT(tpi_rundir_create(&s, 2, path, sizeof path, NULL), 0);
    CHECK_CONTAINS(path, "_rank2");
    CHECK_EQ_INT(tpi_rundir_create(&s, -1, path, sizeof path, NULL), 0);
    snprintf(want, sizeof want, "%s/trainprof_%s_", s.log_dir, date);
    CHECK(strncmp(path, want, strlen(want)) == 0 && strchr(path + strlen(want), '_') == NULL);
    CHECK(atoi(path + strlen(want)) >= 2);
    unset_job_vars();
    rm_rf(base);
}

TP_TEST(names_are_sanitized)
{
    make_base();
    tp_config *cfg = tp_config_new();
    char dir[128];
    snprintf(dir, sizeof dir, "%s/x", base);
    CHECK_EQ_INT(tp_config_set(cfg, "log_dir", dir, NULL), 0);
    CHECK_EQ_INT(tp_config_set(cfg, "name", "../../escape me", NULL), 0);
    char path[1024];
    CHECK_EQ_INT(tpi_rundir_create(tpi_config_settings(cfg), -1, path, sizeof path, NULL), 0);
    CHECK(strncmp(path, dir, strlen(dir)) == 0);
    CHECK(strchr(path + strlen(dir) + 1, '/') == NULL);
    CHECK_CONTAINS(path, ".._.._escape_me_");
    CHECK_EQ_INT(tp_config_set(cfg, "name", "..", NULL), 0);
    CHECK_EQ_INT(tpi_rundir_create(tpi_config_settings(cfg), -1, path, sizeof path, NULL), 0);
    CHECK(strstr(path, "/../") == NULL);
    /* the effective configuration goes into the run directory */
    CHECK_EQ_INT(tpi_config_write_json(cfg, path, NULL), 0);
    char json_path[1100];
    snprintf(json_path, sizeof json_path, "%s/config.json", path);
    FILE *f = fopen(json_path, "r");
    char head[64] = {0};
    CHECK(f && fread(head, 1, sizeof head - 1, f) > 0);
    if (f)
        fclose(f);
    CHECK_CONTAINS(head, "{\n  \"profiling.enabled\": {");
    tp_error err = {0};
    CHECK_EQ_INT(tpi_config_write_json(cfg, "/nonexistent/dir", &err), TP_ERR_IO);
    CHECK_CONTAINS(err.message, "/nonexistent/dir");
    tp_config_free(cfg);
    rm_rf(base);
}

TP_TEST(unwritable_log_dir)
{
    tpi_settings s;
    tp_error err = {0};
    char path[1024];
    tpi_settings_defaults(&s);
    snprintf(s.log_dir, sizeof s.log_dir, "/proc/trainprof-cannot-be-here");
    CHECK_EQ_INT(tpi_rundir_create(&s, -1, path, sizeof path, &err), TP_ERR_IO);
    CHECK_CONTAINS(err.message, "/proc/trainprof-cannot-be-here");
    CHECK_CONTAINS(err.message, "log_dir");
    make_base();
    snprintf(s.log_dir, sizeof s.log_dir, "%s/file", base);
    FILE *f = fopen(s.log_dir, "w");
    if (f)
        fclose(f);
    CHECK_EQ_INT(tpi_rundir_create(&s, -1, path, sizeof path, &err), TP_ERR_IO);
    CHECK_CONTAINS(err.message, "Not a directory");
    if (geteuid() != 0) { /* root writes anywhere */
        snprintf(s.log_dir, sizeof s.log_dir, "%s/ro", base);
        CHECK_EQ_INT(mkdir(s.log_dir, 0555), 0);
        CHECK_EQ_INT(tpi_rundir_create(&s, -1, path, sizeof path, &err), TP_ERR_IO);
        CHECK_CONTAINS(err.message, "ermission denied");
    }
    rm_rf(base);
}

TP_TEST(rank_detection)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                       "PMI_RANK"};
    tpi_settings s;
    tpi_settings_defaults(&s);
    for (int i = 0; i < 4; i++)
        unsetenv(vars[i]);
    CHECK_EQ_INT(tpi_detect_rank(&s), -1);
    setenv("PMI_RANK", "7", 1);
    CHECK_EQ_INT(tpi_detect_rank(&s), 7);
    setenv("SLURM_PROCID", "6", 1);
    CHECK_EQ_INT(tpi_detect_rank(&s), 6);
    setenv("OMPI_COMM_WORLD_RANK", "5", 1);
    CHECK_EQ_INT(tpi_detect_rank(&s), 5);
    setenv("RANK", "junk", 1); /* does not parse: next one */
    CHECK_EQ_INT(tpi_detect_rank(&s), 5);
    setenv("RANK", "4", 1);
    CHECK_EQ_INT(tpi_detect_rank(&s), 4);
    s.rank = 2;
    CHECK_EQ_INT(tpi_detect_rank(&s), 2);
    for (int i = 0; i < 4; i++)
        unsetenv(vars[i]);
}

/* SLURM: srun's tasks (a step id) are ranks of SLURM_NTASKS; the batch
 * script's own process (no step id) is one process, whatever --ntasks says. */
TP_TEST(slurm_batch_step_is_one_process)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                       "TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE", "SLURM_STEPID"};
    tpi_settings s;
    tpi_job_info job;
    tpi_settings_defaults(&s);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    setenv("SLURM_JOB_ID", "77", 1);
    setenv("SLURM_PROCID", "3", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    tpi_job_detect(&s, &job);
    CHECK_EQ_INT(job.rank, 3);
    CHECK_EQ_INT(job.local_rank, 1);
    CHECK_EQ_INT(job.world_size, 4);
    CHECK_STR(job.job_id, "77.0");
    CHECK_STR(job.launcher, "slurm");
    unsetenv("SLURM_STEP_ID"); /* the batch script: task 0 of the batch step */
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_LOCALID", "0", 1);
    tpi_job_detect(&s, &job);
    CHECK_EQ_INT(job.rank, 0);
    CHECK_EQ_INT(job.world_size, 1);
    CHECK_STR(job.job_id, "77");
    setenv("SLURM_STEPID", "2", 1); /* the older spelling of the step id */
    tpi_job_detect(&s, &job);
    CHECK_EQ_INT(job.world_size, 4);
    CHECK_STR(job.job_id, "77.2");
    static const char *const set[] = {"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_LOCALID",
                                      "SLURM_NTASKS", "SLURM_STEPID"};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        unsetenv(set[i]);
}

TP_TEST(trace_stems)
{
    tpi_settings s;
    char out[256];
    tpi_settings_defaults(&s);
    tpi_trace_stem(&s, out, sizeof out, "node1", 42, -1, 7, 123456789);
    CHECK_STR(out, "node1_42.123456789");
    tpi_trace_stem(&s, out, sizeof out, "node1", 42, 3, 7, 123456789);
    CHECK_STR(out, "node1_42_rank3.123456789");
    snprintf(s.trace_filename, sizeof s.trace_filename, "r{rank}/s{step}/{host}");
    tpi_trace_stem(&s, out, sizeof out, "h.example", 1, 2, 30, 0);
    CHECK_STR(out, "r2_s30_h.example");
    snprintf(s.trace_filename, sizeof s.trace_filename, "{step}");
    tpi_trace_stem(&s, out, sizeof out, "h", 1, 4, 9, 0);
    CHECK_STR(out, "9_rank4");
    snprintf(s.trace_filename, sizeof s.trace_filename, "..");
    tpi_trace_stem(&s, out, sizeof out, "h", 1, -1, 9, 0);
    CHECK_STR(out, "_");
    snprintf(s.trace_filename, sizeof s.trace_filename, "{host}{host}{host}");
    tpi_trace_stem(&s, out, 8, "abcdef", 1, -1, 9, 0);
    CHECK_STR(out, "abcdefa");
    snprintf(s.trace_filename, sizeof s.trace_filename, "{unknown}\x01");
    tpi_trace_stem(&s, out, sizeof out, "h", 1, -1, 9, 0);
    CHECK_STR(out, "_unknown__");
}

int main(void)
{
    RUN(eight_processes_same_second);
    RUN(ranks_of_one_job_share_a_job_directory);
    RUN(ranks_without_a_job_id);
    RUN(names_are_sanitized);
    RUN(unwritable_log_dir);
    RUN(rank_detection);
    RUN(slurm_batch_step_is_one_process);
    RUN(trace_stems);
    return tp_test_finish();
}
