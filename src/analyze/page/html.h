/* html.h - the self-contained HTML report (`trainprof report --html`, and
 * report.html that a session writes into its run directory at close).
 *
 * A model is gathered from a run directory (timing_profile.json,
 * memory_profile.json, operations.json, config.json, the traces) or from one
 * trace file, with every per-step series downsampled to a bounded number of
 * columns (min, max and mean per column), so the file and the time a browser
 * needs to draw it stay bounded however long the run was. The page is one
 * file: the data as JSON, the stylesheet and the views' scripts
 * (src/analyze/page/, embedded at build time); the views are collectors
 * (view.h) that html_build.c feeds from one read of each trace.
 */
#ifndef TRAINPROF_ANALYZE_HTML_H
#define TRAINPROF_ANALYZE_HTML_H

#include "analyze/stats/stats.h"
#include "util/buf.h"
#include "util/json.h"

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
#define TPA_HTML_STEP_BINS 1024

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
    tpa_ds step_ms, throughput, memory, parts;
    char part_names[TPA_HTML_PARTS][64]; int n_parts;
    bool parts_fixed;                                      /* "other" added: no more parts */
    char devices[TPA_HTML_DEVICES][32]; int n_devices;
    int64_t windows[TPA_HTML_WINDOWS][2]; int n_windows;   /* traced step ranges */
    tpa_html_op ops[TPA_HTML_OPS]; int n_ops;
    tpa_finding findings[24]; int n_findings;              /* the memory findings */
    char *config_json;                                     /* config.json text, or NULL */
    char *summary_json;                                    /* training_summary.json text, or NULL */
    /* memory trend, for the memory findings */
    double rss_first, rss_last, alloc_first, alloc_last;
    double sum_alloc, sum_reserved; uint64_t n_dev_rows;
    int64_t mem_step_first, mem_step_last;
    /* the whole run's step time and parts (ms), for the findings */
    double step_sum_ms, part_sum_ms[TPA_HTML_PARTS]; uint64_t n_timed;
    /* the whole run's step times in log bins (2 % wide from 10 us): its
     * median, p90 and slow-step share for the findings, in bounded memory */
    uint32_t step_bins[TPA_HTML_STEP_BINS]; double step_bin_ms[TPA_HTML_STEP_BINS];
} tpa_html_model;

/* An empty model of a run directory (input names it). */
void tpa_html_model_init(tpa_html_model *m, const char *input);
/* Each file's rows from a reader (the fuzz target feeds them from memory). */
enum { TPA_HTML_OPERATIONS, TPA_HTML_TIMING, TPA_HTML_MEMORY };
int tpa_html_feed(tpa_html_model *m, int file, tpa_reader *r, tpa_error *err);
/* Reads the run directory's files named by mask (1 << TPA_HTML_*) into m,
 * plus config.json and training_summary.json when config is set. A missing
 * file is no error (the run may have turned that output off). */
int tpa_html_read_run(tpa_html_model *m, const char *dir, unsigned mask, bool config, tpa_error *err);
/* The run's files as JSON members of the object j is in: step_ms,
 * throughput, parts, part_names, ops, config, summary. */
void tpa_html_model_members(const tpa_html_model *m, tpu_json *j);
/* The memory samples (RSS, system %, each device) as members memory, devices. */
void tpa_html_memory_members(const tpa_html_model *m, tpu_json *j);
void tpa_html_model_free(tpa_html_model *m);
/* The whole run's step time (ms) at quantile q (0..1) of timing_profile.json's
 * steps, within a bin's 2 % (a bin's mean); 0 without steps. */
double tpa_html_step_quantile(const tpa_html_model *m, double q);
/* The share of the run's step time spent beyond med (ms) by slower steps. */
double tpa_html_slow_share(const tpa_html_model *m, double med);
/* r of the last "rank<r>/" directory in path (a job directory's rank), or -1. */
int64_t tpa_html_rank_in_path(const char *path);
/* Which rank the page's file number `file` at path belongs to, the one rule
 * of every view that keeps ranks apart (Overview, Memory, Timeline): every
 * file of a run directory is one rank (0); else the rank<r>/ directory of
 * its path; else the file is a rank of its own (its number). The trace's
 * distributedInfo.rank, read at the file's end, only names it. */
int64_t tpa_html_rank_key(bool run_dir, int file, const char *path);

/* Memory findings (growth across steps, reserved >> allocated) into m. */
void tpa_html_memory_findings(tpa_html_model *m);
/* One finding as a JSON object (id, severity, share_pct, title, evidence,
 * suggestion, and from: where its statistic comes from, "run" (the run's
 * own files) or "trace" (the traced steps); left out when from is NULL). */
void tpa_html_finding_json(tpu_json *j, const tpa_finding *f, const char *from);
/* A downsampler's data as the member key (null when it holds no point). */
void tpa_html_ds_member(tpu_json *j, const char *key, const tpa_ds *d, int nv);

/* ---- the page (html_build.c) ----------------------------------------------------- */
/* Appends data to out as the text of a <script type="application/json">:
 * '<' as \u003c (no "</script", "<!--" or "<script" can form), U+2028 and
 * U+2029 as escapes; the same JSON value. */
void tpa_html_script_safe(tpu_buf *out, const char *data, size_t len);
/* The page around the data (a JSON object): the shell, the stylesheet, every
 * view's script, written atomically to out. */
int tpa_html_write_page(const tpu_buf *data, const char *out, tpa_error *err);
/* -1 (TPA_ERR_USAGE naming both) when out is one of the n inputs (the same
 * device and inode): the page would replace the trace it was made from. */
int tpa_html_not_input(const char *out, const char *const *in, size_t n, tpa_error *err);
/* The page data of one trace held in memory, every view fed (the fuzz
 * target; max_read > 0 caps each read). */
int tpa_html_build_mem(const void *trace, size_t n, size_t max_read, tpu_buf *data, tpa_error *err);
/* The whole job: every trace of input read once for every view, the page. */
int tpa_report_html(const char *input, const char *out, tpa_error *err);
/* The page of several trace files at once (the ranks of a job: the
 * Distributed view compares them); each input must be a trace file. */
int tpa_report_html_traces(const char *const *inputs, int n, const char *out, tpa_error *err);

/* The embedded assets (generated from src/analyze/page/ by cmake/embed_web.cmake). */
extern const char tpa_web_shell[], tpa_web_style[], tpa_web_common[];
extern const char *const tpa_web_views[];

/* The Diff page (`trainprof diff --html OUT A B`): meta (A and B, and for
 * every other view why it is not on this page) and the diff value, written
 * atomically to out. */
int tpa_diff_html(const char *out, const tpa_diff *d, const tpa_diagnosis *a, const tpa_diagnosis *b,
                  tpa_error *err);

#endif
