/* 8 threads open zones concurrently (run under TSan by the suite script):
 * every zone is counted once, nothing is dropped, the trace is written. */
#include <pthread.h>

#include "test_common.h"
#include "tp_test.h"

enum { THREADS = 8, ZONES = 20000 };
static tp_session *g_s;

static void *worker(void *arg)
{
    char name[32];
    snprintf(name, sizeof name, "worker%d", (int)(intptr_t)arg);
    tp_thread_name(g_s, name);
    for (int i = 0; i < ZONES; i++) {
        TP_ZONE(g_s, "work");
        if (i % 100 == 0)
            tp_counter(g_s, "progress", i);
    }
    return NULL;
}

TP_TEST(eight_threads)
{
    static const char *const kv[] = {"active", "1000", "max_buffer_mb", "256", NULL};
    char dir[1024];
    tp_error err;
    g_s = open_test_session("threads", kv, dir, sizeof dir);
    CHECK(g_s != NULL);
    if (!g_s)
        return;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int step = 0; step < 20; step++) {
        {
            TP_ZONE(g_s, "main_work");
        }
        tp_step_end(g_s, 1);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    tp_session_stats st;
    tp_session_get_stats(g_s, &st);
    CHECK_EQ_INT(st.steps, 20);
    CHECK_EQ_INT(tp_session_close(g_s, &err), 0);
    char *ops = read_in(dir, "operations.json");
    char want[64];
    snprintf(want, sizeof want, "\"count\": %d", THREADS * ZONES);
    CHECK_CONTAINS(ops, "\"name\": \"work\"");
    CHECK_CONTAINS(ops, want);
    free(ops);
    char *sum = read_in(dir, "training_summary.json");
    CHECK_CONTAINS(sum, "\"dropped_events\": 0");
    CHECK_CONTAINS(sum, "\"unbalanced_zones\": 0");
    free(sum);
    rm_rf(dir);
}

int main(void)
{
    RUN(eight_threads);
    return tp_test_finish();
}
