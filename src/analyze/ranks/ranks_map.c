/* ranks_map.c - one rank's traces -> its rank summary (the map).
 *
 * One streaming pass per trace file keeps only the steps (ProfilerStep#N),
 * the collective spans, the compute spans of GPU streams and the byte
 * counters; the per-step figures come from interval unions at the end, so
 * nested collective spans (c10d::allreduce_ around record_param_comms) are
 * counted once. Collective time comes from GPU collective kernels (NCCL,
 * RCCL) when the rank has any: there the host spans only launch them;
 * otherwise from host spans named like collectives (all_reduce, MPI_*,
 * gloo, c10d::, ...), where the host really waits.
 */
#include "analyze/ranks/ranks.h"
#include "util/buf.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define EPOCH_LIKE_NS 1000000000000000000LL /* ts past ~2001 in ns: already wall clock */

typedef struct ivl { int64_t lo, hi; } ivl;
typedef struct ivec { ivl *v; size_t n, cap; } ivec;
typedef struct sample { int64_t ts, value; } sample;
typedef struct tspan { int64_t lo, hi, tid; } tspan;

typedef struct map_state {
    tpa_rank_summary *out;
    size_t step_cap;
    ivec host_comm, dev_comm, compute;
    sample *bytes; size_t n_bytes, cap_bytes;
    tspan *host; size_t n_host, cap_host;  /* other host spans: compute of CPU-only ranks */
    int64_t step_tid;
    tpa_rank_comm host_names[TPA_RANK_COMM_NAMES], dev_names[TPA_RANK_COMM_NAMES];
    size_t n_host_names, n_dev_names;
} map_state;

static void ivec_push(ivec *v, int64_t lo, int64_t hi)
{
    v->v = tpu_array_grow(v->v, &v->cap, v->n + 1, sizeof *v->v);
    v->v[v->n++] = (ivl){lo, hi};
}

static bool has_word(tpa_sv s, const char *w)
{
    size_t n = strlen(w);
    for (size_t i = 0; i + n <= s.n; i++) {
        size_t k = 0;
        while (k < n && tolower((unsigned char)s.p[i + k]) == w[k]) k++;
        if (k == n) return true;
    }
    return false;
}

