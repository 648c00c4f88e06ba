/* Clock source selection and TSC calibration (see clock.h). */
#include "core/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tpi_clock_use_counter;
static tpi_clock_info g_clock = {0, 1.0, "clock_monotonic"};
static pthread_once_t g_clock_once = PTHREAD_ONCE_INIT;

/* 1 when /proc/cpuinfo's flags list both words. */
static int cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    int ok = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
        break;
    }
    fclose(f);
    return ok;
#else
    return 0;
#endif
}

/* A (counter, monotonic) pair read as close together as we can get. */
static void read_pair(uint64_t *ticks, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    *ticks = *ns = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = tpi_counter_read();
        uint64_t n = tpi_mono_ns();
        uint64_t t1 = tpi_counter_read();
        if (t1 - t0 < best) {
            best = t1 - t0;
            *ticks = t0 + (t1 - t0) / 2;
            *ns = n;
        }
    }
}

static void clock_init_once(void)
{
    const char *env = getenv("TRAINPROF_CLOCK");
    int want_counter = !(env && strcmp(env, "monotonic") == 0);
#if defined(__x86_64__) || defined(__i386__)
    want_counter = want_counter && cpu_has_invariant_tsc();
    const char *name = "tsc";
#elif defined(__aarch64__)
    const char *name = "cntvct";
#else
    want_counter = 0;
    const char *name = "clock_monotonic";
#endif
    if (!want_counter)
        return;
    uint64_t t0, n0, t1, n1;
    read_pair(&t0, &n0);
    struct timespec req = {0, 20 * 1000 * 1000};
    nanosleep(&req, NULL);
    read_pair(&t1, &n1);
    if (t1 <= t0 || n1 <= n0)
        return;
    g_clock.ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
    g_clock.use_counter = 1;
    g_clock.source = name;
    __atomic_store_n(&tpi_clock_use_counter, 1, __ATOMIC_RELEASE);
}

void tpi_clock_init(void)
{
    pthread_once(&g_clock_once, clock_init_once);
}

const tpi_clock_info *tpi_clock_get(void)
{
    tpi_clock_init();
    return &g_clock;
}
