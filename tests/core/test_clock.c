/* clock: monotonic ticks, calibration against CLOCK_MONOTONIC. */
#include "core/clock.h"
#include "tp_test.h"

TP_TEST(ticks_monotonic)
{
    tpi_clock_init();
    uint64_t prev = tpi_ticks();
    for (int i = 0; i < 100000; i++) {
        uint64_t t = tpi_ticks();
        CHECK(t >= prev);
        prev = t;
    }
}

TP_TEST(calibration_matches_monotonic)
{
    const tpi_clock_info *ck = tpi_clock_get();
    CHECK(ck->ns_per_tick > 0);
    uint64_t t0 = tpi_ticks(), n0 = tpi_mono_ns();
    struct timespec req = {0, 50 * 1000 * 1000};
    nanosleep(&req, NULL);
    uint64_t t1 = tpi_ticks(), n1 = tpi_mono_ns();
    double ns = (double)tpi_ticks_to_ns(t1 - t0, ck->ns_per_tick);
    double ref = (double)(n1 - n0);
    CHECK_NEAR(ns / ref, 1.0, 0.01); /* within 1 % over 50 ms */
    printf("clock source %s, %.4f ns/tick\n", ck->source, ck->ns_per_tick);
}

int main(void)
{
    RUN(ticks_monotonic);
    RUN(calibration_matches_monotonic);
    return tp_test_finish();
}
