/*
 * live.h - live.json for `trainprof top` (live.c; format in docs/TOP.md).
 *
 * A sink (steps and memory samples in, the final state at close) whose
 * periodic write belongs to the collector thread alone:
 *     lock col_lock; drain; due = tpi_live_prepare(L, now, ...); unlock;
 *     if (due) tpi_live_write(L);
 * so no thread reading statistics, and never the training thread, writes
 * the file while the session runs.
 */
#ifndef TP_SINK_LIVE_H
#define TP_SINK_LIVE_H

#include <stdint.h>

#include "sink/sink.h"

typedef struct tpi_live tpi_live;

/* NULL when profiling.live is false (or out of memory): nothing at all is
 * written for `top` then. */
tpi_live *tpi_sink_live_new(const tpi_sink_env *env);
/* The sink to register (NULL for NULL). */
tpi_sink *tpi_live_sink(tpi_live *L);
/* Under the collector lock: formats the state when a second has passed
 * since the last one (now_mono: CLOCK_MONOTONIC ns), with the stepping
 * thread's open zones (open_path "outer > inner", NULL when none; the
 * innermost began at open_begin_ns, session time); 1 when there is one to
 * write. */
int tpi_live_prepare(tpi_live *L, uint64_t now_mono, const char *open_path,
                     uint64_t open_begin_ns);
/* Outside the lock, collector thread: writes what prepare formatted. */
void tpi_live_write(tpi_live *L);

#endif
