/* stats.h - the analyses stage's interface: the operator report, the steps
 * and their parts, the operators' table order, the diagnosis (findings)
 * and the diff of two runs. Analyses return data; text/ and page/ print it.
 * May include: trace/, util/. See src/analyze/README.md.
 */
#ifndef TRAINPROF_ANALYZE_STATS_H
#define TRAINPROF_ANALYZE_STATS_H

#include "analyze/trace/trace.h"

/* ---- steps found in one pass ------------------------------------------- */
typedef struct tpa_step {
    int64_t num;             /* N of ProfilerStep#N */
    int64_t start_ns, dur_ns;
    int64_t host_start_ns, host_end_ns;  /* the step's host span (steps_finish sets them) */
} tpa_step;

/* One pass: the ProfilerStep#N spans of a file, sorted by start. */
int tpa_find_steps(const char *path, tpa_step **steps, size_t *n, int64_t *min_ts,
                   tpa_error *err);
/* The same, each step extended on a GPU trace to the device work it
 * launched (the plugin's rule, as tpa_steps_result.device_rule; start_ns,
 * dur_ns), its host span in host_start_ns / host_end_ns; no step left out. */
int tpa_find_gpu_steps(const char *path, tpa_step **steps, size_t *n, int64_t *min_ts,
                       tpa_error *err);

/* ---- report -------------------------------------------------------------- */
typedef struct tpa_report_opts {
    const char *cats;        /* comma list of categories to keep, NULL = all */
    bool has_pid, has_tid;
    int64_t pid, tid;
    tpa_range steps;         /* step numbers (inclusive) */
    bool group_steps;        /* ProfilerStep#N -> ProfilerStep* as torch does */
    bool quiet;
} tpa_report_opts;

#define TPA_TABLE_ASYNC (1 << 30)  /* table of async b/e pairs, after the devices */
typedef struct tpa_op {
    char *name;
    int table;               /* -1: host, >= 0: GPU device, TPA_TABLE_ASYNC */
    int kind;                /* enum tpa_kind of its first event, -1 for async */
    uint64_t count;
    int64_t total_ns, self_ns, min_ns, max_ns;
} tpa_op;

typedef struct tpa_report {
    tpa_op *ops; size_t n_ops;     /* unsorted */
    uint64_t events, spans, skipped_unknown, late_events, unmatched_end;
    uint64_t async_pairs, async_unmatched;   /* b/e pairs matched; b or e left alone */
    uint64_t negative_durs;        /* X with dur < 0, E before its B: left out of every table */
    uint64_t negative_at;          /* byte offset of the first (its file's), valid when counted */
    uint64_t bytes;
    uint64_t per_ph[128];
    int n_files, truncated_files;
    void *priv;                    /* name index */
} tpa_report;

int tpa_report_file(tpa_report *rep, const char *path, const tpa_report_opts *o,
                    tpa_error *err);
void tpa_report_free(tpa_report *rep);
/* Adds src's operations and counts to dst, as if src's files had been fed
 * to dst after its own (exact while no sum nears the int64 range). */
void tpa_report_merge(tpa_report *dst, const tpa_report *src);
/* The one warning for events with a negative duration (count, first
 * offset), printed once per file by report (and steps' CLI). */
void tpa_warn_negative(const char *path, uint64_t n, uint64_t first_at);
/* The warning tpa_report_end prints for a cut-short file unless quiet. */
void tpa_report_warn_truncated(const char *path, const tpa_meta *m);
/* tpa_report_file over paths in order, up to jobs files at once (each
 * file's reader then gets its share of the tpa_jobs() threads): the same
 * report, warnings and first error as the sequential loop. */
int tpa_report_files(tpa_report *rep, const char *const *paths, int n, const tpa_report_opts *o,
                     int jobs, tpa_error *err);
/* The same, fed event by event: begin (a pass over path first when
 * o->steps is set; NULL on error), feed every event, end with the reader's
 * metadata. rep and o must outlive the run. When spans came too far out of
 * order for exact self times, end reads path again (3 reads in all
 * at most) with larger windows for the threads that need them;
 * a NULL or "-" path at begin (not re-readable) keeps the approximation,
 * counted in late_events. */
typedef struct tpa_report_run tpa_report_run;
tpa_report_run *tpa_report_begin(tpa_report *rep, const char *path, const tpa_report_opts *o,
                                 tpa_error *err);
void tpa_report_feed(tpa_report_run *run, const tpa_event *ev);
/* The same, for an event already classified: kind is tpa_classify(ev). */
void tpa_report_feed_kind(tpa_report_run *run, const tpa_event *ev, int kind);
void tpa_report_end(tpa_report_run *run, const tpa_meta *m, const char *path);

/* ---- steps --------------------------------------------------------------- */
enum tpa_part {
    TPA_P_KERNEL, TPA_P_MEMCPY, TPA_P_MEMSET, TPA_P_COMM, TPA_P_RUNTIME,
    TPA_P_DATALOAD, TPA_P_CPU, TPA_P_OTHER, TPA_P_COUNT
};
extern const char *const tpa_part_names[TPA_P_COUNT];

