/*
 * trainprof.h - the whole public C API of libtrainprof.
 *
 * A training program opens one session, marks its steps and the operations
 * inside them, and closes the session at the end:
 *
 *     tp_config *cfg = tp_config_new();
 *     tp_config_parse_args(cfg, &argc, argv, &err);     // --profiling.* flags
 *     tp_session *s = tp_session_open(cfg, &err);       // NULL on error
 *     for (step...) {
 *         tp_step_begin(s);
 *         { TP_ZONE(s, "forward");  ... }
 *         tp_step_end(s, batch_size);
 *     }
 *     tp_session_close(s, &err);                        // writes summaries
 *
 * Conventions
 * - A NULL tp_session * means "profiling off": every call taking a session is
 *   then a cheap no-op, so code can be instrumented unconditionally.
 * - Compiling the including file with -DTP_DISABLE removes the TP_ZONE* macros.
 * - Functions that can fail return 0 on success and a negative tp_error_code
 *   on failure, and fill the optional tp_error out-parameter (may be NULL).
 * - Every *_free function accepts NULL.
 * - Hot-path functions (zones, counters, marks, step begin/end) never allocate
 *   after a thread's first event, never lock, never block and never fail
 *   loudly: problems are counted and reported in the summary.
 */
#ifndef TRAINPROF_H
#define TRAINPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRAINPROF_VERSION_MAJOR 0
#define TRAINPROF_VERSION_MINOR 1
#define TRAINPROF_VERSION_PATCH 0
#define TRAINPROF_VERSION_STRING "0.1.0"
/* One number for comparisons: major * 10000 + minor * 100 + patch. */
#define TRAINPROF_VERSION_NUMBER \
    (TRAINPROF_VERSION_MAJOR * 10000 + TRAINPROF_VERSION_MINOR * 100 + TRAINPROF_VERSION_PATCH)

#if defined(__GNUC__)
#define TP_API __attribute__((visibility("default")))
#else
#define TP_API
#endif

