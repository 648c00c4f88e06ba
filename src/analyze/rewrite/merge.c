/* merge.c - several ranks' traces on one timeline.
 *
 * Pass 1 reads each file's alignment facts (base time, rank, first
 * timestamp). Pass 2 copies every event with pid, tid, ts (and flow ids)
 * rewritten: pid becomes the rank, each (pid, tid) of the rank a numbered
 * thread, ts moves onto the shared wall-clock axis. Names for the new
 * processes and threads are written at the end as M events.
 */
#include "analyze/trace/trace.h"
#include "analyze/rewrite/rewrite.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define EPOCH_LIKE_NS (1000000000000000000LL)  /* ts beyond ~2001 in ns: already wall clock */

typedef struct name_rec { int64_t pid, tid; char *name; } name_rec;
typedef struct tmap { int64_t pid, tid, new_tid; } tmap;

typedef struct src {
    const char *path;
    tpa_meta meta;           /* copied scalars only */
    int64_t min_ts, shift;   /* out_ts = ts + shift */
    int64_t out_pid;
    tmap *threads; size_t nthreads;
    name_rec *pnames, *tnames; size_t npn, ntn;
} src;

static int scan(src *s, tpa_error *err)
{
    tpa_reader *r = tpa_reader_open(s->path, err);
    if (!r) return -1;
    tpa_event ev;
    int rc;
    int64_t lo = INT64_MAX;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0)
        if (ev.has_ts && ev.ph != 'M' && ev.ts_ns < lo) lo = ev.ts_ns;
    s->meta = *tpa_reader_meta(r);
    s->meta.members = NULL;
    s->meta.n_members = 0;
    s->min_ts = lo == INT64_MAX ? 0 : lo;
    tpa_reader_close(r);
    return rc < 0 ? -1 : 0;
}

static int64_t new_tid(src *s, int64_t pid, int64_t tid)
{
    for (size_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].pid == pid && s->threads[i].tid == tid) return s->threads[i].new_tid;
    tmap *nt = realloc(s->threads, (s->nthreads + 1) * sizeof *nt);
    if (!nt) abort();
    s->threads = nt;
    s->threads[s->nthreads] = (tmap){ pid, tid, (int64_t)s->nthreads + 1 };
    return (int64_t)++s->nthreads;
}

static void remember_name(name_rec **v, size_t *n, int64_t pid, int64_t tid, tpa_sv name)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].pid == pid && (*v)[i].tid == tid) return;
    name_rec *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv) abort();
    *v = nv;
    char *copy = malloc(name.n + 1);
    if (!copy) abort();
    if (name.n) memcpy(copy, name.p, name.n);  /* name.p NULL when empty */
    copy[name.n] = 0;
    nv[(*n)++] = (name_rec){ pid, tid, copy };
}

static const char *lookup_name(const name_rec *v, size_t n, int64_t pid, int64_t tid)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].pid == pid && v[i].tid == tid) return v[i].name;
    return NULL;
}

/* Saturating: base times and timestamps come from the input, any int64. */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static void fmt_ts(char *buf, size_t n, int64_t ns)
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(buf, n, "%s%" PRIu64 ".%03" PRIu64, sign, a / 1000, a % 1000);
}

