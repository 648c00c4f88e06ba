/* tp_zone_complete (zones recorded whole at their end, in any order),
 * tp_zone_end_site (zones that end out of order) and
 * tp_session_operations (statistics while recording threads run; run under
 * TSan by the suite script: the reader drains under the collector lock). */
#include <pthread.h>

#include "test_common.h"
#include "tp_test.h"

enum { THREADS = 4, ZONES = 5000 };
static tp_session *g_s;

static const tp_op_stat *find_op(const tp_op_stat *ops, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ops[i].name, name) == 0)
            return &ops[i];
    return NULL;
}

static void *worker(void *arg)
{
    for (int i = 0; i < ZONES; i++) {
        TP_ZONE(g_s, "work");
    }
    return NULL;
}

TP_TEST(operations_while_threads_record)
{
    char dir[1024];
    g_s = open_test_session("query", NULL, dir, sizeof dir);
    CHECK(g_s != NULL);
    if (!g_s)
        return;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int k = 0; k < 50; k++) { /* reads race the writers and the collector */
        tp_op_stat *ops = NULL;
        int n = tp_session_operations(g_s, &ops, NULL);
        CHECK(n >= 0);
        tp_free(ops);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    tp_op_stat *ops = NULL;
    int n = tp_session_operations(g_s, &ops, NULL);
    const tp_op_stat *w = find_op(ops, n, "work");
    CHECK(w != NULL);
    if (w) {
        CHECK_EQ_INT(w->count, THREADS * ZONES); /* everything ended before the call */
        CHECK(w->min_s <= w->p50_s && w->p50_s <= w->p99_s && w->p99_s <= w->max_s);
        CHECK(w->total_s >= w->self_s);
    }
    tp_free(ops);
    CHECK_EQ_INT(tp_session_close(g_s, NULL), 0);
    rm_rf(dir);
}

TP_TEST(complete_zones_overlap_in_any_order)
{
    char dir[1024];
    tp_session *s = open_test_session("complete", NULL, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    static tp_site a = {"timer_a", __FILE__, __LINE__, 0}, b = {"timer_b", __FILE__, __LINE__, 0};
    tp_zone_begin_dyn(s, "outer");
    uint64_t ta = tp_session_now(s);
    usleep(2000);
    uint64_t tb = tp_session_now(s);
    usleep(2000);
    tp_zone_complete(s, &a, ta); /* a ends first: not nested in b */
    usleep(2000);
    tp_zone_complete(s, &b, tb);
    tp_zone_end(s);
    tp_zone_complete(s, &a, tp_session_now(s) + 1000000000ull); /* begin in the future */
    tp_zone_complete(NULL, &a, ta);                             /* no session: no-op */
    tp_op_stat *ops = NULL;
    int n = tp_session_operations(s, &ops, NULL);
    const tp_op_stat *oa = find_op(ops, n, "timer_a"), *ob = find_op(ops, n, "timer_b");
    const tp_op_stat *outer = find_op(ops, n, "outer");
    CHECK(oa && ob && outer);
    if (oa && ob && outer) {
        CHECK_EQ_INT(oa->count, 2);
        CHECK(oa->max_s >= 0.0035 && ob->max_s >= 0.0035);
        CHECK(oa->min_s == 0.0);                  /* the future begin: duration 0 */
        CHECK_NEAR(oa->self_s, oa->total_s, 1e-9); /* its own self time */
        CHECK_NEAR(outer->self_s, outer->total_s, 1e-9); /* not a parent of timers */
    }
    tp_free(ops);
    CHECK_EQ_INT(tp_session_close(s, NULL), 0);
    char *sum = read_in(dir, "training_summary.json");
    CHECK_CONTAINS(sum, "\"unbalanced_zones\": 1");
    free(sum);
    char *table = read_in(dir, "operations.json");
    CHECK_CONTAINS(table, "\"name\": \"timer_b\"");
    free(table);
    rm_rf(dir);
}

/* tp_zone_end_site: A begins, B begins, A ends, B ends: each keeps its own
 * interval (tp_zone_end would end B at A's end and A at B's). */
TP_TEST(zones_ended_out_of_order_keep_their_intervals)
{
    char dir[1024];
    tp_session *s = open_test_session("overlap", NULL, dir, sizeof dir);
    CHECK(s != NULL);
    if (!s)
        return;
    static tp_site a = {"zone_a", __FILE__, __LINE__, 0}, b = {"zone_b", __FILE__, __LINE__, 0};
    static tp_site never = {"never_begun", __FILE__, __LINE__, 0};
    tp_zone_begin_dyn(s, "outer");
    tp_zone_begin_site(s, &a);
    usleep(4000);
    tp_zone_begin_site(s, &b);
    usleep(4000);
    tp_zone_end_site(s, &a); /* a: 8 ms; b stays open */
    usleep(8000);
    tp_zone_end_site(s, &b); /* b: 12 ms */
    tp_zone_end_site(s, &never); /* not open: counted, ends nothing */
    tp_zone_begin_site(s, &a);
    tp_zone_end_site(s, &a); /* in order: the fast path */
    tp_zone_end(s);          /* outer */
    tp_zone_end_site(NULL, &a);
    tp_op_stat *ops = NULL;
    int n = tp_session_operations(s, &ops, NULL);
    const tp_op_stat *oa = find_op(ops, n, "zone_a"), *ob = find_op(ops, n, "zone_b");
    const tp_op_stat *outer = find_op(ops, n, "outer");
    CHECK(oa && ob && outer);
    if (oa && ob && outer) {
        CHECK_EQ_INT(oa->count, 2);
        CHECK_EQ_INT(ob->count, 1);
        CHECK(oa->max_s >= 0.0075 && oa->max_s < ob->max_s);
        CHECK(ob->max_s >= 0.0115);
        CHECK(outer->total_s >= 0.0155);
        CHECK(find_op(ops, n, "never_begun") == NULL);
    }
    tp_free(ops);
    CHECK_EQ_INT(tp_session_close(s, NULL), 0);
    char *sum = read_in(dir, "training_summary.json");
    CHECK_CONTAINS(sum, "\"unbalanced_zones\": 2"); /* the overlap and the END of nothing */
    free(sum);
    rm_rf(dir);
}

TP_TEST(null_and_bad_arguments)
{
    tp_op_stat *ops = (tp_op_stat *)1;
    CHECK_EQ_INT(tp_session_operations(NULL, &ops, NULL), 0);
    CHECK(ops == NULL);
    CHECK_EQ_INT(tp_session_operations(NULL, NULL, NULL), TP_ERR_INVALID);
    CHECK_EQ_INT(tp_session_now(NULL), 0);
}

int main(void)
{
    RUN(operations_while_threads_record);
    RUN(complete_zones_overlap_in_any_order);
    RUN(zones_ended_out_of_order_keep_their_intervals);
    RUN(null_and_bad_arguments);
    return tp_test_finish();
}
