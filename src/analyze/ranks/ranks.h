/* ranks.h - the ranks of one job: where the job's time goes across ranks.
 *
 * A map and a reduce. The map reads one rank (its run directory or one
 * trace file: trainprof or Kineto) into a rank summary of a few KB: per
 * step its start on the job's aligned clock, duration, time in collectives,
 * collective bytes and the part of the collective time that overlaps
 * compute. The reduce folds any number of summaries, one at a time, into
 * per-rank rows and per-step aggregates (memory: one small row per rank and
 * one per step, never a rank's events): the straggler of each step, how
 * often each rank is it, how long the others wait in collectives, and the
 * findings. Summaries travel as JSON, so the map can run anywhere (a SLURM
 * array) and only summaries meet at the reduce.
 */
#ifndef TRAINPROF_ANALYZE_RANKS_H
#define TRAINPROF_ANALYZE_RANKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyze/trace/trace.h"

#define TPA_RANK_COMM_NAMES 8  /* collective names kept per rank */

typedef struct tpa_rank_step {
    int64_t num;         /* N of ProfilerStep#N */
    int64_t start_ns;    /* on the job's aligned wall clock (0 when unknown) */
    int64_t dur_ns;
    int64_t comm_ns;     /* union of collective spans inside the step */
    int64_t overlap_ns;  /* the part of comm_ns during compute (GPU kernels) */
    int64_t bytes;       /* collective payload recorded in the step */
} tpa_rank_step;

typedef struct tpa_rank_comm {
    char name[48];
    uint64_t count;
    int64_t total_ns, bytes;
} tpa_rank_comm;

typedef struct tpa_rank_summary {
    int64_t rank;            /* -1: unknown */
    int64_t world_size;      /* -1: unknown */
    char job_id[112];
    char host[64];
    char format[12];         /* "trainprof" or "kineto" */
    char source[512];        /* the rank directory or file read */
    bool has_base;           /* start_ns are wall-clock times */
    bool synced;             /* clock offset to rank 0 measured */
    int64_t clock_error_ns;
    bool truncated;          /* a trace ended early (killed rank) */
    bool device_comm;        /* collective time from GPU kernels, not host spans */
    int files;
    tpa_rank_step *steps; size_t n_steps;
    tpa_rank_comm comm[TPA_RANK_COMM_NAMES]; size_t n_comm;
} tpa_rank_summary;

void tpa_rank_summary_free(tpa_rank_summary *s);

/* ---- map (ranks_map.c) ---- */
/* Reads a rank: a trace file, or a run directory (its profiler_traces/
 * files, every window). rank_hint (e.g. from a rank<r> directory name) is
 * used when the traces do not name their rank; -1 for none. */
int tpa_rank_map(const char *path, int64_t rank_hint, tpa_rank_summary *out, tpa_error *err);

/* The same map fed event by event, so one read of a trace serves other
 * analyses too (the report page): new (out is filled by finish), then per
 * file: file_begin, feed every event, file_end with the reader's metadata;
 * finish (rank_hint as above) fills out, frees the mapper and returns per
 * step of out the compute time inside it (union of GPU work, or of the
 * training thread's spans on a CPU-only rank; caller frees). */
typedef struct tpa_rank_mapper tpa_rank_mapper;
tpa_rank_mapper *tpa_rank_mapper_new(const char *source, tpa_rank_summary *out);
void tpa_rank_mapper_file_begin(tpa_rank_mapper *p);
void tpa_rank_mapper_feed(tpa_rank_mapper *p, const tpa_event *ev);
void tpa_rank_mapper_file_end(tpa_rank_mapper *p, const tpa_meta *meta);
int64_t *tpa_rank_mapper_finish(tpa_rank_mapper *p, int64_t rank_hint);

/* ---- summary JSON (ranks_summary.c) ---- */
void tpa_rank_summary_write(FILE *f, const tpa_rank_summary *s);
/* Parses what tpa_rank_summary_write wrote; err names the byte offset. */
int tpa_rank_summary_parse(const char *text, size_t n, tpa_rank_summary *out, tpa_error *err);
int tpa_rank_summary_load(const char *path, tpa_rank_summary *out, tpa_error *err);

/* ---- job directories (ranks_job.c) ---- */
typedef struct tpa_rank_input {
    char *path;
    int64_t rank_hint;      /* from a rank<r> directory name, else -1 */
} tpa_rank_input;

/* The ranks of a job directory: rank<r>/ directories and trace files
 * directly inside (Kineto dumps), sorted by rank hint then name. A
 * directory with profiler_traces/ is one rank by itself. */
int tpa_job_inputs(const char *dir, tpa_rank_input **out, size_t *n, tpa_error *err);
void tpa_job_inputs_free(tpa_rank_input *in, size_t n);
/* The trace files of a job or rank directory, for `merge`; caller frees
 * each path and the array. */
int tpa_job_trace_files(const char *dir, char ***files, size_t *n, tpa_error *err);

