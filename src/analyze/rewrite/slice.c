/* slice.c - `slice` (keep the events of some steps / a time window / long
 * spans / some categories) and `fix` (close a trace that was cut short).
 * Both stream: kept events are copied byte for byte from the input. */
#include "analyze/trace/trace.h"
#include "analyze/stats/stats.h"
#include "analyze/rewrite/rewrite.h"

#include <stdlib.h>
#include <string.h>
#ifdef TP_HAVE_ZLIB
#include <zlib.h>
#endif

typedef struct window { int64_t lo, hi; } window;

static bool overlaps(const tpa_event *ev, int64_t lo, int64_t hi)
{
    int64_t end = ev->ts_ns + (ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0);
    if (end == ev->ts_ns) return ev->ts_ns >= lo && ev->ts_ns <= hi;
    return ev->ts_ns < hi && end > lo;  /* touching at an edge is not overlapping */
}

static bool keep(const tpa_event *ev, const tpa_slice_opts *o, const window *w, size_t nw,
                 int64_t min_ts)
{
    if (ev->ph == 'M') return true;  /* process/thread names keep the viewer readable */
    if (o->cats && !tpa_cat_listed(o->cats, ev->cat)) return false;
    if (o->has_min_dur && (ev->ph != 'X' || !ev->has_dur || ev->dur_ns < o->min_dur_ns)) return false;
    if ((o->time_us.set || o->steps.set) && !ev->has_ts) return false;
    if (o->time_us.set) {
        int64_t lo = tpa_sat_add(min_ts, o->time_us.lo);
        int64_t hi = o->time_us.hi == INT64_MAX ? INT64_MAX : tpa_sat_add(min_ts, o->time_us.hi);
        if (!overlaps(ev, lo, hi)) return false;
    }
    if (o->steps.set) {
        bool any = false;
        for (size_t i = 0; i < nw && !any; i++) any = overlaps(ev, w[i].lo, w[i].hi);
        if (!any) return false;
    }
    return true;
}

/* Writes the top-level members the input had besides traceEvents. */
static void write_members(tpa_out *out, const tpa_meta *m)
{
    for (size_t i = 0; i < m->n_members; i++) {
        tpa_out_puts(out, ",\n");
        tpa_out_json_str(out, m->members[i].key, strlen(m->members[i].key));
        tpa_out_puts(out, ": ");
        tpa_out_write(out, m->members[i].raw, m->members[i].raw_len);
    }
}

static int step_windows(const char *in, const tpa_slice_opts *o, window **w, size_t *nw,
                        int64_t *min_ts, tpa_error *err)
{
    tpa_step *steps = NULL;
    size_t n = 0;
    *w = NULL;
    *nw = 0;
    if (tpa_find_steps(in, &steps, &n, min_ts, err) != 0) return -1;
    if (o->steps.set) {
        *w = calloc(n ? n : 1, sizeof **w);
        if (!*w) abort();
        for (size_t i = 0; i < n; i++)
            if (steps[i].num >= o->steps.lo && steps[i].num <= o->steps.hi)
                (*w)[(*nw)++] = (window){ steps[i].start_ns, steps[i].start_ns + steps[i].dur_ns };
        if (!*nw) {
            memset(err, 0, sizeof *err);
            snprintf(err->file, sizeof err->file, "%s", in);
            tpa_error_set(err, TPA_ERR_USAGE, "no ProfilerStep#N span in the requested step range (%zu steps in the trace)", n);
            free(steps);
            free(*w);
            return -1;
        }
    }
    free(steps);
    return 0;
}

int tpa_slice(const char *in, const char *outp, const tpa_slice_opts *o, tpa_write_stats *st,
              tpa_error *err)
{
    memset(st, 0, sizeof *st);
    window *w = NULL;
    size_t nw = 0;
    int64_t min_ts = 0;
    if (tpa_out_not_input(outp, &in, 1, err) != 0) return -1;
    if ((o->steps.set || o->time_us.set) && step_windows(in, o, &w, &nw, &min_ts, err) != 0)
        return -1;
    tpa_reader *r = tpa_reader_open(in, err);
    if (!r) { free(w); return -1; }
    tpa_out *out = tpa_out_open(outp, err);
    if (!out) { tpa_reader_close(r); free(w); return -1; }
    tpa_out_puts(out, "{\"traceEvents\": [\n");
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) {
        st->in_events++;
        if (!keep(&ev, o, w, nw, min_ts)) continue;
        if (st->out_events++) tpa_out_puts(out, ",\n");
        tpa_out_write(out, ev.raw.p, ev.raw.n);
    }
    tpa_out_puts(out, "\n]");
    if (rc == 0) write_members(out, tpa_reader_meta(r));
    tpa_out_puts(out, "}\n");
    st->truncated = tpa_reader_meta(r)->truncated;
    tpa_reader_close(r);
    free(w);
    if (rc < 0) { tpa_out_discard(out); return -1; }  /* the old output stays */
    return tpa_out_close(out, err);
}

