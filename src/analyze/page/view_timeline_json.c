/* view_timeline_json.c - the Timeline view's JSON: the chosen events (all
 * of them when they fit), one row per thread, GPU stream and counter, and
 * exactly what was left out.
 *
 * "ev" is a flat array, 7 numbers per event: row, start (ns from t0_ns),
 * duration (ns, 0 for instants), name index, kind (tpa_kind), correlation
 * id (0: none; a launch and its kernel share one), args index (-1: none).
 */
#include "analyze/page/view_timeline.h"
#include "analyze/trace/trace.h"
#include "util/hash.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tpa_tl_by_dur_desc(const void *a, const void *b, void *rec_array)
{
    const tpa_tl_rec *rec = rec_array;
    const tpa_tl_rec *x = &rec[*(const size_t *)a], *y = &rec[*(const size_t *)b];
    return x->dur > y->dur ? -1 : x->dur < y->dur;
}


#define TL_MAX_SERIES 48
#define TL_MAX_ROWS 4096

typedef struct row_key {
    uint16_t file; bool gpu; int64_t pid, tid; size_t rec;
    uint32_t n_ev, n_span;     /* events; of them spans of positive duration */
    int64_t busy, end;         /* union of its spans (ns); end of that union so far */
} row_key;

typedef struct series {
    uint16_t file;
    int64_t pid;
    char name[128];
    size_t first, n;          /* points, in the order of the sorted events */
} series;

typedef struct emit {
    tpa_tl *t;
    size_t *ix; size_t n;      /* chosen records, sorted by (file, ts) */
    int64_t t0;
    row_key rows[TL_MAX_ROWS]; size_t n_rows;
    int32_t *row_of;           /* per chosen record; -1: counter or over the row cap */
    uint64_t rows_lost;
    int64_t lo[64], hi[64];    /* per file (first 64): the drawn span (drawn_extent) */
} emit;

/* ---- choice ------------------------------------------------------------------------- */

/* qsort_r comparator over indexes into the records (ctx). */
static int by_file_ts(const void *a, const void *b, void *ctx)
{
    const tpa_tl_rec *rec = ctx;
    const tpa_tl_rec *x = &rec[*(const size_t *)a], *y = &rec[*(const size_t *)b];
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->dur > y->dur ? -1 : x->dur < y->dur; /* parents before children */
}

static bool in_step(const tpa_tl_rec *r, const tpa_tl_step *s)
{
    return r->file == s->file && r->ts < tpa_sat_add(s->start, s->dur) && tpa_sat_add(r->ts, r->dur) >= s->start;
}

/* Marks up to `limit` records (longest first) among those `sel` accepts. */
static uint64_t mark_longest(tpa_tl *t, bool *mark, const tpa_tl_step *s, size_t limit)
{
    size_t *ix = malloc((t->n ? t->n : 1) * sizeof *ix), m = 0;
    if (!ix) abort();
    for (size_t i = 0; i < t->n; i++)
        if (!s || in_step(&t->rec[i], s)) ix[m++] = i;
    uint64_t left = 0;
    if (m > limit) {
        qsort_r(ix, m, sizeof *ix, tpa_tl_by_dur_desc, t->rec);
        left = m - limit;
        m = limit;
    }
    for (size_t i = 0; i < m; i++) mark[ix[i]] = true;
    free(ix);
    return left;
}

/* ---- rows --------------------------------------------------------------------------- */

static int32_t row_for(emit *e, const tpa_tl_rec *r)
{
    row_key k = {r->file, tpa_kind_is_gpu(r->kind), r->pid, r->tid, (size_t)(r - e->t->rec), 0, 0, 0, INT64_MIN};
    for (size_t i = e->n_rows; i-- > 0;) /* few rows; the last one found is usually it */
        if (e->rows[i].file == k.file && e->rows[i].pid == k.pid && e->rows[i].tid == k.tid &&
            e->rows[i].gpu == k.gpu)
            return (int32_t)i;
    if (e->n_rows == TL_MAX_ROWS) { e->rows_lost++; return -1; }
    e->rows[e->n_rows] = k;
    return (int32_t)e->n_rows++;
}

