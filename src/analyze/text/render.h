/* render.h - renderers (tables, JSON) and diff for the analyzer results. */
#ifndef TRAINPROF_ANALYZE_RENDER_H
#define TRAINPROF_ANALYZE_RENDER_H

#include "analyze/trace/analyze.h"

void tpa_print_us(FILE *f, int64_t ns);
/* name in at most w columns (one per UTF-8 character): a longer one keeps
 * its start and end around a "…". dst holds 4 * w + 1 bytes. Returns the
 * bytes beyond the columns, to add to a printf field width. */
#define TPA_FIT_CAP(w) (4 * (w) + 1)
int tpa_fit_name(char *dst, size_t w, const char *name);

/* report: sort groups ops by table (host first, then devices) then by key. */
bool tpa_sort_key_valid(const char *key);
void tpa_sort_ops(tpa_report *rep, const char *sort);
void tpa_render_report_text(FILE *f, const tpa_report *rep, size_t top);
void tpa_render_report_json(FILE *f, const tpa_report *rep, size_t top);

void tpa_render_steps_text(FILE *f, const tpa_steps_result *res);
void tpa_render_steps_json(FILE *f, const tpa_steps_result *res);

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
} tpa_diagnosis;

int tpa_diagnose_file(const char *path, tpa_diagnosis *d, tpa_error *err);
/* The same, fed event by event (the report page reads each trace once for
 * all its views): begin, feed every event with its tpa_classify kind, end
 * with the reader's metadata (read_failed: the reader stopped on an error,
 * already in the caller's err; d is then freed and -1 returned). */
typedef struct tpa_diagnose_run tpa_diagnose_run;
tpa_diagnose_run *tpa_diagnose_begin(tpa_diagnosis *d, const char *path);
void tpa_diagnose_feed(tpa_diagnose_run *run, const tpa_event *ev, int kind);
int tpa_diagnose_end(tpa_diagnose_run *run, const tpa_meta *meta, bool read_failed, tpa_error *err);
void tpa_diagnosis_free(tpa_diagnosis *d);
void tpa_render_diagnosis_text(FILE *f, const tpa_diagnosis *d, size_t top);
void tpa_render_diagnosis_json(FILE *f, const tpa_diagnosis *d, size_t top);

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
void tpa_render_finding_moves_text(FILE *f, const tpa_diff *d);
void tpa_render_finding_moves_json(FILE *f, const tpa_diff *d);
void tpa_render_diff_text(FILE *f, const tpa_diff *d, const tpa_steps_result *sa,
                          const tpa_steps_result *sb, size_t top);
void tpa_render_diff_json(FILE *f, const tpa_diff *d, const tpa_steps_result *sa,
                          const tpa_steps_result *sb, size_t top);

#endif