/* ---- fix ---------------------------------------------------------------------------- */

/* Whether the decompressed bytes of in from offset `from` to the end are
 * all NUL or blank: what a crash leaves after a cut (a file extended with
 * zeros by the file system). Anything else after an error means the file is
 * damaged before its end, which `fix` must not paper over. */
static bool tail_is_blank(const char *in, uint64_t from)
{
    char *buf = malloc(1u << 16);
    if (!buf) abort();
    bool blank = true;
    uint64_t at = 0;
#ifdef TP_HAVE_ZLIB
    gzFile g = gzopen(in, "rb");
    if (!g) { free(buf); return false; }
    int got;
    while (blank && (got = gzread(g, buf, 1u << 16)) > 0) {
#else
    FILE *g = fopen(in, "rb");
    if (!g) { free(buf); return false; }
    size_t got;
    while (blank && (got = fread(buf, 1, 1u << 16, g)) > 0) {
#endif
        for (size_t i = 0; i < (size_t)got && blank; i++, at++) {
            char c = buf[i];
            if (at >= from && c && c != ' ' && c != '\n' && c != '\r' && c != '\t') blank = false;
        }
    }
#ifdef TP_HAVE_ZLIB
    gzclose(g);
#else
    fclose(g);
#endif
    free(buf);
    return blank;
}

/* Copies the first n decompressed bytes of in to out. */
static int copy_prefix(const char *in, uint64_t n, tpa_out *out, tpa_error *err)
{
    char *buf = malloc(1u << 20);
    if (!buf) abort();
#ifdef TP_HAVE_ZLIB
    gzFile g = strcmp(in, "-") == 0 ? NULL : gzopen(in, "rb");
    if (!g) { free(buf); tpa_error_set(err, TPA_ERR_IO, "cannot reopen %s", in); return -1; }
    while (n) {
        unsigned want = n < (1u << 20) ? (unsigned)n : (1u << 20);
        int got = gzread(g, buf, want);
        if (got <= 0) break;
        tpa_out_write(out, buf, (size_t)got);
        n -= (uint64_t)got;
    }
    gzclose(g);
#else
    FILE *f = fopen(in, "rb");
    if (!f) { free(buf); tpa_error_set(err, TPA_ERR_IO, "cannot reopen %s", in); return -1; }
    while (n) {
        size_t got = fread(buf, 1, n < (1u << 20) ? n : (1u << 20), f);
        if (!got) break;
        tpa_out_write(out, buf, got);
        n -= got;
    }
    fclose(f);
#endif
    free(buf);
    return 0;
}

int tpa_fix(const char *in, const char *outp, tpa_write_stats *st, bool *was_ok, tpa_error *err)
{
    memset(st, 0, sizeof *st);
    if (tpa_out_not_input(outp, &in, 1, err) != 0) return -1;
    tpa_reader *r = tpa_reader_open(in, err);
    if (!r) return -1;
    tpa_reader_set_lenient(r, true);
    int rc = tpa_reader_drain(r, err);
    tpa_meta m = *tpa_reader_meta(r);
    st->in_events = st->out_events = m.events;
    st->truncated = m.truncated;
    tpa_reader_close(r);
    if (rc < 0) return -1;
    /* fix repairs a cut, nothing else: an error (syntax, nesting, UTF-8)
     * followed by more data is damage, reported with its byte offset;
     * only a syntax error followed by zeros/blanks up to the end is a cut */
    if (m.cut_by_error && (!err || err->code != TPA_ERR_SYNTAX || !tail_is_blank(in, m.truncated_at))) {
        if (err) {
            char what[sizeof err->msg];
            snprintf(what, sizeof what, "%s", err->msg);
            snprintf(err->msg, sizeof err->msg, "%.180s (the trace is damaged before its end: "
                     "fix only repairs a trace cut short)", what);
        }
        return -1;
    }
    *was_ok = !m.truncated;
    if (!outp) return 0;
    tpa_out *out = tpa_out_open(outp, err);
    if (!out) return -1;
    uint64_t n = m.truncated ? m.good_end : m.bytes;
    if (copy_prefix(in, n, out, err) != 0) { tpa_out_discard(out); return -1; }
    if (m.truncated) {
        tpa_out_puts(out, "\n");
        tpa_out_puts(out, m.close);
        tpa_out_puts(out, "\n");
    }
    st->bytes_out = n;
    return tpa_out_close(out, err);
}
