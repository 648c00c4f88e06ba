/* test_views_attrib_order.c - the attributor's output (every node and device
 * record it hands its visitors, as sorted text lines) is the same whatever
 * order the trace writes its events in, whether the args members come from
 * the parser or a walk, and whether chunks are nested on the feeding thread
 * or the nester thread (-j 2). Split from test_views_ops.c.
 */
#include "analyze/trace/trace.h"
#include "analyze/attrib/attrib.h"
#include "tp_test.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

/* the closing event of a hand-written trace, as test_views_ops.c writes it */
#define END "{\"ph\":\"i\",\"name\":\"end\",\"ts\":0,\"pid\":1,\"tid\":1}]}"

/* ---- what the attributor hands its visitors, as sorted text lines --------------------- */

static void line_node(void *user, const tpa_attrib *at, const tpa_at_node *n)
{
    uint32_t parent;
    tpu_buf_printf(user, "node %s [%s] %lld+%lld child %lld dev %lld/%lld in %s",
                   tpa_attrib_str(at, n->name, NULL), tpa_attrib_str(at, n->shapes, NULL),
                   (long long)n->start_ns, (long long)n->dur_ns, (long long)n->child_ns,
                   (long long)n->dev_self_ns, (long long)n->dev_total_ns,
                   tpa_attrib_str(at, tpa_attrib_module(at, n->module, &parent), NULL));
    /* tensor cores where there are any (the thread index depends on the write order: not shown) */
    if (n->tc_total_ns || n->tc_eligible)
        tpu_buf_printf(user, " tc %lld/%lld%s", (long long)n->tc_self_ns, (long long)n->tc_total_ns,
                       n->tc_eligible ? " eligible" : "");
    tpu_buf_printf(user, "\n");
}

static void line_gpu(void *user, const tpa_attrib *at, const tpa_at_gpu *g)
{
    tpu_buf_printf(user, "gpu %s at %lld op %s rt %s stream %lld grid %u,%u,%u block %u,%u,%u regs %lld "
                   "shm %lld bps %g wps %g%s\n", tpa_attrib_str(at, g->name, NULL), (long long)g->start_ns,
                   tpa_attrib_str(at, g->op, NULL), tpa_attrib_str(at, g->runtime, NULL), (long long)g->stream,
                   g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1], g->block[2],
                   (long long)g->regs, (long long)g->shmem, g->blocks_per_sm, g->warps_per_sm,
                   g->tensor_cores ? " tc" : "");
}

static int cmp_line(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The lines in sorted order (threads and device events come in file order). */
static char *sorted_lines(char *text)
{
    size_t n = 0, len = strlen(text);
    for (size_t i = 0; i < len; i++) n += text[i] == '\n';
    char **lines = malloc((n + 1) * sizeof *lines), *out = malloc(len + 1), *save = NULL;
    if (!lines || !out) abort();
    n = 0;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) lines[n++] = l;
    qsort(lines, n, sizeof *lines, cmp_line);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += (size_t)sprintf(out + k, "%s\n", lines[i]);
    out[k] = 0;
    free(lines);
    return out;
}

/* The attributor's output for text, as sorted lines; by_hand: each event
 * as if made by hand (raw only: its args are walked, not read from the
 * parser's spans). *chunked: the file needed more than one chunk. */
static char *attribute_text(const char *text, bool by_hand, bool *chunked)
{
    tpu_buf out = {0};
    tpa_attrib *at = tpa_attrib_new();
    tpa_at_visitor v = { &out, line_node, line_gpu };
    tpa_attrib_add_visitor(at, &v);
    tpa_error err;
    tpa_reader *r = tpa_reader_open_mem(text, strlen(text), &err);
    CHECK(r != NULL);
    tpa_event ev;
    while (r && tpa_reader_next(r, &ev, &err) > 0) {
        if (by_hand) {
            ev.args_marked = false;
            ev.v_args = (tpa_span32){ 0, 0 };
            ev.arg_seen = 0;
            ev.arg_dup = false;
            ev.v_arg = NULL;
        }
        tpa_attrib_feed(at, &ev, tpa_classify(&ev));
    }
    tpa_attrib_file_end(at);
    tpa_reader_close(r);
    if (chunked) *chunked = tpa_attrib_stats(at)->chunks > 0;
    tpa_attrib_free(at);
    char *lines = sorted_lines(tpu_buf_cstr(&out) ? out.data : (char *)"");
    tpu_buf_free(&out);
    return lines;
}

#define OP(ts, args) "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"pid\":1,\"tid\":1,\"ts\":" #ts \
    ",\"dur\":9,\"args\":{" args "}},"
#define RT(ts, args) "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"launch\",\"pid\":1,\"tid\":1,\"ts\":" \
    #ts ",\"dur\":1,\"args\":{" args "}},"
