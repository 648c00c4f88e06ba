/*
 * sink.h - the one event model every output is written from.
 *
 * The collector (src/core) drains the per-thread buffers, resolves names and
 * timestamps, nests zones into slices, aggregates statistics and runs the
 * schedule; it then calls the sinks below. All sink callbacks run on ONE
 * thread at a time (the collector thread, or the closing thread after the
 * collector stopped), so sinks need no locking. A sink that fails (disk full)
 * sets `failed`, counts `io_errors`, prints one warning and stops writing;
 * the other sinks and the training go on.
 */
#ifndef TP_SINK_SINK_H
#define TP_SINK_SINK_H

#include <stdint.h>
#include <stdio.h>

#include "config/settings.h"
#include "probe/gpu.h"
#include "probe/probe.h"

/* Name registry (src/core): interned id -> name, valid for the process. */
const char *tpi_names_get(uint32_t id);

typedef enum tpi_event_kind {
    TPI_EV_SLICE = 0,   /* a zone or a step: ts_ns + dur_ns */
    TPI_EV_COUNTER = 1, /* a counter sample: value */
    TPI_EV_INSTANT = 2, /* tp_mark */
    TPI_EV_MEMORY = 3,  /* allocation/free with profile_memory ([memory] in Kineto) */
    TPI_EV_GPU = 4      /* a CUPTI record (kernel, copy, set, sync, API call): `gpu`;
                         * ts_ns/dur_ns/name/cat set, tid = calling thread of API calls */
} tpi_event_kind;

typedef struct tpi_event {
    tpi_event_kind kind;
    uint32_t tid;            /* OS thread id */
    uint32_t name_id;        /* interned name (0 for none) */
    const char *name;
    const char *cat;         /* "user_annotation" (steps, zones), "counter", ... */
    uint64_t ts_ns;          /* since the session base (tpi_sink_env.mono_base_ns) */
    uint64_t dur_ns;         /* slices */
    uint64_t self_ns;        /* slices: dur minus direct children on the same thread */
    int depth;               /* slices: 0 = outermost on its thread */
    const uint32_t *stack;   /* slices: name ids of enclosing zones, outermost first, `depth` entries */
    int is_step;             /* slices: a ProfilerStep#N span */
    int unterminated;        /* slices: closed by trainprof at step end/close */
    uint64_t step;           /* step the event belongs to */
    double value;            /* counters */
    const char *args_json;   /* NULL or a JSON object text (record_shapes) */
    /* memory events (Kineto "[memory]" fields) */
    uint64_t addr;
    int64_t bytes;           /* negative for frees */
    uint64_t total_allocated, total_reserved;
    int device_type;         /* 0 = CPU, 1 = CUDA (Kineto's Device Type) */
    int device_id;           /* -1 for CPU */
    const tpi_gpu_activity *gpu; /* TPI_EV_GPU */
} tpi_event;

/* Cumulative statistics of one operation (seconds). */
typedef struct tpi_op_stat {
    uint32_t name_id;
    const char *name;
    uint64_t count;
    double total_s, self_s, min_s, max_s, mean_s, stddev_s, p50_s, p90_s, p99_s;
    int top_level;           /* ever seen at depth 0 of a step */
    /* GPU time of TP_GPU_ZONE zones (CUDA events); gpu_count 0 = none */
    uint64_t gpu_count;
    double gpu_total_s, gpu_mean_s, gpu_min_s, gpu_max_s;
} tpi_op_stat;

/* A counter (tp_counter: loss, learning rate ...) as the metrics rows see
 * it: its latest value, and the values recorded since the previous metrics
 * row (tpi_metric_due); n == 0: none since then. */
typedef struct tpi_counter_stat {
    uint32_t name_id;
    const char *name;
    double last;
    double sum;
    uint64_t n;
} tpi_counter_stat;