/* The last name the trace gave (a thread renamed keeps its last name). */
static const char *meta_name(const tpa_tl *t, uint16_t file, int what, int64_t pid, int64_t tid)
{
    for (size_t i = t->n_meta; i-- > 0;) {
        const tpa_tl_meta *m = &t->meta[i];
        if (m->file == file && m->what == what && m->pid == pid && (what != TPA_TL_THREAD_NAME || m->tid == tid))
            return m->name[0] ? m->name : NULL;
    }
    return NULL;
}

/* A string pid or tid as the trace spells it ("Spans", "Traces"), else NULL. */
static bool id_text(const tpa_tl *t, const tpa_tl_rec *r, bool tid, char *out, size_t cap)
{
    const char *s = t->arena + r->off + r->name_n + r->args_n + (tid ? r->pid_n : 0);
    size_t len = tid ? r->tid_n : r->pid_n;
    if (len) snprintf(out, cap, "%.*s", (int)len, s);
    return len > 0;
}

/* Counts event r of row k for the folding rule: its spans' union (the
 * events come in order of start within a file). */
static void row_count(row_key *k, const tpa_tl_rec *r)
{
    k->n_ev++;
    if (r->dur <= 0) return;
    k->n_span++;
    int64_t end = tpa_sat_add(r->ts, r->dur), from = r->ts > k->end ? r->ts : k->end;
    if (end > from) k->busy = tpa_sat_add(k->busy, end - from); /* end - from <= dur: no overflow */
    if (end > k->end) k->end = end;
}

/* Whether row k carries nothing a person reads (docs/REPORT.md, "Folded
 * rows"): no span of positive duration; a string pid's row (Kineto's
 * "Spans", "Traces") of at most 3 events; or (with extent > 0) spans
 * covering under 0.1 % of its file's drawn span. */
static bool row_empty(const tpa_tl *t, const row_key *k)
{
    return !k->n_span || (t->rec[k->rec].pid_n && k->n_ev <= 3);
}

static bool row_junk(const tpa_tl *t, const row_key *k, int64_t extent)
{
    return row_empty(t, k) || (extent > 0 && (double)k->busy < 0.001 * (double)extent);
}

/* Each file's drawn span: first span start to last span end, of the rows
 * not empty (Kineto's "PyTorch Profiler (0)" span on its "Spans" row runs
 * far past the events); of all rows when every one is. */
static void drawn_extent(emit *e)
{
    bool all_empty = true;
    for (size_t i = 0; i < e->n_rows && all_empty; i++) all_empty = row_empty(e->t, &e->rows[i]);
    for (int f = 0; f < 64; f++) e->lo[f] = INT64_MAX, e->hi[f] = INT64_MIN;
    for (size_t k = 0; k < e->n; k++) {
        const tpa_tl_rec *r = &e->t->rec[e->ix[k]];
        if (e->row_of[k] < 0 || r->dur <= 0 || r->file >= 64) continue;
        if (!all_empty && row_empty(e->t, &e->rows[e->row_of[k]])) continue;
        if (r->ts < e->lo[r->file]) e->lo[r->file] = r->ts;
        if (tpa_sat_add(r->ts, r->dur) > e->hi[r->file]) e->hi[r->file] = tpa_sat_add(r->ts, r->dur);
    }
}

static int64_t extent_of(const emit *e, uint16_t file)
{
    int64_t d;
    if (file >= 64 || e->hi[file] <= e->lo[file]) return 0;
    return __builtin_sub_overflow(e->hi[file], e->lo[file], &d) ? INT64_MAX : d;
}

