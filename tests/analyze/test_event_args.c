/* test_event_args.c - where the parser notes the args members the page's
 * collectors read (ev->arg_seen, ev->v_arg, tpa_event_arg): the first
 * occurrence in the event's first args object, as tpa_obj_find finds it,
 * at every chunk size and with `-j`; and the attributor reading those
 * spans gives what its walk over args gives (repeated keys included). */
#include "analyze/analyze.h"
#include "analyze/attrib.h"
#include "analyze/event_parse.h"
#include "analyze/parallel.h"
#include "tp_test.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the parser's spans ------------------------------------------------------------ */

/* One event and what each tpa_arg reads in it ("key=value text" pairs;
 * the rest absent). */
typedef struct arg_case {
    const char *event;
    const char *want[TPA_ARG_COUNT + 1];
    bool dup;
} arg_case;

static const arg_case CASES[] = {
    /* Kineto's kernel: every member, in the order it writes them */
    { "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":2,\"args\":{\"External id\":5,"
      "\"queued\":0,\"device\":0,\"context\":1,\"stream\":7,\"correlation\":9,\"registers per thread\":32,"
      "\"shared memory\":0,\"blocks per SM\":0.5,\"warps per SM\":4,\"grid\":[1, 2, 3],\"block\":[64,1,1],"
      "\"est. achieved occupancy %\":50}}",
      { "External id=5", "stream=7", "correlation=9", "registers per thread=32", "shared memory=0",
        "blocks per SM=0.5", "warps per SM=4", "grid=[1, 2, 3]", "block=[64,1,1]" }, false },
    /* another order; values of every shape */
    { "{\"args\":{\"block\":[2],\"correlation\":\"7\",\"Input Dims\":[[1, 2], []],\"External id\":3,"
      "\"stream\":null,\"grid\":{\"x\":1}},\"ph\":\"X\"}",
      { "block=[2]", "correlation=\"7\"", "Input Dims=[[1, 2], []]", "External id=3", "stream=null",
        "grid={\"x\":1}" }, false },
    /* a repeated key: the first counts, arg_dup says so */
    { "{\"args\":{\"correlation\":1,\"stream\":2,\"correlation\":3,\"stream\":4}}",
      { "correlation=1", "stream=2" }, true },
    /* both spellings of External id are two keys */
    { "{\"args\":{\"external id\":8,\"External id\":9}}", { "external id=8", "External id=9" }, false },
    /* keys compare as written: escapes are other keys */
    { "{\"args\":{\"External\\u0020id\":4,\"corr\\u0065lation\":5,\"stream\":1}}", { "stream=1" }, false },
    /* members of nested objects and arrays are not args' own */
    { "{\"args\":{\"x\":{\"correlation\":5,\"grid\":[1]},\"y\":[{\"stream\":1}],\"block\":[3]}}",
      { "block=[3]" }, false },
    /* args that is not an object; a later args object does not count */
    { "{\"args\":[{\"correlation\":1}],\"ts\":1}", { NULL }, false },
    { "{\"args\":5,\"args\":{\"correlation\":1}}", { NULL }, false },
    /* no args: the event's own members are not args */
    { "{\"ph\":\"X\",\"correlation\":3,\"stream\":1,\"name\":\"n\"}", { NULL }, false },
    { "{\"args\":{}}", { NULL }, false },
    /* two args objects: only the first one's members */
    { "{\"args\":{\"stream\":1},\"args\":{\"stream\":2,\"correlation\":3}}", { "stream=1" }, false },
    /* strings with escapes and brackets, spaces around */
    { "{ \"args\" : { \"Input Dims\" : \"a\\\"b}\" , \"grid\":[1,{\"q\":\"]\"}] ,\"correlation\" : 12 } }",
      { "Input Dims=\"a\\\"b}\"", "grid=[1,{\"q\":\"]\"}]", "correlation=12" }, false },
    /* the members the parser reads itself are noted beside them */
    { "{\"name\":\"process_name\",\"ph\":\"M\",\"args\":{\"name\":\"n\",\"device\":3,\"stream\":5,"
      "\"step_num\":2,\"warps per SM\":\"1e1\"}}",
      { "stream=5", "warps per SM=\"1e1\"" }, false },
};
#define N_CASES (sizeof CASES / sizeof *CASES)

