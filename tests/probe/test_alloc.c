/* Allocation tracking: pools, peaks, bad frees, leaks, threads. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"
#include "tp_test.h"
#include "util/json.h"

static char *report(tpi_alloc_tracker *t)
{
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    tpu_json_begin_object(&j);
    tpi_alloc_write_json(t, &j);
    tpu_json_end_object(&j);
    return tpu_buf_detach(&b);
}

TP_TEST(pools_and_peaks)
{
    tpi_alloc_tracker *t = tpi_alloc_tracker_new();
    uint64_t live = 0;
    char blocks[8];
    tpi_alloc_record(t, &blocks[0], 100, "weights", 0, &live);
    CHECK_EQ_INT(live, 100);
    tpi_alloc_record(t, &blocks[1], 50, "activations", 3, &live);
    CHECK_EQ_INT(live, 150);
    CHECK_EQ_INT(tpi_alloc_release(t, &blocks[1], "activations", &live), 50);
    CHECK_EQ_INT(live, 100);
    CHECK_EQ_INT(tpi_alloc_release(t, &blocks[5], "activations", &live), 0); /* unknown */
    CHECK_EQ_INT(tpi_alloc_release(t, NULL, NULL, &live), 0);               /* like free(NULL) */
    tpi_alloc_record(t, &blocks[0], 30, "weights", 0, &live);               /* twice: replaced */
    CHECK_EQ_INT(live, 30);
    tpi_alloc_record(t, &blocks[2], 7, NULL, 0, &live);
    char *js = report(t);
    CHECK_CONTAINS(js, "\"pool\":\"weights\",\"live_bytes\":30,\"peak_bytes\":100");
    CHECK_CONTAINS(js, "\"pool\":\"activations\",\"live_bytes\":0,\"peak_bytes\":50");
    CHECK_CONTAINS(js, "\"unknown_frees\":1");
    CHECK_CONTAINS(js, "\"pool\":\"default\"");
    CHECK_CONTAINS(js, "\"recorded_twice\":1");
    CHECK_CONTAINS(js, "\"possible_leak_groups\":2");
    CHECK_CONTAINS(js, "\"zone\":\"(no zone)\",\"blocks\":1,\"bytes\":30");
    free(js);
    tpi_alloc_tracker_free(t);
}

/* Many blocks: growth and backward-shift deletion keep every block findable. */
TP_TEST(many_blocks)
{
    tpi_alloc_tracker *t = tpi_alloc_tracker_new();
    enum { N = 200000 };
    char *base = malloc(N * 16);
    uint64_t live = 0;
    for (int i = 0; i < N; i++)
        tpi_alloc_record(t, base + i * 16, 16, "p", (uint32_t)(i % 3), &live);
    CHECK_EQ_INT(live, (uint64_t)N * 16);
    int bad = 0;
    for (int i = 0; i < N; i += 2)
        bad += tpi_alloc_release(t, base + i * 16, "p", &live) != 16;
    CHECK_EQ_INT(bad, 0);
    for (int i = 1; i < N; i += 2)
        bad += tpi_alloc_release(t, base + i * 16, "p", &live) != 16;
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(live, 0);
    char *js = report(t);
    CHECK_CONTAINS(js, "\"possible_leak_groups\":0");
    free(js);
    free(base);
    tpi_alloc_tracker_free(t);
}

static tpi_alloc_tracker *shared;
static void *worker(void *arg)
{
    char *base = arg;
    for (int r = 0; r < 20; r++)
        for (int i = 0; i < 5000; i++) {
            tpi_alloc_record(shared, base + i, 10, (i & 1) ? "a" : "b", 1, NULL);
            if (r < 19 || i >= 100)
                tpi_alloc_release(shared, base + i, NULL, NULL);
        }
    return NULL;
}

TP_TEST(threads)
{
    shared = tpi_alloc_tracker_new();
    pthread_t th[4];
    char *mem = malloc(4 * 5000);
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, worker, mem + i * 5000);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    char *js = report(shared);
    CHECK_CONTAINS(js, "\"allocations\":{\"live_bytes\":4000,");
    CHECK_CONTAINS(js, "\"unknown_frees\":0");
    free(js);
    tpi_alloc_print(shared, stdout);
    tpi_alloc_tracker_free(shared);
    free(mem);
}

/* Blocks allocated on one thread and freed on another; a thread going back
 * and forth between two trackers. Live bytes and counts stay exact. */
static void *alloc_only(void *arg)
{
    char *base = arg;
    for (int i = 0; i < 3000; i++)
        tpi_alloc_record(shared, base + i, 100, "x", 0, NULL);
    return NULL;
}

TP_TEST(cross_thread_frees_and_two_trackers)
{
    shared = tpi_alloc_tracker_new();
    tpi_alloc_tracker *other = tpi_alloc_tracker_new();
    char *mem = malloc(3000);
    pthread_t th;
    pthread_create(&th, NULL, alloc_only, mem);
    pthread_join(th, NULL);
    uint64_t live = 0, lo = 0;
    for (int i = 0; i < 3000; i++) {
        CHECK_EQ_INT(tpi_alloc_release(shared, mem + i, "x", &live), 100);
        tpi_alloc_record(other, mem + i, 1, "y", 0, &lo);
    }
    CHECK_EQ_INT(lo, 3000);
    char *js = report(shared);
    CHECK_CONTAINS(js, "\"allocations\":{\"live_bytes\":0,\"peak_live_bytes\":300000,");
    CHECK_CONTAINS(js, "\"allocations\":3000,\"frees\":3000,\"unknown_frees\":0");
    free(js);
    js = report(other);
    CHECK_CONTAINS(js, "\"live_bytes\":3000,\"peak_bytes\":3000,\"allocations\":3000");
    free(js);
    tpi_alloc_tracker_free(other);
    tpi_alloc_tracker_free(shared);
    free(mem);
}

/* A pool name built in a reused buffer: the pool is the text, not the
 * pointer (the tracker once cached pools by name pointer). */
TP_TEST(pool_name_in_reused_buffer)
{
    tpi_alloc_tracker *t = tpi_alloc_tracker_new();
    char name[32], blocks[4];
    uint64_t live = 0;
    strcpy(name, "cuda:0");
    tpi_alloc_record(t, &blocks[0], 100, name, 0, &live);
    strcpy(name, "cuda:1");
    tpi_alloc_record(t, &blocks[1], 40, name, 0, &live);
    char *js = report(t);
    CHECK_CONTAINS(js, "\"pool\":\"cuda:0\",\"live_bytes\":100,\"peak_bytes\":100");
    CHECK_CONTAINS(js, "\"pool\":\"cuda:1\",\"live_bytes\":40,\"peak_bytes\":40");
    free(js);
    tpi_alloc_tracker_free(t);
}

int main(void)
{
    RUN(pools_and_peaks);
    RUN(many_blocks);
    RUN(threads);
    RUN(cross_thread_frees_and_two_trackers);
    RUN(pool_name_in_reused_buffer);
    tpi_alloc_tracker_free(NULL);
    return tp_test_finish();
}
