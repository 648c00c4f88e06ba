/* recorder: records cross chunk boundaries in order, the pool bound holds,
 * drops are counted, drained chunks are recycled. */
#include "core/recorder.h"
#include "tp_test.h"

static void put(tpi_tbuf *b, uint64_t ts, uint32_t n)
{
    tpi_rec *r = tpi_tbuf_reserve(b, n);
    if (!r)
        return;
    r->e.ts = ts;
    r->e.hdr = TPI_REC_HDR(n == 1 ? TPI_REC_BEGIN : TPI_REC_COUNTER, 5);
    r->e.arg = 0;
    for (uint32_t k = 1; k < n; k++)
        r[k].x.a = ts, r[k].x.b = 0;
    tpi_tbuf_commit(b, n);
}

static uint64_t drain(tpi_cursor *c, tpi_tbuf *b, uint64_t *last)
{
    uint64_t n = 0;
    const tpi_rec *r;
    while ((r = tpi_cursor_peek(c, b))) {
        uint32_t slots = TPI_REC_KIND(r->e.hdr) == TPI_REC_COUNTER ? 2 : 1;
        CHECK(r->e.ts > *last);
        if (slots == 2)
            CHECK_EQ_INT(tpi_cursor_slot(c, 1)->x.a, r->e.ts);
        *last = r->e.ts;
        tpi_cursor_advance(c, slots);
        n++;
    }
    return n;
}

TP_TEST(order_across_chunks)
{
    tpi_pool pool;
    tpi_pool_init(&pool, 64 * sizeof(tpi_chunk));
    tpi_tbuf b;
    tpi_tbuf_init(&b, &pool, 1, 0);
    tpi_cursor c = {0};
    uint64_t last = 0, got = 0, ts = 1;
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < TPI_CHUNK_RECS * 3 / 2; i++, ts++)
            put(&b, ts, (i % 7 == 0) ? 2 : 1);
        got += drain(&c, &b, &last);
    }
    CHECK_EQ_INT(got, ts - 1);
    CHECK_EQ_INT(b.dropped, 0);
    CHECK(pool.allocated <= 4); /* chunks are recycled */
    /* free the chunks still held */
    tpi_pool_put(&pool, c.chunk);
    tpi_pool_destroy(&pool);
}

TP_TEST(bounded_and_counted)
{
    tpi_pool pool;
    tpi_pool_init(&pool, 4 * sizeof(tpi_chunk));
    tpi_tbuf b;
    tpi_tbuf_init(&b, &pool, 1, 0);
    uint64_t n = 10 * TPI_CHUNK_RECS;
    for (uint64_t i = 1; i <= n; i++)
        put(&b, i, 1);
    CHECK_EQ_INT(pool.allocated, 4);
    CHECK_EQ_INT(b.dropped, n - 4 * TPI_CHUNK_RECS);
    tpi_cursor c = {0};
    uint64_t last = 0;
    CHECK_EQ_INT(drain(&c, &b, &last), 4 * TPI_CHUNK_RECS);
    /* after draining, recording resumes */
    put(&b, n + 1, 1);
    CHECK_EQ_INT(drain(&c, &b, &last), 1);
    tpi_pool_put(&pool, c.chunk);
    tpi_pool_destroy(&pool);
}

static int g_wakes;
static void count_wake(void *ctx)
{
    (void)ctx;
    g_wakes++;
}

/* Once the pool is exhausted every event goes through the refill path; the
 * writer wakes the collector once per collector pass, not once per event
 * (a wake per event made recording 2-3x slower while the collector was
 * behind, bench_steps and the issue 12 probe with the default pool). */
TP_TEST(exhausted_pool_wakes_once_per_pass)
{
    tpi_pool pool;
    tpi_pool_init(&pool, 4 * sizeof(tpi_chunk));
    pool.low_cb = count_wake;
    tpi_tbuf b;
    tpi_tbuf_init(&b, &pool, 1, 0);
    uint64_t n = 10 * TPI_CHUNK_RECS;
    for (uint64_t i = 1; i <= n; i++)
        put(&b, i, 1);
    CHECK_EQ_INT(b.dropped, n - 4 * TPI_CHUNK_RECS);
    CHECK_EQ_INT(g_wakes, 1);
    tpi_pool_pass_done(&pool); /* the collector ran (and drained nothing) */
    for (uint64_t i = 1; i <= 1000; i++)
        put(&b, n + i, 1);
    CHECK_EQ_INT(g_wakes, 2);
    tpi_cursor c = {0};
    uint64_t last = 0;
    CHECK_EQ_INT(drain(&c, &b, &last), 4 * TPI_CHUNK_RECS);
    tpi_pool_put(&pool, c.chunk);
    tpi_pool_destroy(&pool);
}

int main(void)
{
    RUN(order_across_chunks);
    RUN(bounded_and_counted);
    RUN(exhausted_pool_wakes_once_per_pass);
    return tp_test_finish();
}
