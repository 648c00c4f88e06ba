/*
 * stacks.c - <window stem>.stacks.txt in flamegraph "folded" format, one
 * line per distinct zone path with its self time in microseconds:
 *     ProfilerStep#3;forward;linear 1234
 * built from the slices of a trace window (tpi_event.stack / depth /
 * self_ns), so it costs one hash update per slice and nothing on the
 * training thread. Paths are aggregated by name ids while the window runs
 * and turned into text at window end, when every enclosing zone's name has
 * been seen. Lines are sorted, so equal runs give equal files. Frames keep
 * their exact names (';' becomes ':', newlines become spaces). Paths whose
 * self time rounds to 0 us are left out (flamegraph tools ignore them).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
    tpi_strmap paths;      /* "id,id,id" -> index in self_ns */
    uint64_t *self_ns;
    size_t n_paths, cap_paths;
    int active;
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
    uint32_t idx;
    if (tpi_strmap_get(&s->paths, key, &idx)) {
        s->self_ns[idx] += self_ns;
        return;
    }
    if (s->n_paths == s->cap_paths) {
        size_t cap = s->cap_paths ? s->cap_paths * 2 : 256;
        uint64_t *p = realloc(s->self_ns, cap * sizeof *p);
        if (!p)
            return;
        s->self_ns = p;
        s->cap_paths = cap;
    }
    if (tpi_strmap_put(&s->paths, key, (uint32_t)s->n_paths) != 0)
        return;
    s->self_ns[s->n_paths++] = self_ns;
}

static void stk_event(tpi_sink *k, const tpi_event *e)
{
    stk_sink *s = (stk_sink *)k;
    if (k->failed || !s->active || e->kind != TPI_EV_SLICE)
        return;
    char key[1024];
    size_t len = 0;
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
    tpi_strmap_free(&s->paths);
    s->n_paths = 0;
    s->active = 1;
    return 0;
}

/* Appends one frame name, made safe for the folded format. */
static void put_frame(tpu_buf *b, const char *name)
{
    for (const char *p = name; *p; p++)
        tpu_buf_putc(b, *p == ';' ? ':' : (*p == '\n' || *p == '\r') ? ' ' : *p);
}

static int cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Renders every path of the window as a folded line (malloc'd strings). */
static size_t render_lines(stk_sink *s, char **lines)
{
    size_t n = 0;
    tpu_buf b = { 0 };
    for (size_t i = 0; i < s->paths.cap; i++) {
        const char *key = s->paths.keys[i];
        if (!key)
            continue;
        uint64_t us = (s->self_ns[s->paths.vals[i]] + 500) / 1000;
        if (us == 0)
            continue;
        tpu_buf_reset(&b);
        for (const char *p = key; *p;) {
            char *end;
            uint32_t id = (uint32_t)strtoul(p, &end, 16);
            if (b.len)
                tpu_buf_putc(&b, ';');
            put_frame(&b, frame_name(s, id));
            p = *end == ',' ? end + 1 : end;
        }
        tpu_buf_printf(&b, " %" PRIu64 "\n", us);
        lines[n++] = tpu_buf_detach(&b);
    }
    tpu_buf_free(&b);
    return n;
}

static int stk_window_end(tpi_sink *k, const tpi_window *w, uint64_t dropped)
{
    stk_sink *s = (stk_sink *)k;
    (void)w;
    (void)dropped;
    if (k->failed || !s->active)
        return -1;
    s->active = 0;
    char **lines = calloc(s->n_paths + 1, sizeof *lines);
    if (!lines) {
        tpi_sink_fail(k, "out of memory writing", s->path, ENOMEM);
        return -1;
    }
    size_t n = render_lines(s, lines);
    qsort(lines, n, sizeof *lines, cmp_lines);
    tpu_buf out = { 0 };
    for (size_t i = 0; i < n; i++) {
        tpu_buf_puts(&out, lines[i] ? lines[i] : "");
        free(lines[i]);
    }
    free(lines);
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
    for (size_t i = 0; i < s->n_by_id; i++)
        free(s->by_id[i]);
    for (size_t i = 0; i < s->n_synth; i++)
        free(s->synth_names[i]);
    free(s->by_id);
    free(s->synth_names);
    free(s->self_ns);
    tpi_strmap_free(&s->synth);
    tpi_strmap_free(&s->paths);
    free(s);
}

static const tpi_sink_ops stk_ops = {
    .name = "stacks", .window_begin = stk_window_begin, .event = stk_event,
    .window_end = stk_window_end, .destroy = stk_destroy,
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
