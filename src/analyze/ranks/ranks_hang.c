/* ranks_hang.c - which rank a hung job waits for: each rank's last `hang`
 * capture (captures.json, docs/CAPTURES.md) and its dump (.hang.txt: the
 * open zones and every thread's Python stack), read after the fact.
 *
 * A rank waits in a collective when a frame near the top of one of its
 * threads' Python stacks, or its innermost open zone, is a collective
 * (all_reduce, barrier, ...). The ranks that did not arrive are those
 * behind the others (a lower step when the dump was written) or, at the
 * same step, those not in a collective while the others are.
 */
#include "analyze/ranks/ranks.h"
#include "analyze/json/json_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DUMP_BYTES ((size_t)4 << 20)
#define TOP_FRAMES 8    /* frames from the top of a stack that count as "waiting in" */

static char *read_file(const char *path, size_t cap, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(cap + 1);
    if (!buf) abort();
    *n = fread(buf, 1, cap, f);
    fclose(f);
    buf[*n] = '\0';
    return buf;
}

/* A collective by its name: one of torch.distributed's (exactly: a user's
 * "stall_before_all_reduce" is not one), or a communication library's
 * prefix. */
static bool is_collective(const char *name, size_t n)
{
    static const char *const words[] = { "all_reduce", "allreduce", "all_gather", "allgather",
                                         "all_gather_into_tensor", "reduce_scatter",
                                         "reduce_scatter_tensor", "all_to_all", "alltoall",
                                         "all_to_all_single", "broadcast", "barrier",
                                         "monitored_barrier", "irecv", "isend", "recv", "send",
                                         "gather", "scatter", "reduce" };
    static const char *const prefixes[] = { "nccl:", "gloo:", "c10d::", "ncclKernel", "ncclDevKernel" };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == n && memcmp(name, words[i], n) == 0) return true;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t k = strlen(prefixes[i]);
        if (n >= k && memcmp(name, prefixes[i], k) == 0) return true;
    }
    return false;
}

/* Frames of the library and the interpreter (the line up to eol): not
 * the user's code. */
static bool is_library_frame(const char *line, const char *eol)
{
    static const char *const marks[] = { "/site-packages/", "/dist-packages/", "/lib/python3",
                                         "/trainprof/", "<frozen" };
    size_t n = (size_t)(eol - line);
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        if (memmem(line, n, marks[i], strlen(marks[i]))) return true;
    return false;
}

/* `  File "path", line N in func` -> "func (file.py:N)" into out. */
static void frame_label(const char *line, const char *eol, char *out, size_t cap)
{
    const char *q1 = memchr(line, '"', (size_t)(eol - line));
    const char *q2 = q1 ? memchr(q1 + 1, '"', (size_t)(eol - q1 - 1)) : NULL;
    const char *ln = q2 ? strstr(q2, "line ") : NULL;
    const char *in = ln && ln < eol ? strstr(ln, " in ") : NULL;
    if (!q2 || !in || in >= eol) { snprintf(out, cap, "%.*s", (int)(eol - line), line); return; }
    const char *base = q2;
    while (base > q1 + 1 && base[-1] != '/') base--;
    long lineno = strtol(ln + 5, NULL, 10);
    snprintf(out, cap, "%.*s (%.*s:%ld)", (int)(eol - in - 4), in + 4, (int)(q2 - base), base, lineno);
}

/* What one thread's stack shows. */
typedef struct stack_view {
    bool waiting;          /* a frame near the top is a collective */
    char waiting_in[160];
    char user[200];        /* its innermost frame of the program's own code */
} stack_view;

/* A frame "  File "path", line N in func" up to eol is torch.distributed's
 * or a collective by name. */
static bool frame_is_collective(const char *p, const char *eol)
{
    const char *in = strstr(p, " in ");
    if (!in || in >= eol) return false;
    if (memmem(p, (size_t)(in - p), "torch/distributed/", 18)) return true;
    return is_collective(in + 4, (size_t)(eol - in - 4));
}

/* One thread's stack in the dump: its frames (most recent first) from p
 * to the first line that is not a frame. */
static const char *read_stack(const char *p, const char *end, stack_view *v)
{
    int depth = 0;
    memset(v, 0, sizeof *v);
    while (p < end && strncmp(p, "  File \"", 8) == 0) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        if (depth < TOP_FRAMES && !v->waiting && frame_is_collective(p, eol)) {
            v->waiting = true;
            frame_label(p, eol, v->waiting_in, sizeof v->waiting_in);
        }
        if (!v->user[0] && !is_library_frame(p, eol)) frame_label(p, eol, v->user, sizeof v->user);
        depth++;
        p = eol + 1;
    }
    return p;
}

/* Every Python thread's stack: the rank waits in a collective when one of
 * them does (where: that thread's own code); else where is the first
 * thread in the program's own code. */
static void read_stacks(const char *py, const char *end, tpa_rank_hang *h)
{
    char first_user[200] = "";
    for (const char *p = py; p && p < end;) {
        const char *hdr = strstr(p, "(most recent call first):\n");
        if (!hdr) break;
        stack_view v;
        p = read_stack(hdr + strlen("(most recent call first):\n"), end, &v);
        if (v.waiting && !h->in_collective) {
            h->in_collective = true;
            snprintf(h->waiting_in, sizeof h->waiting_in, "%s", v.waiting_in);
            snprintf(h->where, sizeof h->where, "%s", v.user);
        } else if (v.waiting && !h->where[0]) {  /* the open zone said so first: the frame says more */
            snprintf(h->waiting_in, sizeof h->waiting_in, "%s", v.waiting_in);
            snprintf(h->where, sizeof h->where, "%s", v.user);
        }
        if (!first_user[0] && v.user[0]) snprintf(first_user, sizeof first_user, "%s", v.user);
    }
    if (!h->where[0]) snprintf(h->where, sizeof h->where, "%s", first_user);
}

