/* rewrite.h - the rewriting stage's interface: traces written anew
 * (`trainprof slice|merge|fix`) through one buffered output stream.
 * May include: trace/, stats/ (step windows), util/. See src/analyze/README.md.
 */
#ifndef TRAINPROF_ANALYZE_REWRITE_H
#define TRAINPROF_ANALYZE_REWRITE_H

#include "analyze/trace/trace.h"

/* ---- writers (slice, merge, fix) ------------------------------------------ */
typedef struct tpa_out tpa_out;  /* plain or .gz output stream */
tpa_out *tpa_out_open(const char *path, tpa_error *err);
/* -1 (TPA_ERR_USAGE naming both) when out is the same file as one of the n
 * inputs (device and inode, links followed), else 0. */
int tpa_out_not_input(const char *out, const char *const *in, size_t n, tpa_error *err);
void tpa_out_write(tpa_out *o, const void *p, size_t n);
void tpa_out_puts(tpa_out *o, const char *s);
void tpa_out_printf(tpa_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tpa_out_json_str(tpa_out *o, const char *s, size_t n);
/* Flushes and, for a file, fsyncs and renames it into place (it was written
 * beside its path). -1 with err set when any write failed: then the file at
 * the path is what it was before. */
int tpa_out_close(tpa_out *o, tpa_error *err);
/* Drops the output: the file at the path is what it was before. */
void tpa_out_discard(tpa_out *o);

typedef struct tpa_slice_opts {
    tpa_range steps;         /* step numbers */
    tpa_range time_us;       /* ns relative to the first event (tpa_parse_time_range) */
    bool has_min_dur; int64_t min_dur_ns;
    const char *cats;        /* comma list */
} tpa_slice_opts;

typedef struct tpa_write_stats { uint64_t in_events, out_events, bytes_out; bool truncated; } tpa_write_stats;

int tpa_slice(const char *in, const char *out, const tpa_slice_opts *o,
              tpa_write_stats *st, tpa_error *err);
int tpa_merge(const char *const *in, size_t n, const char *out,
              tpa_write_stats *st, tpa_error *err);
/* slice, merge and fix refuse (TPA_ERR_USAGE, naming both) an output that is
 * one of their inputs (the same device and inode, through any link), and
 * write it atomically (tpa_out_close): on any error the old output stays. */
/* Rewrites a cut-short trace as valid JSON; *was_ok set when nothing needed fixing. */
int tpa_fix(const char *in, const char *out, tpa_write_stats *st, bool *was_ok,
            tpa_error *err);

#endif
