/*
 * stacks.c - <window stem>.stacks.txt in flamegraph "folded" format, one
 * line per distinct zone path with its self time in microseconds:
 *     ProfilerStep#3;forward;linear 1234
 * built from the slices of a trace window (tpi_event.stack / depth /
 * self_ns), so it costs one hash update per slice and nothing on the
 * training thread. Paths are aggregated by name ids (per thread and step)
 * while the window runs and turned into text at window end, when every
 * enclosing zone's name has been seen; zones of the thread that ends steps
 * sit under their ProfilerStep#N frame, whose own line is the step time not
 * spent in any zone. Lines are sorted, so equal runs give equal files. Frames keep
 * their exact names (';' becomes ':', newlines become spaces). Paths whose
 * self time rounds to 0 us are left out (flamegraph tools ignore them).
 *
 * with_stack: native (2) adds <stem>.native.stacks.txt: the window arms the
 * SIGPROF sampler of native_stacks.c, each flush drains its ring up to the
 * latest event time seen, and window end keeps the samples of the threads
 * that recorded events in the window, between its first and last event.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sink/native_stacks.h"
#include "sink/sink.h"
#include "sink/strmap.h"
#include "util/buf.h"
#include "util/fileio.h"

/* Falls back to the core's registry for ids no event named (weak: unit
 * tests link the sinks without the core). */
#pragma weak tpi_names_get

#define SYNTH_BIT 0x80000000u  /* ids given here to names without a name_id */
#define MAX_DIRECT_ID (1u << 22)

typedef struct stk_sink {
    tpi_sink base;
    char path[1100];
    char **by_id;          /* name_id -> name seen in events */
    size_t n_by_id;
    tpi_strmap synth;      /* name -> synthetic id, for name_id 0 */
    char **synth_names;
    size_t n_synth;
    tpi_strsum paths;      /* see stk_event -> self ns */
    tpi_strsum top;        /* "<tid>:<step>" -> time in depth-0 zones of that thread and step */
    tpi_strmap steps;      /* "<tid>:<step>" -> frame id of the step slice's name */
    int active;
    /* native stacks (with_stack 2) */
    tpi_native *nat;       /* NULL: not asked for, or the sampler is unavailable */
    int nat_tried;
    char nat_path[1100];
    tpi_strmap tids;       /* "<tid>" of threads with events in the window */
    tpi_strmap tnames;     /* "<tid>" -> index in tname */
    char **tname;
    size_t n_tname;
    uint64_t t_min, t_max; /* event times of the window (session ns) */
    uint64_t nat_dropped;
} stk_sink;

static void remember_id(stk_sink *s, uint32_t id, const char *name)
{
    if (!name || id == 0 || id >= MAX_DIRECT_ID)
        return;
    if (id >= s->n_by_id) {
        size_t n = s->n_by_id ? s->n_by_id : 64;
        while (n <= id)
            n *= 2;
        char **p = realloc(s->by_id, n * sizeof *p);
        if (!p)
            return;
        memset(p + s->n_by_id, 0, (n - s->n_by_id) * sizeof *p);
        s->by_id = p;
        s->n_by_id = n;
    }
    if (!s->by_id[id])
        s->by_id[id] = strdup(name);
}

/* The id that stands for an event's own frame. */
static uint32_t frame_id(stk_sink *s, const tpi_event *e)
{
    if (e->name_id && e->name_id < MAX_DIRECT_ID) {
        remember_id(s, e->name_id, e->name);
        return e->name_id;
    }
    const char *name = e->name ? e->name : "?";
    uint32_t id;
    if (tpi_strmap_get(&s->synth, name, &id))
        return id;
    char **p = realloc(s->synth_names, (s->n_synth + 1) * sizeof *p);
    if (!p)
        return 0;
    s->synth_names = p;
    p[s->n_synth] = strdup(name);
    id = SYNTH_BIT | (uint32_t)s->n_synth++;
    tpi_strmap_put(&s->synth, name, id);
    return id;
}

static const char *frame_name(const stk_sink *s, uint32_t id)
{
    if (id & SYNTH_BIT) {
        size_t i = id & ~SYNTH_BIT;
        return i < s->n_synth && s->synth_names[i] ? s->synth_names[i] : "?";
    }
    if (id < s->n_by_id && s->by_id[id])
        return s->by_id[id];
    const char *n = tpi_names_get ? tpi_names_get(id) : NULL;
    return n ? n : "?";
}

static void add_path(stk_sink *s, const char *key, uint64_t self_ns)
{
    tpi_strsum_add(&s->paths, key, self_ns);
}

/*
 * Keys: "<tid>:<step>|<id>,<id>,...<own id>" for zones, "<tid>:<step>|S<id>"
 * for a step slice. The core's step slice is not in the zones' stacks and
 * its self_ns is its whole duration, so the sink prefixes the zones of the
 * step's thread with the step name and takes their depth-0 time off the
 * step's own line at window end.
 */
