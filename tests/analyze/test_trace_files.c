/* test_trace_files.c - the one rule for which files of a directory are
 * traces (trace/trace_files.c), used by the page builder and job dirs. */
#include "analyze/trace/trace.h"
#include "tp_test.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

TP_TEST(names)
{
    CHECK(tpa_is_trace_file_name("host_123.1700000000.pt.trace.json"));
    CHECK(tpa_is_trace_file_name("rank0.json.gz"));
    CHECK(tpa_is_trace_file_name("trace.json"));
    static const char *const not_traces[] = {
        ".hidden.json", "job.json", "clock.json", "config.json", "operations.json",
        "training_summary.json", "run_summary.json", "captures.json", "live.json",
        "timing_profile.json", "memory_profile.json", "x_stacks.json", "trace.json.tmp",
        "notes.txt", "json", ".json", "a.gz",
    };
    for (size_t i = 0; i < sizeof not_traces / sizeof *not_traces; i++) {
        if (tpa_is_trace_file_name(not_traces[i])) fprintf(stderr, "taken for a trace: %s\n", not_traces[i]);
        CHECK(!tpa_is_trace_file_name(not_traces[i]));
    }
}

/* A file holding a (tiny) trace: empty files are skipped with a warning. */
static void touch(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("[]", f);
        fclose(f);
    }
}

TP_TEST(listing_sorted_traces_only)
{
    char dir[] = "/tmp/tpa_trace_files_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    touch(dir, "b.pt.trace.json");
    touch(dir, "a.pt.trace.json.gz");
    touch(dir, "timing_profile.json");
    touch(dir, "captures.json");
    char sub[600];
    snprintf(sub, sizeof sub, "%s/dir.json", dir);  /* a directory named like a trace */
    CHECK(mkdir(sub, 0700) == 0);
    char **files;
    size_t n;
    tpa_error err;
    CHECK_EQ_INT(tpa_trace_files(dir, &files, &n, &err), 0);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_CONTAINS(files[0], "/a.pt.trace.json.gz");
        CHECK_CONTAINS(files[1], "/b.pt.trace.json");
    }
    for (size_t i = 0; i < n; i++) free(files[i]);
    free(files);
    CHECK(tpa_is_dir(dir) && tpa_is_dir(sub) && !tpa_is_dir("/nonexistent/x"));
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK_EQ_INT(tpa_trace_files(dir, &files, &n, &err), -1);  /* gone: the error names it */
    CHECK_EQ_INT(err.code, TPA_ERR_IO);
    CHECK_STR(err.file, dir);
}

int main(void)
{
    RUN(names);
    RUN(listing_sorted_traces_only);
    return tp_test_finish();
}
