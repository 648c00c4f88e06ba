/* Unit tests of the exporter sinks, fed synthetic events (no core). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exp_synth.h"
#include "sink/crc32c.h"
#include "sink/pbwire.h"
#include "sink/strmap.h"
#include "tp_test.h"
#include "util/fileio.h"

static char tmp_root[256];

static void tmpdir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmp_root, name);
    mkdir(out, 0755);
}

static size_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

static int count_lines(const char *path)
{
    char *data = NULL, err[256];
    size_t len = 0;
    if (tpu_read_file(path, &data, &len, err, sizeof err) != 0)
        return -1;
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\n';
    free(data);
    return n;
}

TP_TEST(crc32c_vectors)
{
    unsigned char buf[32];
    CHECK_EQ_INT(tpi_crc32c("123456789", 9), 0xE3069283u);
    memset(buf, 0, sizeof buf);
    CHECK_EQ_INT(tpi_crc32c(buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, sizeof buf);
    CHECK_EQ_INT(tpi_crc32c(buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    CHECK_EQ_INT(tpi_crc32c(buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)(31 - i);
    CHECK_EQ_INT(tpi_crc32c(buf, 32), 0x113FDB5Cu);
    /* incremental == one shot, across the 8-byte fast path */
    CHECK_EQ_INT(tpi_crc32c_update(tpi_crc32c("1234", 4), "56789", 5), 0xE3069283u);
    CHECK_EQ_INT(tpi_crc32c("", 0), 0);
    CHECK_EQ_INT(tpi_crc32c_mask(0), 0xa282ead8u);
}

TP_TEST(pb_wire)
{
    tpu_buf b = { 0 };
    tpi_pb_varint(&b, 300);
    CHECK_EQ_INT(b.len, 2);
    CHECK_EQ_INT((unsigned char)b.data[0], 0xac);
    CHECK_EQ_INT((unsigned char)b.data[1], 0x02);
    tpu_buf_reset(&b);
    tpi_pb_uint(&b, 150, 1); /* tag (150<<3) = 1200 -> b0 09 */
    CHECK_EQ_INT((unsigned char)b.data[0], 0xb0);
    CHECK_EQ_INT((unsigned char)b.data[1], 0x09);
    tpu_buf_reset(&b);
    /* nested message longer than 127 bytes: the length is moved in place */
    size_t m = tpi_pb_begin(&b, 1);
    char big[200];
    memset(big, 'x', sizeof big);
    tpi_pb_bytes(&b, 2, big, sizeof big);
    tpi_pb_end(&b, m);
    CHECK_EQ_INT(b.len, 1 + 2 + 1 + 2 + 200);
    CHECK_EQ_INT((unsigned char)b.data[0], 0x0a);
    CHECK_EQ_INT((unsigned char)b.data[1], 0xcb); /* 203 = 0xcb 0x01 */
    CHECK_EQ_INT((unsigned char)b.data[2], 0x01);
    CHECK_EQ_INT((unsigned char)b.data[3], 0x12);
    CHECK_EQ_INT((unsigned char)b.data[4], 0xc8);
    CHECK_EQ_INT(b.data[6], 'x');
    CHECK_EQ_INT(b.data[b.len - 1], 'x');
    tpu_buf_free(&b);
}

TP_TEST(tfrecord_frame)
{
    tpu_buf b = { 0 };
    tpi_tfrecord_frame(&b, "abc", 3);
    CHECK_EQ_INT(b.len, 8 + 4 + 3 + 4);
    CHECK_EQ_INT((unsigned char)b.data[0], 3);
    uint32_t lc = 0, dc = 0;
    for (int i = 0; i < 4; i++) {
        lc |= (uint32_t)(unsigned char)b.data[8 + i] << (8 * i);
        dc |= (uint32_t)(unsigned char)b.data[15 + i] << (8 * i);
    }
    CHECK_EQ_INT(lc, tpi_crc32c_mask(tpi_crc32c(b.data, 8)));
    CHECK_EQ_INT(dc, tpi_crc32c_mask(tpi_crc32c("abc", 3)));
    tpu_buf_free(&b);
}

TP_TEST(strmap_basic)
{
    tpi_strmap m = { 0 };
    char key[32];
    uint32_t v = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "k%u", i);
        CHECK(tpi_strmap_put(&m, key, i * 3) == 0);
    }
    CHECK_EQ_INT(m.n, 1000);
    CHECK(tpi_strmap_get(&m, "k777", &v) && v == 2331);
    CHECK(!tpi_strmap_get(&m, "nope", &v));
    tpi_strmap_put(&m, "k1", 5);
    CHECK(tpi_strmap_get(&m, "k1", &v) && v == 5);
    CHECK_EQ_INT(m.n, 1000);
    tpi_strmap_free(&m);
}

