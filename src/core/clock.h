/*
 * clock.h - the recorder's time source.
 *
 * tpi_ticks() is what the hot path reads: the invariant TSC on x86-64 when
 * /proc/cpuinfo lists both constant_tsc and nonstop_tsc, the virtual counter
 * on AArch64, otherwise CLOCK_MONOTONIC in nanoseconds. tpi_clock_init()
 * picks the source once per process and calibrates ticks against
 * CLOCK_MONOTONIC; tpi_ticks_to_ns() converts tick differences. Setting
 * TRAINPROF_CLOCK=monotonic forces the fallback (tests, odd hypervisors).
 */
#ifndef TP_CORE_CLOCK_H
#define TP_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

typedef struct tpi_clock_info {
    int use_counter;        /* 1: TSC / virtual counter, 0: clock_gettime */
    double ns_per_tick;     /* 1.0 for clock_gettime */
    const char *source;     /* "tsc", "cntvct", "clock_monotonic" */
} tpi_clock_info;

extern int tpi_clock_use_counter;

/* Chooses and calibrates the clock (thread-safe, once per process). */
void tpi_clock_init(void);
const tpi_clock_info *tpi_clock_get(void);

static inline uint64_t tpi_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tpi_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tpi_counter_read(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return tpi_mono_ns();
#endif
}

/* One clock read: ticks of the chosen source. */
static inline uint64_t tpi_ticks(void)
{
    if (__builtin_expect(tpi_clock_use_counter, 1))
        return tpi_counter_read();
    return tpi_mono_ns();
}

/* Nanoseconds in `ticks` ticks (a difference, not an absolute time). */
static inline uint64_t tpi_ticks_to_ns(uint64_t ticks, double ns_per_tick)
{
    return (uint64_t)((double)ticks * ns_per_tick + 0.5);
}

#endif