typedef struct tpa_step_row {
    int64_t num, start_ns, dur_ns;
    int64_t part_ns[TPA_P_COUNT];  /* sums to dur_ns */
    int64_t gpu_busy_ns;
    /* The step's host span (ProfilerStep#N itself): the same as the row's
     * span unless the plugin's GPU rule moved it (device_rule). */
    int64_t host_start_ns, host_end_ns;
} tpa_step_row;

typedef struct tpa_steps_result {
    tpa_step_row *rows; size_t n;
    bool has_gpu;
    bool truncated;
    int passes;                    /* reads of the file (> 1 when over the interval budget) */
    size_t peak_intervals;         /* most intervals held at once */
    uint64_t unmatched_end;        /* E events without a B */
    int64_t span_start_ns, span_end_ns;  /* extent of the spans seen */
    /* Where the steps come from: TPA_STEPS_PROFILER (ProfilerStep#N),
     * TPA_STEPS_STEP_NUM (spans with args.step_num, named step_name) or
     * TPA_STEPS_ANNOTATION (no step markers: the outermost repeated
     * annotation, named step_name, numbered from 0); TPA_STEPS_NONE. */
    int step_source;
    char step_name[128];
    /* Without steps (n == 0): the whole span of the trace split the same
     * way, as one row (start_ns, dur_ns: the span's extent). */
    bool has_whole;
    tpa_step_row whole;
    uint64_t negative_durs;        /* spans with dur < 0: in no row, no statistic */
    uint64_t negative_at;          /* byte offset of the first */
    uint64_t negative_device;      /* of them, kernels, copies and sets */
    /* The TensorBoard plugin's rule was applied (a GPU trace whose steps
     * launched device work): each step runs from the later of its host
     * start and the previous step's end to the later of its host end and
     * the end of the last device record its runtime calls launched;
     * tail_dropped trailing steps whose kernels the profiler did not
     * record were left out, as the plugin does. Host-only traces: false. */
    bool device_rule;
    size_t tail_dropped;
} tpa_steps_result;
enum { TPA_STEPS_NONE, TPA_STEPS_PROFILER, TPA_STEPS_STEP_NUM, TPA_STEPS_ANNOTATION };
extern const char *const tpa_step_source_names[4];

/* Steps are ProfilerStep#N spans: X events or B/E pairs (torch, Kineto and
 * trainprof's own traces all name them so). */
int tpa_steps_file(const char *path, tpa_steps_result *res, tpa_error *err);
/* The same, fed event by event (so one read can serve several analyses).
 * path names the input for further passes when the intervals outgrow their
 * budget; NULL or "-" (not re-readable) keeps them all in memory instead.
 * finish frees the context. */
typedef struct tpa_steps_ctx tpa_steps_ctx;
tpa_steps_ctx *tpa_steps_begin(const char *path);
void tpa_steps_feed(tpa_steps_ctx *c, const tpa_event *ev);
/* The same, for an event already classified: kind is tpa_classify(ev). */
void tpa_steps_feed_kind(tpa_steps_ctx *c, const tpa_event *ev, int kind);
int tpa_steps_finish(tpa_steps_ctx *c, bool truncated, tpa_steps_result *res, tpa_error *err);
/* Intervals held before a pass narrows its window (0: default, 2M). */
void tpa_steps_set_budget(size_t intervals);
void tpa_steps_free(tpa_steps_result *res);
/* q in [0,1] over the rows' durations (or part p when p >= 0). */
int64_t tpa_steps_quantile(const tpa_steps_result *res, int part, double q);
int64_t tpa_steps_mean(const tpa_steps_result *res, int part);
/* GPU util (busy / duration, %) of the steps: their mean (stat 0), median
 * (1) or p90 (2), each a statistic of the per-step values themselves;
 * -1 without GPU work or steps. */
double tpa_steps_util_stat(const tpa_steps_result *res, int stat);

/* The plugin's GPU step rule (steps_device.c) on a caller's own steps, for
 * the report page's Timeline, which finds its steps while it reads: note
 * every event of one trace (kind: its tpa_classify), then apply to its
 * steps (sorted by start, not overlapping): start_ns / dur_ns become the
 * rule's, exactly as tpa_steps_result's with device_rule; returns how many
 * of the first steps are kept (*n_dropped trailing steps the rule leaves
 * out), or n with *applied false when no step launched device work. Holds
 * 24 bytes per launching runtime call and per device record until applied
 * (tpa_devsteps_records says how many). apply empties d for the next trace. */
typedef struct tpa_devsteps tpa_devsteps;
tpa_devsteps *tpa_devsteps_new(void);
void tpa_devsteps_note(tpa_devsteps *d, const tpa_event *ev, int kind);
size_t tpa_devsteps_records(const tpa_devsteps *d);
size_t tpa_devsteps_apply(tpa_devsteps *d, tpa_step *steps, size_t n, bool *applied, size_t *n_dropped);
/* Forgets what was noted (the next trace starts empty). */
void tpa_devsteps_clear(tpa_devsteps *d);
void tpa_devsteps_free(tpa_devsteps *d);

