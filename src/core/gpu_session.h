/*
 * gpu_session.h - the session's GPU side: CUPTI capture inside trace
 * windows and CUDA-event GPU zones (src/core/gpu_session.c). The collector
 * calls the tpi_gpu_* hooks at window begin/end, at every step end and at
 * the end of the session; user threads call tp_gpu_zone_begin/end.
 */
#ifndef TP_CORE_GPU_SESSION_H
#define TP_CORE_GPU_SESSION_H

#include <stdint.h>

#include "sink/sink.h"

typedef struct tpi_gpu tpi_gpu;
typedef struct tpi_collector tpi_collector;

/* Opens CUPTI when profiling.cuda asks for it (one info line when it cannot,
 * never an error). The CUDA-event zones open on their first use. NULL only
 * when out of memory. */
tpi_gpu *tpi_gpu_open(tp_session *s);
void tpi_gpu_close(tpi_gpu *g);

/* Collector hooks. tpi_gpu_arm: the next unit and its schedule phase.
 * CUPTI starts with the warmup steps, so that it records from the first
 * active step on, as torch.profiler's warmup does. */
void tpi_gpu_arm(tpi_collector *c, uint64_t unit, int phase);
void tpi_gpu_window_begin(tpi_collector *c);
void tpi_gpu_window_end(tpi_collector *c);   /* before the sinks' window_end */
void tpi_gpu_step_end(tpi_collector *c);     /* before the sinks' flush */
void tpi_gpu_finish(tpi_collector *c);       /* before the final totals */

/* The stepping thread, after tp_step_end (steps = steps ended): starts
 * CUPTI when the next step is the first warmup step the collector armed,
 * without waiting for the collector to get there. One atomic load. */
void tpi_gpu_steps_ended(tpi_gpu *g, uint64_t steps);

/* GPU records and zones lost (buffer bound, CUPTI drops, no event pair). */
uint64_t tpi_gpu_dropped(tpi_gpu *g);
/* Fills the gpu_* fields of an operation's statistics. */
void tpi_gpu_op_stat(tpi_gpu *g, uint32_t name_id, tpi_op_stat *o);

#endif
