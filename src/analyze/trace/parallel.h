/* parallel.h - the `-j N` reader: one window of the traceEvents array parsed
 * by N threads, its events handed out in file order (reader.c drives it).
 *
 * The window is cut at guessed element boundaries (split.h); each thread
 * parses one range, and a range's events are used only when the range
 * before it, itself proven, ends exactly where it begins. The first range
 * starts where the sequential reader stood, so every event handed out is
 * one the sequential reader would have produced, in the same order. Where
 * the proof fails, or a range meets malformed input or the window's end,
 * the batch ends there and the reader goes on from that point on its own,
 * so errors carry the sequential reader's message and offset.
 */
#ifndef TRAINPROF_ANALYZE_PARALLEL_H
#define TRAINPROF_ANALYZE_PARALLEL_H

#include "analyze/trace/trace.h"

typedef struct tpa_batch tpa_batch;

tpa_batch *tpa_batch_new(int jobs);
void tpa_batch_free(tpa_batch *b);
/* Window bytes per thread and the smallest range worth a thread (tests:
 * tiny values put cuts everywhere; 0 restores the defaults). Set before
 * opening readers. */
void tpa_batch_set_window(size_t per_job, size_t min_range);
/* Bytes of input the reader should hold before parsing a batch. */
size_t tpa_batch_window(const tpa_batch *b);
/* Parses [p, end) of the window starting at lo; p is in enum
 * tpa_range_state st. Replaces the previous batch. */
void tpa_batch_parse(tpa_batch *b, const char *lo, const char *p, int st, const char *end);
/* The same in the background: every range on its own thread, while the
 * caller hands out the previous batch; wait before using it. */
void tpa_batch_start(tpa_batch *b, const char *lo, const char *p, int st, const char *end);
void tpa_batch_wait(tpa_batch *b);
/* The next event in file order (strings valid until the next parse), or
 * NULL when the batch is used up. */
const tpa_event *tpa_batch_next(tpa_batch *b);
/* The next up to max events in file order that lie together (one
 * range's), *n of them, or NULL (*n 0) when the batch is used up. The
 * caller may update them in place; they live as long as tpa_batch_next's. */
tpa_event *tpa_batch_next_run(tpa_batch *b, size_t max, size_t *n);
/* Whether the batch has events left. */
bool tpa_batch_has_next(tpa_batch *b);
/* Non-object elements among the batch's elements. */
uint64_t tpa_batch_non_objects(const tpa_batch *b);
/* Where the proven part ends: the reader resumes there, in state *st. */
const char *tpa_batch_resume(const tpa_batch *b, int *st);

#endif
