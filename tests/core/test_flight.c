/* The flight recorder's ring (src/core/flight_ring.c): it holds exactly the
 * events of the last n steps (and the step in progress) across wraparound
 * and growth, stays within its byte bound however many events a step has
 * (dropping the oldest, counted), and 10 steps of 100 zones take < 4 MB. */
#include <stdio.h>
#include <string.h>

#include "core/flight.h"
#include "tp_test.h"

/* Pushes `n` slices of step `step` (ts = step * 1e6 + i). */
static void push_step(tpi_fl_ring *r, uint64_t step, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        tpi_fl_ev *e = tpi_fl_ring_push(r);
        CHECK(e != NULL);
        if (!e)
            return;
        memset(e, 0, sizeof *e);
        e->kind = TPI_FL_SLICE;
        e->ts_ns = step * 1000000 + i;
        e->u = 10;
    }
}

static void end_step(tpi_fl_ring *r, uint64_t step)
{
    tpi_fl_step row = {step, 0, step, step * 1000000, step * 1000000 + 999, 8, 0};
    tpi_fl_ring_step_end(r, &row);
}

/* The ring holds exactly steps first..last, in order, each with the
 * number of events it was given (events(step)). */
static void check_holds(const tpi_fl_ring *r, uint64_t first, uint64_t last,
                        uint32_t (*events)(uint64_t))
{
    uint64_t want = 0;
    for (uint64_t s = first; s <= last; s++)
        want += events(s);
    CHECK_EQ_INT((int)(r->head - r->tail), (int)want);
    uint64_t p = r->tail;
    for (uint64_t s = first; s <= last; s++)
        for (uint32_t i = 0; i < events(s); i++, p++)
            CHECK(tpi_fl_ring_at(r, p)->ts_ns == s * 1000000 + i);
    CHECK_EQ_INT((int)tpi_fl_ring_rows(r), (int)(last - first + 1));
    for (uint32_t i = 0; i < tpi_fl_ring_rows(r); i++)
        CHECK(tpi_fl_ring_row(r, i)->step == first + i);
}

static uint32_t varied(uint64_t step) { return (uint32_t)(step * 37 % 300) + 1; }

TP_TEST(holds_the_last_n_steps_across_wraparound_and_growth)
{
    tpi_fl_ring r;
    CHECK_EQ_INT(tpi_fl_ring_init(&r, 3, 1 << 20), 0);
    for (uint64_t s = 0; s < 200; s++) {
        push_step(&r, s, varied(s)); /* 1..300 events: the array grows and wraps */
        end_step(&r, s);
        uint64_t first = s >= 2 ? s - 2 : 0;
        check_holds(&r, first, s, varied);
    }
    CHECK_EQ_INT((int)r.dropped, 0);
    /* the step in progress is kept beside the last 3 */
    push_step(&r, 200, 5);
    CHECK_EQ_INT((int)(r.head - r.tail), (int)(varied(197) + varied(198) + varied(199) + 5));
    tpi_fl_ring_free(&r);
}

TP_TEST(fewer_steps_than_n_keeps_everything)
{
    tpi_fl_ring r;
    CHECK_EQ_INT(tpi_fl_ring_init(&r, 10, 1 << 20), 0);
    for (uint64_t s = 0; s < 4; s++) {
        push_step(&r, s, varied(s));
        end_step(&r, s);
    }
    check_holds(&r, 0, 3, varied);
    tpi_fl_ring_free(&r);
}

static uint32_t huge(uint64_t step) { return step == 5 ? 200000 : 10; }

TP_TEST(bounded_memory_drops_the_oldest)
{
    tpi_fl_ring r;
    uint64_t bound = 256 << 10;
    CHECK_EQ_INT(tpi_fl_ring_init(&r, 10, bound), 0);
    for (uint64_t s = 0; s < 8; s++) {
        push_step(&r, s, huge(s));
        end_step(&r, s);
        CHECK(tpi_fl_ring_bytes(&r) <= bound);
    }
    CHECK(r.dropped > 0);
    /* full (all blocks but the one being filled, and that one in part), newest kept */
    CHECK(r.head - r.tail > r.max_events - TPI_FL_BLOCK && r.head - r.tail <= r.max_events);
    CHECK(tpi_fl_ring_at(&r, r.head - 1)->ts_ns == 7 * 1000000 + 9);
    /* a step's worth of samples stays within the bound too */
    tpi_mem_sample m;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < 100; i++) {
        m.step = (uint64_t)i;
        tpi_fl_ring_sample(&r, &m);
    }
    CHECK(tpi_fl_ring_bytes(&r) <= bound);
    CHECK_EQ_INT((int)tpi_fl_ring_samples(&r), (int)r.n_mem);
    CHECK(tpi_fl_ring_sample_at(&r, r.n_mem - 1)->step == 99); /* the newest */
    CHECK(tpi_fl_ring_sample_at(&r, 0)->step == 100 - r.n_mem);
    /* once the big step is older than the last 10, the ring is small again in use */
    for (uint64_t s = 8; s < 20; s++) {
        push_step(&r, s, huge(s));
        end_step(&r, s);
    }
    check_holds(&r, 10, 19, huge);
    tpi_fl_ring_free(&r);
}

static uint32_t hundred(uint64_t step) { (void)step; return 100; }

TP_TEST(ten_steps_of_100_zones_under_4mb)
{
    tpi_fl_ring r;
    CHECK_EQ_INT(tpi_fl_ring_init(&r, 10, 16u << 20), 0); /* the default bound: 64 MB / 4 */
    tpi_mem_sample m;
    memset(&m, 0, sizeof m);
    for (uint64_t s = 0; s < 50; s++) {
        push_step(&r, s, 100);
        end_step(&r, s);
        m.step = s;
        tpi_fl_ring_sample(&r, &m);
    }
    check_holds(&r, 40, 49, hundred);
    printf("ring of 10 steps x 100 zones (+1 memory sample a step): %llu bytes\n",
           (unsigned long long)tpi_fl_ring_bytes(&r));
    CHECK(tpi_fl_ring_bytes(&r) < (4u << 20));
    tpi_fl_ring_free(&r);
}

int main(void)
{
    RUN(holds_the_last_n_steps_across_wraparound_and_growth);
    RUN(fewer_steps_than_n_keeps_everything);
    RUN(bounded_memory_drops_the_oldest);
    RUN(ten_steps_of_100_zones_under_4mb);
    return tp_test_finish();
}