/* ---- a hung job: who waits, who did not arrive (ranks_hang.c) ---- */
typedef struct tpa_rank_hang {
    int64_t rank;            /* captures.json's, else the directory's hint */
    int64_t step;            /* the step in progress at the capture, -1 unknown */
    bool has_captures;       /* captures.json was read */
    bool hang;               /* a `hang` capture (else reason is its last exception, if any) */
    bool has_stacks;         /* the dump holds Python stacks */
    bool in_collective;      /* waiting in a collective (a frame near a stack's top, or the open zone) */
    bool late;               /* did not arrive: behind the others, or not where they wait */
    char reason[16];         /* "hang", "exception" or "" */
    char detail[512];        /* the capture's detail (an exception's message and traceback) */
    char dump[512];          /* the hang dump, relative to the rank's directory */
    char zone[128];          /* the innermost open zone of the first thread with one */
    char waiting_in[160];    /* the collective: "all_reduce (distributed_c10d.py:2801)" */
    char where[200];         /* the innermost frame of the program's own code */
} tpa_rank_hang;

typedef struct tpa_job_hang {
    tpa_rank_hang *ranks; size_t n;  /* ranks with captures.json, by rank */
    size_t hung;                     /* ranks with a hang capture */
    size_t n_late;                   /* ranks marked late */
} tpa_job_hang;

/* Reads each rank directory's captures.json and last hang dump (files
 * that are missing or unreadable leave that rank out). 0. */
int tpa_job_hang_read(const tpa_rank_input *in, size_t n, tpa_job_hang *out);
void tpa_job_hang_free(tpa_job_hang *h);

/* ---- reduce (ranks_reduce.c) ---- */
typedef struct tpa_ranks tpa_ranks;

#define TPA_RANKS_MAX_WARNINGS 64
/* One rank's row of the reduce (tpa_ranks.rows). */
typedef struct tpa_rank_row {
    int64_t rank, world_size;
    char host[64], format[12];
    char *source;
    size_t n_steps;
    int64_t mean_ns, p50_ns, p90_ns, max_ns;
    int64_t comm_mean_ns, compute_mean_ns, bytes_per_step, overlap_ns, comm_total_ns;
    int64_t clock_error_ns;
    bool truncated, synced, device_comm;
    uint64_t straggler_steps;
    int64_t wait_mean_ns;    /* filled by finalize */
    char comm_name[48];
} tpa_rank_row;

/* The reduce of a job's rank summaries: fed by tpa_ranks_add, computed by
 * tpa_ranks_finalize (every reader of the results below calls it first);
 * the text stage prints it (text/render_ranks.c). */
struct tpa_ranks {
    tpa_rank_row *rows; size_t n_rows, cap_rows;
    struct tpa_step_agg *steps; size_t n_steps, cap_steps;  /* per step number (ranks_reduce.c) */
    unsigned char *seen; size_t seen_cap;   /* bit per rank number */
    char job_id[112], format[12];
    int64_t world_size;
    char *warnings[TPA_RANKS_MAX_WARNINGS]; size_t n_warnings, lost_warnings;
    bool finalized;
    /* results of finalize */
    int64_t top_rank; uint64_t top_count, contested_steps;
    int64_t top_lead_p50, others_wait_ns, others_step_ns, spread_p50, min_comm_mean;
    int64_t max_clock_error; size_t unsynced;
    /* what the job's captures say of a hang (tpa_job_hang_read), set by the
     * caller for the renderers; NULL: not read */
    const tpa_job_hang *hang;
    size_t summaries_unwritten;  /* --summaries DIR files that could not be written (said on stderr) */
};

/* Sorts the rows by rank and computes the straggler, waits and clocks (once). */
void tpa_ranks_finalize(tpa_ranks *r);
/* Is the top straggler a finding? Slowest in at least half the contested
 * steps, by at least 2% of the step time. */
bool tpa_ranks_has_straggler(const tpa_ranks *r);
tpa_ranks *tpa_ranks_new(void);
/* Folds one summary in (copies what it keeps; s may be freed after).
 * Problems with the input (duplicate rank, other job, mixed formats, cut
 * short) become warnings naming the rank and source. */
void tpa_ranks_add(tpa_ranks *r, const tpa_rank_summary *s);
/* A rank that could not be read at all: a warning naming it. */
void tpa_ranks_add_failure(tpa_ranks *r, const char *source, const tpa_error *err);
size_t tpa_ranks_count(const tpa_ranks *r);

/* Job-level figures (for `diff` of two jobs). */
typedef struct tpa_job_stats {
    size_t ranks, steps;
    int64_t step_mean_ns;      /* mean over ranks of each rank's mean step */
    int64_t compute_mean_ns;   /* mean over ranks of compute per step */
    int64_t comm_mean_ns;      /* mean over ranks of time in collectives per step */
    int64_t others_wait_ns;    /* wait per step of the ranks other than the straggler */
    int64_t straggler_rank;    /* -1: none */
    double straggler_share;
    int64_t straggler_lead_ns;
} tpa_job_stats;
void tpa_ranks_job_stats(tpa_ranks *r, tpa_job_stats *out);
void tpa_ranks_free(tpa_ranks *r);

/* Maps every input on `jobs` threads and folds the summaries into r. When
 * summaries_dir is not NULL each summary is also written there as
 * rank<r>.json. */
int tpa_ranks_map_all(const tpa_rank_input *in, size_t n, int jobs, tpa_ranks *r,
                      const char *summaries_dir);


#endif
