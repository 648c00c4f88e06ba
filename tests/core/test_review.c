/* Contracts and edge cases of the session found in review: close without
 * an error struct, zone args that are not valid JSON, several sessions
 * used from one thread. */
#include <dirent.h>

#include "test_common.h"
#include "tp_test.h"

/* The content of the first trace file in <dir>/profiler_traces. */
static char *read_trace(const char *dir)
{
    char tdir[1200], name[1400];
    snprintf(tdir, sizeof tdir, "%s/profiler_traces", dir);
    DIR *d = opendir(tdir);
    if (!d)
        return NULL;
    struct dirent *e;
    name[0] = '\0';
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".pt.trace.json")) {
            snprintf(name, sizeof name, "profiler_traces/%s", e->d_name);
            break;
        }
    closedir(d);
    return name[0] ? read_in(dir, name) : NULL;
}

/* "Functions that can fail return ... a negative tp_error_code on failure,
 * and fill the optional tp_error": the code is returned without err too. */
TP_TEST(close_without_err_returns_io_error)
{
    static const char *const kv[] = {"wait", "1", "active", "2", "repeat", "1", NULL};
    char dir[1024], path[1200];
    tp_session *s = open_test_session("closenull", kv, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    snprintf(path, sizeof path, "%s/profiler_traces", dir);
    FILE *f = fopen(path, "w"); /* trace opens fail: one I/O error */
    CHECK(f != NULL);
    if (f)
        fclose(f);
    for (int step = 0; step < 4; step++) {
        { TP_ZONE(s, "work"); }
        tp_step_end(s, 1);
    }
    CHECK_EQ_INT(tp_session_close(s, NULL), TP_ERR_IO);
    rm_rf(dir);
}

int main(void)
{
    RUN(close_without_err_returns_io_error);
    return tp_test_finish();
}
