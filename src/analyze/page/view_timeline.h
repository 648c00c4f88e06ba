/* view_timeline.h - the Timeline view's collector (view_timeline.c) and its
 * JSON writer (view_timeline_json.c), which share the state below.
 *
 * The page carries a bounded, chosen part of the traces. While the events
 * fit the store they are all kept; when the store fills, it is compacted:
 * only events overlapping a few candidate steps (the slowest, the fastest
 * and those nearest the median of the steps seen so far) and events later
 * than every step seen so far (their step may be still to come) stay. The
 * global slowest and fastest steps are therefore always intact at the end
 * (each was a candidate at every compaction after it was seen, or came
 * after the last one); the median shown is the intact step nearest the
 * true median. Of steps of equal duration the earlier one (by file, then
 * start) is the slower, the faster and the nearer the median, so a later
 * step that only ties a candidate is left out on arrival. The store holds
 * what the JSON writer uses: each event's name, args text and string ids.
 * One pass, memory bounded by the store's caps.
 *
 * A page of several ranks (issue 31) does all of the above per rank: each
 * rank's candidates are its own slowest, fastest and nearest its own
 * median, so a rank whose steps are all faster than another's keeps its
 * slowest step; the page shows each rank's three. A rank is what the
 * Overview and Distributed views call one: the files of one rank<r>/
 * directory, else one file (a run directory is one rank).
 *
 * Steps on a GPU trace follow the TensorBoard plugin's rule, as `trainprof
 * steps`, `report --json` and the Overview do (issue 31): while a file is
 * read its launching runtime calls and device records are noted (stats'
 * tpa_devsteps, 24 bytes each, at most TPA_TL_DEV_RECORDS a file, freed at
 * its end); at the file's end its steps get the rule's spans and
 * durations, the trailing ones the rule leaves out are marked gone, and
 * its rank's candidate state is made again from them. Compactions before
 * a file's end choose candidates by host span (the device work of a step
 * is known only once read); what was chosen so is said on the page. A
 * trace that fits the store (no compaction) shows exactly the steps of
 * `trainprof steps`.
 */
#ifndef TRAINPROF_ANALYZE_VIEW_TIMELINE_H
#define TRAINPROF_ANALYZE_VIEW_TIMELINE_H

#include "analyze/page/view.h"

#ifdef TP_SMALL_LIMITS
#define TPA_TL_STORE_EVENTS 256u         /* records held before a compaction */
#define TPA_TL_STORE_BYTES (64u << 10)   /* names, args and string ids held */
#define TPA_TL_CARRY 120u                /* events written into the page */
#define TPA_TL_FLOWS 64u                 /* forward-backward flow ends held */
#else
#define TPA_TL_STORE_EVENTS (1u << 19)
#define TPA_TL_STORE_BYTES (64u << 20)
#define TPA_TL_CARRY 150000u
#define TPA_TL_FLOWS (1u << 16)
#endif
#define TPA_TL_NEW_INTACT 64u           /* steps read since a compaction looked at for ties */
#define TPA_TL_MAX_STEPS (1u << 20)      /* steps remembered (32 bytes each) */
#define TPA_TL_DEV_RECORDS (1u << 22)    /* a trace's launches and device records held for the GPU step rule */
#define TPA_TL_RAW_MAX 4096u             /* longer events keep their name, not their args */
#define TPA_TL_ID_MAX 63u                /* string pid / tid bytes kept (the row label's) */
#define TPA_TL_NAME_MAX 4096u            /* longer names are cut (in bytes) */
#define TPA_TL_META_MAX 4096u            /* process/thread names kept */
#define TPA_TL_ARGS_BYTES (4u << 20)     /* args text written into the page, in all */

typedef struct tpa_tl_rec {
    int64_t ts, dur;          /* ns on the file's own clock; dur 0 for instants and counters */
    int64_t pid, tid;
    int64_t corr;             /* args.correlation of an event whose args are kept, else 0 */
    uint32_t off;             /* in the arena: name, args text, string pid, string tid */
    uint16_t name_n;
    uint16_t args_n;          /* the args object's text (0: none, empty or not kept) */
    uint8_t pid_n, tid_n;     /* string ids as the trace spells them (0: numbers) */
    uint16_t file;
    char ph;
    uint8_t kind;
} tpa_tl_rec;

