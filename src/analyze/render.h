/* render.h - renderers (tables, JSON) and diff for the analyzer results. */
#ifndef TRAINPROF_ANALYZE_RENDER_H
#define TRAINPROF_ANALYZE_RENDER_H

#include "analyze.h"

void tpa_print_us(FILE *f, int64_t ns);

/* report: sort groups ops by table (host first, then devices) then by key. */
bool tpa_sort_key_valid(const char *key);
void tpa_sort_ops(tpa_report *rep, const char *sort);
void tpa_render_report_text(FILE *f, const tpa_report *rep, size_t top);
void tpa_render_report_json(FILE *f, const tpa_report *rep, size_t top);

void tpa_render_steps_text(FILE *f, const tpa_steps_result *res);
void tpa_render_steps_json(FILE *f, const tpa_steps_result *res);

/* diff */
typedef struct tpa_diff_row {
    const char *name;
    bool gpu;
    uint64_t count_a, count_b;
    int64_t total_a, total_b;
} tpa_diff_row;

typedef struct tpa_diff {
    tpa_diff_row *rows; size_t n;     /* sorted by |total_b - total_a| */
    const char *metric;               /* what the gate compares */
    int64_t metric_a, metric_b;
    double change_pct;                /* (b - a) / a * 100 */
} tpa_diff;

void tpa_diff_compute(tpa_diff *d, tpa_report *a, tpa_report *b,
                      const tpa_steps_result *sa, const tpa_steps_result *sb);
void tpa_diff_free(tpa_diff *d);
void tpa_render_diff_text(FILE *f, const tpa_diff *d, const tpa_steps_result *sa,
                          const tpa_steps_result *sb, size_t top);
void tpa_render_diff_json(FILE *f, const tpa_diff *d, const tpa_steps_result *sa,
                          const tpa_steps_result *sb, size_t top);

#endif
