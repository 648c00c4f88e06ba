/* event_parse.h - parse one trace event object from a contiguous window
 * (the trace stage's own: the reader, split and parallel use it; the other
 * stages read events through trace.h's accessors). */
#ifndef TRAINPROF_ANALYZE_EVENT_PARSE_H
#define TRAINPROF_ANALYZE_EVENT_PARSE_H

#include "analyze/trace/trace.h"
#include "analyze/json/json_scan.h"

/* Decoded-string storage for one event: name, cat, args.name; and where
 * its tpa_arg members' values are (ev->v_arg). */
typedef struct tpa_strbufs {
    char *buf[3];
    size_t cap[3];
    tpa_span32 args[TPA_ARG_COUNT];
} tpa_strbufs;

void tpa_strbufs_free(tpa_strbufs *sb);

/* *pp at '{'. Fills ev (raw/offset left to the caller). SC_OK/SC_MORE/SC_ERR. */
int tpa_parse_event(const char **pp, const char *end, tpa_event *ev, tpa_strbufs *sb,
                    tpa_scanerr *e);


#endif
