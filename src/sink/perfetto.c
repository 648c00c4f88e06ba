/*
 * perfetto.c - <window stem>.perfetto-trace, a Perfetto protobuf trace that
 * ui.perfetto.dev and trace_processor load.
 *
 * Layout of a file:
 *   clock snapshot (MONOTONIC is the trace clock; REALTIME tied to it)
 *   process track; per thread: a sequence with its own incremental state
 *   (defaults: delta-encoded clock 64 and the thread's track), the thread
 *   track descriptor, then SLICE_BEGIN/END, INSTANT packets; counters
 *   (tp_counter, [memory]) on counter tracks under the process, written on
 *   sequence 1.
 * Names and categories are interned per sequence: the first packet that
 * uses a name on a sequence defines it (interned_data), later ones carry
 * only the iid; step names (ProfilerStep#N, unique) are written inline.
 * Whole counter values are varints (counter_value), others doubles. Timestamps are nanosecond deltas from the previous packet
 * of the sequence, so a zone costs ~30 bytes before compression.
 *
 * Events arrive as complete slices, children before parents; they are kept
 * until the step's flush(), sorted per sequence by time, and turned into
 * BEGIN/END packets then. A slice that began before what a sequence already
 * wrote (a zone spanning steps) gets an absolute timestamp instead of a
 * delta. With zlib, packets are gathered into compressed_packets chunks of
 * up to 256 KiB (trace_processor inflates them), which brings a zone well
 * under 16 bytes on disk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#ifdef TP_HAVE_ZLIB
#include <zlib.h>
#endif

#include "sink/perfetto_enc.h"
#include "sink/sink.h"
#include "sink/strmap.h"

#define PF_CHUNK (256u * 1024u)
#define PF_PROCESS_SEQ 1u
#define TPI_ZSTACK_PF_API 1000 /* depth of API-call slices: inside every zone */
#define PF_COUNTER_UUID_BASE 16u /* small: one varint byte per counter event; thread and
                                  * process uuids are >= 2^32, so no clash */

typedef struct pf_rec {
    uint64_t ts;          /* session ns */
    uint32_t seq;         /* index into seqs */
    uint32_t order;       /* arrival order: last tie-breaker */
    int32_t depth_key;
    uint8_t type;         /* TPI_PF_* */
    uint8_t phase;        /* at equal ts: 0 ends, 1 begins/instants/counters, 2 zero-length ends */
    uint32_t name_iid;    /* 0: name given by text in `text` */
    uint32_t cat_iid;
    uint32_t counter;     /* counters: index of the counter track */
    double value;
    uint32_t args;        /* slice begins: 1 + offset of the args text in pf_sink.texts */
    uint32_t text;        /* 1 + offset of an inline name in pf_sink.texts (step slices) */
} pf_rec;

typedef struct pf_seq {
    uint32_t tid;         /* 0: the process sequence */
    uint32_t seq_id;
    uint64_t uuid;
    int started;          /* in the current file */
    int name_changed;
    uint64_t last_abs;    /* last incremental timestamp written (MONOTONIC ns) */
    unsigned char *sent;  /* per iid: 1 name sent, 2 category sent */
    size_t sent_cap;
    char name[64];
} pf_seq;

typedef struct pf_sink {
    tpi_sink base;
    FILE *f;
    char path[1100];
    pf_seq *seqs;
    size_t n_seqs, cap_seqs;
    tpi_strmap interned;  /* name or category text -> iid */
    char **iid_text;      /* iid -> text */
    size_t n_iids;
    tpi_strmap counters;  /* counter name -> index */
    char **counter_names;
    unsigned char *counter_sent;
    size_t n_counters;
    pf_rec *recs;
    size_t n_recs, cap_recs;
    tpu_buf texts;        /* args (record_shapes) and inline names of recs, NUL separated */
    uint32_t order;
    tpu_buf pending;      /* serialized packets not yet written */
    tpu_buf out;          /* compressed chunk */
    uint64_t last_ts;     /* latest session ts seen, for the drop marker */
    int active;
    int compress;         /* zlib chunks (TRAINPROF_PERFETTO_COMPRESS=0: plain packets) */
} pf_sink;

static uint64_t process_uuid(const pf_sink *p)
{
    return 0x1000000000000000ull | (uint32_t)p->base.env->pid;
}

/* ---- tables ----------------------------------------------------------------- */