/* Copies ev.raw with its pid/tid/ts/id values replaced. */
static void write_rewritten(tpa_out *out, const tpa_event *ev, const src *s, int64_t tid)
{
    struct { tpa_span32 sp; char text[64]; } rep[4];
    int nrep = 0;
    snprintf(rep[nrep].text, sizeof rep[0].text, "%" PRId64, s->out_pid); rep[nrep++].sp = ev->v_pid;
    snprintf(rep[nrep].text, sizeof rep[0].text, "%" PRId64, tid); rep[nrep++].sp = ev->v_tid;
    if (ev->v_ts.len) { fmt_ts(rep[nrep].text, sizeof rep[0].text, sat_add(ev->ts_ns, s->shift)); rep[nrep++].sp = ev->v_ts; }
    const char *idv = ev->v_id.len ? ev->raw.p + ev->v_id.off : NULL;
    /* an array or object id is copied as it is: inside the new string its
     * quotes and newlines would break the JSON */
    if (idv && ev->v_id.len < 40 && *idv != '[' && *idv != '{') {
        /* Flow ids are per process: keep ranks' arrows apart. */
        const char *v = ev->raw.p + ev->v_id.off;
        size_t vn = ev->v_id.len;
        if (v[0] == '"') { v++; vn = vn >= 2 ? vn - 2 : 0; }
        snprintf(rep[nrep].text, sizeof rep[0].text, "\"r%" PRId64 ":%.*s\"", s->out_pid, (int)vn, v);
        rep[nrep++].sp = ev->v_id;
    }
    for (int i = 1; i < nrep; i++)  /* sort by offset */
        for (int j = i; j > 0 && rep[j].sp.off < rep[j - 1].sp.off; j--) {
            __typeof__(rep[0]) t = rep[j]; rep[j] = rep[j - 1]; rep[j - 1] = t;
        }
    uint32_t at = 0;
    for (int i = 0; i < nrep; i++) {
        tpa_out_write(out, ev->raw.p + at, rep[i].sp.off - at);
        tpa_out_puts(out, rep[i].text);
        at = rep[i].sp.off + rep[i].sp.len;
    }
    tpa_out_write(out, ev->raw.p + at, ev->raw.n - at);
}

static void note_metadata(src *s, const tpa_event *ev)
{
    if (!ev->arg_name.n) return;
    if (ev->name.n == 12 && memcmp(ev->name.p, "process_name", 12) == 0)
        remember_name(&s->pnames, &s->npn, ev->pid, 0, ev->arg_name);
    else if (ev->name.n == 11 && memcmp(ev->name.p, "thread_name", 11) == 0)
        remember_name(&s->tnames, &s->ntn, ev->pid, ev->tid, ev->arg_name);
}

static int copy_events(src *s, tpa_out *out, tpa_write_stats *st, tpa_error *err)
{
    tpa_reader *r = tpa_reader_open(s->path, err);
    if (!r) return -1;
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) {
        st->in_events++;
        if (ev.ph == 'M') { note_metadata(s, &ev); continue; }
        if (!ev.v_pid.len || !ev.v_tid.len) continue;  /* cannot place it */
        int64_t tid = new_tid(s, ev.pid, ev.tid);
        if (st->out_events++) tpa_out_puts(out, ",\n");
        write_rewritten(out, &ev, s, tid);
    }
    if (tpa_reader_meta(r)->truncated) st->truncated = true;
    tpa_reader_close(r);
    return rc < 0 ? -1 : 0;
}

static void write_names(tpa_out *out, const src *s, tpa_write_stats *st)
{
    char label[512];
    if (s->meta.host[0]) snprintf(label, sizeof label, "rank %" PRId64 " (%s)", s->out_pid, s->meta.host);
    else snprintf(label, sizeof label, "rank %" PRId64, s->out_pid);
    if (st->out_events++) tpa_out_puts(out, ",\n");
    tpa_out_printf(out, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %" PRId64 ", \"tid\": 0, \"args\": {\"name\": ", s->out_pid);
    tpa_out_json_str(out, label, strlen(label));
    tpa_out_printf(out, "}},\n{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %" PRId64
                   ", \"tid\": 0, \"args\": {\"sort_index\": %" PRId64 "}}", s->out_pid, s->out_pid);
    for (size_t i = 0; i < s->nthreads; i++) {
        const tmap *t = &s->threads[i];
        const char *pn = lookup_name(s->pnames, s->npn, t->pid, 0);
        const char *tn = lookup_name(s->tnames, s->ntn, t->pid, t->tid);
        char pbuf[64], tbuf[64];
        if (!pn) { snprintf(pbuf, sizeof pbuf, "pid %" PRId64, t->pid); pn = pbuf; }
        if (!tn) { snprintf(tbuf, sizeof tbuf, "tid %" PRId64, t->tid); tn = tbuf; }
        snprintf(label, sizeof label, "%s / %s", pn, tn);
        tpa_out_printf(out, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %" PRId64 ", \"tid\": %" PRId64
                       ", \"args\": {\"name\": ", s->out_pid, t->new_tid);
        tpa_out_json_str(out, label, strlen(label));
        tpa_out_puts(out, "}}");
    }
}

