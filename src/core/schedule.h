/*
 * schedule.h - which steps (or epochs) are traced, torch.profiler semantics.
 *
 * For unit index k (0-based step, or epoch when profiling.unit = epoch):
 *   k <  skip_first                         -> SKIP
 *   j = k - skip_first, n = wait+warmup+active, cycle = j / n
 *   repeat > 0 and cycle >= repeat          -> DONE (nothing more is traced)
 *   j % n <  wait                           -> WAIT
 *   j % n <  wait + warmup                  -> WARMUP (recorded, not written)
 *   otherwise                               -> ACTIVE (written to cycle's trace)
 * active <= 0 or tracing off: never ACTIVE (every unit is SKIP / DONE).
 */
#ifndef TP_CORE_SCHEDULE_H
#define TP_CORE_SCHEDULE_H

#include <stdint.h>

#include "sink/sink.h"

typedef struct tpi_schedule {
    int64_t skip_first, wait, warmup, active, repeat;
    int enabled;
} tpi_schedule;

void tpi_schedule_from_settings(tpi_schedule *sc, const tpi_settings *s);
/* Phase of unit k; *cycle gets the 0-based cycle (-1 outside cycles). */
tpi_phase tpi_schedule_phase(const tpi_schedule *sc, uint64_t k, int64_t *cycle);
/* 1 when unit k is the last ACTIVE unit of its cycle. */
int tpi_schedule_last_active(const tpi_schedule *sc, uint64_t k);

#endif