static uint32_t intern(pf_sink *p, const char *text)
{
    uint32_t iid;
    if (!text || !text[0])
        return 0;
    if (tpi_strmap_get(&p->interned, text, &iid))
        return iid;
    char **t = realloc(p->iid_text, (p->n_iids + 2) * sizeof *t);
    if (!t)
        return 0;
    p->iid_text = t;
    iid = (uint32_t)++p->n_iids;          /* iids start at 1 */
    t[iid] = strdup(text);
    if (!t[iid] || tpi_strmap_put(&p->interned, text, iid) != 0)
        return 0;
    return iid;
}

static uint32_t seq_index(pf_sink *p, uint32_t tid)
{
    for (size_t i = 0; i < p->n_seqs; i++)
        if (p->seqs[i].tid == tid)
            return (uint32_t)i;
    if (p->n_seqs == p->cap_seqs) {
        size_t cap = p->cap_seqs ? p->cap_seqs * 2 : 8;
        pf_seq *s = realloc(p->seqs, cap * sizeof *s);
        if (!s)
            return 0;  /* falls back on the process sequence */
        p->seqs = s;
        p->cap_seqs = cap;
    }
    pf_seq *s = &p->seqs[p->n_seqs];
    memset(s, 0, sizeof *s);
    s->tid = tid;
    s->seq_id = PF_PROCESS_SEQ + (uint32_t)p->n_seqs;
    s->uuid = tid ? ((uint64_t)(uint32_t)p->base.env->pid << 32 | tid) : process_uuid(p);
    return (uint32_t)p->n_seqs++;
}

static uint32_t counter_index(pf_sink *p, const char *name)
{
    uint32_t idx;
    if (tpi_strmap_get(&p->counters, name, &idx))
        return idx;
    char **n = realloc(p->counter_names, (p->n_counters + 1) * sizeof *n);
    if (n)
        p->counter_names = n;
    unsigned char *sent = realloc(p->counter_sent, p->n_counters + 1);
    if (sent)
        p->counter_sent = sent;
    if (!n || !sent)
        return UINT32_MAX;
    idx = (uint32_t)p->n_counters;
    n[idx] = strdup(name);
    sent[idx] = 0;
    if (!n[idx] || tpi_strmap_put(&p->counters, name, idx) != 0)
        return UINT32_MAX;
    p->n_counters++;
    return idx;
}

/* ---- collecting ---------------------------------------------------------------- */

static pf_rec *push(pf_sink *p)
{
    if (tpu_reserve_items(&p->recs, &p->cap_recs, p->n_recs + 1, sizeof *p->recs, 1024) != 0)
        return NULL;
    pf_rec *r = &p->recs[p->n_recs++];
    memset(r, 0, sizeof *r);
    r->order = p->order++;
    return r;
}

/* Keeps a copy of text until the next flush; returns 1 + its offset, 0 on failure. */
static uint32_t keep_text(pf_sink *p, const char *text)
{
    if (!text || !text[0] || p->texts.len >= UINT32_MAX / 2 || p->texts.oom)
        return 0;
    uint32_t at = (uint32_t)p->texts.len + 1;
    tpu_buf_append(&p->texts, text, strlen(text) + 1);
    return p->texts.oom ? 0 : at;
}

static void add_slice(pf_sink *p, const tpi_event *e)
{
    uint32_t seq = seq_index(p, e->tid);
    /* step names are unique (ProfilerStep#N): inline, not interned, saves
     * the interned_data entry and the iid (9 bytes a step) */
    uint32_t text = e->is_step ? keep_text(p, e->name) : 0;
    uint32_t name = text ? 0 : intern(p, e->name ? e->name : "?"), cat = intern(p, e->cat);
    /* a step slice encloses the zones of depth 0 that share its timestamps */
    int32_t depth = e->is_step ? -1 : e->depth;
    pf_rec *b = push(p), *x;
    if (!b)
        goto oom;
    *b = (pf_rec){ e->ts_ns, seq, b->order, depth, TPI_PF_SLICE_BEGIN, 1, name, cat, 0, 0,
                   keep_text(p, e->args_json), text };
    if (!(x = push(p)))
        goto oom;
    *x = (pf_rec){ e->ts_ns + e->dur_ns, seq, x->order, -depth, TPI_PF_SLICE_END,
                   e->dur_ns ? 0 : 2, 0, 0, 0, 0, 0, 0 };
    return;
oom:
    tpi_sink_fail(&p->base, "out of memory recording", p->path, ENOMEM);
}

