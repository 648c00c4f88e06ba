/* memory_profile.json sink: both layouts, valid after every flush, faults. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sink/sink.h"
#include "tp_test.h"
#include "util/fileio.h"

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static char *slurp(const char *dir)
{
    char path[512], *data = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/memory_profile.json", dir);
    if (tpu_read_file(path, &data, &len, NULL, 0) != 0)
        return NULL;
    return data;
}

static tpi_mem_sample s;

static void fill(uint64_t i)
{
    memset(&s, 0, sizeof s);
    s.step = i;
    s.ts_ns = i * 1000000ull;
    s.have_process = 1;
    s.rss_bytes = 1000 + i;
    s.have_system = 1;
    s.system_memory_percent = 12.5;
    s.n_devices = 1;
    strcpy(s.devices[0].mem.device, "cuda:0");
    strcpy(s.devices[0].source, "nvml");
    s.devices[0].mem.allocated_bytes = 1ull << 30;
    s.devices[0].mem.reserved_bytes = 2ull << 30;
    s.devices[0].mem.peak_bytes = 3ull << 30;
}

/* A memory_profile.json sink in a new directory (dir: a mkdtemp template);
 * the sink keeps pointers to st and env. */
static tpi_sink *open_sink(char *dir, tpi_settings *st, tpi_sink_env *env)
{
    CHECK(mkdtemp(dir) != NULL);
    memset(st, 0, sizeof *st);
    st->memory = 1;
    *env = (tpi_sink_env){.settings = st, .run_dir = dir, .host = "host", .pid = 1, .rank = -1};
    return tpi_sink_memory_json_new(env);
}

TP_TEST(rows_valid_at_every_flush)
{
    char dir[] = "/tmp/tp_memsink_XXXXXX";
    tpi_settings st;
    tpi_sink_env env;
    tpi_sink *k = open_sink(dir, &st, &env);
    CHECK(k != NULL);
    char *d = slurp(dir);
    CHECK_STR(d, "[\n]\n"); /* valid before any row */
    free(d);
    tpi_step_info si;
    memset(&si, 0, sizeof si);
    si.step = 10;
    si.batch_idx = 2; /* epoch started at step 8 */
    k->ops->step(k, &si);
    for (uint64_t i = 0; i < 40; i++) {
        fill(i + 10);
        k->ops->memory(k, &s);
    }
    d = slurp(dir); /* 32 rows flushed, 8 pending: still a whole array */
    CHECK_EQ_INT(count(d, "\"step\""), 32);
    CHECK(d && strcmp(d + strlen(d) - 3, "\n]\n") == 0);
    CHECK_CONTAINS(d, "{\"step\":10,\"batch_idx\":2,");
    CHECK_CONTAINS(d, "\"cpu_memory_percent\":12.5");
    CHECK_CONTAINS(d, "\"rss_bytes\":1010");
    CHECK_CONTAINS(d, "\"gpu_memory_allocated_gb\":1.0,\"gpu_memory_reserved_gb\":2.0");
    CHECK_CONTAINS(d, "\"memory\":{\"cuda:0\":{\"bytes_in_use\":1073741824,"
                      "\"peak_bytes_in_use\":3221225472");
    free(d);
    CHECK_EQ_INT(k->ops->close(k, NULL), 0);
    d = slurp(dir);
    CHECK_EQ_INT(count(d, "\"step\""), 40);
    CHECK_CONTAINS(d, "\"step\":49,\"batch_idx\":41");
    CHECK(d && strncmp(d, "[\n{", 3) == 0);
    free(d);
    k->ops->destroy(k);
    tp_test_rm_rf(dir);
}

/* A script written for a GPU run reads the same keys on a CPU run: 0.0 and
 * {} as the reference trainers write without CUDA (issue 12). */
TP_TEST(gpu_fields_without_gpu)
{
    char dir[] = "/tmp/tp_memsink_XXXXXX";
    tpi_settings st;
    tpi_sink_env env;
    tpi_sink *k = open_sink(dir, &st, &env);
    fill(1);
    s.n_devices = 0;
    k->ops->memory(k, &s);
    k->ops->close(k, NULL);
    char *d = slurp(dir);
    CHECK_CONTAINS(d, "\"gpu_memory_allocated_gb\":0.0,\"gpu_memory_reserved_gb\":0.0,"
                      "\"memory\":{}}");
    free(d);
    k->ops->destroy(k);
    tp_test_rm_rf(dir);
}

TP_TEST(off_and_unwritable)
{
    tpi_settings st;
    memset(&st, 0, sizeof st);
    tpi_sink_env env = {.settings = &st, .run_dir = "/tmp", .host = "host", .pid = 1, .rank = -1};
    CHECK(tpi_sink_memory_json_new(&env) == NULL); /* memory off */
    st.memory = 1;
    env.run_dir = "/nonexistent/dir";
    tpi_sink *k = tpi_sink_memory_json_new(&env);
    CHECK(k != NULL && k->failed);
    fill(1);
    for (int i = 0; i < 100; i++)
        k->ops->memory(k, &s); /* ignored, no crash */
    CHECK(k->ops->close(k, NULL) != 0);
    CHECK(k->io_errors >= 1);
    k->ops->destroy(k);
}

int main(void)
{
    RUN(rows_valid_at_every_flush);
    RUN(gpu_fields_without_gpu);
    RUN(off_and_unwritable);
    return tp_test_finish();
}
