/*
 * settings.h - the typed, validated configuration the rest of the library
 * reads (config layer -> core, probes, sinks). Produced by src/config from a
 * tp_config; read-only for everyone else. Fields may be added, never renamed.
 */
#ifndef TP_CONFIG_SETTINGS_H
#define TP_CONFIG_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "trainprof.h"

typedef enum tpi_unit { TPI_UNIT_STEP = 0, TPI_UNIT_EPOCH = 1 } tpi_unit;

/* profiling.trace_format, as bits */
enum { TPI_TRACE_CHROME = 1u << 0, TPI_TRACE_PERFETTO = 1u << 1 };
/* profiling.metrics, as bits */
enum {
    TPI_METRIC_JSONL = 1u << 0,
    TPI_METRIC_CSV = 1u << 1,
    TPI_METRIC_TENSORBOARD = 1u << 2,
    TPI_METRIC_CONSOLE = 1u << 3
};

typedef struct tpi_settings {
    int enabled;                 /* profiling.enabled */
    char name[128];              /* run name (sanitized) */
    char log_dir[1024];          /* parent of run directories */
    int timing;                  /* per-step timing + operation stats */
    int memory;                  /* memory sampling */
    int trace;                   /* trace windows on the schedule */
    /* schedule, torch.profiler semantics, counted in `unit`s */
    int64_t skip_first, wait, warmup, active, repeat; /* repeat 0 = until the end */
    tpi_unit unit;
    int record_shapes;           /* record zone args */
    int profile_memory;          /* [memory] events in traces */
    int with_stack;              /* folded stacks (1) ; native frames (2) */
    int64_t log_every;           /* console metrics block every N steps, 0 = off */
    int64_t memory_every_n_steps;/* memory sample at step end every N, 0 = off */
    int64_t memory_interval_ms;  /* background sampler period, 0 = off */
    int64_t max_buffer_mb;       /* bound on recorder memory */
    int64_t max_trace_mb;        /* per-window trace budget, 0 = none */
    unsigned trace_formats;      /* TPI_TRACE_* bits */
    int gzip;                    /* gzip chrome json traces */
    unsigned metrics;            /* TPI_METRIC_* bits */
    char trace_filename[256];    /* pattern: {host} {pid} {rank} {step} {time_ns} */
    int rank;                    /* -1: from RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID / PMI_RANK */
    int top_n;                   /* rows of the console table */
    int cuda;                    /* CUPTI GPU activity in trace windows (activities: cpu,cuda) */
    int html_report;             /* report.html at close */
    char job_id[112];            /* "auto": from the launcher's environment */
    char ranks[208];             /* "all" or "0,3,8-15": ranks that profile */
    int live;                    /* live.json for `trainprof top` (sink/live.c) */
    /* the flight recorder (issue 34, docs/CAPTURES.md) */
    int capture;                 /* keep the last capture_steps steps, write captures */
    int64_t capture_steps;       /* steps the ring keeps */
    int64_t capture_slow_step;   /* a step over this x the rolling median is captured; 0 = off */
    int64_t hang_timeout_ms;     /* no step end for this long: hang capture; 0 = off */
    int64_t captures_max;        /* captures per run */
    int torch_ops;               /* profiling.torch_ops (Python): capture windows too */
} tpi_settings;

/* Every key at its default. */
void tpi_settings_defaults(tpi_settings *out);

/* The validated settings of a configuration (never NULL for a valid cfg). */
const tpi_settings *tpi_config_settings(const tp_config *cfg);

/* Rank of this process: settings->rank when >= 0, else the first of RANK,
 * OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK that parses, else -1. */
int tpi_detect_rank(const tpi_settings *s);

/* ---- multi-rank jobs (cfg_job.c) ---- */

/* What the launcher says about this process. -1 / "" when unknown. */
typedef struct tpi_job_info {
    int rank, local_rank, world_size;
    char job_id[112];   /* profiling.job_id unless "auto", else from the launcher */
    char launcher[16];  /* torchrun, openmpi, pmix, mpich, slurm, env, "" */
} tpi_job_info;

/* Reads rank, local rank, world size and job id from the environment of
 * torchrun (RANK, LOCAL_RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID), Open MPI
 * (OMPI_COMM_WORLD_*, PMIX_NAMESPACE), MPICH (PMI_RANK,
 * PMI_SIZE, MPI_LOCALRANKID) and SLURM (SLURM_PROCID, SLURM_LOCALID,
 * SLURM_NTASKS, SLURM_JOB_ID[.SLURM_STEP_ID]); settings->rank >= 0 and
 * settings->job_id other than "auto" take precedence. The job id is
 * sanitized for use in a file name. */
void tpi_job_detect(const tpi_settings *s, tpi_job_info *out);

/* Parses a profiling.ranks value ("all", "0,3,8-15"). Returns 0 and sets
 * *selected (may be NULL) to whether `rank` is listed (an unknown rank, -1,
 * counts as rank 0), or -1 when the text is malformed. */
int tpi_ranks_select(const char *text, int rank, int *selected);

/* Creates the run directory without races (mkdir -p of log_dir, then an
 * exclusive mkdir of the run dir) and writes its path into out:
 * <log_dir>/<name>_<YYYY-MM-DD>_<id>[_rank<r>]/, or, for a rank >= 0 of a
 * job named by its launcher (TORCHELASTIC_RUN_ID, SLURM_JOB_ID, ...),
 * <log_dir>/<name>_<YYYY-MM-DD>_job-<job id>/rank<r>/ (see cfg_rundir.c). */
int tpi_rundir_create(const tpi_settings *s, int rank, char *out, size_t out_size, tp_error *err);

/* Writes the effective configuration with the source of each value
 * (tp_config_to_json) to <run_dir>/config.json, atomically. cfg NULL: the
 * defaults. Returns 0 or TP_ERR_IO / TP_ERR_NOMEM with err filled. */
int tpi_config_write_json(const tp_config *cfg, const char *run_dir, tp_error *err);

/* Expands the trace_filename pattern into out (a file stem, no extension,
 * no directory), sanitized. */
void tpi_trace_stem(const tpi_settings *s, char *out, size_t out_size, const char *host,
                    int pid, int rank, uint64_t step, uint64_t time_ns);

#endif