static int arg_of(const char *key)
{
    for (int a = 0; a < TPA_ARG_COUNT; a++)
        if (!strcmp(tpa_arg_keys[a], key)) return a;
    return -1;
}

/* The text each tpa_arg reads in ev ("" when absent). */
static void arg_texts(const tpa_event *ev, char out[TPA_ARG_COUNT][64])
{
    for (int a = 0; a < TPA_ARG_COUNT; a++) {
        const char *end = NULL, *v = tpa_event_arg(ev, a, &end);
        snprintf(out[a], 64, "%.*s", v ? (int)(end - v) : 0, v ? v : "");
    }
}

/* Checks one parsed event against its case, and against the same event
 * made by hand (raw only: looked up with tpa_obj_find). */
static void check_event(const tpa_event *ev, const arg_case *c, const char *what)
{
    char got[TPA_ARG_COUNT][64], want[TPA_ARG_COUNT][64], by_hand[TPA_ARG_COUNT][64];
    memset(want, 0, sizeof want);
    unsigned seen = 0;
    for (int i = 0; c->want[i]; i++) {
        const char *eq = strchr(c->want[i], '=');
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - c->want[i]), c->want[i]);
        int a = arg_of(key);
        CHECK(a >= 0);
        if (a < 0) continue;
        snprintf(want[a], 64, "%s", eq + 1);
        seen |= 1u << a;
    }
    tpa_event hand;
    memset(&hand, 0, sizeof hand);
    hand.raw = ev->raw;
    arg_texts(ev, got);
    arg_texts(&hand, by_hand);
    bool ok = ev->args_marked && ev->arg_seen == seen && ev->arg_dup == c->dup;
    for (int a = 0; a < TPA_ARG_COUNT; a++) {
        ok = ok && !strcmp(got[a], want[a]) && !strcmp(by_hand[a], want[a]);
        if (strcmp(got[a], want[a]) || strcmp(by_hand[a], want[a]))
            fprintf(stderr, "%s: %s: parsed '%s', by hand '%s', want '%s'\n", what, tpa_arg_keys[a], got[a],
                    by_hand[a], want[a]);
    }
    if (ev->arg_seen != seen || ev->arg_dup != c->dup)
        fprintf(stderr, "%s: arg_seen %#x want %#x, arg_dup %d want %d\n", what, ev->arg_seen, seen,
                ev->arg_dup, c->dup);
    CHECK(ok);
}

/* All cases in one document, read at every chunk size, then with -j. */
TP_TEST(parser_notes_first_args_members)
{
    char doc[8192];
    size_t n = (size_t)snprintf(doc, sizeof doc, "{\"traceEvents\":[");
    for (size_t i = 0; i < N_CASES; i++)
        n += (size_t)snprintf(doc + n, sizeof doc - n, "%s%s", i ? ",\n" : "", CASES[i].event);
    n += (size_t)snprintf(doc + n, sizeof doc - n, "]}");
    CHECK(n < sizeof doc);
    for (int jobs = 1; jobs <= 2; jobs++)
        for (size_t max_read = 0; max_read < (jobs == 1 ? 64 : 8); max_read += jobs == 1 ? 1 : 7) {
            if (jobs > 1) tpa_batch_set_window(64 + max_read * 16, 32);
            tpa_set_jobs(jobs);
            tpa_error err;
            memset(&err, 0, sizeof err);
            tpa_reader *r = tpa_reader_open_mem(doc, n, &err);
            tpa_set_jobs(1);
            CHECK(r != NULL);
            if (!r) return;
            tpa_reader_set_max_read(r, max_read);
            tpa_event ev;
            size_t i = 0;
            int rc;
            while ((rc = tpa_reader_next(r, &ev, &err)) > 0) {
                char what[64];
                snprintf(what, sizeof what, "jobs %d read %zu event %zu", jobs, max_read, i);
                if (i < N_CASES) check_event(&ev, &CASES[i], what);
                i++;
            }
            CHECK_EQ_INT(rc, 0);
            CHECK_EQ_INT(i, N_CASES);
            tpa_reader_close(r);
        }
    tpa_batch_set_window(0, 0);
}

