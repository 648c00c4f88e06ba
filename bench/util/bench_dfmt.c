/* bench_dfmt - what one double costs to write: printf's "%.12g" (the
 * report page's series) and the first of %.15g/%.16g/%.17g that strtod
 * reads back (the JSON files), beside util/dfmt.c, on the values those
 * writers see: nanosecond counts in seconds (multiplied by 1e-9 as the
 * collector did, divided by 1e9 as it does now), memory percentages and
 * byte counts, means. Alternating, best of 7 runs of each, one process:
 *
 *     build/bench/util/bench_dfmt
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/dfmt.h"

#define N 200000

static double values[N];
static volatile size_t sink;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void printf_g12(void)
{
    char out[64];
    for (int i = 0; i < N; i++)
        sink += (size_t)snprintf(out, sizeof out, "%.12g", values[i]);
}

static void dfmt_g12(void)
{
    char out[TPU_DFMT_MAX];
    for (int i = 0; i < N; i++)
        sink += (size_t)tpu_dfmt_g(out, values[i], 12);
}

static void printf_round_trip(void)
{
    char out[64];
    for (int i = 0; i < N; i++)
        for (int prec = 15; prec <= 17; prec++) {
            sink += (size_t)snprintf(out, sizeof out, "%.*g", prec, values[i]);
            if (strtod(out, NULL) == values[i])
                break;
        }
}

static void dfmt_round_trip(void)
{
    char out[TPU_DFMT_MAX];
    for (int i = 0; i < N; i++)
        sink += (size_t)tpu_dfmt_round_trip(out, values[i]);
}

static void fill(int set)
{
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t ns = 1 + x % 5000000;
        values[i] = set == 0 ? (double)ns * 1e-9
                  : set == 1 ? (double)ns / 1e9
                  : set == 2 ? (double)(x % 1000000) / 7919.0 /* percentages, means */
                             : (double)(x % (1ull << 34)) * 1.5; /* bytes */
    }
}

int main(void)
{
    static const char *sets[] = {"ns * 1e-9", "ns / 1e9", "means", "bytes"};
    struct { const char *name; void (*fn)(void); } runs[] = {
        {"printf %.12g", printf_g12}, {"dfmt %.12g", dfmt_g12},
        {"printf round trip", printf_round_trip}, {"dfmt round trip", dfmt_round_trip}};
    printf("| values | printf %%.12g | dfmt %%.12g | ratio | printf round trip | dfmt round trip | ratio |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (int set = 0; set < 4; set++) {
        fill(set);
        double best[4] = {1e9, 1e9, 1e9, 1e9};
        for (int rep = 0; rep < 7; rep++)
            for (int r = 0; r < 4; r++) {
                double t0 = now();
                runs[r].fn();
                double ns = (now() - t0) / N * 1e9;
                best[r] = ns < best[r] ? ns : best[r];
            }
        printf("| %s | %.1f ns | %.1f ns | %.1fx | %.1f ns | %.1f ns | %.1fx |\n", sets[set], best[0],
               best[1], best[0] / best[1], best[2], best[3], best[2] / best[3]);
    }
    return 0;
}