/* The library's version string ("0.1.0"); may differ from the header's. */
TP_API const char *tp_version(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum tp_error_code {
    TP_OK = 0,
    TP_ERR_INVALID = -1,     /* bad argument (NULL handle, empty name, ...) */
    TP_ERR_UNKNOWN_KEY = -2, /* configuration key that does not exist */
    TP_ERR_BAD_VALUE = -3,   /* wrong type or out of range */
    TP_ERR_CONFLICT = -4,    /* contradictory settings (start_step with wait) */
    TP_ERR_PARSE = -5,       /* malformed file (YAML, JSON): see line/column */
    TP_ERR_IO = -6,          /* file or directory cannot be read/written */
    TP_ERR_NOMEM = -7,
    TP_ERR_UNSUPPORTED = -8, /* feature not built in (e.g. YAML without libyaml) */
    TP_ERR_STATE = -9        /* call out of order (session already closed ...) */
} tp_error_code;

/* Filled by failing calls. message names what is wrong: the key, file, line
 * and column or byte offset at fault, and what is accepted. */
typedef struct tp_error {
    int code;          /* a tp_error_code */
    int line;          /* 1-based line in `file`, 0 when not applicable */
    int column;        /* 1-based column, 0 when not applicable */
    char file[256];    /* file at fault, "" when none */
    char message[768]; /* full human-readable message, NUL-terminated */
} tp_error;

/* Releases memory that a tp_* function documents as caller-owned. */
TP_API void tp_free(void *ptr);

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */
/* Canonical keys are "profiling.<name>" (the "profiling." prefix is optional
 * in every call). Aliases from other tools map onto them (docs/CONFIG.md).
 * Precedence: defaults < YAML file < environment < command-line flags,
 * whatever order the calls are made in. */

typedef struct tp_config tp_config;

/* A configuration with every key at its default. NULL only when out of memory. */
TP_API tp_config *tp_config_new(void);
TP_API void tp_config_free(tp_config *cfg);

/* Sets one key (canonical or alias) from its text form, with flag precedence.
 * Fails with TP_ERR_UNKNOWN_KEY (message suggests the nearest key),
 * TP_ERR_BAD_VALUE (message lists accepted values) or TP_ERR_CONFLICT. */
TP_API int tp_config_set(tp_config *cfg, const char *key, const char *value, tp_error *err);

/* Reads the `profiling:` section of a YAML file (other sections ignored).
 * Errors carry the file, line and column. */
TP_API int tp_config_load_file(tp_config *cfg, const char *yaml_path, tp_error *err);

/* Consumes the profiling flags in argv (--profiling.KEY V, --profiling.KEY=V,
 * profiling.KEY=V, --enable_profiling True, ...), removes them from argv and
 * updates *argc; the program's own flags stay in place, in order. */
TP_API int tp_config_parse_args(tp_config *cfg, int *argc, char **argv, tp_error *err);

/* Reads TRAINPROF_<KEY> variables and TRAINPROF_CONFIG=file.yaml. */
TP_API int tp_config_load_env(tp_config *cfg, tp_error *err);

/* Current value of a key in its canonical text form, or NULL for an unknown
 * key. The string stays valid until the next change to cfg. */
TP_API const char *tp_config_get(const tp_config *cfg, const char *key);

/* The effective configuration as text (one "key = value" line per key; with
 * explain != 0 also where each value came from: default, file:line, env VAR,
 * flag). Caller frees with tp_free. */
TP_API char *tp_config_describe(const tp_config *cfg, int explain);

/* The same as a JSON object {"profiling.wait": {"value": ..., "source": ...}}.
 * Caller frees with tp_free. */
TP_API char *tp_config_to_json(const tp_config *cfg);

/* The key table as Markdown (docs/CONFIG.md is generated from it). Caller
 * frees with tp_free. */
TP_API char *tp_config_reference_markdown(void);

/* ------------------------------------------------------------------------ */
/* Session                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct tp_session tp_session;

/* Opens a profiling session: creates the run directory
 * <log_dir>/<name>_<YYYY-MM-DD>_<id>/ and starts the collector.
 * cfg NULL: defaults + environment. The session copies what it needs from cfg.
 * Returns NULL with err filled when the run directory cannot be created or
 * written, or the configuration is invalid. When profiling.enabled is false
 * it returns NULL with err->code == TP_OK: profiling is simply off. */
TP_API tp_session *tp_session_open(const tp_config *cfg, tp_error *err);

/* Ends open zones (counted as unbalanced), drains every thread's buffer,
 * closes the trace window, writes the summary files and prints the console
 * table. Frees the session, even on error (an I/O error is reported in err
 * and the summary). NULL is a no-op returning 0. Every other thread must
 * have stopped using s before this call: s is freed, so recording into it
 * from another thread during or after the close is a use-after-free. */
TP_API int tp_session_close(tp_session *s, tp_error *err);

/* The run directory, or NULL for a NULL session. */
TP_API const char *tp_session_dir(const tp_session *s);

/* --- HTML report (issue 11) --- */
/* Writes one self-contained HTML page (no network: inline data, SVG and a
 * small script) to `out`, atomically: step time and throughput over steps
 * with the traced steps marked, memory over steps (RSS, system %, each GPU's
 * allocated/reserved/peak), the step breakdown, the top operations, the
 * analyzer's findings and the run's configuration. `input` is a run
 * directory (its JSON files and profiler_traces/) or one trace file (Chrome
 * / Kineto / JAX JSON, .gz ok). Long runs are downsampled (min/max/mean per
 * column), so the page stays small for any number of steps. Returns 0, or
 * TP_ERR_IO (cannot read/write: err names the file) / TP_ERR_PARSE
 * (malformed input: err names the file and byte offset) / TP_ERR_INVALID.
 * Session close calls it for report.html unless profiling.html_report is
 * false; it never touches a live session. */
TP_API int tp_report_html(const char *input, const char *out, tp_error *err);
/* --- end HTML report --- */

/* Step boundaries. tp_step_end's samples (e.g. the batch size) give
 * samples/s; their total saturates at UINT64_MAX instead of wrapping. A
 * tp_step_end without a tp_step_begin starts the step at the previous
 * step's end (or at session open). A step whose record is dropped (buffers
 * full) counts in tp_session_steps but in no step statistic: the summary
 * says how many (dropped_steps) and close warns once on stderr. */
TP_API void tp_step_begin(tp_session *s);
TP_API void tp_step_end(tp_session *s, uint64_t samples);

/* Marks the end of an epoch; the schedule counts epochs when
 * profiling.unit = epoch. */
TP_API void tp_epoch_end(tp_session *s);

/* Steps ended so far (0 for NULL). */
TP_API uint64_t tp_session_steps(const tp_session *s);

/* Statistics of the session so far, for programs that print their own. */
typedef struct tp_session_stats {
    uint64_t steps;
    uint64_t events_recorded;
    uint64_t events_dropped;    /* buffer full (profiling.max_buffer_mb) */
    uint64_t unbalanced_zones;  /* END without BEGIN, BEGIN open at step end */
    uint64_t io_errors;         /* writes that failed (disk full, ...), and after close the
                                   trace files gone from disk (removed during the run) */
    uint64_t trace_files;       /* trace windows written; after close, those still on disk */
    double mean_step_seconds;
} tp_session_stats;
TP_API void tp_session_get_stats(const tp_session *s, tp_session_stats *out);

/* ------------------------------------------------------------------------ */
/* Flight recorder: captures of the last steps (docs/CAPTURES.md)           */
/* ------------------------------------------------------------------------ */
/* With profiling.capture on (the default) the session keeps the events of
 * the last profiling.capture_steps steps in memory, and writes them into
 * <run_dir>/captures/ (a Chrome trace, the step rows, the memory samples),
 * listed in <run_dir>/captures.json and the summary, on a slow step
 * (profiling.capture_slow_step), on SIGUSR1 (installed when the program has
 * no handler of its own), when no step ends for profiling.hang_timeout (with
 * every thread's stack), and when asked below. At most
 * profiling.captures_max per run. The collector thread writes them: the
 * calling thread only queues the request. */

/* Asks for a capture now: reason is [a-z0-9_]{1,31} ("exception", "user",
 * ...), detail any text (cut at 16 KB; may be NULL), both in the entry. Any
 * thread; returns at once (the capture is written within ~20 ms, or at
 * close). 0 when queued; TP_ERR_INVALID for a bad reason; TP_ERR_STATE when
 * the session has no flight recorder (capture off, NULL session, fork
 * child) or 8 requests are already waiting. Must not race tp_session_close. */
TP_API int tp_session_capture(tp_session *s, const char *reason, const char *detail);

/* Writes the stacks of the program's threads to fd (a language runtime's
 * own dump: Python's faulthandler). Called on the collector thread while
 * the program may be stuck: it must take no lock the program's threads may
 * hold (no GIL). */
typedef void (*tp_stack_dump_fn)(int fd, void *user);
/* Registers the dumper whose output a hang capture includes (NULL: none). */
TP_API void tp_session_set_stack_dumper(tp_session *s, tp_stack_dump_fn fn, void *user);

/* Captures written so far (0 for NULL or without a flight recorder). */
TP_API uint64_t tp_session_captures(const tp_session *s);

/* ------------------------------------------------------------------------ */
/* Multi-rank jobs (docs/DISTRIBUTED.md)                                     */
/* ------------------------------------------------------------------------ */
/* The ranks of one job (rank and job id from the launcher's environment or
 * profiling.rank / profiling.job_id) write <log_dir>/<name>_<date>_job-<id>/
 * rank<r>/ each; the first rank to arrive writes job.json there. */

/* The job's own barrier (MPI_Barrier, torch.distributed.barrier, ...):
 * returns only once every rank of the job has called it; 0 on success. */
typedef int (*tp_barrier_fn)(void *user);

/* Measures this rank's wall-clock offset to rank 0 across the job's barrier
 * and records it: traces then carry base times on rank 0's clock (so
 * `trainprof merge` lines the ranks up), and clock.json in the run
 * directory, the summary and job.json carry the offset and its error bound.
 * Collective: EVERY rank of the job calls it, in the same order relative to
 * its other barriers, including ranks whose session is NULL (left out by
 * profiling.ranks: they only take part in the barriers). Each call makes
 * exactly 34 barrier calls on every rank whatever else fails, so no rank is
 * left waiting; it stops calling the barrier only when one returns non-zero.
 * Rank 0 must profile, and every rank must see the job directory at the
 * same path (a shared file system): rank 0's readings travel through a file
 * there. Error bound: the offset is the midpoint of an interval that
 * provably holds the true offset when the clocks do not step during the
 * call; its half width (reported as error_ns) is at most a few barrier
 * latencies and usually much less. A rank on rank 0's host (same kernel
 * boot id: the same wall clock) records offset 0 with error 0 instead, the
 * barrier estimate kept beside it in clock.json. Takes about 34 barrier
 * latencies; call it
 * once after setup, outside timed steps (again after a long run to catch
 * drift: the latest call wins). Returns 0; TP_ERR_INVALID for a NULL
 * barrier; TP_ERR_IO when a barrier call failed or the reference file
 * cannot be written; TP_ERR_STATE when the rank has no job directory (no job
 * id: set profiling.job_id) or rank 0's reference is missing. NULL session,
 * or a process with no rank (not started by a launcher): barriers only,
 * returns 0. */
TP_API int tp_session_sync(tp_session *s, tp_barrier_fn barrier, void *user, tp_error *err);

/* After a successful tp_session_sync: 1 with this rank's wall clock minus
 * rank 0's in *offset_ns and the error bound in *error_ns (either may be
 * NULL). 0 when never synced (or s is NULL). */
TP_API int tp_session_clock_offset(const tp_session *s, int64_t *offset_ns, uint64_t *error_ns);

/* ------------------------------------------------------------------------ */
/* Zones: named operations with count, total, self time, percentiles        */
/* ------------------------------------------------------------------------ */

/* Names (of zones, marks, counters, threads) are C strings: a name holding
 * a NUL byte is recorded up to it ("a\0b" as "a"). The Python package
 * refuses such a name with ValueError. */
/* A static record per call site; the name is interned once, on first use. */
typedef struct tp_site {
    const char *name;
    const char *file;
    int line;
    uint32_t id; /* 0 until interned; written by the library */
} tp_site;

TP_API void tp_zone_begin_site(tp_session *s, tp_site *site);
/* Ends the innermost open zone of the calling thread. */
TP_API void tp_zone_end(tp_session *s);
/* Ends the innermost open zone of `site` on the calling thread, which need
 * not be the innermost zone: for zones that end out of order (manual
 * enter/exit, async code: A begins, B begins, A ends, B ends) each keeps
 * its own interval, and the zones begun inside it stay open. Such an
 * overlap is counted in unbalanced_zones and warned about once per
 * session on stderr, naming both zones; the overlap counts in the self
 * time of both. An END of a site with no open zone on this thread is
 * counted and ignored. Same cost as tp_zone_end when it is the innermost. */
TP_API void tp_zone_end_site(tp_session *s, tp_site *site);
/* Zone with a runtime name (interned: a hash lookup, slower than a site). */
TP_API void tp_zone_begin_dyn(tp_session *s, const char *name);
/* Like tp_zone_begin_dyn with a short argument string recorded with the zone
 * (profiling.record_shapes: e.g. "[[64, 128], [128]]"); copied, truncated to
 * 240 bytes. Without record_shapes the args are ignored. */
TP_API void tp_zone_begin_args(tp_session *s, const char *name, const char *args);

/* Names the calling thread in traces and tables. */
TP_API void tp_thread_name(tp_session *s, const char *name);

/* A counter sample (loss, learning rate, queue depth ...): a "C" track. */
TP_API void tp_counter(tp_session *s, const char *name, double value);

/* An instant event on the calling thread. */
TP_API void tp_mark(tp_session *s, const char *name);

#define TP__CAT2(a, b) a##b
#define TP__CAT(a, b) TP__CAT2(a, b)

#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#define TP__INLINE inline
#else
#define TP__INLINE __inline__
#endif

static TP__INLINE void tp__zone_cleanup(tp_session **s)
{
    if (*s)
        tp_zone_end(*s);
}

#if defined(TP_DISABLE)
#define TP_ZONE(s, name) ((void)0)
#define TP_ZONE_BEGIN(s, name) ((void)0)
#define TP_ZONE_END(s) ((void)0)
#else
/* A zone from here to the end of the enclosing block (GCC/Clang cleanup). */
#define TP_ZONE(s, zname)                                                       \
    static tp_site TP__CAT(tp__site_, __LINE__) = {zname, __FILE__, __LINE__, 0}; \
    tp_session *TP__CAT(tp__zone_, __LINE__) __attribute__((cleanup(tp__zone_cleanup))) = \
        (s);                                                                    \
    if (TP__CAT(tp__zone_, __LINE__))                                           \
        tp_zone_begin_site(TP__CAT(tp__zone_, __LINE__), &TP__CAT(tp__site_, __LINE__))
/* Explicit begin/end pair; END closes the innermost open zone. */
#define TP_ZONE_BEGIN(s, zname)                                                 \
    do {                                                                        \
        static tp_site tp__site = {zname, __FILE__, __LINE__, 0};               \
        tp_session *tp__s = (s);                                                \
        if (tp__s)                                                              \
            tp_zone_begin_site(tp__s, &tp__site);                               \
    } while (0)
#define TP_ZONE_END(s)                                                          \
    do {                                                                        \
        tp_session *tp__s = (s);                                                \
        if (tp__s)                                                              \
            tp_zone_end(tp__s);                                                 \
    } while (0)
#endif

/* ---- Timers and statistics for language bindings (Python package) ------ */

/* The session's clock now (opaque ticks, monotonic, comparable across
 * threads); 0 for a NULL session. A begin time for tp_zone_complete. */
TP_API uint64_t tp_session_now(const tp_session *s);

/* Records a zone named by `site` that began at `begin` (a tp_session_now()
 * value of the same session, taken on any thread) and ends now, on the
 * calling thread. Unlike tp_zone_begin_site/tp_zone_end it needs no
 * nesting: such zones may overlap in any order (start/end timers). Its self
 * time is its whole duration and it leaves the self time of the zones
 * around it unchanged. A begin later than now (another session's clock, a
 * made-up value) is recorded with duration 0 and counted as unbalanced.
 * Hot-path rules as for zones. */
TP_API void tp_zone_complete(tp_session *s, tp_site *site, uint64_t begin);

/* Cumulative statistics of one operation (zone name), in seconds. */
typedef struct tp_op_stat {
    const char *name; /* lives as long as the process */
    uint64_t count;
    double total_s, self_s, mean_s, min_s, max_s, p50_s, p90_s, p99_s;
} tp_op_stat;

/* Per-operation statistics of the session so far: every zone ended before
 * the call, on any thread, is included (the call drains the buffers
 * itself). *out receives an array of the returned count, caller-freed with
 * tp_free (NULL when the count is 0). Returns the count, or a negative
 * tp_error_code (TP_ERR_NOMEM). A NULL session, or a session inherited by a
 * fork child, has no operations (0). It may call the device memory
 * callback (when a memory sample is due) on the calling thread; it must not
 * race tp_session_close. */
TP_API int tp_session_operations(tp_session *s, tp_op_stat **out, tp_error *err);

/* ------------------------------------------------------------------------ */
/* GPU zones: CPU and GPU time of a region of CUDA work (docs/GPU.md)        */
/* ------------------------------------------------------------------------ */
/* tp_gpu_zone_begin opens a CPU zone (as tp_zone_begin_site) and records a
 * CUDA event on `stream` (a cudaStream_t; NULL = the default stream);
 * tp_gpu_zone_end records a second event on the same stream and closes the
 * CPU zone. Neither waits for the GPU: the collector thread resolves the
 * pair later with cudaEventQuery (never a synchronize) and adds the GPU
 * duration to the operation's gpu_* statistics (operations.json), on every
 * step, with or without profiling.cuda. Pass the token begin returned to
 * end, from the same thread, zones nested like CPU zones.
 * The CUDA runtime must be one the program loaded as a shared library
 * (nvcc -cudart shared; PyTorch does): trainprof never loads or initializes
 * CUDA itself. Without it, or when the 4096 event pairs in flight are all
 * taken, begin returns NULL and the zone is a CPU zone only (counted in
 * events_dropped). Cost: two cudaEventRecord calls and an uncontended
 * mutex, about 1-2 us of CPU time (unverified on a GPU). NULL s: no-op. */
TP_API void *tp_gpu_zone_begin(tp_session *s, void *stream, tp_site *site);
TP_API void tp_gpu_zone_end(tp_session *s, void *token);

typedef struct tp_gpu_zone_scope {
    tp_session *s;
    void *token;
} tp_gpu_zone_scope;

static TP__INLINE void tp__gpu_zone_cleanup(tp_gpu_zone_scope *z)
{
    if (z->s)
        tp_gpu_zone_end(z->s, z->token);
}

#if defined(TP_DISABLE)
#define TP_GPU_ZONE(s, stream, zname) ((void)0)
#else
/* A GPU zone from here to the end of the enclosing block (GCC/Clang/nvcc
 * cleanup attribute): TP_GPU_ZONE(s, stream, "forward"); */
#define TP_GPU_ZONE(s, stream, zname)                                           \
    static tp_site TP__CAT(tp__gsite_, __LINE__) = {zname, __FILE__, __LINE__, 0}; \
    tp_gpu_zone_scope TP__CAT(tp__gzone_, __LINE__)                             \
        __attribute__((cleanup(tp__gpu_zone_cleanup))) = {0, 0};                \
    TP__CAT(tp__gzone_, __LINE__).token =                                       \
        (TP__CAT(tp__gzone_, __LINE__).s = (s)) != 0                            \
            ? tp_gpu_zone_begin(TP__CAT(tp__gzone_, __LINE__).s, (void *)(stream), \
                                &TP__CAT(tp__gsite_, __LINE__))                 \
            : 0
#endif

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

/* Allocation tracking in named pools (pool NULL = "default"): live bytes,
 * peak and counts per pool, the zone that allocated each block; blocks still
 * live at close are reported as possible leaks, grouped by pool and zone. */
TP_API void tp_mem_alloc(tp_session *s, const void *ptr, size_t bytes, const char *pool);
TP_API void tp_mem_free(tp_session *s, const void *ptr, const char *pool);

/* Device memory as a framework allocator sees it (PyTorch's caching
 * allocator, JAX memory_stats()). */
typedef struct tp_device_memory {
    char device[32];          /* "cuda:0", "tpu:0" ... */
    uint64_t allocated_bytes; /* bytes in use by tensors */
    uint64_t reserved_bytes;  /* bytes held by the allocator */
    uint64_t peak_bytes;      /* peak bytes in use */
    uint64_t total_bytes;     /* device capacity, 0 when unknown */
} tp_device_memory;

/* Called on the sampling thread; fills up to max entries and returns how many
 * (negative on error). Values that are inconsistent are rejected and counted. */
typedef int (*tp_device_memory_fn)(void *user, tp_device_memory *out, int max);
TP_API void tp_set_device_memory_callback(tp_session *s, tp_device_memory_fn fn, void *user);

/* Takes a memory sample now (process, system, GPUs, callback). */
TP_API void tp_memory_sample_now(tp_session *s);

/* ------------------------------------------------------------------------ */
/* Process monitoring (used by `trainprof run`)                              */
/* ------------------------------------------------------------------------ */

/* One sample of a process tree rooted at pid. */
typedef struct tp_proc_sample {
    uint64_t rss_bytes;        /* summed over the tree */
    double cpu_percent;        /* since the previous sample, 100 = one core */
    int processes;             /* processes in the tree */
    int threads;               /* threads in the tree */
    double system_memory_percent;
    uint64_t system_available_bytes;
    /* Proportional set size summed over the tree: a page shared by k
     * processes (a DataLoader worker's forked copy of the parent, shared
     * libraries) counts 1/k in each, so the sum is the tree's own memory,
     * where rss_bytes counts shared pages once per process. Read from
     * /proc/<pid>/smaps_rollup at most once a second (the kernel walks
     * the page tables for it); 0 when it cannot be read. */
    uint64_t pss_bytes;
} tp_proc_sample;

typedef struct tp_monitor tp_monitor;
/* Watches the process tree of pid. Returns NULL with err on failure. */
TP_API tp_monitor *tp_monitor_new(int pid, tp_error *err);
/* Samples now; 0 on success, negative when /proc cannot be read. */
TP_API int tp_monitor_sample(tp_monitor *m, tp_proc_sample *out, tp_error *err);
/* Fills up to max GPU entries (NVML); returns how many, 0 without GPUs. */
TP_API int tp_monitor_gpus(tp_monitor *m, tp_device_memory *out, int max);
TP_API void tp_monitor_free(tp_monitor *m);

#ifdef __cplusplus
}
#endif

#endif /* TRAINPROF_H */