TP_TEST(constructors_follow_settings)
{
    exp_run r;
    char dir[300];
    tmpdir(dir, sizeof dir, "off");
    exp_run_init(&r, dir);
    r.settings.trace_formats = TPI_TRACE_CHROME;
    r.settings.metrics = 0;
    r.settings.with_stack = 0;
    exp_run_add_exporters(&r);
    CHECK_EQ_INT(r.n_sinks, 0);
    CHECK(tpi_sink_perfetto_new(NULL) == NULL);
}

TP_TEST(full_run_writes_every_file)
{
    exp_run r;
    char dir[300], p[600];
    tmpdir(dir, sizeof dir, "full");
    exp_run_init(&r, dir);
    exp_run_add_exporters(&r);
    CHECK_EQ_INT(r.n_sinks, 5);
    exp_run_feed(&r, 4, 6);
    CHECK_EQ_INT(exp_run_finish(&r), 0);
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    CHECK_EQ_INT(count_lines(p), 4);
    snprintf(p, sizeof p, "%s/metrics.csv", dir);
    CHECK_EQ_INT(count_lines(p), 5);
    snprintf(p, sizeof p, "%s/profiler_traces/testhost_777.1.perfetto-trace", dir);
    size_t pf = file_size(p);
    CHECK(pf > 100);
    CHECK(pf < 16 * r.slices + 1024); /* compression on: well under 16 B/zone */
    snprintf(p, sizeof p, "%s/profiler_traces/testhost_777.1.stacks.txt", dir);
    CHECK(count_lines(p) >= 8);
    snprintf(p, sizeof p, "%s/events.out.tfevents.1700000000.testhost.777", dir);
    CHECK(file_size(p) > 100);
}

TP_TEST(log_every_thins_metrics)
{
    exp_run r;
    char dir[300], p[600];
    tmpdir(dir, sizeof dir, "every");
    exp_run_init(&r, dir);
    r.settings.log_every = 2;
    exp_run_add_exporters(&r);
    exp_run_feed(&r, 5, 2);
    exp_run_finish(&r);
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    CHECK_EQ_INT(count_lines(p), 2); /* steps 1 and 3 */
}

/* Disk full for two sinks (their files are links to /dev/full): they stop
 * with one warning each; the other sinks write complete files. */
TP_TEST(disk_full_stops_one_sink_only)
{
    exp_run r;
    char dir[300], p[600];
    tmpdir(dir, sizeof dir, "full_disk");
    snprintf(p, sizeof p, "%s/profiler_traces", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    CHECK(symlink("/dev/full", p) == 0);
    snprintf(p, sizeof p, "%s/profiler_traces/testhost_777.1.perfetto-trace", dir);
    CHECK(symlink("/dev/full", p) == 0);
    exp_run_init(&r, dir);
    exp_run_add_exporters(&r);
    CHECK_EQ_INT(r.n_sinks, 5);
    exp_run_feed(&r, 4, 4);
    int failed = 0;
    for (int i = 0; i < r.n_sinks; i++) {
        tpi_sink *k = r.sinks[i];
        int expect = !strcmp(k->ops->name, "jsonl") || !strcmp(k->ops->name, "perfetto");
        CHECK_EQ_INT(k->failed != 0, expect);
        if (expect)
            CHECK(k->io_errors >= 1);
        failed += k->failed != 0;
    }
    CHECK_EQ_INT(failed, 2);
    CHECK_EQ_INT(exp_run_finish(&r), 2);
    snprintf(p, sizeof p, "%s/metrics.csv", dir);
    CHECK_EQ_INT(count_lines(p), 5);
    snprintf(p, sizeof p, "%s/profiler_traces/testhost_777.1.stacks.txt", dir);
    CHECK(count_lines(p) > 0);
}

/* A run directory that cannot be written: the metrics sinks start failed
 * (one warning each) and every later callback is a no-op. */
TP_TEST(unwritable_dir)
{
    exp_run r;
    exp_run_init(&r, "/proc/trainprof-no-such-dir");
    exp_run_add_exporters(&r);
    exp_run_feed(&r, 3, 2);
    int failed = exp_run_finish(&r);
    CHECK(failed >= 3); /* jsonl, csv, tensorboard; trace sinks too */
}

/* Feeds one step of the csv sink alone with the given op totals. */
static void csv_feed(exp_run *r, uint64_t step, const tpi_op_stat *tot, size_t n)
{
    tpi_step_info si = { .step = step, .end_ns = step + 1, .step_time_s = 0.5, .samples = 1,
                         .phase = TPI_PHASE_ACTIVE, .totals = tot, .n_totals = n };
    for (int i = 0; i < r->n_sinks; i++)
        if (r->sinks[i]->ops->step)
            r->sinks[i]->ops->step(r->sinks[i], &si);
}

/* Counts CSV records (newlines outside quoted cells) and the cells of the
 * first and last record. */
static void csv_shape(const char *path, int *records, int *first_cells, int *last_cells)
{
    char *data = NULL, err[256];
    size_t len = 0;
    *records = *first_cells = *last_cells = -1;
    if (tpu_read_file(path, &data, &len, err, sizeof err) != 0)
        return;
    int rec = 0, cells = 1, q = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] == '"') q = !q;
        else if (!q && data[i] == ',') cells++;
        else if (!q && data[i] == '\n') {
            if (rec == 0) *first_cells = cells;
            *last_cells = cells;
            rec++;
            cells = 1;
        }
    }
    *records = rec;
    free(data);
}

