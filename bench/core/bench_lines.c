/*
 * bench_lines.c - what a recording thread pays to store into a chunk,
 * depending on what another core did to the chunk's lines just before.
 *
 * The writer does what a zone does on the hot path (two TSC reads, two
 * 16-byte records) through a 64 KB chunk; a helper thread pinned to the
 * other CPU first reads, writes or flushes the chunk. Printed: ns per zone
 * and the ratio to the same loop of two TSC reads alone, best and mean of
 * 200 chunks. This is how the recorder's slow mode was found: in some
 * processes and periods of a VM, "read by the other core" costs 3x while
 * "flushed" stays at 1x, hence the flush of drained chunks in
 * src/core/recorder.c (docs/ARCHITECTURE.md, "The recorder's hot path").
 *
 * Usage: bench_lines (x86-64 Linux with 2+ CPUs; exits 77 otherwise).
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <x86intrin.h>

enum { CHUNK = 64 * 1024, NCHUNKS = 64, REPS = 200 };
enum op { OP_NONE, OP_READ, OP_MEMSET, OP_READ_FLUSH, OP_READ_WRITE_LINE };

typedef struct rec {
    uint64_t ts;
    uint32_t hdr, arg;
} rec;

static char *g_chunks[NCHUNKS];
static volatile int g_cmd = -1; /* op << 8 | chunk, -1 idle, -2 quit */
static volatile uint64_t g_sink;

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void read_lines(const char *p)
{
    uint64_t x = 0;
    for (int o = 0; o < CHUNK; o += 64)
        x += *(const volatile uint64_t *)(p + o);
    g_sink = x;
}

static void *helper(void *arg)
{
    (void)arg;
    pin(1);
    for (;;) {
        int cmd;
        while ((cmd = g_cmd) == -1)
            ;
        if (cmd == -2)
            return NULL;
        char *p = g_chunks[cmd & 255];
        switch (cmd >> 8) {
        case OP_READ:
            read_lines(p);
            break;
        case OP_MEMSET:
            memset(p, 0, CHUNK);
            break;
        case OP_READ_FLUSH:
            read_lines(p);
            for (int o = 0; o < CHUNK; o += 64)
                _mm_clflush(p + o);
            break;
        case OP_READ_WRITE_LINE:
            read_lines(p);
            for (int o = 0; o < CHUNK; o += 64)
                *(volatile uint32_t *)(p + o + 8) = 0;
            break;
        }
        g_cmd = -1;
    }
}

static void on_other_core(enum op op, int chunk)
{
    g_cmd = (int)op << 8 | chunk;
    while (g_cmd != -1)
        ;
}

__attribute__((noinline)) static uint64_t write_chunk(char *p)
{
    rec *r = (rec *)p;
    uint64_t t0 = __rdtsc();
    for (int i = 0; i < CHUNK / (int)sizeof(rec); i += 2) {
        r[i].ts = __rdtsc();
        r[i].hdr = 1;
        r[i].arg = 0;
        r[i + 1].ts = __rdtsc();
        r[i + 1].hdr = 2;
        r[i + 1].arg = 0;
    }
    return __rdtsc() - t0;
}

__attribute__((noinline)) static uint64_t two_reads(int n)
{
    uint64_t t0 = __rdtsc();
    for (int i = 0; i < n; i++)
        g_sink += __rdtsc() - __rdtsc();
    return __rdtsc() - t0;
}

static double ns_per_tick(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t t0 = __rdtsc();
    usleep(50000);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    return ns / (double)(__rdtsc() - t0);
}

int main(void)
{
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || pin(0) != 0) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    for (int i = 0; i < NCHUNKS; i++) {
        g_chunks[i] = aligned_alloc(4096, CHUNK);
        if (!g_chunks[i])
            return 1;
        memset(g_chunks[i], 0, CHUNK);
    }
    pthread_t th;
    if (pthread_create(&th, NULL, helper, NULL) != 0)
        return 1;
    double tick = ns_per_tick();
    int zones = CHUNK / (int)sizeof(rec) / 2;
    uint64_t clock_best = UINT64_MAX;
    for (int k = 0; k < 50; k++) {
        uint64_t c = two_reads(zones);
        clock_best = c < clock_best ? c : clock_best;
    }
    static const struct {
        enum op op;
        const char *what;
    } cases[] = {
        {OP_NONE, "untouched since the writer's last pass"},
        {OP_READ, "read by the other core"},
        {OP_MEMSET, "memset by the other core"},
        {OP_READ_WRITE_LINE, "read, then one word per line written"},
        {OP_READ_FLUSH, "read, then flushed (clflush)"},
    };
    printf("ns per zone (two TSC reads + two 16-byte records); two TSC reads alone: %.2f ns\n",
           (double)clock_best * tick / zones);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t best = UINT64_MAX, sum = 0;
        for (int k = 0; k < REPS; k++) {
            int i = k % NCHUNKS;
            if (cases[c].op != OP_NONE)
                on_other_core(cases[c].op, i);
            uint64_t t = write_chunk(g_chunks[i]);
            best = t < best ? t : best;
            sum += t;
        }
        printf("  %-40s best %6.2f ns (%.2fx)  mean %6.2f ns (%.2fx)\n", cases[c].what,
               (double)best * tick / zones, (double)best / (double)clock_best,
               (double)sum / REPS * tick / zones, (double)sum / REPS / (double)clock_best);
    }
    g_cmd = -2;
    pthread_join(th, NULL);
    return 0;
}
#else
int main(void)
{
    printf("SKIP: x86-64 only\n");
    return 77;
}
#endif
