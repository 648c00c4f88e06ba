/*
 * top_state.h - what `trainprof top` shows: the runs under a path, each
 * read from its live.json (or, for a run without one, its summaries), with
 * its state and the job's straggler (docs/TOP.md).
 */
#ifndef TP_CLI_TOP_STATE_H
#define TP_CLI_TOP_STATE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define TOP_ZONES 8
#define TOP_TIMES 32
#define TOP_STALL_STEPS 3      /* stalled: no step for 3 median steps ... */
#define TOP_STALL_MIN_S 2.0    /* ... and at least 2 s */
#define TOP_HEARTBEAT_S 30.0   /* another host's run: ended when silent this long */
#define TOP_LAG_STEPS 2        /* straggler: this many steps behind the leader, */
#define TOP_SLOW_RATIO 1.05    /* or a median step 5 % above the ranks' median */

typedef enum top_state { TOP_RUNNING, TOP_STALLED, TOP_ENDED, TOP_UNKNOWN } top_state;

typedef struct top_zone {
    char name[96];
    double share;              /* of the step time over the last steps */
} top_zone;

typedef struct top_run {
    char dir[PATH_MAX];
    char host[256], job_id[112];
    int rank, pid, world_size; /* -1: unknown */
    int live;                  /* read from live.json */
    top_state state;
    char reason[160];          /* ended: closed / process gone / ...; unknown: why */
    uint64_t step;             /* steps ended */
    /* NAN when unknown */
    double last_step_s, median_step_s, mean_step_s, samples_per_s, since_step_s, data_share;
    int n_zones;
    top_zone zones[TOP_ZONES];
    int have_rss, have_gpu;
    uint64_t rss_bytes, gpu_bytes;
    char in_zone[200];         /* the stepping thread's open zones now, "" = none */
    double in_zone_s;          /* for how long (the innermost), NAN = none */
    int n_times;
    double times[TOP_TIMES];   /* step times, oldest first */
    double mtime;              /* newest file time (s), to find the newest run */
    int straggler;             /* the rank holding the job back */
} top_run;

typedef struct top_set {
    char path[PATH_MAX];       /* what was asked for */
    char title[PATH_MAX + 64]; /* what is shown: a run, a job, runs under a directory */
    top_run *runs;
    size_t n, cap;
    int one_job;               /* all runs are ranks of one job */
    long straggler;            /* index into runs, -1 = none */
} top_set;

/* Reads every run under path (a run directory, a job directory, or a
 * parent of those: the runs still going, else the newest run or job) and
 * sorts them: the straggler first, then stalled, running (fewest steps,
 * slowest first), ended. 0, -1 with a message in err (no such path), or
 * -2 when there is no run under path. */
int top_load(top_set *set, const char *path, char *err, size_t errlen);
void top_free(top_set *set);

const char *top_state_name(top_state s);

#endif