/* ---- the attributor: spans against the walk ------------------------------------------ */

typedef struct text { char *p; size_t n, cap; } text;

static void say(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(text *t, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    size_t len = (size_t)k < sizeof line ? (size_t)k : sizeof line - 1;
    if (t->n + len + 1 > t->cap) {
        t->cap = (t->n + len + 1) * 2;
        t->p = realloc(t->p, t->cap);
        if (!t->p) abort();
    }
    memcpy(t->p + t->n, line, len + 1);
    t->n += len;
}

static void on_node(void *user, const tpa_attrib *at, const tpa_at_node *n)
{
    say(user, "node %s [%s] %lld+%lld dev %lld/%lld\n", tpa_attrib_str(at, n->name, NULL),
        tpa_attrib_str(at, n->shapes, NULL), (long long)n->start_ns, (long long)n->dur_ns,
        (long long)n->dev_self_ns, (long long)n->dev_total_ns);
}

static void on_gpu(void *user, const tpa_attrib *at, const tpa_at_gpu *g)
{
    say(user, "gpu %s at %lld op %s rt %s stream %lld grid %u,%u,%u block %u,%u,%u regs %lld shm %lld "
        "bps %g wps %g\n", tpa_attrib_str(at, g->name, NULL), (long long)g->start_ns,
        tpa_attrib_str(at, g->op, NULL), tpa_attrib_str(at, g->runtime, NULL), (long long)g->stream,
        g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1], g->block[2], (long long)g->regs,
        (long long)g->shmem, g->blocks_per_sm, g->warps_per_sm);
}

/* What the attributor hands its visitor for doc; by_hand: each event as if
 * made by hand (raw only, so its args are walked). */
static text attribute_doc(const char *doc, bool by_hand)
{
    text t = { 0 };
    tpa_attrib *at = tpa_attrib_new();
    tpa_at_visitor v = { &t, on_node, on_gpu };
    tpa_attrib_add_visitor(at, &v);
    tpa_error err;
    tpa_reader *r = tpa_reader_open_mem(doc, strlen(doc), &err);
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
    tpa_attrib_free(at);
    return t;
}

#define OP(ts, args) "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"pid\":1,\"tid\":1,\"ts\":" #ts \
    ",\"dur\":9" args "},"
#define RT(ts, args) "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"launch\",\"pid\":1,\"tid\":1,\"ts\":" \
    #ts ",\"dur\":1" args "},"
#define KN(ts, args) "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":" #ts \
    ",\"dur\":2" args "},"

/* Repeated keys (a later one counts where the walk reaches it, a host
 * span's walk stops once it has its External id and shapes), both
 * spellings of External id, launch configurations merged from repeats,
 * values that are not numbers: the spans give what the walk gives. */