static void add_counter(pf_sink *p, uint64_t ts, const char *name, double value)
{
    uint32_t idx = counter_index(p, name);
    pf_rec *r = idx == UINT32_MAX ? NULL : push(p);
    if (!r) {
        tpi_sink_fail(&p->base, "out of memory recording", p->path, ENOMEM);
        return;
    }
    *r = (pf_rec){ ts, 0, r->order, 0, TPI_PF_COUNTER, 1, 0, 0, idx, value, 0, 0 };
}

static void add_memory(pf_sink *p, const tpi_event *e)
{
    char name[96];
    if (e->device_type == 0)
        snprintf(name, sizeof name, "[memory] CPU allocated (bytes)");
    else
        snprintf(name, sizeof name, "[memory] cuda:%d allocated (bytes)", e->device_id);
    add_counter(p, e->ts_ns, name, (double)e->total_allocated);
    if (e->total_reserved) {
        size_t n = strlen(name) - strlen("allocated (bytes)");
        snprintf(name + n, sizeof name - n, "reserved (bytes)");
        add_counter(p, e->ts_ns, name, (double)e->total_reserved);
    }
}

/* GPU activity (CUPTI): kernels, copies, sets and syncs on one track per
 * device and stream (a pseudo-thread named "GPU d stream s"); runtime and
 * driver calls on the calling thread's track, innermost. */
#define PF_GPU_TID 0x80000000u
static void add_gpu(pf_sink *p, const tpi_event *e)
{
    const tpi_gpu_activity *a = e->gpu;
    tpi_event s = *e;
    s.kind = TPI_EV_SLICE;
    s.args_json = NULL;
    s.depth = TPI_ZSTACK_PF_API;
    if (a->kind != TPI_GPU_RUNTIME && a->kind != TPI_GPU_DRIVER) {
        s.depth = 0;
        s.tid = PF_GPU_TID | (a->device & 0x7fu) << 24 | (a->stream & 0xffffffu);
        pf_seq *q = &p->seqs[seq_index(p, s.tid)];
        if (q->tid == s.tid && !q->name[0]) {
            snprintf(q->name, sizeof q->name, "GPU %u stream %u", a->device, a->stream);
            q->name_changed = 1;
        }
    }
    add_slice(p, &s);
}

static void pf_event(tpi_sink *k, const tpi_event *e)
{
    pf_sink *p = (pf_sink *)k;
    if (k->failed || !p->active)
        return;
    if (e->ts_ns + e->dur_ns > p->last_ts)
        p->last_ts = e->ts_ns + e->dur_ns;
    switch (e->kind) {
    case TPI_EV_SLICE:
        add_slice(p, e);
        break;
    case TPI_EV_INSTANT: {
        pf_rec *r = push(p);
        if (r)
            *r = (pf_rec){ e->ts_ns, seq_index(p, e->tid), r->order, 0, TPI_PF_INSTANT, 1,
                           intern(p, e->name ? e->name : "?"), intern(p, e->cat), 0, 0, 0, 0 };
        break;
    }
    case TPI_EV_COUNTER:
        add_counter(p, e->ts_ns, e->name ? e->name : "counter", e->value);
        break;
    case TPI_EV_MEMORY:
        add_memory(p, e);
        break;
    case TPI_EV_GPU:
        add_gpu(p, e);
        break;
    }
}

static void pf_thread_name(tpi_sink *k, uint32_t tid, const char *name)
{
    pf_sink *p = (pf_sink *)k;
    pf_seq *s = &p->seqs[seq_index(p, tid)];
    if (s->tid != tid || !name || strcmp(s->name, name) == 0)
        return;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->name_changed = 1;
}

/* ---- writing -------------------------------------------------------------------- */

static int cmp_rec(const void *a, const void *b)
{
    const pf_rec *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->phase != y->phase)
        return x->phase < y->phase ? -1 : 1;
    if (x->depth_key != y->depth_key)
        return x->depth_key < y->depth_key ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Marks iid sent on s; returns 1 when it was not sent before. */
static int first_use(pf_seq *s, uint32_t iid, unsigned char bit)
{
    if (iid >= s->sent_cap) {
        size_t cap = s->sent_cap ? s->sent_cap : 256;
        while (cap <= iid)
            cap *= 2;
        unsigned char *n = realloc(s->sent, cap);
        if (!n)
            return 1;  /* re-sending a definition is harmless */
        memset(n + s->sent_cap, 0, cap - s->sent_cap);
        s->sent = n;
        s->sent_cap = cap;
    }
    if (s->sent[iid] & bit)
        return 0;
    s->sent[iid] |= bit;
    return 1;
}