/* Bytes a record holds in the arena. */
static inline size_t tpa_tl_rec_bytes(const tpa_tl_rec *r)
{
    return (size_t)r->name_n + r->args_n + r->pid_n + r->tid_n;
}

typedef struct tpa_tl_step {
    int64_t num, start, dur;  /* the host span; on a GPU trace, once its file is read, the plugin's (below) */
    uint16_t file;
    bool intact;              /* no compaction dropped events in its span */
    bool gone;                /* left out by the plugin's rule (its kernels were not recorded) */
} tpa_tl_step;

enum { TPA_TL_PROCESS_NAME, TPA_TL_THREAD_NAME, TPA_TL_PROCESS_LABELS };

typedef struct tpa_tl_meta {
    uint16_t file;
    uint8_t what;             /* TPA_TL_PROCESS_NAME, _THREAD_NAME or _PROCESS_LABELS */
    int64_t pid, tid;
    char name[96];
} tpa_tl_meta;

/* One end of a forward-to-backward flow (Kineto's "cat": "fwdbwd"): 's' at
 * the forward op's start on its thread, 'f' inside the backward op. */
typedef struct tpa_tl_flow {
    int64_t id, ts, pid, tid;
    uint16_t file;
    char ph;
} tpa_tl_flow;

/* One rank of the page and its candidate-keeping state (see tpa_tl). */
typedef struct tpa_tl_rank {
    int64_t key;              /* rank<r>/ of its files' path, else its first file's index */
    int64_t rank;             /* distributedInfo.rank of its trace, else key */
    bool named;               /* the trace or its directory gives its rank */
    int n_files;              /* 0: a slot no rank uses (its file joined an earlier rank) */
    int first_file;
    size_t slow3[3], fast3[3], n_top3;
    size_t new_intact[TPA_TL_NEW_INTACT], n_new_intact; /* the first intact steps read since */
    bool has_band; int64_t band_lo, band_hi;
} tpa_tl_rank;

typedef struct tpa_tl {
    tpa_tl_rec *rec; size_t n, cap;
    char *arena; size_t used, arena_cap;
    tpa_tl_step *steps; size_t n_steps, steps_cap;
    uint64_t steps_lost;      /* steps past TPA_TL_MAX_STEPS */
    tpa_tl_meta *meta; size_t n_meta, meta_cap;
    tpa_tl_flow *flows; size_t n_flows, flows_cap;
    uint64_t flows_lost;      /* flow ends past TPA_TL_FLOWS */
    int64_t *max_end;         /* per file: end of the latest step seen */
    /* the ranks: slot r is file r's until file r joins an earlier rank;
     * rank_of[file] is the file's slot */
    tpa_tl_rank *ranks;
    int *rank_of;
    bool run_dir;             /* every file is one rank's */
    /* what the last compaction kept, so feed drops at once what the next
     * one would drop: events starting before the file's cut, overlapping
     * no candidate and no step seen since (new_lo: earliest such start);
     * cand sorted by file, file f's at cand[cand_at[f] .. cand_at[f + 1]) */
    int64_t *cut;
    size_t *cand; size_t n_cand;
    size_t *cand_at;
    int64_t new_lo;
    /* a new step that can be no candidate at the next compaction is left
     * out at once (its events are not copied): 3 known steps of its rank
     * slower and 3 faster (tpa_tl_rank.slow3/fast3: the rank's 3 slowest
     * and fastest so far, indices into steps; equal durations: the earlier
     * step counts as slower and as faster), and its duration outside the
     * band around its rank's median of the last compaction or tied with
     * CAND_MID earlier candidates of its rank */
    size_t first_new;         /* steps[first_new..]: read since the last compaction */
    bool new_sorted;          /* ... in order of start (then looked up by bisection) */
    uint64_t early;           /* steps left out so */
    int n_files;
    const char *const *paths;
    uint64_t seen, dropped;   /* events offered; dropped by compactions */
    int compactions;
    uint64_t thinned;         /* of dropped: the shortest events of candidate steps */
    bool no_steps_cut; int64_t cutoff;  /* no steps: keep the earliest events */
    int64_t min_ts[64];       /* per file (first 64), min ts seen, for the clock note */
    /* the GPU step rule: the current file's records (NULL: could not
     * allocate, host spans kept); files whose steps follow it, that have
     * steps on host spans only, that had too many device records for it
     * (host spans kept, said on the page); steps it left out, all files;
     * whether a compaction chose candidates before a ruled file's end */
    struct tpa_devsteps *dev;
    bool dev_over;
    int files_rule, files_host, files_over;
    uint64_t rule_dropped;
    bool chose_by_host;
    int compactions_at_begin; /* compactions before the current file */
    /* limits (tests shrink them) */
    size_t store_events, store_bytes, carry, max_flows;
} tpa_tl;