/* ---- operators in table order ------------------------------------------ */
/* report: sort groups ops by table (host first, then devices) then by key. */
bool tpa_sort_key_valid(const char *key);
void tpa_sort_ops(tpa_report *rep, const char *sort);

/* ---- diagnosis ------------------------------------------------------------ */
/* analyze: report + steps in one pass, then ranked findings */
typedef struct tpa_finding {
    const char *id, *title;      /* stable id ("data_loading", ...) and a headline */
    int severity;                /* 0 low, 1 medium, 2 high (share >= 10%, >= 25%) */
    double share;                /* of step time, 0..1 */
    char evidence[512];          /* op names and numbers */
    const char *suggestion;
} tpa_finding;

typedef struct tpa_diagnosis {
    const char *path;
    tpa_report rep;              /* ops sorted by table, then self time */
    tpa_steps_result steps;
    bool has_gpu;
    int64_t basis_ns;            /* sum of step durations, or the trace's extent without steps */
    int64_t mean_ns, part_mean_ns[TPA_P_COUNT];
    double gpu_idle;             /* 1 - mean GPU busy / mean step */
    uint64_t kernel_calls;
    int64_t kernel_avg_ns;
    int64_t occ_kernel_ns, occ_low_ns;  /* kernel time with an achieved occupancy; of it below the threshold */
    double occ_weighted;                /* time-weighted mean achieved occupancy, % */
    tpa_finding findings[16]; size_t n_findings;  /* most step time first */
    /* Device events dropped for a negative duration: the GPU statistics
     * leave them out, so no finding is made from them (GPU idle, kernels,
     * copies, communication); this many were dropped. */
    uint64_t gpu_withheld;
    bool torch;                  /* PyTorch operators (aten::) in the trace: advice in its terms */
} tpa_diagnosis;

int tpa_diagnose_file(const char *path, tpa_diagnosis *d, tpa_error *err);
/* A finding's severity for its share of step time (0..1): 2 high from
 * 25 %, 1 medium from 10 %, 0 low. */
int tpa_severity_of(double share);
/* The share of step time above which the data_loading finding is made. */
#define TPA_DATALOAD_MIN 0.05
/* The optimizer finding's share; the step_variance finding's p90 / median
 * ratio and fewest steps. */
#define TPA_OPTIM_MIN 0.15
#define TPA_VARIANCE_RATIO 1.5
#define TPA_VARIANCE_MIN_STEPS 10
/* f as diagnose.c makes the finding id ("data_loading", "optimizer",
 * "step_variance": those a run directory's own files can make for the
 * whole run): its title, the advice in PyTorch terms when torch is set
 * (else CUDA/C terms), share (0..1, capped) and its severity; evidence
 * empty. false for any other id. */
bool tpa_finding_init(tpa_finding *f, const char *id, bool torch, double share);
/* The same, fed event by event (the report page reads each trace once for
 * all its views): begin, feed every event with its tpa_classify kind, end
 * with the reader's metadata (read_failed: the reader stopped on an error,
 * already in the caller's err; d is then freed and -1 returned). */
typedef struct tpa_diagnose_run tpa_diagnose_run;
tpa_diagnose_run *tpa_diagnose_begin(tpa_diagnosis *d, const char *path);
void tpa_diagnose_feed(tpa_diagnose_run *run, const tpa_event *ev, int kind);
int tpa_diagnose_end(tpa_diagnose_run *run, const tpa_meta *meta, bool read_failed, tpa_error *err);
void tpa_diagnosis_free(tpa_diagnosis *d);
/* ---- diff of two runs ----------------------------------------------------- */
/* diff */
typedef struct tpa_diff_row {
    const char *name;
    bool gpu;
    uint64_t count_a, count_b;
    int64_t total_a, total_b;
} tpa_diff_row;

/* A finding whose share of step time changed between A and B (issue 11). */
typedef struct tpa_finding_move {
    const char *id, *title;
    bool in_a, in_b;                  /* above its threshold in A / in B */
    double share_a, share_b;          /* 0..1; 0 when not above the threshold */
} tpa_finding_move;

typedef struct tpa_diff {
    tpa_diff_row *rows; size_t n;     /* sorted by |total_b - total_a| */
    tpa_finding_move moves[32]; size_t n_moves;  /* by |share change|; set by tpa_diff_findings */
    const char *metric;               /* what the gate compares */
    int64_t metric_a, metric_b;
    double change_pct;                /* (b - a) / a * 100 */
} tpa_diff;

void tpa_diff_compute(tpa_diff *d, tpa_report *a, tpa_report *b,
                      const tpa_steps_result *sa, const tpa_steps_result *sb);
void tpa_diff_free(tpa_diff *d);
/* Fills d->moves from the findings of the two diagnoses: every finding above
 * its threshold in A or B, most moved first (1 share point counts as moved). */
void tpa_diff_findings(tpa_diff *d, const tpa_diagnosis *a, const tpa_diagnosis *b);
/* "new", "gone", "worse", "better" or "same" (1 share point counts as moved). */
const char *tpa_finding_move_verdict(const tpa_finding_move *m);
#endif