#define KN(ts, args) "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":" #ts \
    ",\"dur\":2,\"args\":{" args "}},"

/* The attributor reads the args members the parser noted (tpa_event_arg);
 * where a key repeats (a later one counts where the walk reaches it; a host
 * span's walk stops once it has its External id and shapes), or both
 * spellings of External id are there, or a launch configuration merges
 * from repeats, or values are not numbers, it gives what its walk gives. */
TP_TEST(args_spans_match_walk)
{
    static const char t[] = "{\"traceEvents\":["
        OP(0, "\"External id\":1,\"Input Dims\":[[2,3]]")
        OP(10, "\"External id\":2,\"External id\":3,\"Input Dims\":[[1]]")
        OP(20, "\"Input Dims\":[[4]],\"External id\":4,\"External id\":5")
        OP(30, "\"external id\":6,\"External id\":7")
        OP(40, "\"Input Dims\":[[1]],\"Input Dims\":[[2]],\"External id\":8")
        OP(50, "\"External id\":\"9\",\"correlation\":1,\"grid\":[1]")
        OP(60, "\"External id\":-3,\"Input Dims\":\"x\"")
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"pid\":1,\"tid\":1,\"ts\":70,\"dur\":9,"
        "\"args\":5,\"args\":{\"External id\":10}},"
        OP(80, "\"external id\":11,\"External id\":12")
        OP(90, "\"External id\":13")
        RT(1, "\"External id\":1,\"correlation\":100,\"grid\":[2,1,1],\"block\":[64],\"shared memory\":128")
        RT(11, "\"correlation\":101,\"correlation\":102,\"grid\":[1],\"grid\":[4,4,4]")
        RT(21, "\"correlation\":103,\"shared memory\":1,\"shared memory\":\"x\",\"block\":[3,3]")
        RT(31, "\"block\":[5],\"correlation\":104,\"External id\":6,\"external id\":7")
        RT(41, "\"correlation\":\"105\",\"grid\":[ 7 , 8 ],\"block\":[[1]]")
        KN(100, "\"External id\":1,\"stream\":7,\"correlation\":100,\"registers per thread\":32,"
                "\"shared memory\":0,\"blocks per SM\":0.5,\"warps per SM\":4,\"grid\":[8,1,1],\"block\":[128,1,1]")
        KN(110, "\"correlation\":102,\"correlation\":101,\"blocks per SM\":2.5,\"stream\":3,\"stream\":\"x\"")
        KN(120, "\"correlation\":103,\"grid\":[1,2],\"grid\":[5],\"registers per thread\":\"16\"")
        KN(130, "\"correlation\":104")
        KN(140, "\"correlation\":105,\"warps per SM\":\"1e1\",\"shared memory\":-5")
        KN(150, "\"External id\":8,\"external id\":9,\"blocks per SM\":1e-1")
        KN(160, "\"External id\":2,\"x\":{\"correlation\":100}")
        KN(170, "\"grid\":[9],\"External id\":5,\"stream\":2")
        KN(180, "\"External id\":12")
        KN(190, "\"external id\":14,\"External id\":13")
        KN(200, "\"stream\":7e1,\"registers per thread\":999999999999999,\"shared memory\":1234567890123456789,"
                "\"blocks per SM\":\"3\",\"warps per SM\":12.5")
        END;
    char *spans = attribute_text(t, false, NULL), *walk = attribute_text(t, true, NULL);
    CHECK_STR(spans, walk);
    /* and they are the walk's: a later repeat counts where the walk reaches it */
    CHECK(strstr(spans, "node op [[[1]]] 10000+9000 child 1000 dev 0/0 in \n") != NULL);   /* External id 3 */
    CHECK(strstr(spans, "node op [[[4]]] 20000+9000 child 1000 dev 2000/2000 in \n") != NULL); /* 4, not 5 */
    CHECK(strstr(spans, "gpu k at 160000 op  rt ") != NULL);                  /* no op has External id 2 */
    CHECK(strstr(spans, "gpu k at 170000 op  rt ") != NULL);                  /* ... nor 5 */
    CHECK(strstr(spans, "node op [] 50000+9000 child 0 dev 2000/2000 in \n") != NULL);  /* external id 9 */
    CHECK(strstr(spans, "node op [] 80000+9000 child 0 dev 2000/2000 in \n") != NULL);  /* 12, after 11 */
    CHECK(strstr(spans, "node op [] 90000+9000 child 0 dev 2000/2000 in \n") != NULL);  /* 13, after 14 */
    CHECK(strstr(spans, "gpu k at 120000 op op rt launch stream -1 grid 5,2,0 ") != NULL);
    CHECK(strstr(spans, "gpu k at 110000 op  rt  stream -1 ") != NULL);       /* correlation 101 vs 102 */
    /* numbers: quoted, with exponents, fractions, past 15 digits, negative */
    CHECK(strstr(spans, "gpu k at 100000 op op rt launch stream 7 grid 8,1,1 block 128,1,1 regs 32 shm 0 bps 0.5 wps 4\n"));
    CHECK(strstr(spans, " regs 16 shm -1 bps -1 wps -1\n"));                  /* "16" */
    CHECK(strstr(spans, "gpu k at 140000 op op rt launch stream -1 grid 7,8,0 block 0,0,0 regs -1 shm -1 bps -1 wps 10\n"));
    CHECK(strstr(spans, "gpu k at 150000 op op rt  stream -1 grid 0,0,0 block 0,0,0 regs -1 shm -1 bps 0.1 wps -1\n"));
    CHECK(strstr(spans, "gpu k at 200000 op  rt  stream 70 grid 0,0,0 block 0,0,0 regs 999999999999999 "
                        "shm 1234567890123457024 bps 3 wps 12.5\n"));  /* digit by digit in double */
    free(spans);
    free(walk);
}