/* A new op mid-run widens the CSV: the rewrite must keep a header whose
 * quoted cell holds a newline as one record, and every row as wide. */
TP_TEST(csv_widen_keeps_quoted_newline_header)
{
    exp_run r;
    char dir[300], p[600];
    tmpdir(dir, sizeof dir, "csv_nl");
    exp_run_init(&r, dir);
    r.settings.metrics = TPI_METRIC_CSV;
    r.settings.with_stack = 0;
    r.settings.trace_formats = 0;
    exp_run_add_exporters(&r);
    CHECK_EQ_INT(r.n_sinks, 1);
    tpi_op_stat tot[2] = { { .name = "load\nbatch, \"x\"", .count = 1, .total_s = 1 },
                           { .name = "late_op", .count = 1, .total_s = 2 } };
    csv_feed(&r, 0, tot, 1);
    csv_feed(&r, 1, tot, 2); /* new columns: rewrite */
    csv_feed(&r, 2, tot, 2);
    CHECK_EQ_INT(exp_run_finish(&r), 0);
    snprintf(p, sizeof p, "%s/metrics.csv", dir);
    int recs, first, last;
    csv_shape(p, &recs, &first, &last);
    CHECK_EQ_INT(recs, 4);
    CHECK_EQ_INT(first, last);
}

/* Op names longer than the key buffer must not make the avg/total/count
 * metrics of one op share one (truncated) name. */
TP_TEST(long_op_name_keeps_distinct_metrics)
{
    exp_run r;
    char dir[300], p[600], name[400];
    tmpdir(dir, sizeof dir, "csv_long");
    exp_run_init(&r, dir);
    r.settings.metrics = TPI_METRIC_CSV;
    r.settings.with_stack = 0;
    r.settings.trace_formats = 0;
    exp_run_add_exporters(&r);
    memset(name, 'k', sizeof name - 1);
    name[sizeof name - 1] = 0;
    tpi_op_stat tot[1] = { { .name = name, .count = 2, .total_s = 1 } };
    csv_feed(&r, 0, tot, 1);
    CHECK_EQ_INT(exp_run_finish(&r), 0);
    snprintf(p, sizeof p, "%s/metrics.csv", dir);
    int recs, first, last;
    csv_shape(p, &recs, &first, &last);
    CHECK_EQ_INT(recs, 2);
    CHECK_EQ_INT(first, 5 + 2 + 3); /* fixed, step_time, samples/s, 3 per op */
}

int main(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/tp_exporters_unit.%d", (int)getpid());
    mkdir(tmp_root, 0755);
    RUN(crc32c_vectors);
    RUN(pb_wire);
    RUN(tfrecord_frame);
    RUN(strmap_basic);
    RUN(constructors_follow_settings);
    RUN(full_run_writes_every_file);
    RUN(log_every_thins_metrics);
    RUN(disk_full_stops_one_sink_only);
    RUN(unwritable_dir);
    RUN(csv_widen_keeps_quoted_newline_header);
    RUN(long_op_name_keeps_distinct_metrics);
    int rc = tp_test_finish();
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmp_root);
    }
    return rc;
}
