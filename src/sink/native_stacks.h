/*
 * native_stacks.h - sampled native call stacks (with_stack: native).
 *
 * A process-wide CPU-time timer (setitimer ITIMER_PROF, default 1000 Hz of
 * process CPU time, TRAINPROF_NATIVE_HZ=1..10000 to change it) sends
 * SIGPROF to the thread that is running when it expires. The handler calls
 * backtrace() into a preallocated lock-free ring (multi-producer, one
 * consumer; full ring = sample dropped and counted): no lock, no
 * allocation. The consumer (the stacks sink, on the collector thread)
 * drains the ring into a table of distinct (thread, stack) -> count and,
 * at window end, symbolizes each address once with dladdr and writes
 * flamegraph folded lines:
 *     <thread name>;main;train;forward;matmul 37
 * (outermost frame first, value = number of samples).
 *
 * One sampler per process: the first consumer that starts it owns it; a
 * second session asking for native stacks gets a warning and none. The
 * sampler refuses to start when the program already uses SIGPROF or
 * ITIMER_PROF (another profiler). Its SIGPROF handler stays installed once
 * started (doing nothing while disarmed), so a late signal never hits the
 * default action.
 */
#ifndef TP_SINK_NATIVE_STACKS_H
#define TP_SINK_NATIVE_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct tpi_native tpi_native;

/* Sampling rate (Hz of process CPU time) from TRAINPROF_NATIVE_HZ, else 1000. */
unsigned tpi_native_hz(void);

/* Takes the process's sampler for this consumer (ring allocated, handler
 * installed, not armed). NULL with a warning on stderr when it cannot. */
tpi_native *tpi_native_new(void);
/* Disarms, releases the sampler and frees the table. NULL is fine. */
void tpi_native_free(tpi_native *n);

/* Starts / stops the timer. Stop waits for handlers still running. */
int tpi_native_arm(tpi_native *n);
void tpi_native_disarm(tpi_native *n);

/* Moves samples taken at or before until_mono_ns (CLOCK_MONOTONIC;
 * UINT64_MAX = all) into the table; samples before from_mono_ns are
 * thrown away (taken before the window's first event). */
void tpi_native_drain(tpi_native *n, uint64_t from_mono_ns, uint64_t until_mono_ns);

/* Folded lines of the table, sorted, into out; keep(tid) selects threads,
 * name(tid) gives the root frame (NULL: "thread <tid>"). Clears the table.
 * Returns the number of samples written. */
typedef int (*tpi_native_keep_fn)(void *ctx, uint32_t tid);
typedef const char *(*tpi_native_name_fn)(void *ctx, uint32_t tid);
uint64_t tpi_native_render(tpi_native *n, tpi_native_keep_fn keep, tpi_native_name_fn name,
                           void *ctx, tpu_buf *out);

/* Samples dropped because the ring was full, since tpi_native_new. */
uint64_t tpi_native_dropped(const tpi_native *n);

#endif
