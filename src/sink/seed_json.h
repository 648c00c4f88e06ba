/*
 * seed_json.h - builders of training_summary.json and operations.json,
 * shared by the seed_json sink and the console summary.
 */
#ifndef TP_SINK_SEED_JSON_H
#define TP_SINK_SEED_JSON_H

#include <stddef.h>

#include "sink/sink.h"
#include "util/buf.h"

/* ISO 8601 UTC time with milliseconds ("2024-05-01T12:00:00.123Z"). */
void tpi_seed_iso_time(char *out, size_t n, uint64_t wall_ns);
void tpi_seed_write_summary(tpu_buf *b, const tpi_sink_env *env, const tpi_summary *sum);
void tpi_seed_write_operations(tpu_buf *b, const tpi_summary *sum);
/* Indices of sum->ops sorted by total time, descending (caller frees). */
size_t *tpi_seed_sorted_ops(const tpi_summary *sum);

#endif