static void nat_event(stk_sink *s, const tpi_event *e)
{
    char t[16];
    snprintf(t, sizeof t, "%" PRIx32, e->tid);
    tpi_strmap_put(&s->tids, t, 1);
    uint64_t end = e->ts_ns + (e->kind == TPI_EV_SLICE ? e->dur_ns : 0);
    if (e->ts_ns < s->t_min)
        s->t_min = e->ts_ns;
    if (end > s->t_max)
        s->t_max = end;
}

static void stk_event(tpi_sink *k, const tpi_event *e)
{
    stk_sink *s = (stk_sink *)k;
    if (k->failed || !s->active || e->kind == TPI_EV_GPU)
        return;
    if (s->nat)
        nat_event(s, e);
    if (e->kind != TPI_EV_SLICE)
        return;
    char key[1024], ts[48];
    snprintf(ts, sizeof ts, "%" PRIx32 ":%" PRIx64, e->tid, e->step);
    size_t len = (size_t)snprintf(key, sizeof key, "%s|", ts);
    if (e->is_step) {
        uint32_t id = frame_id(s, e);
        tpi_strmap_put(&s->steps, ts, id);
        snprintf(key + len, sizeof key - len, "S%" PRIx32, id);
        add_path(s, key, e->dur_ns);
        return;
    }
    if (e->depth == 0)
        tpi_strsum_add(&s->top, ts, e->dur_ns);
    for (int i = 0; e->stack && i < e->depth && len + 12 < sizeof key; i++)
        len += (size_t)snprintf(key + len, sizeof key - len, "%" PRIx32 ",", e->stack[i]);
    snprintf(key + len, sizeof key - len, "%" PRIx32, frame_id(s, e));
    add_path(s, key, e->self_ns);
}

static int stk_window_begin(tpi_sink *k, const tpi_window *w)
{
    stk_sink *s = (stk_sink *)k;
    if (k->failed)
        return -1;
    if (snprintf(s->path, sizeof s->path, "%s.stacks.txt", w->stem) >= (int)sizeof s->path) {
        tpi_sink_fail(k, "path too long", w->stem, ENAMETOOLONG);
        return -1;
    }
    tpi_strsum_free(&s->paths);
    tpi_strsum_free(&s->top);
    tpi_strmap_free(&s->steps);
    s->active = 1;
    if (k->env->settings->with_stack >= 2 && !s->nat_tried) {
        s->nat_tried = 1;
        s->nat = tpi_native_new();
    }
    if (s->nat) {
        snprintf(s->nat_path, sizeof s->nat_path, "%s.native.stacks.txt", w->stem);
        tpi_strmap_free(&s->tids);
        s->t_min = UINT64_MAX;
        s->t_max = 0;
        if (tpi_native_arm(s->nat) != 0)
            fprintf(stderr, "trainprof: warning: cannot arm the native stack sampler: %s\n",
                    strerror(errno));
    }
    return 0;
}

static void stk_thread_name(tpi_sink *k, uint32_t tid, const char *name)
{
    stk_sink *s = (stk_sink *)k;
    char t[16];
    uint32_t idx;
    if (!s->nat || !name)
        return;
    snprintf(t, sizeof t, "%" PRIx32, tid);
    if (tpi_strmap_get(&s->tnames, t, &idx)) {
        char *c = strdup(name);
        if (c) {
            free(s->tname[idx]);
            s->tname[idx] = c;
        }
        return;
    }
    char **p = realloc(s->tname, (s->n_tname + 1) * sizeof *p);
    if (!p)
        return;
    s->tname = p;
    if ((p[s->n_tname] = strdup(name)) && tpi_strmap_put(&s->tnames, t, (uint32_t)s->n_tname) == 0)
        s->n_tname++;
    else
        free(p[s->n_tname]);
}

/* Session ns -> CLOCK_MONOTONIC ns, the sampler's clock. */
static uint64_t mono(const stk_sink *s, uint64_t ts)
{
    return s->base.env->mono_base_ns + ts;
}

static void stk_flush(tpi_sink *k)
{
    stk_sink *s = (stk_sink *)k;
    if (!k->failed && s->active && s->nat && s->t_max)
        tpi_native_drain(s->nat, mono(s, s->t_min), mono(s, s->t_max));
}

static int nat_keep(void *ctx, uint32_t tid)
{
    char t[16];
    uint32_t v;
    snprintf(t, sizeof t, "%" PRIx32, tid);
    return tpi_strmap_get(&((stk_sink *)ctx)->tids, t, &v);
}

static const char *nat_name(void *ctx, uint32_t tid)
{
    stk_sink *s = ctx;
    char t[16];
    uint32_t idx;
    snprintf(t, sizeof t, "%" PRIx32, tid);
    return tpi_strmap_get(&s->tnames, t, &idx) ? s->tname[idx] : NULL;
}