/* The collector's steps (view_timeline.c), for the writer and the tests. */
void tpa_tl_init(tpa_tl *t, const tpa_view_input *in);
/* Before file's events: its rank from its path (rank<r>/; a file without
 * one, or never begun, is a rank of its own). */
void tpa_tl_file_begin(tpa_tl *t, int file, const char *path);
/* After them: the rank its trace gives (distributedInfo.rank) names its rank. */
void tpa_tl_file_end(tpa_tl *t, int file, const tpa_meta *meta);
void tpa_tl_feed(tpa_tl *t, int file, const tpa_event *ev, int kind);
void tpa_tl_free(tpa_tl *t);
/* The rank slot of a file (an index into t->ranks). Inline: the collector
 * and the writer both ask, and neither calls the other's file back. */
static inline int tpa_tl_rank_ix(const tpa_tl *t, int file)
{
    return file >= 0 && file < t->n_files ? t->rank_of[file] : 0;
}
/* Ranks in use (several: each step label names its rank). */
static inline int tpa_tl_n_ranks(const tpa_tl *t)
{
    int n = 0;
    for (int r = 0; r < t->n_files; r++) n += t->ranks[r].n_files > 0;
    return n;
}
/* Picks the steps shown, each rank's own: idx[3r..3r+2] = rank slot r's
 * slowest, median, fastest (indices into t->steps, -1 when none or the
 * same step again); idx holds 3 * t->n_files. Returns how many distinct. */
int tpa_tl_pick(const tpa_tl *t, long *idx);
/* The view's JSON value (view_timeline_json.c) showing the steps pick[]
 * (tpa_tl_pick's choice, np of them distinct). */
void tpa_tl_json(tpa_tl *t, const long *pick, int np, tpu_json *j);
/* The GPU utilization and est. SM efficiency tracks (view_timeline_gpu.c)
 * of the chosen records ix[0..n) (sorted by file, then start), times from
 * t0: "gpu_tracks", one per device with kernels, with the TensorBoard
 * plugin's rules (docs/REPORT.md), over each file's drawn span
 * [lo[file], hi[file]) (files past the first 64: their events' span); when
 * not whole, over each of the steps pick[] (tpa_tl_pick's) instead. */
void tpa_tl_json_gpu(const tpa_tl *t, const size_t *ix, size_t n, int64_t t0, const int64_t lo[64],
                     const int64_t hi[64], const long *pick, bool whole, tpu_json *j);
/* The forward-to-backward flows among the chosen records ix[0..n) written
 * as events (ord[k]: record ix[k]'s index in "ev", -1: not written):
 * "fwdbwd", pairs of event indexes, and "fwdbwd_left_out". */
void tpa_tl_json_flows(const tpa_tl *t, const size_t *ix, const int64_t *ord, size_t n, tpu_json *j);
/* Whose a file's rows are, on a page of several traces (view_timeline_gpu.c):
 * "rank R · " when its trace or directory gives its rank (with "trace N" when
 * the rank has several files), else "trace N · "; "" for one trace. */
void tpa_tl_whose(const tpa_tl *t, int file, char *out, size_t cap);
/* A rank's name: "rank R", or "trace N" (its first file) when none is given. */
void tpa_tl_rank_name(const tpa_tl *t, int r, char *out, size_t cap);
/* A GPU's name (view_timeline_gpu.c): process_labels "GPU n" (Kineto), else
 * a process_name "GPU..." (trainprof), else "GPU <pid>"; false for the last. */
bool tpa_tl_gpu_name(const tpa_tl *t, uint16_t file, int64_t pid, char *out, size_t cap);
/* qsort_r comparator: indexes (size_t) into the tpa_tl_rec array rec_array, longest first. */
int tpa_tl_by_dur_desc(const void *a, const void *b, void *rec_array);

#endif
