/* test_event_args.c - where the parser notes the args members the page's
 * collectors read (ev->arg_seen, ev->v_arg, tpa_event_arg): the first
 * occurrence in the event's first args object, as tpa_obj_find finds it,
 * at every chunk size and with `-j`. (The attributor reading them:
 * test_views_ops.c.) */
#include "analyze/trace/trace.h"
#include "analyze/trace/event_parse.h"
#include "analyze/trace/parallel.h"
#include "tp_test.h"

#include <stdint.h>
#include <stdio.h>
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

/* ---- numbers read from a member's value -------------------------------------------- */

/* tpa_value_f64 as first written (the run of number bytes, a strchr per
 * byte, then strtod): the reference for the table and tpu_dparse. */
static bool f64_reference(const char *v, const char *end, double *out)
{
    char tmp[64];
    size_t n = 0;
    if (!v || v >= end) return false;
    if (*v == '"') v++;
    while (v + n < end && n < sizeof tmp - 1 && strchr("+-.0123456789eE", v[n])) n++;
    if (!n) return false;
    memcpy(tmp, v, n);
    tmp[n] = 0;
    char *stop;
    *out = strtod(tmp, &stop);
    return stop == tmp + n;
}

/* Random values from the bytes numbers are made of, quotes, letters,
 * spaces and NUL (a NUL inside the run fails it), and the writers' own
 * numbers: the same verdict and, when read, the same double. */
TP_TEST(numbers_read_as_strtod_reads_them)
{
    static const char alphabet[] = "0123456789012345678901234567890123456789.-+eE\"x ,}\0";
    char buf[80];
    uint64_t x = 0x2545f4914f6cdd1dull;
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        size_t len = 0;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (i % 2) {
            len = (size_t)snprintf(buf, sizeof buf, "%.*g", 1 + (int)(x % 17),
                                   (double)(x >> 11) / (double)(1 + (x >> 50)) * 1e-9);
        } else {
            len = 1 + x % 70;
            for (size_t k = 0; k < len; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                buf[k] = alphabet[x % (sizeof alphabet - 1)];
            }
        }
        double got = -1, want = -1;
        bool ok = tpa_value_f64(buf, buf + len, &got), want_ok = f64_reference(buf, buf + len, &want);
        if (ok != want_ok || (ok && memcmp(&got, &want, sizeof got) != 0)) {
            if (bad++ < 5)
                fprintf(stderr, "  '%.*s': %d %.17g, reference %d %.17g\n", (int)len, buf, ok, got,
                        want_ok, want);
        }
    }
    CHECK_EQ_INT(bad, 0);
}

int main(void)
{
    RUN(parser_notes_first_args_members);
    RUN(numbers_read_as_strtod_reads_them);
    return tp_test_finish();
}
