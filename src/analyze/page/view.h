/* view.h - the report page's views: one data model, gathered in one pass,
 * rendered into views.
 *
 * The page (`trainprof report --html`, a run's report.html, `diff --html`)
 * is one JSON object in <script id="trainprof-data"> plus the stylesheet and
 * the scripts under src/analyze/page/. Each view owns one top-level key of
 * that object and one script, web/view_<key>.js, which registers itself with
 * the page (see web/common.js) and reads only D[<key>] (and D.meta).
 *
 * On the C side a view is a collector: the page builder reads each trace of
 * its input once and hands every event to every collector, so adding a view
 * costs one feed call per event, never another pass over a trace. A
 * collector keeps bounded memory whatever the trace size, and writes its
 * JSON value at the end.
 *
 * The builder hands out the events of a trace in blocks and, with two
 * threads or more, feeds the collectors of lane 1 on a second thread while
 * lane 0 is fed on the first: a collector touches only its own state (and
 * what its lane shares) while it is fed.
 *
 * A collector that needs nothing from the traces (the run directory's own
 * files, a job directory's rank summaries) leaves feed NULL and reads what
 * it needs in begin or json.
 */
#ifndef TRAINPROF_ANALYZE_VIEW_H
#define TRAINPROF_ANALYZE_VIEW_H

#include "analyze/trace/trace.h"
#include "util/json.h"

/* What the builder tells every collector about the page being built. */
typedef struct tpa_view_input {
    const char *input;          /* what the user named: a trace, a run directory, a job directory */
    const char *out;            /* the page's path (links to the run's files are relative to it); NULL: unknown */
    bool run_dir;               /* input is a run directory (profiler_traces/ inside) */
    bool job_dir;               /* input is a job directory (job.json, rank<r>/ inside) */
    const char *const *traces;  /* the trace files the builder reads, in order */
    int n_traces;
    /* A run directory's own files (html.h), read once by the builder for
     * every view, with the memory findings; NULL: none read (the views
     * that show them keep an empty model of their own). */
    struct tpa_html_model *run_files;
    const char *run_error;      /* a run file that could not be read ("" when none) */
    /* The page's attributor (attrib.h), made and freed by the builder; the
     * views built on it join it in begin (tpa_at_client_begin). NULL when
     * it could not be allocated: those views are left out. */
    struct tpa_attrib *attrib;
} tpa_view_input;

typedef struct tpa_view_class {
    const char *key;            /* the page data's top-level key, e.g. "operators" */
    /* A fresh state for one page; NULL on allocation failure (the view is left out). */
    void *(*begin)(const tpa_view_input *in);
    /* Each trace file in turn: file_begin, then every event (kind is
     * tpa_classify(ev)), then file_end with the reader's metadata.
     * Any of the three may be NULL. */
    void (*file_begin)(void *state, int file, const char *path);
    void (*feed)(void *state, const tpa_event *ev, int kind);
    void (*file_end)(void *state, int file, const tpa_meta *meta);
    /* The view's JSON value (an object, or null when it has nothing to show). */
    void (*json)(void *state, tpu_json *j);
    void (*free)(void *state);
    /* Collectors of one lane are fed on one thread, in list order; the
     * builder may feed lane 0 and lane 1 at once on two threads (`-j` > 1),
     * each over the same block of events. Collectors that share state (the
     * attributor of attrib.h) must share a lane; 0 when unsure. */
    int lane;
    /* file_end, json and free run on lane 0 whatever the lane: for a
     * collector of lane 1 that shares no state, so that its end work is
     * done beside the attributor's last nesting (the lanes are in step
     * between files: it is fed on lane 1 again afterwards). */
    bool end_on_lane0;
} tpa_view_class;

/* ---- the views: one line each, in the page data's key order ------------------------ */
extern const tpa_view_class tpa_view_overview;   /* view_overview.c */
extern const tpa_view_class tpa_view_memory;     /* view_memory.c */
extern const tpa_view_class tpa_view_operators;  /* view_operators.c (attrib.h) */
extern const tpa_view_class tpa_view_kernels;    /* view_kernels.c (attrib.h) */
extern const tpa_view_class tpa_view_modules;    /* view_modules.c (attrib.h) */
extern const tpa_view_class tpa_view_timeline;   /* view_timeline.c */
extern const tpa_view_class tpa_view_distributed; /* view_distributed.c */
extern const tpa_view_class tpa_view_captures;   /* view_captures.c (captures.json) */

/* The builder's list (html_build.c): add your view's line. */
#define TPA_VIEW_LIST \
    &tpa_view_overview, \
    &tpa_view_memory, \
    &tpa_view_operators, \
    &tpa_view_kernels, \
    &tpa_view_modules, \
    &tpa_view_timeline, \
    &tpa_view_distributed, \
    &tpa_view_captures,

#endif