TP_TEST(attributor_spans_match_walk)
{
    static const char doc[] = "{\"traceEvents\":["
        OP(0, ",\"args\":{\"External id\":1,\"Input Dims\":[[2,3]]}")
        OP(10, ",\"args\":{\"External id\":2,\"External id\":3,\"Input Dims\":[[1]]}")
        OP(20, ",\"args\":{\"Input Dims\":[[4]],\"External id\":4,\"External id\":5}")
        OP(30, ",\"args\":{\"external id\":6,\"External id\":7}")
        OP(40, ",\"args\":{\"Input Dims\":[[1]],\"Input Dims\":[[2]],\"External id\":8}")
        OP(50, ",\"args\":{\"External id\":\"9\",\"correlation\":1,\"grid\":[1]}")
        OP(60, ",\"args\":{\"External id\":-3,\"Input Dims\":\"x\"}")
        OP(70, ",\"args\":5,\"args\":{\"External id\":10}")
        OP(80, ",\"args\":{\"external id\":11,\"External id\":12}")
        OP(90, ",\"args\":{\"External id\":13}")
        RT(1, ",\"args\":{\"External id\":1,\"correlation\":100,\"grid\":[2,1,1],\"block\":[64],\"shared memory\":128}")
        RT(11, ",\"args\":{\"correlation\":101,\"correlation\":102,\"grid\":[1],\"grid\":[4,4,4]}")
        RT(21, ",\"args\":{\"correlation\":103,\"shared memory\":1,\"shared memory\":\"x\",\"block\":[3,3]}")
        RT(31, ",\"args\":{\"block\":[5],\"correlation\":104,\"External id\":6,\"external id\":7}")
        RT(41, ",\"args\":{\"correlation\":\"105\",\"grid\":[ 7 , 8 ],\"block\":[[1]]}")
        KN(100, ",\"args\":{\"External id\":1,\"stream\":7,\"correlation\":100,\"registers per thread\":32,"
                "\"shared memory\":0,\"blocks per SM\":0.5,\"warps per SM\":4,\"grid\":[8,1,1],\"block\":[128,1,1]}")
        KN(110, ",\"args\":{\"correlation\":102,\"correlation\":101,\"blocks per SM\":2.5,\"stream\":3,\"stream\":\"x\"}")
        KN(120, ",\"args\":{\"correlation\":103,\"grid\":[1,2],\"grid\":[5],\"registers per thread\":\"16\"}")
        KN(130, ",\"args\":{\"correlation\":104}")
        KN(140, ",\"args\":{\"correlation\":105,\"warps per SM\":\"1e1\",\"shared memory\":-5}")
        KN(150, ",\"args\":{\"External id\":8,\"external id\":9,\"blocks per SM\":1e-1}")
        KN(160, ",\"args\":{\"External id\":2,\"x\":{\"correlation\":100}}")
        KN(170, ",\"args\":{\"grid\":[9],\"External id\":5,\"stream\":2}")
        KN(180, ",\"args\":{\"External id\":12}")
        KN(190, ",\"args\":{\"external id\":14,\"External id\":13}")
        "{\"ph\":\"i\",\"name\":\"end\",\"ts\":0,\"pid\":1,\"tid\":1}]}";
    text spans = attribute_doc(doc, false), walk = attribute_doc(doc, true);
    CHECK(spans.p && walk.p);
    if (!spans.p || !walk.p) return;
    CHECK_STR(spans.p, walk.p);
    if (strcmp(spans.p, walk.p)) fprintf(stderr, "spans:\n%s\nwalk:\n%s\n", spans.p, walk.p);
    /* and they are the walk's: a later repeat counts where the walk reaches it */
    CHECK(strstr(spans.p, "node op [[[1]]] 10000+9000 dev 0/0\n") != NULL);   /* External id 3 */
    CHECK(strstr(spans.p, "node op [[[4]]] 20000+9000 dev 2000/2000\n") != NULL); /* 4: stopped before 5 */
    CHECK(strstr(spans.p, "gpu k at 160000 op  rt ") != NULL);                 /* no op has External id 2 */
    CHECK(strstr(spans.p, "gpu k at 170000 op  rt ") != NULL);                 /* ... nor 5 */
    CHECK(strstr(spans.p, "node op [] 50000+9000 dev 2000/2000\n") != NULL);  /* external id 9 */
    CHECK(strstr(spans.p, "gpu k at 120000 op op rt launch stream -1 grid 5,2,0 ") != NULL);
    CHECK(strstr(spans.p, "gpu k at 110000 op  rt  stream -1 ") != NULL);      /* correlation 101 vs 102 */
    CHECK(strstr(spans.p, "node op [] 80000+9000 dev 2000/2000\n") != NULL);  /* External id 12, after 11 */
    CHECK(strstr(spans.p, "node op [] 90000+9000 dev 2000/2000\n") != NULL);  /* 13, after 14 */
    free(spans.p);
    free(walk.p);
}

int main(void)
{
    RUN(parser_notes_first_args_members);
    RUN(attributor_spans_match_walk);
    return tp_test_finish();
}
