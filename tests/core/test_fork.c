/* fork(): the child records nothing and never writes the parent's files. */
#include <sys/stat.h>
#include <sys/wait.h>

#include "sink/sink.h"
#include "test_common.h"
#include "tp_test.h"

TP_TEST(child_does_not_write)
{
    static const char *const kv[] = {"active", "100", NULL};
    char dir[1024], path[1200];
    tp_error err;
    tp_session *s = open_test_session("fork", kv, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    for (int i = 0; i < 3; i++) {
        TP_ZONE(s, "before_fork");
        tp_step_end(s, 1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 1000; i++) {
            TP_ZONE(s, "in_child");
            tp_step_end(s, 1);
        }
        tp_session_close(s, NULL);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct stat sb;
    snprintf(path, sizeof path, "%s/training_summary.json", dir);
    CHECK(stat(path, &sb) != 0); /* the child wrote nothing */
    for (int i = 0; i < 2; i++) {
        TP_ZONE(s, "after_fork");
        tp_step_end(s, 1);
    }
    CHECK_EQ_INT(tp_session_close(s, &err), 0);
    char *sum = read_in(dir, "training_summary.json");
    CHECK_CONTAINS(sum, "\"total_steps\": 5");
    free(sum);
    char *ops = read_in(dir, "operations.json");
    CHECK(ops && !strstr(ops, "in_child"));
    free(ops);
    rm_rf(dir);
}

/* A child that exits normally (exit() flushes stdio) while a sink file of
 * the parent has buffered, unflushed bytes must not write them again. */
TP_TEST(child_exit_does_not_duplicate_parent_bytes)
{
    static const char *const kv[] = {NULL};
    char dir[1024], path[1200];
    tp_error err;
    tp_session *s = open_test_session("forkexit", kv, dir, sizeof dir); /* registers the fork handler */
    CHECK(s != NULL);
    if (!s)
        return;
    snprintf(path, sizeof path, "%s/sink_file.txt", dir);
    FILE *f = tpi_sink_fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("written once", f); /* stays in the stdio buffer */
    pid_t pid = fork();
    if (pid == 0)
        exit(0); /* runs stdio's exit-time flush */
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ_INT(tpi_sink_fclose(f), 0);
    char *text = read_in(dir, "sink_file.txt");
    CHECK_STR(text, "written once");
    free(text);
    CHECK_EQ_INT(tp_session_close(s, &err), 0);
    rm_rf(dir);
}

int main(void)
{
    RUN(child_does_not_write);
    RUN(child_exit_does_not_duplicate_parent_bytes);
    return tp_test_finish();
}