/* Disarms the sampler and writes the window's native stacks. */
static int nat_window_end(stk_sink *s)
{
    tpi_native_disarm(s->nat);
    if (s->t_max)
        tpi_native_drain(s->nat, mono(s, s->t_min), mono(s, s->t_max));
    tpi_native_drain(s->nat, UINT64_MAX, UINT64_MAX); /* after the window: dropped */
    uint64_t dropped = tpi_native_dropped(s->nat);
    if (dropped > s->nat_dropped)
        fprintf(stderr, "trainprof: warning: %" PRIu64 " native stack samples dropped (ring full)\n",
                dropped - s->nat_dropped);
    s->nat_dropped = dropped;
    tpu_buf out = { 0 };
    tpi_native_render(s->nat, nat_keep, nat_name, s, &out);
    char err[512];
    int rc = out.oom ? -1
                     : tpu_write_file_atomic(s->nat_path, out.data ? out.data : "", out.len, err,
                                             sizeof err);
    if (rc != 0)
        tpi_sink_fail(&s->base, "cannot write", s->nat_path, out.oom ? ENOMEM : errno);
    tpu_buf_free(&out);
    return rc;
}

/* Appends one frame name, made safe for the folded format. */
static void put_frame(tpu_buf *b, const char *name)
{
    for (const char *p = name; *p; p++)
        tpu_buf_putc(b, *p == ';' ? ':' : (*p == '\n' || *p == '\r') ? ' ' : *p);
}

/* Turns one key into its folded path in b; returns the self time. */
static uint64_t render_key(stk_sink *s, const char *key, uint64_t self_ns, tpu_buf *b)
{
    const char *bar = strchr(key, '|');
    char ts[48];
    uint32_t id;
    size_t tl = bar ? (size_t)(bar - key) : 0;
    snprintf(ts, sizeof ts, "%.*s", (int)(tl < sizeof ts ? tl : sizeof ts - 1), key);
    const char *p = bar ? bar + 1 : key;
    tpu_buf_reset(b);
    if (*p == 'S') {
        uint64_t children = tpi_strsum_get(&s->top, ts);
        put_frame(b, frame_name(s, (uint32_t)strtoul(p + 1, NULL, 16)));
        return self_ns > children ? self_ns - children : 0;
    }
    if (tpi_strmap_get(&s->steps, ts, &id))
        put_frame(b, frame_name(s, id));
    while (*p) {
        char *end;
        id = (uint32_t)strtoul(p, &end, 16);
        if (b->len)
            tpu_buf_putc(b, ';');
        put_frame(b, frame_name(s, id));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) /* malformed: stop */
            break;
    }
    return self_ns;
}

/* Folded lines of the window, merged and sorted, into out. */
static void render(stk_sink *s, tpu_buf *out)
{
    tpi_strsum lines = { 0 };
    tpu_buf b = { 0 };
    for (size_t i = 0; i < s->paths.map.cap; i++) {
        if (!s->paths.map.keys[i])
            continue;
        const char *key = s->paths.map.keys[i];
        uint64_t self = render_key(s, key, s->paths.v[s->paths.map.vals[i]], &b);
        tpi_strsum_add(&lines, tpu_buf_cstr(&b), self);
    }
    tpi_strsum_write(&lines, 1000, out);
    tpu_buf_free(&b);
    tpi_strsum_free(&lines);
}

static int stk_window_end(tpi_sink *k, const tpi_window *w, uint64_t dropped)
{
    stk_sink *s = (stk_sink *)k;
    (void)w;
    (void)dropped;
    if (s->nat && (k->failed || !s->active))
        tpi_native_disarm(s->nat);
    if (k->failed || !s->active)
        return -1;
    s->active = 0;
    if (s->nat && nat_window_end(s) != 0)
        return -1;
    tpu_buf out = { 0 };
    render(s, &out);
    char err[512];
    int rc = out.oom ? -1 : tpu_write_file_atomic(s->path, out.data ? out.data : "", out.len, err, sizeof err);
    if (rc != 0)
        tpi_sink_fail(k, "cannot write", s->path, out.oom ? ENOMEM : errno);
    tpu_buf_free(&out);
    return rc;
}

static void stk_destroy(tpi_sink *k)
{
    stk_sink *s = (stk_sink *)k;
    tpi_native_free(s->nat);
    for (size_t i = 0; i < s->n_tname; i++)
        free(s->tname[i]);
    free(s->tname);
    tpi_strmap_free(&s->tids);
    tpi_strmap_free(&s->tnames);
    for (size_t i = 0; i < s->n_by_id; i++)
        free(s->by_id[i]);
    for (size_t i = 0; i < s->n_synth; i++)
        free(s->synth_names[i]);
    free(s->by_id);
    free(s->synth_names);

    tpi_strmap_free(&s->synth);
    tpi_strsum_free(&s->paths);
    tpi_strsum_free(&s->top);
    tpi_strmap_free(&s->steps);
    free(s);
}

static const tpi_sink_ops stk_ops = {
    .name = "stacks", .window_begin = stk_window_begin, .thread_name = stk_thread_name,
    .event = stk_event, .flush = stk_flush, .window_end = stk_window_end,
    .destroy = stk_destroy,
};

tpi_sink *tpi_sink_stacks_new(const tpi_sink_env *env)
{
    if (!env || !env->settings || env->settings->with_stack < 1)
        return NULL;
    stk_sink *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->base.ops = &stk_ops;
    s->base.env = env;
    return &s->base;
}