/* One training-like trace: three host threads (steps, modules, operators,
 * runtime calls with correlations and External ids) and two streams of
 * kernels; written in the order given by perm (a permutation of the
 * events). */
typedef struct ev_text { int64_t ts; int thread; char s[240]; } ev_text;

static size_t gen_events(ev_text *e, size_t cap)
{
    size_t n = 0;
    unsigned corr = 1000;
    for (int step = 0; step < 12 && n + 40 < cap; step++)
        for (int th = 0; th < 3; th++) {
            int64_t base = step * 4000 + th * 13;
            snprintf(e[n].s, sizeof e[n].s, "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\","
                     "\"pid\":1,\"tid\":%d,\"ts\":%lld,\"dur\":3000}", step, th, (long long)base);
            e[n].ts = base; e[n++].thread = th;
            snprintf(e[n].s, sizeof e[n].s, "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"nn.Module: Net_%d\","
                     "\"pid\":1,\"tid\":%d,\"ts\":%lld,\"dur\":2900}", th, th, (long long)base + 5);
            e[n].ts = base + 5; e[n++].thread = th;
            for (int op = 0; op < 6; op++) {
                int64_t t0 = base + 10 + op * 400;
                unsigned ext = (unsigned)(step * 100 + th * 10 + op);
                snprintf(e[n].s, sizeof e[n].s, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::op%d\","
                         "\"pid\":1,\"tid\":%d,\"ts\":%lld,\"dur\":%d,\"args\":{\"External id\":%u,"
                         "\"Input Dims\":[[%d]]}}", op % 4, th, (long long)t0, 300 - op, ext, op);
                e[n].ts = t0; e[n++].thread = th;
                snprintf(e[n].s, sizeof e[n].s, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::inner\","
                         "\"pid\":1,\"tid\":%d,\"ts\":%lld,\"dur\":50,\"args\":{\"External id\":%u}}",
                         th, (long long)t0 + 20, ext + 5000);
                e[n].ts = t0 + 20; e[n++].thread = th;
                snprintf(e[n].s, sizeof e[n].s, "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
                         "\"pid\":1,\"tid\":%d,\"ts\":%lld,\"dur\":10,\"args\":{\"External id\":%u,"
                         "\"correlation\":%u}}", th, (long long)t0 + 30, ext + 5000, corr);
                e[n].ts = t0 + 30; e[n++].thread = th;
                snprintf(e[n].s, sizeof e[n].s, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"kernel_%d\","
                         "\"pid\":0,\"tid\":%d,\"ts\":%lld,\"dur\":%d,\"args\":{\"device\":0,\"stream\":%d,"
                         "\"correlation\":%u,\"External id\":%u,\"grid\":[%d,1,1]}}", op, 7 + op % 2,
                         (long long)t0 + 100 + th, 20 + op, 7 + op % 2, corr, ext + 5000, op + 1);
                e[n].ts = t0 + 100 + th; e[n++].thread = 10 + op % 2;
                if (op == 2) {  /* launched by External id only */
                    snprintf(e[n].s, sizeof e[n].s, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"by_ext\","
                             "\"pid\":0,\"tid\":7,\"ts\":%lld,\"dur\":3,\"args\":{\"External id\":%u}}",
                             (long long)t0 + 150 + th, ext);
                    e[n].ts = t0 + 150 + th; e[n++].thread = 10;
                }
                corr++;
            }
        }
    return n;
}

