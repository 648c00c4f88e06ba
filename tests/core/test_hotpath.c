/* The recording thread never grows the chunk pool itself: chunks come
 * allocated and touched by the session (tpi_pool_top_up), so a step of
 * zones right after open takes no page fault on the recording thread. Before
 * this, each fresh 64 KB chunk cost the writer 16 faults, which the
 * collector's concurrent allocations and file writes stretched to 100-230 us
 * per zone (bench/core/bench_steps). */
#include <sys/resource.h>

#include "core/recorder.h"
#include "test_common.h"

static long thread_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt;
}

static void zones(tp_session *s, int n)
{
    for (int i = 0; i < n; i++) {
        TP_ZONE_BEGIN(s, "z");
        TP_ZONE_END(s);
    }
}

TP_TEST(no_fault_on_the_writer)
{
    static const char *const kv[] = {"memory", "false", "metrics", "none", NULL};
    char dir[1024];
    tp_session *s = open_test_session("hotpath", kv, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    zones(s, 1); /* registers the thread, interns the name, first chunk */
    thread_faults();
    /* a quarter of what is ready at open: 4 chunks of records */
    int n = TPI_POOL_MIN_READY * TPI_CHUNK_RECS / 8;
    long before = thread_faults();
    zones(s, n);
    long faults = thread_faults() - before;
    tp_step_end(s, 1);
    tp_session_close(s, NULL);
    rm_rf(dir);
    if (faults != 0)
        fprintf(stderr, "%ld page faults on the recording thread for %d zones\n", faults, n);
    CHECK_EQ_INT(faults, 0);
}

int main(void)
{
    RUN(no_fault_on_the_writer);
    return tp_test_finish();
}