/* Time spent in one top-level operation within one step. */
typedef struct tpi_step_op {
    uint32_t name_id;
    const char *name;
    uint64_t count;
    uint64_t total_ns;       /* summed by the collector */
    int background;          /* 1: on another thread than the one ending steps */
} tpi_step_op;

/* A step op's time in seconds: the double nearest its nanoseconds. */
static inline double tpi_step_op_seconds(const tpi_step_op *op) { return (double)op->total_ns / 1e9; }

/* Schedule phase of a step. */
typedef enum tpi_phase {
    TPI_PHASE_SKIP = 0, TPI_PHASE_WAIT, TPI_PHASE_WARMUP, TPI_PHASE_ACTIVE, TPI_PHASE_DONE
} tpi_phase;

typedef struct tpi_step_info {
    uint64_t step;           /* 0-based step index */
    uint64_t batch_idx;      /* index within the epoch */
    uint64_t epoch;
    uint64_t begin_ns, end_ns;
    double step_time_s;
    uint64_t samples;
    double samples_per_second;
    tpi_phase phase;
    const tpi_step_op *ops;  /* top-level operations of this step */
    size_t n_ops;
    const tpi_op_stat *totals; /* cumulative per-operation statistics so far */
    size_t n_totals;
    const tpi_mem_sample *mem; /* sample taken at this step's end, or NULL */
    const tpi_counter_stat *counters; /* every counter recorded so far, first seen first */
    size_t n_counters;
} tpi_step_info;

typedef struct tpi_window {
    int index;               /* 0-based, in the order the windows opened */
    int capture;             /* 0: the schedule's window; K: follows capture K (captures.json) */
    uint64_t first_step, last_step;
    char stem[1024];         /* full path without extension: run_dir/profiler_traces/<stem> */
} tpi_window;

typedef struct tpi_summary {
    uint64_t total_steps, total_samples;
    double total_time_s;     /* session open -> close */
    double step_time_total_s;/* sum of step times */
    double mean_step_s, median_step_s, p90_step_s, min_step_s, max_step_s;
    uint64_t wall_start_ns, wall_end_ns; /* CLOCK_REALTIME */
    const tpi_op_stat *ops;
    size_t n_ops;
    uint64_t events_recorded, events_dropped, unbalanced_zones, io_errors, trace_files;
    const tpi_mem_summary *mem;      /* NULL when memory is off */
    const tpi_alloc_tracker *alloc;  /* NULL when nothing was tracked */
    /* issue 12 */
    const tpi_step_info *last_step;  /* the last step with the final totals; NULL: no step */
    int gpu_found;                   /* -1: not sampled (memory off), 0: none, 1: a device */
    const char *gpu_probe_note;      /* why no GPU probe opened; NULL or "": one did */
    uint64_t trace_events_dropped;   /* dropped by the trace budget (max_trace_mb, disk low) */
    /* issue 34: the flight recorder's captures, as JSON array items (NULL: none) */
    const char *captures_json;
    int capture_on;                  /* profiling.capture: "captures" is in the summary */
    uint64_t steps_dropped;          /* step() calls whose record was dropped (buffers full):
                                        not in total_steps nor in any step statistic */
} tpi_summary;

/* What every sink knows about the session. */
typedef struct tpi_sink_env {
    const tpi_settings *settings;
    const char *run_dir;
    const char *host;
    int pid;
    int rank;                /* -1 when unknown */
    uint64_t wall_base_ns;   /* CLOCK_REALTIME at ts_ns == 0 */
    uint64_t mono_base_ns;   /* CLOCK_MONOTONIC at ts_ns == 0 */
    const tpi_job_info *job; /* rank, local rank, world size, job id, launcher */
    /* tp_session_sync's result, written by the syncing thread: read with
     * __atomic_load_n (clock_synced with acquire, then the other two) */
    int clock_synced;
    int64_t clock_offset_ns; /* this rank's wall clock minus rank 0's */
    uint64_t clock_error_ns;
    /* the run directory as created (its device and inode): removed, or
     * removed and made again by a later write, it is another directory */
    uint64_t run_dir_dev, run_dir_ino;
} tpi_sink_env;

