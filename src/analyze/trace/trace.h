/* trace.h - the trace stage's interface: errors, the event model, what an
 * event is (classify), the streaming reader (plain, gzip, `-j N`), and the
 * small parsing and formatting helpers the CLI shares.
 *
 * Everything here streams: a reader hands out one event at a time from a
 * chunked buffer (plain or gzip input); the stages after it keep only
 * per-name aggregates and per-thread open spans, never the whole document.
 * Internal prefix: tpa_ (the analyzer's), tpa__ (file-local helpers).
 * May include: json/, util/. See src/analyze/README.md.
 */
#ifndef TRAINPROF_ANALYZE_TRACE_H
#define TRAINPROF_ANALYZE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyze/json/json_scan.h" /* enum tpa_errcode */

/* ---- errors ------------------------------------------------------------ */

typedef struct tpa_error {
    int code;
    uint64_t offset;      /* byte offset in the (decompressed) input */
    char file[256];
    char msg[256];
    char excerpt[96];     /* printable text around offset, may be empty */
} tpa_error;

void tpa_error_set(tpa_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* err->excerpt: the printable text of [lo, hi) around at (20 bytes
 * before, 30 after; other bytes as '.'). */
void tpa_error_excerpt(tpa_error *err, const char *lo, const char *at, const char *hi);
/* One line: "FILE: byte N: message near `excerpt`". */
void tpa_error_print(FILE *out, const tpa_error *err);

/* ---- event model ------------------------------------------------------- */
typedef struct tpa_sv { const char *p; size_t n; } tpa_sv;

typedef struct tpa_span32 { uint32_t off, len; } tpa_span32; /* inside raw */

/* The members of an event's args that the page's collectors read; the
 * parser notes where their values are (tpa_event_arg in event_parse.h). */
enum tpa_arg {               /* in the order Kineto writes them */
    TPA_ARG_EXTERNAL_ID,     /* "External id" */
    TPA_ARG_EXTERNAL_ID_LC,  /* "external id" (older Kineto) */
    TPA_ARG_INPUT_DIMS,      /* "Input Dims" */
    TPA_ARG_STREAM,          /* "stream" */
    TPA_ARG_CORRELATION,     /* "correlation" */
    TPA_ARG_REGISTERS,       /* "registers per thread" */
    TPA_ARG_SHARED_MEMORY,   /* "shared memory" */
    TPA_ARG_BLOCKS_PER_SM,   /* "blocks per SM" */
    TPA_ARG_WARPS_PER_SM,    /* "warps per SM" */
    TPA_ARG_GRID,            /* "grid" */
    TPA_ARG_BLOCK,           /* "block" */
    TPA_ARG_COUNT
};

typedef struct tpa_event {
    char ph;                 /* 'X','B','E','i','C','M','s',... 0 when absent */
    int8_t kind;             /* tpa_classify(ev) when has_kind: the parser's, with the text at hand */
    bool has_kind;
    tpa_sv name, cat;        /* decoded UTF-8; valid until the next event */
    int64_t ts_ns, dur_ns;   /* microsecond fields converted to nanoseconds */
    bool has_ts, has_dur;
    bool args_marked;        /* v_args and arg_seen were filled by the parser (else look args up in raw) */
    bool has_step_num;       /* args.step_num (JAX StepTraceAnnotation) */
    bool on_device;          /* pid named "/device:..." by a process_name event (JAX/XLA) */
    bool arg_dup;            /* a tpa_arg member appears twice in the first args object */
    uint16_t arg_seen;       /* bit 1 << tpa_arg: that member is in the first args object */
    int64_t pid, tid;        /* string ids are hashed into distinct numbers */
    tpa_sv pid_str, tid_str; /* raw string ids (n == 0 for numbers) */
    int64_t device;          /* args.device, -1 when absent */
    tpa_sv arg_name;         /* args.name (process_name/thread_name M events) */
    tpa_sv raw;              /* the object's text, valid until the next event */
    uint64_t offset;         /* where raw starts in the input */
    tpa_span32 v_pid, v_tid, v_ts, v_id; /* value positions inside raw (len 0: absent) */
    tpa_span32 v_args;       /* the first "args" member's value inside raw (len 0: absent) */
    const tpa_span32 *v_arg; /* the arg_seen members' first values inside raw, in tpa_arg order;
                                valid until the next event */
    int64_t step_num;
    double occupancy;        /* args["est. achieved occupancy %"] of a kernel, -1 when absent */
} tpa_event;

/* What the analyses call an event, by category and name. */
enum tpa_kind {
    TPA_K_CPU,        /* cpu_op, python_function, uncategorised host spans */
    TPA_K_ANNOTATION, /* user_annotation (record_function ranges) */
    TPA_K_STEP,       /* ProfilerStep#N on the host */
    TPA_K_RUNTIME,    /* cuda_runtime, cuda_driver, hip runtime */
    TPA_K_KERNEL,
    TPA_K_COMM,       /* NCCL/RCCL kernels */
    TPA_K_MEMCPY,
    TPA_K_MEMSET,
    TPA_K_GPU_ANNOTATION,
    TPA_K_COUNT
};
int tpa_classify(const tpa_event *ev);
/* tpa_classify(ev): what the reader noted, for an event made by hand computed. */
static inline int tpa_event_kind(const tpa_event *ev) { return ev->has_kind ? ev->kind : tpa_classify(ev); }
bool tpa_kind_is_gpu(int kind);
bool tpa_name_is_data_loading(tpa_sv name);
/* "ProfilerStep#12" -> 12; returns false for other names. */
bool tpa_step_number(tpa_sv name, int64_t *num);
/* The step number of a host step marker: ProfilerStep#N in any host category
 * (every Kineto generation), or a span carrying args.step_num (JAX). */
bool tpa_event_step(const tpa_event *ev, int kind, int64_t *num);
/* A name that can mark a step when a trace has no ProfilerStep#N:
 * "## forward ##"-style markers, train_step / training_step (Lightning's
 * "[LightningModule]Model.training_step"), train/training loops. */
bool tpa_name_is_step_like(tpa_sv name);

/* ---- an event's members, read from its raw text ----------------------------- */
/* Finds member `key` in the complete object text starting at obj ('{').
 * Returns a pointer to the value's first byte, or NULL. */
const char *tpa_obj_find(const char *obj, const char *end, const char *key);
/* The event's first "args" member when it is an object (its '{' in
 * ev->raw; *len, when len is not NULL: the object's text length), else
 * NULL. Free for an event tpa_parse_event read (it marks where args is);
 * an event made by hand (raw only) is looked up with tpa_obj_find. */
const char *tpa_event_args(const tpa_event *ev, size_t *len);
/* The args member names of enum tpa_arg (above). */
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

/* ---- reader ------------------------------------------------------------ */
typedef struct tpa_member { char *key; char *raw; size_t raw_len; } tpa_member;

typedef struct tpa_meta {
    bool object_form;        /* {"traceEvents": [...]} vs bare [...] */
    bool has_base;  int64_t base_ns;   /* wall-clock ns at ts = 0 */
    bool has_rank;  int64_t rank;
    char host[128];
    bool truncated;          /* input ended before the document closed */
    bool events_cut;         /* truncated/garbled inside traceEvents */
    uint64_t truncated_at;   /* offset where reading stopped */
    bool cut_by_error;       /* lenient: stopped at an error (in the reader's err), not at the end */
    uint64_t good_end;       /* offset just past the last complete element */
    char close[4];           /* text that closes the document after good_end */
    uint64_t bytes;          /* decompressed bytes consumed */
    uint64_t events;         /* objects seen in traceEvents */
    uint64_t non_objects;    /* traceEvents elements that are not objects */
    tpa_member *members;     /* other top-level members, raw (object form) */
    size_t n_members;
} tpa_meta;

typedef struct tpa_reader tpa_reader;

/* path "-" reads stdin; gzip is detected by its magic bytes. */
tpa_reader *tpa_reader_open(const char *path, tpa_error *err);
tpa_reader *tpa_reader_open_mem(const void *data, size_t size, tpa_error *err);
/* 1: *ev filled; 0: end (check meta->truncated); -1: error in *err. */
int tpa_reader_next(tpa_reader *r, tpa_event *ev, tpa_error *err);
/* The next events, up to max of them, at *evs: a run of what the parallel
 * reader parsed together (`-j N`), or one when reading sequentially. They
 * stay valid, strings included, until the next call on r, so several
 * threads may read them meanwhile. Returns how many; 0: end; -1: error in
 * *err (the events of earlier calls were all good). The same events, in
 * the same order, as tpa_reader_next gives. */
long tpa_reader_next_block(tpa_reader *r, const tpa_event **evs, size_t max, tpa_error *err);
/* Lets consumers read the last blocks on other threads while the caller
 * asks for more: from now on the events of the last `calls` calls of
 * tpa_reader_next_block (1 to TPA_READER_MAX_KEEP) stay valid through the
 * next call too; the reader keeps as many used-up windows, text and
 * events, before it parses into one again. Where it would reuse their
 * memory anyway (reading sequentially, starting a batch over), it first
 * calls release(arg), which must return only once nobody reads them. */
#define TPA_READER_MAX_KEEP 8
void tpa_reader_keep_last(tpa_reader *r, int calls, void (*release)(void *), void *arg);
/* Reads to the end, ignoring events: fills the metadata that follows traceEvents. */
int tpa_reader_drain(tpa_reader *r, tpa_error *err);
const tpa_meta *tpa_reader_meta(const tpa_reader *r);
/* When set, an error inside traceEvents ends the events like a truncation
 * instead of failing (used by `fix`): next returns 0 with meta->truncated
 * and meta->cut_by_error set and the error in *err, for the caller to judge
 * (garbage after a cut, or a file damaged before its end). */
void tpa_reader_set_lenient(tpa_reader *r, bool lenient);
/* When set, the input is a JSON array of rows (a run's timing_profile.json,
 * operations.json) read with the same scanner: an array none of whose
 * values is a trace event is not refused as "not a trace". */
void tpa_reader_set_rows(tpa_reader *r, bool rows);
/* Caps each read (tests and fuzzing: exercise refills at every byte). */
void tpa_reader_set_max_read(tpa_reader *r, size_t n);
void tpa_reader_close(tpa_reader *r);
/* Progress lines on stderr every 256 MB (the CLI enables it on a terminal). */
void tpa_set_progress(bool on);
/* Threads that parse one file's traceEvents (`-j N`, parallel.h): readers
 * opened afterwards use n; 1 (the default, and the library's) reads on the
 * calling thread alone. Events, errors and metadata are the same for any n. */
#define TPA_MAX_JOBS 256
/* The reader refuses a ts or dur beyond ±4e18 ns (year 2096 as epoch ns):
 * two such values and their difference stay inside int64; an analysis that
 * adds a dur to a ts clamps the end here (stats/steps.c). */
#define TPA_MAX_TIME_NS 4000000000000000000LL
void tpa_set_jobs(int n);
int tpa_jobs(void);

/* ---- filters ---------------------------------------------------------- */
typedef struct tpa_range { int64_t lo, hi; bool set; } tpa_range;

/* Sums of durations saturate: crafted traces can add up past int64. */
static inline int64_t tpa_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* ---- which files are traces ----------------------------------------------- */
/* A trace by its name: *.json or *.json.gz, not hidden, not a file trainprof
 * writes beside its traces (job.json, clock.json, config.json,
 * operations.json, training_summary.json, run_summary.json, captures.json,
 * live.json, *_profile.json) nor a folded-stacks side file. The one rule of the page
 * builder, the job directories' ranks and the CLI. */
bool tpa_is_trace_file_name(const char *name);
/* The traces directly in dir (not its subdirectories), as paths "dir/name"
 * sorted by name (a run's trace stems end in their start time, so this is
 * their order). A trace that cannot be read (a looping or dangling link,
 * no permission, not a regular file) or is empty (0 bytes: what a full disk
 * leaves) is left out with a warning on stderr (tpa_trace_file_usable), so
 * one bad file does not hide the rest of a run. 0, or -1 with err when dir
 * cannot be read; free each path and the array. */
int tpa_trace_files(const char *dir, char ***files, size_t *n, tpa_error *err);
/* Whether the file at path can be read as a trace: a regular file (links
 * followed) with at least one byte that this process may open. When not,
 * prints "trainprof: warning: PATH: skipped: WHY" on stderr. */
bool tpa_trace_file_usable(const char *path);
bool tpa_is_dir(const char *path);

/* ---- a run's flight-recorder captures (run_captures.c) -------------------- */
typedef struct tpa_capture {
    char reason[16];          /* slow_step, exception, signal, hang, ... */
    int64_t step;             /* the step it is about, -1 unknown */
    char time[40];            /* wall-clock time as written */
    char *detail;             /* decoded, at most 4 KB, "" when none */
    char **files; size_t n_files;  /* relative to the run directory */
} tpa_capture;
typedef struct tpa_captures {
    int64_t rank, pid;        /* -1 when not written */
    tpa_capture *v; size_t n; /* in the order captured */
} tpa_captures;
/* Reads run_dir/captures.json: 1 read, 0 no such file, -1 damaged (the
 * entries before the damage are kept). tpa_captures_free either way. */
int tpa_captures_read(const char *run_dir, tpa_captures *out);
void tpa_captures_free(tpa_captures *c);

/* ---- small helpers shared with the CLI ------------------------------------ */
/* "5us", "2.5ms", "1s", "300" (µs) -> ns. */
bool tpa_parse_duration(const char *s, int64_t *ns);
/* "10-12", "7", "10-" -> inclusive range; scale multiplies (durations). */
bool tpa_parse_range(const char *s, tpa_range *r);
bool tpa_parse_time_range(const char *s, tpa_range *r);  /* with unit suffixes */
bool tpa_cat_listed(const char *list, tpa_sv cat);
/* Human duration from ns: "12.345 ms" style, fixed width friendly. */
void tpa_fmt_dur(char *buf, size_t n, int64_t ns);
void tpa_json_str(FILE *f, const char *s, size_t n);

#endif
