/* split.h - cutting the traceEvents array into ranges that threads parse
 * on their own (the `-j N` reader, parallel.c).
 *
 * A guessed cut is a '{' that follows "}," (whitespace allowed), which is
 * where one event ends and the next begins - unless the bytes sit inside a
 * string or a nested value. So a cut is only trusted once the range before
 * it, parsed from a known element boundary, runs into it exactly: its next
 * element starts at the cut. Nothing here decides on a guess alone.
 */
#ifndef TRAINPROF_ANALYZE_SPLIT_H
#define TRAINPROF_ANALYZE_SPLIT_H

#include "analyze/trace/trace.h"
#include "analyze/trace/event_parse.h"

/* Where a range starts inside the array (mirrors the reader's states). */
enum tpa_range_state {
    TPA_RS_FIRST,  /* just after '[': an element or ']' */
    TPA_RS_ELEM,   /* just after ',': an element */
    TPA_RS_NEXT    /* just after an element: ',' or ']' */
};

/* Why a range stopped. */
enum tpa_range_stop {
    TPA_STOP_LIMIT,  /* its next element starts at or past the limit: next_start */
    TPA_STOP_MORE,   /* the window ended inside an element or between elements */
    TPA_STOP_CLOSE,  /* the array closed (']') */
    TPA_STOP_ERR     /* malformed input (the reader re-reads it for the message) */
};

/* Storage for decoded strings that must outlive the parser's scratch
 * buffers: blocks that are kept and reused from one range to the next. */
typedef struct tpa_arena {
    char **blocks;
    size_t *sizes;
    size_t n, cap, cur, used;
} tpa_arena;

/* What one range produced: its events in order (strings point into the
 * window or into the arena) and where it stopped. */
typedef struct tpa_range_out {
    tpa_event *evs;
    size_t n, cap;
    uint64_t non_objects;     /* elements that are not objects */
    const char *last_good;    /* just past its last complete element, or its start */
    int last_state;           /* enum tpa_range_state at last_good */
    int stop;                 /* enum tpa_range_stop */
    const char *next_start;   /* TPA_STOP_LIMIT: the first byte of the next element */
    bool oom;                 /* out of memory: the events kept are still in order */
    tpa_arena arena;
    tpa_strbufs sb;
} tpa_range_out;

/* The first guessed cut in [from, to): a '{' whose previous non-blank byte
 * is ',' and the one before that '}'; NULL when none. lo bounds the look
 * back (the window start). */
const char *tpa_split_guess(const char *lo, const char *from, const char *to);

/* Parses elements from start (in state st) until one would start at or past
 * limit (NULL: no limit), the window [.., end) runs out, the array closes or
 * the input is malformed. Strings that do not lie in [lo, end) are copied to
 * out's arena. out's events and arena are reset first. */
void tpa_range_parse(tpa_range_out *out, const char *lo, const char *start, int st,
                     const char *limit, const char *end);
/* Sizes out's event array for about n events (grown or shrunk; it still
 * grows while parsing when a range holds more). */
void tpa_range_reserve(tpa_range_out *out, size_t n);
void tpa_range_out_free(tpa_range_out *out);

#endif