typedef struct tpi_sink tpi_sink;
typedef struct tpi_sink_ops {
    const char *name;
    /* trace sinks: an active cycle begins (open a file) / ends (finish it) */
    int (*window_begin)(tpi_sink *k, const tpi_window *w);
    void (*thread_name)(tpi_sink *k, uint32_t tid, const char *name);
    void (*event)(tpi_sink *k, const tpi_event *e);   /* events inside a window */
    void (*flush)(tpi_sink *k);                       /* step end inside a window */
    int (*window_end)(tpi_sink *k, const tpi_window *w, uint64_t dropped_events);
    /* every step / every memory sample, windows or not */
    void (*step)(tpi_sink *k, const tpi_step_info *si);
    void (*memory)(tpi_sink *k, const tpi_mem_sample *m);
    /* after each pass of the collector (every <= 20 ms): write what is
     * buffered, so files hold every step processed so far */
    void (*drained)(tpi_sink *k);
    /* session end: write summaries; then destroy frees the sink */
    int (*close)(tpi_sink *k, const tpi_summary *sum);
    void (*destroy)(tpi_sink *k);
} tpi_sink_ops;

struct tpi_sink {
    const tpi_sink_ops *ops; /* any callback may be NULL */
    const tpi_sink_env *env;
    int failed;              /* stopped after an error */
    uint64_t io_errors;
};

/* fopen/fclose for sink files: a fork child empties their stdio buffers
 * (tpi_sink_files_after_fork_child) so it never writes the parent's bytes. */
FILE *tpi_sink_fopen(const char *path, const char *mode);
int tpi_sink_fclose(FILE *f);
void tpi_sink_files_after_fork_child(void);

/* Marks a sink failed after an I/O error: one warning on stderr, counted. */
void tpi_sink_fail(tpi_sink *k, const char *what, const char *path, int errnum);
/* 1 when the run directory is no longer the one the session created (it
 * was removed during the run, and maybe made again by a later write): the
 * files written before are lost. */
int tpi_sink_run_dir_gone(const tpi_sink_env *env);

/* Constructors: NULL when the settings do not ask for the sink or it cannot
 * start (with a warning). Each lives in its own src/sink/<name>.c. */
tpi_sink *tpi_sink_chrome_json_new(const tpi_sink_env *env);  /* *.pt.trace.json[.gz] */
tpi_sink *tpi_sink_perfetto_new(const tpi_sink_env *env);     /* *.perfetto-trace */
tpi_sink *tpi_sink_stacks_new(const tpi_sink_env *env);       /* *.stacks.txt */
tpi_sink *tpi_sink_seed_json_new(const tpi_sink_env *env);    /* timing_profile, training_summary, operations */
tpi_sink *tpi_sink_memory_json_new(const tpi_sink_env *env);  /* memory_profile.json */
tpi_sink *tpi_sink_jsonl_new(const tpi_sink_env *env);        /* metrics.jsonl */
tpi_sink *tpi_sink_csv_new(const tpi_sink_env *env);          /* metrics.csv */
tpi_sink *tpi_sink_tensorboard_new(const tpi_sink_env *env);  /* events.out.tfevents.* */
tpi_sink *tpi_sink_console_new(const tpi_sink_env *env);      /* table at close, log_every blocks */

/* sink_job.c: the wall-clock base on rank 0's clock (the local base when
 * the session was never synced), and the job's members for trace metadata
 * and summaries: local_rank, world_size, job_id, launcher and, once synced,
 * clock_offset_ns, clock_error_ns, local_base_time_ns. */
uint64_t tpi_sink_aligned_base(const tpi_sink_env *env);
struct tpu_json;
void tpi_sink_job_json(struct tpu_json *j, const tpi_sink_env *env);

#endif
