/* render.h - the text stage's interface: tables and JSON on a FILE for the
 * CLI, from the analyses' results (report, steps, diagnosis, diff).
 * May include: ranks/, stats/, trace/, util/. See src/analyze/README.md. */
#ifndef TRAINPROF_ANALYZE_RENDER_H
#define TRAINPROF_ANALYZE_RENDER_H

#include "analyze/ranks/ranks.h"
#include "analyze/stats/stats.h"

void tpa_print_us(FILE *f, int64_t ns);
/* name in at most w columns (one per UTF-8 character): a longer one keeps
 * its start and end around a "…". dst holds 4 * w + 1 bytes. Returns the
 * bytes beyond the columns, to add to a printf field width. */
#define TPA_FIT_CAP(w) (4 * (w) + 1)
int tpa_fit_name(char *dst, size_t w, const char *name);

/* report */
void tpa_render_report_text(FILE *f, const tpa_report *rep, size_t top);
void tpa_render_report_json(FILE *f, const tpa_report *rep, size_t top);

void tpa_render_steps_text(FILE *f, const tpa_steps_result *res);
void tpa_render_steps_json(FILE *f, const tpa_steps_result *res);

/* analyze */
void tpa_render_diagnosis_text(FILE *f, const tpa_diagnosis *d, size_t top);
void tpa_render_diagnosis_json(FILE *f, const tpa_diagnosis *d, size_t top);

/* diff */
void tpa_render_finding_moves_text(FILE *f, const tpa_diff *d);
void tpa_render_finding_moves_json(FILE *f, const tpa_diff *d);
void tpa_render_diff_text(FILE *f, const tpa_diff *d, const tpa_steps_result *sa,
                          const tpa_steps_result *sb, size_t top);
void tpa_render_diff_json(FILE *f, const tpa_diff *d, const tpa_steps_result *sa,
                          const tpa_steps_result *sb, size_t top);

/* ranks, combine: the per-rank table (steps_only: without the findings) */
void tpa_ranks_render_text(tpa_ranks *r, FILE *f, bool steps_only);
void tpa_ranks_render_json(tpa_ranks *r, FILE *f);

/* a hung job (ranks_hang.c): each hung rank's step and where it is, and
 * the ranks that did not arrive; nothing when no rank hung */
void tpa_render_job_hang_text(FILE *f, const tpa_job_hang *h);
/* the same as the JSON value of "hang" (null when no rank hung) */
void tpa_render_job_hang_json(FILE *f, const tpa_job_hang *h);

#endif