/* The group a row is under (a GPU, a process) and its own label. */
static void row_names(const tpa_tl *t, const row_key *k, char *group, size_t gcap, char *label, size_t lcap)
{
    const tpa_tl_rec *r = &t->rec[k->rec];
    const char *pn = meta_name(t, k->file, TPA_TL_PROCESS_NAME, k->pid, 0);
    const char *tn = meta_name(t, k->file, TPA_TL_THREAD_NAME, k->pid, k->tid);
    char sid[TPA_TL_ID_MAX + 1];
    if (k->gpu) {
        if (!tpa_tl_gpu_name(t, k->file, k->pid, group, gcap) && id_text(t, r, false, sid, sizeof sid))
            snprintf(group, gcap, "%s", sid);
    } else if (id_text(t, r, false, sid, sizeof sid)) {
        snprintf(group, gcap, "%s", pn ? pn : sid);
    } else if (pn) {
        snprintf(group, gcap, "%s (pid %" PRId64 ")", pn, k->pid);
    } else {
        snprintf(group, gcap, "pid %" PRId64, k->pid);
    }
    if (t->n_files > 1) { /* two ranks' "GPU 0" are two groups: say whose */
        char own[160], whose[64];
        snprintf(own, sizeof own, "%s", group);
        tpa_tl_whose(t, k->file, whose, sizeof whose);
        snprintf(group, gcap, "%s%.96s", whose, own);
    }
    size_t n = tn ? strlen(tn) : 0;
    while (n && tn[n - 1] == ' ') n--; /* Kineto writes "stream 7 " */
    if (n) snprintf(label, lcap, "%.*s", (int)n, tn);
    else if (id_text(t, r, true, sid, sizeof sid)) snprintf(label, lcap, "%s", sid);
    else snprintf(label, lcap, "%s %" PRId64, k->gpu ? "stream" : "thread", k->tid);
}

static void json_rows(emit *e, tpu_json *j)
{
    drawn_extent(e);
    size_t junk = 0;
    for (size_t i = 0; i < e->n_rows; i++) junk += row_junk(e->t, &e->rows[i], extent_of(e, e->rows[i].file));
    tpu_json_key(j, "rows");
    tpu_json_begin_array(j);
    for (size_t i = 0; i < e->n_rows; i++) {
        const row_key *k = &e->rows[i];
        int64_t extent = extent_of(e, k->file);
        char group[160], label[160], name[330];
        row_names(e->t, k, group, sizeof group, label, sizeof label);
        snprintf(name, sizeof name, "%s / %s", group, label);
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "name", name);
        tpu_json_kv_string(j, "group", group);
        tpu_json_kv_string(j, "label", label);
        tpu_json_kv_string(j, "kind", k->gpu ? "gpu" : "thread");
        tpu_json_kv_int(j, "file", k->file);
        tpu_json_kv_int(j, "pid", k->pid);
        tpu_json_kv_int(j, "tid", k->tid);
        tpu_json_kv_double(j, "busy", extent > 0 ? (double)k->busy / (double)extent : 0.0);
        /* every row junk: none is folded (the page would show nothing) */
        tpu_json_kv_bool(j, "folded", junk < e->n_rows && row_junk(e->t, k, extent));
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
}

/* ---- names, args, correlation ------------------------------------------------------- */

typedef struct names { uint64_t *h; uint32_t *id; size_t cap; uint32_t n; } names;

static uint32_t name_id(names *nm, tpu_json *j, const char *p, size_t n)
{
    uint64_t h = tpu_hash_bytes(p, n) | 1;
    size_t i = h & (nm->cap - 1);
    while (nm->h[i] && nm->h[i] != h) i = (i + 1) & (nm->cap - 1);
    if (!nm->h[i]) { /* a 64-bit hash collision would merge two names: accepted */
        nm->h[i] = h;
        nm->id[i] = nm->n++;
        tpu_json_string_n(j, p, n);
    }
    return nm->id[i];
}

/* The args object's text kept for an event, or NULL. */
static const char *args_of(const tpa_tl *t, const tpa_tl_rec *r, size_t *len)
{
    if (!r->args_n) return NULL;
    *len = r->args_n;
    return t->arena + r->off + r->name_n;
}

