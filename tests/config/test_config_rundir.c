/*
 * Run directory: race-free creation (8 processes in the same second),
 * missing log_dir, unwritable log_dir, sanitized names; rank detection;
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

TP_TEST(eight_processes_same_second)
{
    enum { N = 8 };
    int go[2], results[2];
    make_base();
    CHECK_EQ_INT(pipe(go), 0);
    CHECK_EQ_INT(pipe(results), 0);
    tpi_settings s;
    tpi_settings_defaults(&s);
    snprintf(s.log_dir, sizeof s.log_dir, "%s/logs/nested", base); /* missing: created */
    for (int i = 0; i < N; i++) {
        if (fork() == 0) {
            char c, path[1024] = {0};
            close(go[1]);
            if (read(go[0], &c, 1) != 0) /* wait until the parent closes the pipe */
                _exit(3);
            tp_error err;
            int rc = tpi_rundir_create(&s, i, path, sizeof path, &err);
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
    char paths[N][1100];
    int got = 0, status, ok = 1;
    FILE *f = fdopen(results[0], "r");
    while (got < N && f && fgets(paths[got], sizeof paths[got], f)) {
        char *end = paths[got] + strlen(paths[got]);
        while (end > paths[got] && (end[-1] == '\n' || end[-1] == ' '))
            *--end = '\0';
        got++;
    }
    if (f)
        fclose(f);
    for (int i = 0; i < N; i++) {
        wait(&status);
        ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK(ok);
    CHECK_EQ_INT(got, N);
    for (int i = 0; i < got; i++) {
        struct stat st;
        CHECK(stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode));
        CHECK_CONTAINS(paths[i], "/logs/nested/trainprof_");
        for (int j = 0; j < i; j++)
            CHECK(strcmp(paths[i], paths[j]) != 0);
    }
    CHECK_EQ_INT(count_entries(s.log_dir), N);

    /* the name: <name>_<YYYY-MM-DD>_<id> */
    char date[16], want[1100];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    char path[1024];
    CHECK_EQ_INT(tpi_rundir_create(&s, -1, path, sizeof path, NULL), 0);
    snprintf(want, sizeof want, "%s/trainprof_%s_%d", s.log_dir, date, N + 1);
    CHECK_STR(path, want);
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
    RUN(names_are_sanitized);
    RUN(unwritable_log_dir);
    RUN(rank_detection);
    RUN(trace_stems);
    return tp_test_finish();
}