/* Host spans that are collectives (or wait for one). */
static bool is_host_collective(tpa_sv name)
{
    static const char *const words[] = {"all_reduce", "allreduce", "all_gather", "allgather",
                                        "reduce_scatter", "reducescatter", "all_to_all",
                                        "alltoall", "broadcast", "record_param_comms", "c10d::",
                                        "nccl:", "gloo:", "mpi_"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (has_word(name, words[i])) return true;
    return false;
}

static void count_name(tpa_rank_comm *names, size_t *n, tpa_sv name, int64_t dur)
{
    size_t len = name.n;
    const char *paren = memchr(name.p, '(', name.n); /* kernel signatures */
    if (paren) len = (size_t)(paren - name.p);
    if (len >= sizeof names[0].name) len = sizeof names[0].name - 1;
    for (size_t i = 0; i < *n; i++)
        if (strlen(names[i].name) == len && memcmp(names[i].name, name.p, len) == 0) {
            names[i].count++;
            names[i].total_ns = tpa_sat_add(names[i].total_ns, dur);
            return;
        }
    if (*n == TPA_RANK_COMM_NAMES) return; /* the first names seen are the ones kept */
    tpa_rank_comm *c = &names[(*n)++];
    memcpy(c->name, name.p, len);
    c->name[len] = '\0';
    c->count = 1;
    c->total_ns = dur;
    c->bytes = 0;
}

/* args.value of a counter event, from its raw text. */
static bool counter_value(const tpa_event *ev, int64_t *out)
{
    const char *p = ev->raw.p, *end = ev->raw.p + ev->raw.n;
    static const char key[] = "\"value\":";
    for (; p + sizeof key - 1 < end; p++)
        if (memcmp(p, key, sizeof key - 1) == 0) {
            char buf[32];
            size_t n = 0;
            p += sizeof key - 1;
            while (p < end && *p == ' ') p++;
            while (p < end && n + 1 < sizeof buf && (isdigit((unsigned char)*p) || *p == '.' || *p == '-' || *p == 'e' || *p == '+'))
                buf[n++] = *p++;
            buf[n] = '\0';
            *out = (int64_t)strtod(buf, NULL);
            return n > 0;
        }
    return false;
}

static void feed(map_state *m, const tpa_event *ev)
{
    tpa_rank_summary *o = m->out;
    int64_t num;
    if (ev->ph == 'C' && ev->has_ts && ev->name.n > 6 &&
        memcmp(ev->name.p + ev->name.n - 6, ".bytes", 6) == 0) {
        int64_t v;
        if (counter_value(ev, &v)) {
            m->bytes = tpu_array_grow(m->bytes, &m->cap_bytes, m->n_bytes + 1, sizeof *m->bytes);
            m->bytes[m->n_bytes++] = (sample){ev->ts_ns, v};
        }
        return;
    }
    if (ev->ph != 'X' || !ev->has_ts || !ev->has_dur || ev->dur_ns < 0) return;
    int kind = tpa_event_kind(ev);
    int64_t lo = ev->ts_ns, hi = tpa_sat_add(ev->ts_ns, ev->dur_ns);
    if (kind == TPA_K_STEP && tpa_step_number(ev->name, &num)) {
        o->steps = tpu_array_grow(o->steps, &m->step_cap, o->n_steps + 1, sizeof *o->steps);
        o->steps[o->n_steps++] = (tpa_rank_step){num, lo, ev->dur_ns, 0, 0, 0};
        m->step_tid = ev->tid;
    } else if (kind == TPA_K_COMM) {
        ivec_push(&m->dev_comm, lo, hi);
        count_name(m->dev_names, &m->n_dev_names, ev->name, ev->dur_ns);
    } else if (kind == TPA_K_KERNEL || kind == TPA_K_MEMCPY || kind == TPA_K_MEMSET) {
        ivec_push(&m->compute, lo, hi);
    } else if (!tpa_kind_is_gpu(kind) && is_host_collective(ev->name)) {
        ivec_push(&m->host_comm, lo, hi);
        count_name(m->host_names, &m->n_host_names, ev->name, ev->dur_ns);
    } else if (kind == TPA_K_CPU || kind == TPA_K_ANNOTATION) {
        m->host = tpu_array_grow(m->host, &m->cap_host, m->n_host + 1, sizeof *m->host);
        m->host[m->n_host++] = (tspan){lo, hi, ev->tid};
    }
}

/* Copies up to n-1 bytes of the string value of "key" in a raw member. */
static void member_str(const char *raw, const char *key, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = raw ? strstr(raw, pat) : NULL;
    if (!p) return;
    p += strlen(pat);
    size_t k = 0;
    while (p[k] && p[k] != '"' && k + 1 < n) { out[k] = p[k]; k++; }
    out[k] = '\0';
}

static bool member_int(const char *raw, const char *key, int64_t *out)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = raw ? strstr(raw, pat) : NULL;
    if (!p) return false;
    *out = strtoll(p + strlen(pat), NULL, 10);
    return true;
}

/* What the trace's top-level members say about the rank and the job. */
static void read_meta(tpa_rank_summary *o, const tpa_meta *meta)
{
    for (size_t i = 0; i < meta->n_members; i++) {
        const char *key = meta->members[i].key, *raw = meta->members[i].raw;
        if (strcmp(key, "trainprof") == 0) {
            snprintf(o->format, sizeof o->format, "trainprof");
            member_str(raw, "job_id", o->job_id, sizeof o->job_id);
            member_int(raw, "world_size", &o->world_size);
            if (member_int(raw, "clock_error_ns", &o->clock_error_ns)) o->synced = true;
        } else if (strcmp(key, "distributedInfo") == 0) {
            member_int(raw, "world_size", &o->world_size);
        }
    }
    if (!o->format[0]) snprintf(o->format, sizeof o->format, "kineto");
    if (meta->has_rank && o->rank < 0) o->rank = meta->rank;
    if (meta->host[0] && !o->host[0]) snprintf(o->host, sizeof o->host, "%.63s", meta->host);
    if (meta->truncated) o->truncated = true;
}

/* Marks of where this file's items start, to shift them onto wall clock. */
typedef struct marks { size_t steps, host, dev, compute, bytes, spans; int64_t min_ts; } marks;

static void shift_file(map_state *m, const marks *k, const tpa_meta *meta)
{
    int64_t shift = 0;
    if (meta->has_base) shift = meta->base_ns;
    else if (k->min_ts < EPOCH_LIKE_NS) return; /* relative times, no base: leave */
    m->out->has_base = true;
    for (size_t i = k->steps; i < m->out->n_steps; i++) m->out->steps[i].start_ns += shift;
    ivec *vs[] = {&m->host_comm, &m->dev_comm, &m->compute};
    size_t from[] = {k->host, k->dev, k->compute};
    for (int v = 0; v < 3; v++)
        for (size_t i = from[v]; i < vs[v]->n; i++) vs[v]->v[i].lo += shift, vs[v]->v[i].hi += shift;
    for (size_t i = k->bytes; i < m->n_bytes; i++) m->bytes[i].ts += shift;
    for (size_t i = k->spans; i < m->n_host; i++) m->host[i].lo += shift, m->host[i].hi += shift;
}

