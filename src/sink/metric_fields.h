/*
 * metric_fields.h - the per-step scalars every metrics exporter writes
 * (JSONL, CSV, TensorBoard), named as W&B users of the timer-style guides
 * chart them: profiling/step_time, profiling/samples_per_second,
 * profiling/<op>_avg_time, _total_time, _count, counter/<name> and
 * counter/<name>_mean (tp_counter's values), and memory fields.
 */
#ifndef TP_SINK_METRIC_FIELDS_H
#define TP_SINK_METRIC_FIELDS_H

#include "sink/sink.h"

typedef void (*tpi_metric_fn)(void *ctx, const char *key, double value);

/* Calls fn once per scalar of the step, in a stable order: step scalars,
 * then per operation (cumulative statistics, in si->totals order), then per
 * counter (its last value, and its mean since the previous row when it was
 * recorded since), then the memory sample (si->mem, or `fallback_mem` when
 * si->mem is NULL; either may be NULL). Times are seconds. */
void tpi_metric_fields(const tpi_step_info *si, const tpi_mem_sample *fallback_mem,
                       tpi_metric_fn fn, void *ctx);

/* Whether a metrics record is due for this step: every step, or every
 * settings->log_every steps when that is > 1. */
int tpi_metric_due(const tpi_settings *s, const tpi_step_info *si);

/* At close: the last step when its row was not due (a run shorter than
 * log_every, or ending between two rows), so the files end with the final
 * values; NULL when there is nothing more to write. */
const tpi_step_info *tpi_metric_final_row(const tpi_settings *s, const tpi_summary *sum);

#endif