/* ---- counters ----------------------------------------------------------------------- */

typedef struct counter_ctx { emit *e; const tpa_tl_rec *r; series *s; size_t *n_s; tpu_buf *pts; } counter_ctx;

static void add_point(counter_ctx *c, const char *name, size_t n, double v)
{
    series *s = NULL;
    for (size_t i = 0; i < *c->n_s; i++)
        if (c->s[i].file == c->r->file && c->s[i].pid == c->r->pid && strlen(c->s[i].name) == n &&
            !memcmp(c->s[i].name, name, n)) s = &c->s[i];
    if (!s) {
        if (*c->n_s == TL_MAX_SERIES) return;
        s = &c->s[(*c->n_s)++];
        memset(s, 0, sizeof *s);
        s->file = c->r->file;
        s->pid = c->r->pid;
        memcpy(s->name, name, n);
    }
    /* points go to one buffer tagged with their series; split when written */
    double rec[3] = {(double)(s - c->s), (double)(c->r->ts - c->e->t0), v};
    tpu_buf_append(c->pts, rec, sizeof rec);
    s->n++;
}

static bool counter_member(const char *key, size_t key_n, const char *val, const char *val_end, void *user)
{
    counter_ctx *c = user;
    double v;
    if (!tpa_value_f64(val, val_end, &v)) return true;
    const tpa_tl_rec *r = c->r;
    char name[128];
    int n = snprintf(name, sizeof name, "%.*s.%.*s", (int)(r->name_n < 60 ? r->name_n : 60), c->e->t->arena + r->off,
                     (int)(key_n < 60 ? key_n : 60), key);
    add_point(c, name, (size_t)n, v);
    return true;
}

/* [memory] instants of profile_memory: allocated and reserved per device. */
static void memory_point(counter_ctx *c, const char *args, size_t len)
{
    double alloc, resv, dev = -1;
    const char *end = args + len, *a = tpa_obj_find(args, end, "Total Allocated"),
               *b = tpa_obj_find(args, end, "Total Reserved"), *d = tpa_obj_find(args, end, "Device Id");
    if (d) tpa_value_f64(d, end, &dev);
    char name[64];
    if (a && tpa_value_f64(a, end, &alloc)) {
        int n = snprintf(name, sizeof name, "memory allocated (%s%.0f)", dev < 0 ? "CPU" : "GPU ", dev < 0 ? 0.0 : dev);
        if (dev < 0) n = snprintf(name, sizeof name, "memory allocated (CPU)");
        add_point(c, name, (size_t)n, alloc);
    }
    if (b && tpa_value_f64(b, end, &resv)) {
        int n = dev < 0 ? snprintf(name, sizeof name, "memory reserved (CPU)")
                        : snprintf(name, sizeof name, "memory reserved (GPU %.0f)", dev);
        add_point(c, name, (size_t)n, resv);
    }
}

static bool is_memory(const tpa_tl *t, const tpa_tl_rec *r)
{
    return r->ph == 'i' && r->name_n == 8 && !memcmp(t->arena + r->off, "[memory]", 8);
}

static void json_counters(emit *e, tpu_json *j)
{
    series s[TL_MAX_SERIES];
    size_t n_s = 0;
    tpu_buf pts = {0};
    for (size_t k = 0; k < e->n; k++) {
        const tpa_tl_rec *r = &e->t->rec[e->ix[k]];
        counter_ctx c = {e, r, s, &n_s, &pts};
        size_t len;
        const char *args = (r->ph == 'C' || is_memory(e->t, r)) ? args_of(e->t, r, &len) : NULL;
        if (!args) continue;
        if (r->ph == 'C') tpa_obj_each(args, args + len, counter_member, &c);
        else memory_point(&c, args, len);
    }
    const double *p = (const double *)pts.data;
    size_t np = pts.len / (3 * sizeof(double));
    tpu_json_key(j, "counters");
    tpu_json_begin_array(j);
    for (size_t i = 0; i < n_s; i++) {
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "name", s[i].name);
        tpu_json_kv_int(j, "file", s[i].file);
        tpu_json_kv_int(j, "pid", s[i].pid);
        tpu_json_key(j, "t");
        tpu_json_begin_array(j);
        for (size_t q = 0; q < np; q++)
            if ((size_t)p[3 * q] == i) tpu_json_int(j, (int64_t)p[3 * q + 1]);
        tpu_json_end_array(j);
        tpu_json_key(j, "v");
        tpu_json_begin_array(j);
        for (size_t q = 0; q < np; q++)
            if ((size_t)p[3 * q] == i) tpu_json_double(j, p[3 * q + 2]);
        tpu_json_end_array(j);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    tpu_buf_free(&pts);
}

