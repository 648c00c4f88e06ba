/*
 * YAML golden files: every tests/config/golden/NAME.yaml is loaded and the
 * result compared with NAME.expected: the values that differ from the
 * defaults with their sources (`trainprof config --explain` lines), or the
 * error (code, line, column, message). TP_UPDATE_GOLDEN=1 rewrites the
 * .expected files.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_test.h"
#include "trainprof.h"
#include "util/buf.h"
#include "util/fileio.h"

#define GOLDEN_DIR TP_SOURCE_DIR "/tests/config/golden"

/* Lines of the explanation whose source is not "default". */
static void result_of(const char *yaml, tpu_buf *out)
{
    tp_config *cfg = tp_config_new();
    tp_error err = {0};
    int rc = tp_config_load_file(cfg, yaml, &err);
    if (rc != 0) {
        tpu_buf_printf(out, "error %d at %s:%d:%d\n%s\n", rc, err.file, err.line, err.column,
                       err.message);
    } else {
        char *ex = tp_config_describe(cfg, 1);
        for (char *line = strtok(ex, "\n"); line; line = strtok(NULL, "\n"))
            if (strlen(line) < 9 || strcmp(line + strlen(line) - 9, "# default") != 0)
                tpu_buf_printf(out, "%s\n", line);
        tp_free(ex);
    }
    tp_config_free(cfg);
}

static int compare_one(const char *name)
{
    char yaml[256], expected_path[256];
    tpu_buf got = {0};
    char *want = NULL;
    size_t want_len = 0;
    snprintf(yaml, sizeof yaml, "%s", name);
    snprintf(expected_path, sizeof expected_path, "%.*s.expected", (int)(strlen(name) - 5), name);
    result_of(yaml, &got);
    const char *g = tpu_buf_cstr(&got);
    if (getenv("TP_UPDATE_GOLDEN")) {
        CHECK_EQ_INT(tpu_write_file_atomic(expected_path, g, got.len, NULL, 0), 0);
    } else if (tpu_read_file(expected_path, &want, &want_len, NULL, 0) != 0) {
        fprintf(stderr, "%s: missing (TP_UPDATE_GOLDEN=1 writes it)\n", expected_path);
        CHECK(0);
    } else {
        if (strcmp(want, g) != 0)
            fprintf(stderr, "--- %s expected:\n%s--- got:\n%s", expected_path, want, g);
        CHECK_STR(g, want);
    }
    free(want);
    tpu_buf_free(&got);
    return 1;
}

TP_TEST(golden_files)
{
    int n = 0;
    CHECK_EQ_INT(chdir(GOLDEN_DIR), 0);
    DIR *d = opendir(".");
    CHECK(d != NULL);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".yaml") == 0)
            n += compare_one(de->d_name);
    }
    if (d)
        closedir(d);
    CHECK(n >= 10);
}

int main(void)
{
    unsetenv("TRAINPROF_CONFIG");
    RUN(golden_files);
    return tp_test_finish();
}
