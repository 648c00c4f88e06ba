/*
 * top_render.h - `trainprof top`'s outputs: the text frame (the terminal
 * view and --once) and the --json object (docs/TOP.md).
 */
#ifndef TP_CLI_TOP_RENDER_H
#define TP_CLI_TOP_RENDER_H

#include <stddef.h>

#include "top_state.h"
#include "util/buf.h"

typedef struct top_view {
    int width;            /* columns of the frame */
    int rows;             /* lines of the frame; 0 = every run, no limit */
    long selected;        /* index of the chosen run (detail panel) */
    int utf8;             /* sparkline and bars in block characters, else ASCII */
    int highlight;        /* chosen row in reverse video (terminal) */
    double interval_s;    /* shown in the header; 0 = one frame (--once) */
} top_view;

/* One frame, lines ending in '\n', each at most width columns. */
void top_render_text(tpu_buf *out, const top_set *set, const top_view *v);
/* {"runs": [...], "straggler": RANK or null} and a newline. */
void top_render_json(tpu_buf *out, const top_set *set);
/* Runs shown in the table for a frame of v->rows lines (the rest are
 * summed up in one line). */
size_t top_rows_shown(const top_set *set, const top_view *v);

#endif