/* ---- events ------------------------------------------------------------------------- */

static void json_events(emit *e, tpu_json *j)
{
    tpa_tl *t = e->t;
    names nm = {0};
    nm.cap = 64;
    while (nm.cap < 2 * e->n + 2) nm.cap *= 2;
    nm.h = calloc(nm.cap, sizeof *nm.h);
    nm.id = calloc(nm.cap, sizeof *nm.id);
    uint32_t *nid = malloc((e->n ? e->n : 1) * sizeof *nid);
    if (!nm.h || !nm.id || !nid) abort();
    tpu_json_key(j, "names");
    tpu_json_begin_array(j);
    for (size_t k = 0; k < e->n; k++) {
        const tpa_tl_rec *r = &t->rec[e->ix[k]];
        if (e->row_of[k] >= 0) nid[k] = name_id(&nm, j, t->arena + r->off, r->name_n);
    }
    tpu_json_end_array(j);
    size_t args_bytes = 0, n_args = 0;
    uint64_t args_left = 0;
    tpu_json_key(j, "args");
    tpu_json_begin_array(j);
    int64_t *aid = malloc((e->n ? e->n : 1) * sizeof *aid), *corr = malloc((e->n ? e->n : 1) * sizeof *corr);
    if (!aid || !corr) abort();
    for (size_t k = 0; k < e->n; k++) {
        const tpa_tl_rec *r = &t->rec[e->ix[k]];
        size_t len = 0;
        const char *a = e->row_of[k] >= 0 ? args_of(t, r, &len) : NULL;
        aid[k] = -1;
        corr[k] = a ? r->corr : 0;
        if (!a || len <= 2) continue;
        if (args_bytes + len > TPA_TL_ARGS_BYTES) { args_left++; continue; }
        args_bytes += len;
        tpu_json_string_n(j, a, len);
        aid[k] = (int64_t)n_args++;
    }
    tpu_json_end_array(j);
    tpu_json_kv_uint(j, "args_left_out", args_left);
    /* 7 numbers per event, written without printf (tpu_json_int formats
     * through it: ~700 instructions a number, the most of this view's JSON) */
    tpu_buf flat = {0};
    tpu_buf_putc(&flat, '[');
    for (size_t k = 0; k < e->n; k++) {
        const tpa_tl_rec *r = &t->rec[e->ix[k]];
        if (e->row_of[k] < 0) continue;
        long long v[7] = {e->row_of[k], r->ts - e->t0, r->dur, nid[k], r->kind, corr[k], aid[k]};
        for (int q = 0; q < 7; q++) {
            if (flat.len > 1) tpu_buf_putc(&flat, ',');
            tpu_buf_put_i64(&flat, v[q]);
        }
    }
    tpu_buf_putc(&flat, ']');
    tpu_json_key(j, "ev");
    if (flat.oom) tpu_json_null(j); /* never half an array */
    else tpu_json_raw(j, flat.data, flat.len);
    tpu_buf_free(&flat);
    free(nm.h);
    free(nm.id);
    free(nid);
    free(aid);
    free(corr);
}

/* ---- steps and the note ------------------------------------------------------------- */

static const char *const pick_names[3] = {"slowest", "median", "fastest"};

