/* names_rule.h - what a zone or operator name says it is, shared by the
 * recorder's live state (sink/live.c) and the analyzer (trace/classify.c)
 * so that both read a name the same way. */
#ifndef TRAINPROF_UTIL_NAMES_RULE_H
#define TRAINPROF_UTIL_NAMES_RULE_H

#include <stdbool.h>
#include <stddef.h>

/* Data loading is "data" followed by loader / _batch / _load / " loading"
 * / _wait, in any case (DataLoader iteration, batch production, the wait
 * for a batch). This tells whether the n bytes at p, the text right after
 * such a "data", are one of those tails. */
bool tpu_data_loading_tail(const char *p, size_t n);

/* The whole rule on a NUL-terminated name (callers without a faster scan
 * for "data" of their own). */
bool tpu_name_is_data_loading(const char *name);

#endif
