/* event_parse.h - parse one trace event object from a contiguous window. */
#ifndef TRAINPROF_ANALYZE_EVENT_PARSE_H
#define TRAINPROF_ANALYZE_EVENT_PARSE_H

#include "analyze/trace/trace.h"
#include "analyze/trace/json_scan.h"

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

/* Finds member `key` in the complete object text starting at obj ('{').
 * Returns a pointer to the value's first byte, or NULL. */
const char *tpa_obj_find(const char *obj, const char *end, const char *key);
/* The event's first "args" member when it is an object (its '{' in
 * ev->raw; *len, when len is not NULL: the object's text length), else
 * NULL. Free for an event tpa_parse_event read (it marks where args is);
 * an event made by hand (raw only) is looked up with tpa_obj_find. */
const char *tpa_event_args(const tpa_event *ev, size_t *len);
/* The args member names of enum tpa_arg (analyze.h). */
extern const char *const tpa_arg_keys[TPA_ARG_COUNT];
/* The value of args member `which` (a tpa_arg) in the event's first args
 * object: its first occurrence, the member tpa_obj_find finds (*vend, when
 * vend is not NULL: the value's end), else NULL. Free for an event
 * tpa_parse_event read (ev->arg_seen, ev->v_arg); an event made by hand is
 * looked up in its raw text. */
const char *tpa_event_arg(const tpa_event *ev, int which, const char **vend);
bool tpa_value_i64(const char *v, const char *end, int64_t *out);
/* Copies a string value (undecoded, truncated to cap-1) into out. */
bool tpa_value_str(const char *v, const char *end, char *out, size_t cap);
/* A number (or quoted number) value as a double; false otherwise. */
bool tpa_value_f64(const char *v, const char *end, double *out);
/* Calls fn for each member of the complete object text at obj ('{') with
 * its raw key (undecoded) and value text; stops early when fn returns
 * false. Returns false when obj is not a well-formed object. */
typedef bool (*tpa_member_fn)(const char *key, size_t key_n, const char *val,
                              const char *val_end, void *user);
bool tpa_obj_each(const char *obj, const char *end, tpa_member_fn fn, void *user);


#endif