/* What the dump shows: the innermost open zone of the step's thread and
 * every Python thread's stack. */
static void read_dump(const char *text, size_t n, tpa_rank_hang *h)
{
    const char *end = text + n;
    const char *zones = strstr(text, "== trainprof: zones open");
    const char *step = zones ? strstr(zones, "\nthread ") : NULL;
    if (step && step < end) {  /* the first thread line with zones: "thread T "name": a > b (open x s)" */
        for (const char *p = step + 1; p < end && strncmp(p, "thread ", 7) == 0;) {
            const char *eol = memchr(p, '\n', (size_t)(end - p));
            if (!eol) eol = end;
            const char *last = NULL;
            for (const char *q = p; q < eol; q++)
                if (q[0] == ' ' && q[1] == '>' && q[2] == ' ') last = q + 3;
            const char *colon = memchr(p, ':', (size_t)(eol - p));
            if (!last && colon && strncmp(colon, ": no zone open", 14) != 0) last = colon + 2;
            if (last) {
                const char *open = strstr(last, " (open");
                size_t k = open && open < eol ? (size_t)(open - last) : (size_t)(eol - last);
                snprintf(h->zone, sizeof h->zone, "%.*s", (int)k, last);
                if (is_collective(last, k)) {
                    h->in_collective = true;
                    snprintf(h->waiting_in, sizeof h->waiting_in, "zone %.*s", (int)k, last);
                }
                break;
            }
            p = eol + 1;
        }
    }
    const char *py = strstr(text, "== Python:");
    if (py) read_stacks(py, end, h);
    h->has_stacks = py != NULL;
}

static const char *file_ending(const tpa_capture *c, const char *suffix)
{
    size_t k = strlen(suffix);
    for (size_t i = 0; i < c->n_files; i++) {
        size_t n = strlen(c->files[i]);
        if (n >= k && strcmp(c->files[i] + n - k, suffix) == 0) return c->files[i];
    }
    return NULL;
}

/* The rank's last hang capture (and, without one, its last exception). */
static void read_rank(const char *dir, int64_t rank_hint, tpa_rank_hang *h)
{
    memset(h, 0, sizeof *h);
    h->rank = rank_hint;
    h->step = -1;
    tpa_captures caps;
    if (tpa_captures_read(dir, &caps) == 0) return;
    h->has_captures = true;
    if (caps.rank >= 0) h->rank = caps.rank;
    for (size_t i = 0; i < caps.n; i++) {
        const tpa_capture *c = &caps.v[i];
        bool hang = strcmp(c->reason, "hang") == 0;
        if (!hang && (strcmp(c->reason, "exception") != 0 || h->hang)) continue;
        h->hang = hang;
        snprintf(h->reason, sizeof h->reason, "%s", c->reason);
        h->step = c->step;
        snprintf(h->detail, sizeof h->detail, "%s", c->detail);
        const char *dump = hang ? file_ending(c, ".hang.txt") : NULL;
        snprintf(h->dump, sizeof h->dump, "%s", dump ? dump : "");
    }
    tpa_captures_free(&caps);
    if (h->hang && h->dump[0]) {
        char path[4200];
        size_t n;
        snprintf(path, sizeof path, "%s/%s", dir, h->dump);
        char *text = read_file(path, MAX_DUMP_BYTES, &n);
        if (text) read_dump(text, n, h);
        free(text);
    }
}

static int cmp_rank(const void *a, const void *b)
{
    const tpa_rank_hang *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Behind the others, or not in a collective they wait in. */
static void find_late(tpa_job_hang *j)
{
    int64_t max_step = -1;
    size_t waiting = 0, hung = 0;
    for (size_t i = 0; i < j->n; i++) {
        const tpa_rank_hang *h = &j->ranks[i];
        if (!h->hang) continue;
        hung++;
        waiting += h->in_collective;
        if (h->step > max_step) max_step = h->step;
    }
    j->hung = hung;
    if (!hung) return;
    for (size_t i = 0; i < j->n; i++) {
        tpa_rank_hang *h = &j->ranks[i];
        bool behind = h->hang && h->step < max_step;
        bool away = h->hang && !h->in_collective && waiting > 0;
        bool gone = !h->hang && h->reason[0];  /* it raised: the others wait for it */
        h->late = behind || away || gone;
        j->n_late += h->late;
    }
}

int tpa_job_hang_read(const tpa_rank_input *in, size_t n, tpa_job_hang *out)
{
    memset(out, 0, sizeof *out);
    if (!n) return 0;
    out->ranks = calloc(n, sizeof *out->ranks);
    if (!out->ranks) abort();
    for (size_t i = 0; i < n; i++) {
        if (!tpa_is_dir(in[i].path)) continue;
        tpa_rank_hang *h = &out->ranks[out->n];
        read_rank(in[i].path, in[i].rank_hint, h);
        if (h->has_captures) out->n++;
    }
    qsort(out->ranks, out->n, sizeof *out->ranks, cmp_rank);
    find_late(out);
    return 0;
}

void tpa_job_hang_free(tpa_job_hang *h)
{
    free(h->ranks);
    memset(h, 0, sizeof *h);
}