static marks file_marks(const map_state *m)
{
    return (marks){m->out->n_steps, m->host_comm.n, m->dev_comm.n, m->compute.n, m->n_bytes, m->n_host, INT64_MAX};
}

static void feed_marked(map_state *m, marks *k, const tpa_event *ev)
{
    if (ev->has_ts && ev->ph != 'M' && ev->ts_ns < k->min_ts) k->min_ts = ev->ts_ns;
    feed(m, ev);
}

static void file_done(map_state *m, const marks *k, const tpa_meta *meta)
{
    read_meta(m->out, meta);
    shift_file(m, k, meta);
    m->out->files++;
}

static int map_file(map_state *m, const char *path, tpa_error *err)
{
    tpa_reader *r = tpa_reader_open(path, err);
    if (!r) return -1;
    marks k = file_marks(m);
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) feed_marked(m, &k, &ev);
    if (rc == 0) file_done(m, &k, tpa_reader_meta(r));
    tpa_reader_close(r);
    return rc < 0 ? -1 : 0;
}

static int cmp_ivl(const void *a, const void *b)
{
    const ivl *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_step(const void *a, const void *b)
{
    const tpa_rank_step *x = a, *y = b;
    if (x->num != y->num) return x->num < y->num ? -1 : 1;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* Sorts and merges overlapping intervals in place. */
static void union_of(ivec *v)
{
    if (!v->n) return;
    qsort(v->v, v->n, sizeof *v->v, cmp_ivl);
    size_t w = 0;
    for (size_t i = 1; i < v->n; i++) {
        if (v->v[i].lo <= v->v[w].hi) {
            if (v->v[i].hi > v->v[w].hi) v->v[w].hi = v->v[i].hi;
        } else v->v[++w] = v->v[i];
    }
    v->n = w + 1;
}

/* a ∩ b of two unions, into out. */
static void intersect(const ivec *a, const ivec *b, ivec *out)
{
    for (size_t i = 0, j = 0; i < a->n && j < b->n;) {
        int64_t lo = a->v[i].lo > b->v[j].lo ? a->v[i].lo : b->v[j].lo;
        int64_t hi = a->v[i].hi < b->v[j].hi ? a->v[i].hi : b->v[j].hi;
        if (lo < hi) ivec_push(out, lo, hi);
        if (a->v[i].hi < b->v[j].hi) i++; else j++;
    }
}

/* Length of a union inside [lo, hi). */
static int64_t covered(const ivec *u, int64_t lo, int64_t hi)
{
    size_t a = 0, b = u->n;
    while (a < b) { /* first interval ending after lo */
        size_t mid = (a + b) / 2;
        if (u->v[mid].hi <= lo) a = mid + 1; else b = mid;
    }
    int64_t sum = 0;
    for (size_t i = a; i < u->n && u->v[i].lo < hi; i++) {
        int64_t l = u->v[i].lo > lo ? u->v[i].lo : lo, h = u->v[i].hi < hi ? u->v[i].hi : hi;
        if (h > l) sum += h - l;
    }
    return sum;
}

static void finish(map_state *m)
{
    tpa_rank_summary *o = m->out;
    o->device_comm = m->dev_comm.n > 0;
    ivec *comm = o->device_comm ? &m->dev_comm : &m->host_comm;
    const tpa_rank_comm *names = o->device_comm ? m->dev_names : m->host_names;
    o->n_comm = o->device_comm ? m->n_dev_names : m->n_host_names;
    if (o->n_comm) memcpy(o->comm, names, o->n_comm * sizeof *names);  /* names may be NULL when 0 */
    if (o->n_steps) qsort(o->steps, o->n_steps, sizeof *o->steps, cmp_step);
    size_t w = 0; /* one row per step number (warmup copies across windows) */
    for (size_t i = 0; i < o->n_steps; i++)
        if (w == 0 || o->steps[w - 1].num != o->steps[i].num) o->steps[w++] = o->steps[i];
    o->n_steps = w;
    /* CPU-only rank: its compute is the training thread's own spans, and a
     * collective completing on another thread (DDP's gloo worker) overlaps it */
    bool cpu_only = m->compute.n == 0;
    for (size_t i = 0; cpu_only && i < m->n_host; i++)
        if (m->host[i].tid == m->step_tid) ivec_push(&m->compute, m->host[i].lo, m->host[i].hi);
    union_of(comm);
    union_of(&m->compute);
    ivec both = {0};
    intersect(comm, &m->compute, &both);
    for (size_t i = 0; i < o->n_steps; i++) {
        tpa_rank_step *s = &o->steps[i];
        int64_t end = tpa_sat_add(s->start_ns, s->dur_ns);
        s->comm_ns = covered(comm, s->start_ns, end);
        s->overlap_ns = covered(&both, s->start_ns, end);
        for (size_t b = 0; b < m->n_bytes; b++)
            if (m->bytes[b].ts >= s->start_ns && m->bytes[b].ts <= end) s->bytes += m->bytes[b].value;
    }
    int64_t total_bytes = 0;
    for (size_t b = 0; b < m->n_bytes; b++) total_bytes += m->bytes[b].value;
    if (o->n_comm) o->comm[0].bytes = total_bytes; /* byte counters name no collective: the first */
    free(both.v);
}

int tpa_job_trace_files(const char *dir, char ***files, size_t *n, tpa_error *err)
{
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/profiler_traces", dir);
    return tpa_trace_files(tpa_is_dir(sub) ? sub : dir, files, n, err);
}

static void summary_init(tpa_rank_summary *out, const char *source)
{
    memset(out, 0, sizeof *out);
    out->rank = -1;
    out->world_size = -1;
    snprintf(out->source, sizeof out->source, "%s", source);
}

static void state_free(map_state *m)
{
    free(m->host_comm.v);
    free(m->dev_comm.v);
    free(m->compute.v);
    free(m->bytes);
    free(m->host);
}

int tpa_rank_map(const char *path, int64_t rank_hint, tpa_rank_summary *out, tpa_error *err)
{
    summary_init(out, path);
    map_state m = {.out = out};
    int rc = 0;
    if (tpa_is_dir(path)) {
        char **files;
        size_t n;
        if (tpa_job_trace_files(path, &files, &n, err) != 0) return -1;
        if (!n) {
            tpa_error_set(err, TPA_ERR_EMPTY, "no trace files (was the rank killed before its first trace window ended?)");
            snprintf(err->file, sizeof err->file, "%s", path);
            rc = -1;
        }
        for (size_t i = 0; i < n; i++) {
            if (rc == 0 && map_file(&m, files[i], err) != 0) rc = -1;
            free(files[i]);
        }
        free(files);
    } else {
        rc = map_file(&m, path, err);
    }
    if (out->rank < 0) out->rank = rank_hint;
    if (rc == 0) finish(&m);
    state_free(&m);
    if (rc != 0) tpa_rank_summary_free(out);
    return rc;
}

/* ---- the same map, fed event by event (the report page's Distributed view) ---- */
struct tpa_rank_mapper { map_state m; marks k; tpa_rank_summary *out; };

tpa_rank_mapper *tpa_rank_mapper_new(const char *source, tpa_rank_summary *out)
{
    tpa_rank_mapper *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    summary_init(out, source);
    p->out = out;
    p->m.out = out;
    return p;
}

void tpa_rank_mapper_file_begin(tpa_rank_mapper *p) { p->k = file_marks(&p->m); }
void tpa_rank_mapper_feed(tpa_rank_mapper *p, const tpa_event *ev) { feed_marked(&p->m, &p->k, ev); }
void tpa_rank_mapper_file_end(tpa_rank_mapper *p, const tpa_meta *meta) { file_done(&p->m, &p->k, meta); }

int64_t *tpa_rank_mapper_finish(tpa_rank_mapper *p, int64_t rank_hint)
{
    tpa_rank_summary *o = p->out;
    if (o->rank < 0) o->rank = rank_hint;
    finish(&p->m); /* leaves m.compute a sorted union */
    int64_t *compute = malloc((o->n_steps ? o->n_steps : 1) * sizeof *compute);
    if (!compute) abort();
    for (size_t i = 0; i < o->n_steps; i++)
        compute[i] = covered(&p->m.compute, o->steps[i].start_ns, tpa_sat_add(o->steps[i].start_ns, o->steps[i].dur_ns));
    state_free(&p->m);
    free(p);
    return compute;
}

void tpa_rank_summary_free(tpa_rank_summary *s)
{
    free(s->steps);
    s->steps = NULL;
    s->n_steps = 0;
}