static void json_step(tpu_json *j, const tpa_tl_step *s, int64_t t0, const char *pick, uint64_t left)
{
    tpu_json_begin_object(j);
    tpu_json_kv_int(j, "num", s->num);
    tpu_json_kv_int(j, "file", s->file);
    tpu_json_kv_int(j, "start", s->start - t0);
    tpu_json_kv_int(j, "dur", s->dur);
    if (pick) tpu_json_kv_string(j, "pick", pick);
    if (pick) tpu_json_kv_uint(j, "left_out", left);
    tpu_json_end_object(j);
}

/* Steps whose events were all kept (those a pick can be). */
static size_t intact_steps(const tpa_tl *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_steps; i++) n += t->steps[i].intact;
    return n;
}

/* The picks in order: each rank's slowest, median, fastest (slot order). */
static size_t n_picks(const tpa_tl *t) { return 3 * (size_t)t->n_files; }

static void note(char *buf, size_t cap, const tpa_tl *t, size_t carried, const long *pick, const uint64_t *left,
                 bool whole)
{
    int n = snprintf(buf, cap, "%zu of %" PRIu64 " events carried", carried, t->seen);
    if (whole) { snprintf(buf + n, cap - (size_t)n, ": the whole trace."); return; }
    size_t shown = 0, n_ranks = 0;
    uint64_t short_left = 0;
    for (size_t k = 0; k < n_picks(t); k++)
        if (pick[k] >= 0) shown++, short_left += left[k];
    for (int r = 0; r < t->n_files; r++) n_ranks += pick[3 * r] >= 0 || pick[3 * r + 1] >= 0 || pick[3 * r + 2] >= 0;
    if (!shown) {
        snprintf(buf + n, cap - (size_t)n, ": no steps in the trace, so the earliest events (longest first when more) "
                                           "and %" PRIu64 " later ones left out.", t->seen - carried);
        return;
    }
    if (tpa_tl_n_ranks(t) > 1) { /* each button names its rank's step */
        n += snprintf(buf + n, cap - (size_t)n, ": every event overlapping each rank's slowest, median and fastest step "
                      "(%zu steps of %zu ranks)", shown, n_ranks);
        if (short_left && (size_t)n < cap)
            n += snprintf(buf + n, cap - (size_t)n, " but their %" PRIu64 " shortest", short_left);
    } else {
        n += snprintf(buf + n, cap - (size_t)n, ": every event overlapping");
        const char *sep = " the";
        for (size_t k = 0; k < n_picks(t); k++) {
            if (pick[k] < 0 || (size_t)n >= cap) continue;
            n += snprintf(buf + n, cap - (size_t)n, "%s %s step (#%" PRId64 ")", sep, pick_names[k % 3], t->steps[pick[k]].num);
            if (left[k] && (size_t)n < cap)
                n += snprintf(buf + n, cap - (size_t)n, " but its %" PRIu64 " shortest", left[k]);
            sep = ",";
        }
    }
    if ((size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "; the other %zu steps' events are left out%s.", t->n_steps - (size_t)t->rule_dropped - shown,
                 t->thinned ? " (a step too big for the store: only its longest events)" : "");
}

/* Which rule the steps follow (issue 31), as the Overview's step note
 * says it: "" on host-only traces (their ProfilerStep#N spans, unchanged). */
static void rule_note(char *buf, size_t cap, const tpa_tl *t, const long *pick)
{
    buf[0] = '\0';
    int n = 0;
    if (t->files_rule) {
        int with = t->files_rule + t->files_host + t->files_over;
        n = snprintf(buf, cap, "Steps%s as the TensorBoard plugin counts them on a GPU trace, as `trainprof steps` and "
                     "the Overview: each step runs to the end of the GPU work it launched, the next starts after it",
                     with > 1 && with > t->files_rule ? " of the GPU traces" : "");
        if (t->rule_dropped && (size_t)n < cap)
            n += snprintf(buf + n, cap - (size_t)n, " (the last %" PRIu64 " step%s left out: the profiler stopped before %s "
                          "kernels were recorded)", t->rule_dropped, t->rule_dropped == 1 ? "" : "s",
                          t->rule_dropped == 1 ? "its" : "their");
        if ((size_t)n < cap) n += snprintf(buf + n, cap - (size_t)n, ".");
    }
    if (t->files_over && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, "%s%d trace%s had more than %u launches and device records to hold for "
                      "the GPU rule: %s steps are their host ProfilerStep spans.", n ? " " : "", t->files_over,
                      t->files_over == 1 ? "" : "s", TPA_TL_DEV_RECORDS, t->files_over == 1 ? "its" : "their");
    bool any = false;
    for (int k = 0; k < 3 * t->n_files; k++) any |= pick[k] >= 0;
    if (t->chose_by_host && any && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "%sThe trace is too big to carry whole and a step's GPU work is known only once "
                 "read, so the steps kept were chosen by their host spans while reading: the slowest, median and fastest "
                 "shown are those of the %zu steps kept whole, by the plugin's durations.", n ? " " : "", intact_steps(t));
}

/* The ranks in use, by rank (then first file), into ord; returns how many. */
static int rank_order(const tpa_tl *t, int *ord)
{
    int n = 0;
    for (int r = 0; r < t->n_files; r++) {
        if (!t->ranks[r].n_files) continue;
        int i = n++;
        for (; i > 0; i--) { /* few ranks: insertion */
            const tpa_tl_rank *a = &t->ranks[ord[i - 1]], *b = &t->ranks[r];
            if (a->rank < b->rank || (a->rank == b->rank && a->first_file < b->first_file)) break;
            ord[i] = ord[i - 1];
        }
        ord[i] = r;
    }
    return n;
}

/* Several ranks: "ranks", each one's name, rank and files, in rank order
 * (the page's rank selector); null for one. */
static void json_ranks(const tpa_tl *t, tpu_json *j)
{
    tpu_json_key(j, "ranks");
    if (tpa_tl_n_ranks(t) < 2) { tpu_json_null(j); return; }
    int *ord = malloc((size_t)t->n_files * sizeof *ord);
    if (!ord) abort();
    int n = rank_order(t, ord);
    tpu_json_begin_array(j);
    for (int i = 0; i < n; i++) {
        const tpa_tl_rank *rk = &t->ranks[ord[i]];
        char name[64];
        tpa_tl_rank_name(t, ord[i], name, sizeof name);
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "name", name);
        tpu_json_key(j, "rank");
        if (rk->named) tpu_json_int(j, rk->rank);
        else tpu_json_null(j);
        tpu_json_key(j, "files");
        tpu_json_begin_array(j);
        for (int f = 0; f < t->n_files; f++)
            if (t->rank_of[f] == ord[i]) tpu_json_int(j, f);
        tpu_json_end_array(j);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    free(ord);
}

/* ---- the value ---------------------------------------------------------------------- */

void tpa_tl_json(tpa_tl *t, const long *pick, int np, tpu_json *j)
{
    if (!t->seen) { tpu_json_null(j); return; }
    bool whole = t->compactions == 0 && t->n <= t->carry;
    uint64_t *left = calloc(n_picks(t), sizeof *left);
    bool *mark = calloc(t->n ? t->n : 1, sizeof *mark);
    if (!mark || !left) abort();
    if (whole) for (size_t i = 0; i < t->n; i++) mark[i] = true;
    else if (!np) mark_longest(t, mark, NULL, t->carry);
    else for (size_t k = 0; k < n_picks(t); k++)
        if (pick[k] >= 0) left[k] = mark_longest(t, mark, &t->steps[pick[k]], t->carry / (size_t)np);
    emit e = {.t = t, .t0 = INT64_MAX};
    e.ix = malloc((t->n ? t->n : 1) * sizeof *e.ix);
    e.row_of = malloc((t->n ? t->n : 1) * sizeof *e.row_of);
    if (!e.ix || !e.row_of) abort();
    for (size_t i = 0; i < t->n; i++)
        if (mark[i]) {
            e.ix[e.n++] = i;
            if (t->rec[i].ts < e.t0) e.t0 = t->rec[i].ts;
        }
    free(mark);
    if (e.n) qsort_r(e.ix, e.n, sizeof *e.ix, by_file_ts, t->rec);
    if (!e.n) e.t0 = 0;
    size_t drawn = 0;
    int64_t *ord = malloc((e.n ? e.n : 1) * sizeof *ord);
    if (!ord) abort();
    for (size_t k = 0; k < e.n; k++) {
        const tpa_tl_rec *r = &t->rec[e.ix[k]];
        e.row_of[k] = (r->ph == 'C' || is_memory(t, r)) ? -1 : row_for(&e, r);
        if (e.row_of[k] >= 0) row_count(&e.rows[e.row_of[k]], r);
        ord[k] = e.row_of[k] >= 0 ? (int64_t)drawn : -1;
        drawn += e.row_of[k] >= 0;
    }
    tpu_json_begin_object(j);
    tpu_json_kv_bool(j, "whole", whole);
    tpu_json_kv_uint(j, "events_seen", t->seen);
    tpu_json_kv_uint(j, "events_carried", e.n);
    tpu_json_kv_uint(j, "spans_drawn", drawn);
    tpu_json_kv_uint(j, "rows_left_out", e.rows_lost);
    tpu_json_kv_int(j, "t0_ns", e.t0);
    char text[600];
    note(text, sizeof text, t, e.n, pick, left, whole);
    json_ranks(t, j);
    tpu_json_kv_string(j, "note", text);
    char rule[800];
    rule_note(rule, sizeof rule, t, pick);
    tpu_json_kv_string(j, "step_rule", t->files_rule ? "gpu" : "host");
    tpu_json_kv_string(j, "step_note", rule);
    tpu_json_key(j, "files");
    tpu_json_begin_array(j);
    for (int f = 0; f < t->n_files; f++) tpu_json_string(j, t->paths && t->paths[f] ? t->paths[f] : "");
    tpu_json_end_array(j);
    tpu_json_key(j, "kinds");
    tpu_json_begin_array(j);
    static const char *const kinds[TPA_K_COUNT] = {"cpu", "annotation", "step", "runtime", "kernel",
                                                   "communication", "memcpy", "memset", "gpu annotation"};
    for (int k = 0; k < TPA_K_COUNT; k++) tpu_json_string(j, kinds[k]);
    tpu_json_end_array(j);
    tpu_json_key(j, "steps");
    tpu_json_begin_array(j);
    size_t listed = 0;
    for (size_t i = 0; i < t->n_steps; i++) {
        const char *p = NULL;
        uint64_t l = 0;
        size_t r = (size_t)tpa_tl_rank_ix(t, t->steps[i].file);
        for (size_t k = 3 * r; k < 3 * r + 3; k++) /* a step is only its rank's pick */
            if (pick[k] == (long)i) { p = pick_names[k % 3]; l = left[k]; }
        if (t->steps[i].gone) continue; /* the GPU rule left it out, as `trainprof steps` */
        if (!p && (!whole || listed >= 5000)) continue; /* the picks always */
        json_step(j, &t->steps[i], e.t0, p, l);
        listed++;
    }
    tpu_json_end_array(j);
    tpu_json_kv_uint(j, "steps_total", t->n_steps - t->rule_dropped + t->steps_lost);
    json_rows(&e, j);
    json_events(&e, j);
    json_counters(&e, j);
    tpa_tl_json_flows(t, e.ix, ord, e.n, j);
    tpa_tl_json_gpu(t, e.ix, e.n, e.t0, e.lo, e.hi, pick, whole, j);
    tpu_json_end_object(j);
    free(ord);
    free(e.ix);
    free(e.row_of);
    free(left);
}
