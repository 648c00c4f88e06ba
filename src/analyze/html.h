/* html.h - the self-contained HTML report (`trainprof report --html`, and
 * report.html that a session writes into its run directory at close).
 *
 * A model is gathered from a run directory (timing_profile.json,
 * memory_profile.json, operations.json, config.json, the traces) or from one
 * trace file, with every per-step series downsampled to a bounded number of
 * columns (min, max and mean per column), so the file and the time a browser
 * needs to draw it stay bounded however long the run was. The page is one
 * file: the data as JSON and a small script (html_assets.c) that draws SVG.
 */
#ifndef TRAINPROF_ANALYZE_HTML_H
#define TRAINPROF_ANALYZE_HTML_H

#include "render.h"
#include "util/buf.h"

/* ---- downsampler: min/max/mean of nv values per column ------------------------------ */
typedef struct tpa_ds {
    int nv;                  /* values per point */
    size_t cap, n;           /* columns held; merged in pairs when n reaches cap */
    int64_t width;           /* points per column (a power of two) */
    uint64_t points;         /* points added */
    int64_t *x0, *x1;        /* first and last x of each column */
    uint32_t *filled;        /* points in each column */
    double *min, *max, *sum; /* [column * nv + value] */
    uint32_t *cnt;           /* values present (not NaN) */
} tpa_ds;

/* cap: most columns kept (>= 2, even). */
void tpa_ds_init(tpa_ds *d, int nv, size_t cap);
/* v[nv]; NaN marks a value the point lacks. */
void tpa_ds_add(tpa_ds *d, int64_t x, const double *v);
void tpa_ds_free(tpa_ds *d);
/* {"points": N, "x0": [...], "x1": [...], "min": [[...] per value], "max": ..., "mean": ...}
 * for the first nv values (nv <= d->nv). */
void tpa_ds_json(const tpa_ds *d, int nv, tpu_buf *b);

/* ---- the model -------------------------------------------------------------------- */
#define TPA_HTML_DEVICES 8
#define TPA_HTML_PARTS 9     /* named parts and "other" */
#define TPA_HTML_WINDOWS 64
#define TPA_HTML_OPS 200

/* memory values per point: rss MB, system %, then per device allocated,
 * reserved, peak (GB) */
enum { TPA_MEM_RSS, TPA_MEM_SYS, TPA_MEM_DEV0, TPA_MEM_NV = TPA_MEM_DEV0 + 3 * TPA_HTML_DEVICES };

typedef struct tpa_html_op {
    char name[160];
    char where[16];          /* "host", "gpu0", ... */
    uint64_t count;
    double total_ms, self_ms, avg_ms, min_ms, max_ms;
} tpa_html_op;

typedef struct tpa_html_model {
    const char *input;
    bool run_dir;
    char title[300];
    tpa_ds step_ms, throughput, memory, parts;
    char part_names[TPA_HTML_PARTS][64]; int n_parts;
    bool parts_fixed;                                      /* "other" added: no more parts */
    char devices[TPA_HTML_DEVICES][32]; int n_devices;
    int64_t windows[TPA_HTML_WINDOWS][2]; int n_windows;   /* traced step ranges */
    tpa_html_op ops[TPA_HTML_OPS]; int n_ops;
    tpa_finding findings[24]; int n_findings;
    char findings_from[300];                               /* trace the findings read */
    char step_note[300];                                   /* where the steps come from */
    char *config_json;                                     /* config.json text, or NULL */
    char *summary_json;                                    /* training_summary.json text, or NULL */
    /* memory trend, for the memory findings */
    double rss_first, rss_last, alloc_first, alloc_last;
    double sum_alloc, sum_reserved; uint64_t n_dev_rows;
    int64_t mem_step_first, mem_step_last;
} tpa_html_model;

/* Fills m from a run directory or a trace file. */
int tpa_html_model_build(tpa_html_model *m, const char *input, tpa_error *err);
/* The pieces build uses, for callers that hold the run's files in memory
 * (the fuzz target): an empty model, then each file's rows from a reader. */
void tpa_html_model_init(tpa_html_model *m, const char *input);
enum { TPA_HTML_OPERATIONS, TPA_HTML_TIMING, TPA_HTML_MEMORY };
int tpa_html_feed(tpa_html_model *m, int file, tpa_reader *r, tpa_error *err);
/* The data the page draws, as JSON. */
void tpa_html_model_json(const tpa_html_model *m, tpu_buf *b);
void tpa_html_model_free(tpa_html_model *m);
/* Memory findings (growth across steps, reserved >> allocated) into m. */
void tpa_html_memory_findings(tpa_html_model *m);
/* The page, written atomically to out. */
int tpa_html_write(const tpa_html_model *m, const char *out, tpa_error *err);

/* The whole job: model, findings, page. */
int tpa_report_html(const char *input, const char *out, tpa_error *err);

extern const char tpa_html_head[], tpa_html_script[];

#endif