/* Ranks become pids; a missing or repeated rank falls back to a free number. */
static void assign_pids(src *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t want = s[i].meta.has_rank ? s[i].meta.rank : (int64_t)i;
        bool clash;
        do {
            clash = false;
            for (size_t j = 0; j < i; j++) if (s[j].out_pid == want) { clash = true; want++; break; }
        } while (clash);
        s[i].out_pid = want;
    }
}

/* Wall clock of ts = 0 per file; files without one are aligned on their first event. */
static int64_t align(src *s, size_t n)
{
    int64_t start = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        int64_t base = s[i].meta.has_base ? s[i].meta.base_ns : (s[i].min_ts > EPOCH_LIKE_NS / 1000 ? 0 : INT64_MIN);
        s[i].shift = base;
        if (base != INT64_MIN && sat_add(base, s[i].min_ts) < start) start = sat_add(base, s[i].min_ts);
    }
    if (start == INT64_MAX) start = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].shift == INT64_MIN) {
            fprintf(stderr, "trainprof: warning: %s records no base time; aligning its first event "
                    "with the earliest start\n", s[i].path);
            s[i].shift = sat_sub(0, s[i].min_ts);
        } else {
            s[i].shift = sat_sub(s[i].shift, start);
        }
    }
    return start;
}

int tpa_merge(const char *const *in, size_t n, const char *outp, tpa_write_stats *st, tpa_error *err)
{
    memset(st, 0, sizeof *st);
    src *s = calloc(n ? n : 1, sizeof *s);
    if (!s) abort();
    int rc = tpa_out_not_input(outp, in, n, err);
    for (size_t i = 0; i < n && rc == 0; i++) {
        s[i].path = in[i];
        rc = scan(&s[i], err);
    }
    tpa_out *out = NULL;
    if (rc == 0 && !(out = tpa_out_open(outp, err))) rc = -1;
    if (rc == 0) {
        assign_pids(s, n);
        int64_t start = align(s, n);
        tpa_out_puts(out, "{\"traceEvents\": [\n");
        for (size_t i = 0; i < n && rc == 0; i++) rc = copy_events(&s[i], out, st, err);
        for (size_t i = 0; i < n && rc == 0; i++) write_names(out, &s[i], st);
        tpa_out_printf(out, "\n],\n\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": %" PRId64
                       ",\n\"trainprof_merge\": {\"files\": [", start);
        for (size_t i = 0; i < n; i++) {
            tpa_out_printf(out, "%s{\"path\": ", i ? ", " : "");
            tpa_out_json_str(out, s[i].path, strlen(s[i].path));
            tpa_out_printf(out, ", \"pid\": %" PRId64 ", \"shift_ns\": %" PRId64 "}", s[i].out_pid, s[i].shift);
        }
        tpa_out_puts(out, "]}}\n");
    }
    if (out && rc != 0) tpa_out_discard(out);  /* the old output stays */
    else if (out && tpa_out_close(out, err) != 0) rc = -1;
    for (size_t i = 0; i < n; i++) {
        free(s[i].threads);
        for (size_t k = 0; k < s[i].npn; k++) free(s[i].pnames[k].name);
        for (size_t k = 0; k < s[i].ntn; k++) free(s[i].tnames[k].name);
        free(s[i].pnames);
        free(s[i].tnames);
    }
    free(s);
    return rc;
}
