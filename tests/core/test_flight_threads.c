/* The flight recorder under concurrency (run under TSan by the suite):
 * 4 threads record zones and counters while the main thread steps, another
 * thread asks for captures (tp_session_capture) and raises SIGUSR1 until
 * captures_max are written, and a stalled step may trip a short hang
 * timeout; the captures are written by the collector, listed in
 * captures.json, and every event count stays exact. */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "test_common.h"
#include "tp_test.h"

enum { THREADS = 4, ZONES = 5000 };
static tp_session *g_s;
static int g_stop; /* atomic */

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ZONES; i++) {
        TP_ZONE(g_s, "work");
        if (i % 100 == 0)
            tp_counter(g_s, "progress", i);
    }
    return NULL;
}

/* Asks until captures_max (12) captures are written (at most 60 s). */
static void *asker(void *arg)
{
    (void)arg;
    struct timespec ms = {0, 3 * 1000 * 1000};
    for (int i = 0; tp_session_captures(g_s) < 12 && i < 20000; i++) {
        if (i % 2)
            tp_session_capture(g_s, "user", "from the asking thread");
        else
            raise(SIGUSR1); /* the session's handler: a count the collector reads */
        nanosleep(&ms, NULL);
    }
    __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)); p++)
        n++;
    return n;
}

TP_TEST(captures_while_threads_record)
{
    static const char *const kv[] = {"captures_max", "12", "hang_timeout", "150ms",
                                     "capture_slow_step", "0", "metrics", "none",
                                     "html_report", "false", NULL};
    char dir[1024];
    tp_error err;
    g_s = open_test_session("flight", kv, dir, sizeof dir);
    CHECK(g_s != NULL);
    if (!g_s)
        return;
    pthread_t th[THREADS], ask;
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    pthread_create(&ask, NULL, asker, NULL);
    for (int step = 0; step < 40 || !__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE); step++) {
        TP_ZONE(g_s, "main_work");
        if (step == 30) { /* a stall: the hang capture */
            struct timespec t = {0, 400 * 1000 * 1000};
            while (nanosleep(&t, &t) != 0)
                ;
        }
        tp_step_end(g_s, 1);
    }
    pthread_join(ask, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    uint64_t written = tp_session_captures(g_s);
    CHECK_EQ_INT((int)written, 12);
    CHECK_EQ_INT(tp_session_capture(g_s, "Bad Reason", NULL), TP_ERR_INVALID);
    CHECK_EQ_INT(tp_session_close(g_s, &err), 0);
    char *index = read_in(dir, "captures.json");
    CHECK(index != NULL);
    if (index) {
        CHECK_EQ_INT(count(index, "\"reason\":"), 12); /* asked far more often: capped */
        CHECK(count(index, "\"reason\":\"hang\"") <= 1);
        CHECK_CONTAINS(index, "\"reason\":\"signal\"");
        CHECK_CONTAINS(index, "\"reason\":\"user\"");
    }
    char *ops = read_in(dir, "operations.json");
    char want[64];
    snprintf(want, sizeof want, "\"count\": %d", THREADS * ZONES);
    CHECK_CONTAINS(ops, want);
    free(index);
    free(ops);
    rm_rf(dir);
}

int main(void)
{
    RUN(captures_while_threads_record);
    return tp_test_finish();
}