static char *events_doc(const ev_text *e, const size_t *order, size_t n)
{
    tpu_buf b = {0};
    tpu_buf_puts(&b, "{\"traceEvents\":[");
    for (size_t i = 0; i < n; i++) {
        tpu_buf_puts(&b, e[order[i]].s);
        tpu_buf_puts(&b, ",\n");
    }
    tpu_buf_puts(&b, END);
    return tpu_buf_detach(&b);
}

static const ev_text *g_ev;
static int by_time(const void *a, const void *b)
{
    const ev_text *x = &g_ev[*(const size_t *)a], *y = &g_ev[*(const size_t *)b];
    return x->ts != y->ts ? (x->ts < y->ts ? -1 : 1) : (*(const size_t *)a < *(const size_t *)b ? -1 : 1);
}
static int by_thread(const void *a, const void *b)
{
    const ev_text *x = &g_ev[*(const size_t *)a], *y = &g_ev[*(const size_t *)b];
    return x->thread != y->thread ? x->thread - y->thread : by_time(a, b);
}

/* The generated events (g_ev) and an order of them, file order for now. */
static size_t *gen_order(size_t *n)
{
    static ev_text ev[1400];
    *n = gen_events(ev, sizeof ev / sizeof *ev);
    size_t *order = malloc(*n * sizeof *order);
    if (!order) abort();
    g_ev = ev;
    for (size_t i = 0; i < *n; i++) order[i] = i;
    return order;
}

/* Nothing depends on the order events are written in: in time order,
 * reversed, thread by thread, each step's and module's span written after
 * the spans inside it (far from its place), shuffled. */
TP_TEST(any_write_order)
{
    size_t n;
    size_t *order = gen_order(&n);
    const ev_text *ev = g_ev;
    qsort(order, n, sizeof *order, by_time);
    char *doc = events_doc(ev, order, n);
    bool chunked = false;
    char *want = attribute_text(doc, false, &chunked);
    free(doc);
    CHECK(chunked || strstr(want, "node aten::op1 [[[1]]] 423000+299000 child 50000 dev 0/21000 in nn.Module: Net_1\n"));
    CHECK(chunked || strstr(want, "node aten::inner [] 443000+50000 child 10000 dev 21000/21000 in nn.Module: Net_1\n"));
    CHECK(chunked || strstr(want, "gpu by_ext at 12960000 op aten::op2 rt  stream -1 "));
    for (int way = 0; way < 5; way++) {
        for (size_t i = 0; i < n; i++) order[i] = i;
        qsort(order, n, sizeof *order, by_time);
        if (way == 1) {
            for (size_t i = 0; i < n / 2; i++) { size_t t = order[i]; order[i] = order[n - 1 - i]; order[n - 1 - i] = t; }
        } else if (way == 2) {
            qsort(order, n, sizeof *order, by_thread);
        } else if (way == 3) {  /* each span that contains others moves after them */
            for (size_t i = 0; i + 1 < n; i++)
                if (strstr(ev[order[i]].s, "ProfilerStep") || strstr(ev[order[i]].s, "nn.Module")) {
                    size_t t = order[i], j = i;
                    for (; j + 1 < n && j < i + 30; j++) order[j] = order[j + 1];
                    order[j] = t;
                    i = j;
                }
        } else if (way == 4) {
            tp_test_shuffle(order, n, 12345);
        }
        doc = events_doc(ev, order, n);
        bool again_chunked = false;
        char *got = attribute_text(doc, false, &again_chunked);
        if (!chunked && !again_chunked) {  /* chunks (TP_SMALL_LIMITS) cut spans by arrival */
            CHECK_STR(got, want);
            if (strcmp(got, want)) fprintf(stderr, "write order %d differs\n", way);
        }
        free(got);
        free(doc);
    }
    free(want);
    free(order);
}


/* A file of many chunks gives the visitors the same nodes and device
 * records whether its chunks are nested on the feeding thread or on the
 * nester thread while the feed goes on (-j 2): the file's order decides
 * where chunks end, the thread does not. */
TP_TEST(nester_thread_same_output)
{
    size_t n;
    size_t *order = gen_order(&n);
    tp_test_shuffle(order, n, 777);
    char *doc = events_doc(g_ev, order, n);
    tpa_attrib_set_chunk_budget(97, 31);
    tpa_set_jobs(1);
    bool chunked = false;
    char *want = attribute_text(doc, false, &chunked);  /* one thread */
    CHECK(chunked);
    for (int round = 0; round < 3; round++) {
        tpa_set_jobs(2);
        char *got = attribute_text(doc, false, &chunked);
        tpa_set_jobs(1);
        CHECK_STR(got, want);
        free(got);
    }
    tpa_attrib_set_chunk_budget(0, 0);
    free(want);
    free(doc);
    free(order);
}

int main(void)
{
    RUN(args_spans_match_walk);
    RUN(any_write_order);
    RUN(nester_thread_same_output);
    return tp_test_finish();
}
