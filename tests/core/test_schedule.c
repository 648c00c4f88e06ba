/* schedule: many wait/warmup/active/repeat/skip_first combinations against
 * an independent re-statement of torch.profiler.schedule. */
#include "core/schedule.h"
#include "tp_test.h"

/* torch.profiler.schedule, transcribed: returns 0 NONE, 1 WARMUP, 2 RECORD, 3 DONE(skip) */
static int torch_action(int64_t skip, int64_t wait, int64_t warmup, int64_t active, int64_t repeat,
                        int64_t step)
{
    if (step < skip)
        return 0;
    step -= skip;
    int64_t num = wait + warmup + active;
    if (repeat > 0 && step / num >= repeat)
        return 3;
    int64_t mod = step % num;
    if (mod < wait)
        return 0;
    if (mod < wait + warmup)
        return 1;
    return 2;
}

TP_TEST(table)
{
    int combos = 0;
    for (int skip = 0; skip <= 3; skip++)
        for (int wait = 0; wait <= 3; wait++)
            for (int warm = 0; warm <= 2; warm++)
                for (int act = 1; act <= 4; act++)
                    for (int rep = 0; rep <= 3; rep++) {
                        tpi_settings st;
                        memset(&st, 0, sizeof st);
                        st.trace = 1;
                        st.skip_first = skip, st.wait = wait, st.warmup = warm;
                        st.active = act, st.repeat = rep;
                        tpi_schedule sc;
                        tpi_schedule_from_settings(&sc, &st);
                        int64_t prev_cycle = -1;
                        for (int k = 0; k < 60; k++) {
                            int64_t cyc;
                            tpi_phase ph = tpi_schedule_phase(&sc, (uint64_t)k, &cyc);
                            int want = torch_action(skip, wait, warm, act, rep, k);
                            int got = ph == TPI_PHASE_ACTIVE ? 2 : ph == TPI_PHASE_WARMUP ? 1
                                    : ph == TPI_PHASE_DONE ? 3 : 0;
                            CHECK_EQ_INT(got, want);
                            if (ph == TPI_PHASE_ACTIVE) {
                                CHECK(cyc >= prev_cycle);
                                prev_cycle = cyc;
                                int last = tpi_schedule_last_active(&sc, (uint64_t)k);
                                int next = torch_action(skip, wait, warm, act, rep, k + 1);
                                int64_t j = k - skip, n = wait + warm + act;
                                CHECK_EQ_INT(last, (j % n) == n - 1);
                                if (!last && n == act)
                                    CHECK_EQ_INT(next, 2);
                            }
                        }
                        combos++;
                    }
    CHECK(combos > 500);
}

TP_TEST(off_when_no_active_or_no_trace)
{
    tpi_settings st;
    memset(&st, 0, sizeof st);
    st.trace = 1;
    st.active = 0;
    tpi_schedule sc;
    tpi_schedule_from_settings(&sc, &st);
    for (int k = 0; k < 10; k++)
        CHECK(tpi_schedule_phase(&sc, (uint64_t)k, NULL) != TPI_PHASE_ACTIVE);
    st.active = 3;
    st.trace = 0;
    tpi_schedule_from_settings(&sc, &st);
    CHECK(tpi_schedule_phase(&sc, 0, NULL) != TPI_PHASE_ACTIVE);
}

TP_TEST(example_wait1_warmup1_active3_repeat2)
{
    /* steps: 0 wait, 1 warmup, 2-4 active (cycle 0), 5 wait, 6 warmup,
     * 7-9 active (cycle 1), 10.. done */
    static const int expect[12] = {0, 1, 2, 2, 2, 0, 1, 2, 2, 2, 3, 3};
    tpi_settings st;
    memset(&st, 0, sizeof st);
    st.trace = 1, st.wait = 1, st.warmup = 1, st.active = 3, st.repeat = 2;
    tpi_schedule sc;
    tpi_schedule_from_settings(&sc, &st);
    for (int k = 0; k < 12; k++) {
        int64_t cyc;
        tpi_phase ph = tpi_schedule_phase(&sc, (uint64_t)k, &cyc);
        int got = ph == TPI_PHASE_ACTIVE ? 2 : ph == TPI_PHASE_WARMUP ? 1 : ph == TPI_PHASE_DONE ? 3 : 0;
        CHECK_EQ_INT(got, expect[k]);
        if (ph == TPI_PHASE_ACTIVE)
            CHECK_EQ_INT(cyc, k < 5 ? 0 : 1);
    }
}

int main(void)
{
    RUN(table);
    RUN(off_when_no_active_or_no_trace);
    RUN(example_wait1_warmup1_active3_repeat2);
    return tp_test_finish();
}
