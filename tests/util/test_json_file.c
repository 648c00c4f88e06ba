/* JSON files valid at every moment (util/json_file.c, memory_profile.json
 * and `trainprof run` outputs): bounded memory once writing failed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/json_file.h"
#include "tp_test.h"

static void add_item(tpu_json_file *f, int i)
{
    char text[64];
    snprintf(text, sizeof text, "{\"i\":%d}", i);
    tpu_buf_puts(tpu_json_file_item(f), text);
}

/* After a failed write (disk full) the file keeps its valid JSON and the
 * items of a long run are no longer buffered forever. */
TP_TEST(failed_file_stops_buffering)
{
    char dir[] = "/tmp/tp_json_file_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    tpu_json_file f;
    CHECK_EQ_INT(tpu_json_file_open(&f, dir, "rows.json", "[", "\n]\n"), 0);
    add_item(&f, 0);
    tpu_json_file_flush(&f);
    int full = open("/dev/full", O_WRONLY);
    if (full < 0) {
        fprintf(stderr, "no /dev/full: skipped\n");
    } else {
        int saved = dup(f.fd);
        dup2(full, f.fd); /* every later write: ENOSPC */
        close(full);
        add_item(&f, 1);
        tpu_json_file_flush(&f);
        CHECK(f.failed);
        for (int i = 2; i < 100000; i++)
            add_item(&f, i);
        CHECK(f.pending.len < 4096);
        dup2(saved, f.fd);
        close(saved);
    }
    tpu_json_file_close(&f, 0);
    char path[256], text[256] = "";
    snprintf(path, sizeof path, "%s/rows.json", dir);
    FILE *in = fopen(path, "r");
    CHECK(in != NULL);
    size_t n = in ? fread(text, 1, sizeof text - 1, in) : 0;
    text[n] = '\0';
    if (in)
        fclose(in);
    CHECK_STR(text, "[\n{\"i\":0}\n]\n");
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    RUN(failed_file_stops_buffering);
    return tp_test_finish();
}