static void start_seq(pf_sink *p, pf_seq *s, uint64_t abs)
{
    const tpi_sink_env *env = p->base.env;
    if (s->tid)
        tpi_pf_thread_track(&p->pending, s->seq_id, s->uuid, process_uuid(p), env->pid, s->tid,
                            s->name);
    tpi_pf_sequence_start(&p->pending, s->seq_id, s->uuid, abs);
    s->started = 1;
    s->name_changed = 0;
    s->last_abs = abs;
    if (s->sent)
        memset(s->sent, 0, s->sent_cap);
}

static void write_rec(pf_sink *p, const pf_rec *r)
{
    pf_seq *s = &p->seqs[r->seq];
    uint64_t abs = p->base.env->mono_base_ns + r->ts;
    if (!s->started)
        start_seq(p, s, abs);
    else if (s->name_changed && s->tid) {
        tpi_pf_thread_track(&p->pending, s->seq_id, s->uuid, process_uuid(p), p->base.env->pid,
                            s->tid, s->name);
        s->name_changed = 0;
    }
    tpi_pf_event e = { .seq = s->seq_id, .type = r->type, .name_iid = r->name_iid,
                       .cat_iid = r->cat_iid, .value = r->value };
    if (r->args && r->args <= p->texts.len)
        e.args = p->texts.data + r->args - 1;
    if (r->text && r->text <= p->texts.len)
        e.name_str = p->texts.data + r->text - 1;
    e.incremental = abs >= s->last_abs;
    e.ts = e.incremental ? abs - s->last_abs : abs;
    if (e.incremental)
        s->last_abs = abs;
    if (r->name_iid && first_use(s, r->name_iid, 1)) {
        e.new_name_iid = r->name_iid;
        e.new_name = p->iid_text[r->name_iid];
    }
    if (r->cat_iid && first_use(s, r->cat_iid, 2)) {
        e.new_cat_iid = r->cat_iid;
        e.new_cat = p->iid_text[r->cat_iid];
    }
    if (r->type == TPI_PF_COUNTER) {
        e.track = PF_COUNTER_UUID_BASE + r->counter;
        if (!p->counter_sent[r->counter]) {
            tpi_pf_counter_track(&p->pending, PF_PROCESS_SEQ, e.track, process_uuid(p),
                                 p->counter_names[r->counter]);
            p->counter_sent[r->counter] = 1;
        }
    }
    tpi_pf_track_event(&p->pending, &e);
}

/* Writes `pending` to the file, as one compressed chunk when zlib is there. */
static void write_pending(pf_sink *p)
{
    if (p->base.failed || !p->f || p->pending.len == 0)
        return;
    const void *data = p->pending.data;
    size_t len = p->pending.len;
#ifdef TP_HAVE_ZLIB
    uLongf zlen = compressBound((uLong)len);
    tpu_buf_reset(&p->out);
    if (p->compress && tpu_buf_reserve(&p->out, zlen + 16) == 0 &&
        compress2((Bytef *)p->out.data, &zlen, (const Bytef *)data, (uLong)len, 1) == Z_OK) {
        tpu_buf z = { 0 };
        tpi_pf_compressed(&z, p->out.data, zlen);
        tpu_buf_reset(&p->out);
        tpu_buf_append(&p->out, z.data, z.len);
        tpu_buf_free(&z);
        data = p->out.data;
        len = p->out.len;
    }
#endif
    if (p->pending.oom || p->out.oom) {
        tpi_sink_fail(&p->base, "out of memory writing", p->path, ENOMEM);
    } else if (fwrite(data, 1, len, p->f) != len || fflush(p->f) != 0) {
        tpi_sink_fail(&p->base, "cannot write", p->path, errno);
    }
    tpu_buf_reset(&p->pending);
}

static void emit_recs(pf_sink *p)
{
    qsort(p->recs, p->n_recs, sizeof *p->recs, cmp_rec);
    for (size_t i = 0; i < p->n_recs && !p->base.failed; i++) {
        write_rec(p, &p->recs[i]);
        if (p->pending.len >= PF_CHUNK)
            write_pending(p);
    }
    p->n_recs = 0;
    tpu_buf_reset(&p->texts);
    p->texts.oom = 0;
}

static void pf_flush(tpi_sink *k)
{
    pf_sink *p = (pf_sink *)k;
    if (k->failed || !p->active)
        return;
    emit_recs(p);
}

static int pf_window_begin(tpi_sink *k, const tpi_window *w)
{
    pf_sink *p = (pf_sink *)k;
    const tpi_sink_env *env = k->env;
    if (k->failed)
        return -1;
    snprintf(p->path, sizeof p->path, "%s.perfetto-trace", w->stem);
    p->f = tpi_sink_fopen(p->path, "wb");
    if (!p->f) {
        tpi_sink_fail(k, "cannot open", p->path, errno);
        return -1;
    }
    p->active = 1;
    p->n_recs = 0;
    for (size_t i = 0; i < p->n_seqs; i++)
        p->seqs[i].started = 0;
    if (p->counter_sent)
        memset(p->counter_sent, 0, p->n_counters);
    char pname[160];
    if (env->rank >= 0)
        snprintf(pname, sizeof pname, "trainprof %s rank %d", env->host ? env->host : "", env->rank);
    else
        snprintf(pname, sizeof pname, "trainprof %s", env->host ? env->host : "");
    seq_index(p, 0); /* the process sequence is always index 0 */
    tpi_pf_clock_header(&p->pending, PF_PROCESS_SEQ, env->mono_base_ns, env->wall_base_ns);
    tpi_pf_process_track(&p->pending, PF_PROCESS_SEQ, process_uuid(p), env->pid, pname);
    return 0;
}

static void drop_marker(pf_sink *p, uint64_t dropped)
{
    char text[96];
    snprintf(text, sizeof text, "trainprof: %llu events dropped (buffer full)",
             (unsigned long long)dropped);
    pf_seq *s = &p->seqs[0];
    uint64_t abs = p->base.env->mono_base_ns + p->last_ts;
    if (!s->started)
        start_seq(p, s, abs);
    tpi_pf_event e = { .seq = s->seq_id, .type = TPI_PF_INSTANT, .name_str = text,
                       .incremental = abs >= s->last_abs };
    e.ts = e.incremental ? abs - s->last_abs : abs;
    if (e.incremental)
        s->last_abs = abs;
    tpi_pf_track_event(&p->pending, &e);
}

static int pf_window_end(tpi_sink *k, const tpi_window *w, uint64_t dropped)
{
    pf_sink *p = (pf_sink *)k;
    (void)w;
    if (!p->active)
        return -1;
    if (!k->failed) {
        emit_recs(p);
        if (dropped)
            drop_marker(p, dropped);
        write_pending(p);
    }
    p->active = 0;
    tpu_buf_reset(&p->pending);
    if (p->f && tpi_sink_fclose(p->f) != 0 && !k->failed)
        tpi_sink_fail(k, "cannot close", p->path, errno);
    p->f = NULL;
    return k->failed ? -1 : 0;
}

static void pf_destroy(tpi_sink *k)
{
    pf_sink *p = (pf_sink *)k;
    if (p->f)
        tpi_sink_fclose(p->f);
    for (size_t i = 0; i < p->n_seqs; i++)
        free(p->seqs[i].sent);
    for (size_t i = 1; i <= p->n_iids; i++)
        free(p->iid_text[i]);
    for (size_t i = 0; i < p->n_counters; i++)
        free(p->counter_names[i]);
    free(p->seqs);
    free(p->iid_text);
    free(p->counter_names);
    free(p->counter_sent);
    free(p->recs);
    tpi_strmap_free(&p->interned);
    tpi_strmap_free(&p->counters);
    tpu_buf_free(&p->pending);
    tpu_buf_free(&p->out);
    tpu_buf_free(&p->texts);
    free(p);
}

static const tpi_sink_ops pf_ops = {
    .name = "perfetto", .window_begin = pf_window_begin, .thread_name = pf_thread_name,
    .event = pf_event, .flush = pf_flush, .window_end = pf_window_end, .destroy = pf_destroy,
};

tpi_sink *tpi_sink_perfetto_new(const tpi_sink_env *env)
{
    if (!env || !env->settings || !(env->settings->trace_formats & TPI_TRACE_PERFETTO))
        return NULL;
    pf_sink *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->base.ops = &pf_ops;
    p->base.env = env;
    const char *z = getenv("TRAINPROF_PERFETTO_COMPRESS");
    p->compress = !(z && strcmp(z, "0") == 0);
    return &p->base;
}
