/* test_jobs.c - the `-j N` reader (parallel.c, split.c) hands out exactly
 * the sequential reader's events (each classified), metadata and errors,
 * keeps the blocks it was asked to keep (tpa_reader_keep_last), on documents built
 * to fool a boundary finder: "},{" inside strings, escaped quotes, arrays of
 * objects inside args, non-object elements, odd whitespace, cut-short and
 * corrupted input; windows from a few bytes up so cuts land everywhere.
 * Also `report` over several files at once (report_jobs.c). Runs under TSan
 * (label concurrency). */
#include "util/hash.h"
#include "analyze/trace/trace.h"
#include "analyze/stats/stats.h"
#include "analyze/trace/event_parse.h"
#include "analyze/trace/parallel.h"
#include "analyze/trace/split.h"
#include "util/worker.h"
#include "tp_test.h"

#include <stdatomic.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- what a read produced --------------------------------------------------- */

typedef struct capture {
    int rc, code;
    uint64_t err_offset;
    char msg[256];
    size_t n;
    uint64_t fp;             /* fingerprint of every event field, in order */
    uint64_t first_bad;      /* index of the first event whose fields differ (compare) */
    uint64_t *ev_fp;         /* per event */
    tpa_meta meta;
    size_t kept_bad;         /* a kept block whose events changed before release (keep) */
    size_t kind_bad;         /* events whose kind is not tpa_classify's */
} capture;

/* tpa_reader_keep_last: the blocks of the last calls, with their
 * fingerprints when handed out, checked after every later call until the
 * reader releases them. */
typedef struct kept_blocks {
    const tpa_event *evs[8];
    long n[8];
    uint64_t fp[8];
    int count, keep;
    size_t *bad;
} kept_blocks;

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    return (h ^ tpu_hash_bytes(p, n)) * 1099511628211ULL;
}

static uint64_t event_fp(const tpa_event *ev)
{
    uint64_t h = 1469598103934665603ULL;
    h = mix(h, &ev->ph, 1);
    h = mix(h, ev->name.p, ev->name.n); h = mix(h, &ev->name.n, sizeof ev->name.n);
    h = mix(h, ev->cat.p, ev->cat.n); h = mix(h, &ev->cat.n, sizeof ev->cat.n);
    h = mix(h, ev->arg_name.p, ev->arg_name.n);
    h = mix(h, ev->raw.p, ev->raw.n);
    h = mix(h, ev->pid_str.p, ev->pid_str.n);
    h = mix(h, ev->tid_str.p, ev->tid_str.n);
    int64_t nums[] = { ev->ts_ns, ev->dur_ns, ev->has_ts, ev->has_dur, ev->pid, ev->tid, ev->device,
                       (int64_t)ev->offset, ev->has_step_num, ev->step_num, ev->on_device,
                       ev->v_pid.off, ev->v_pid.len, ev->v_tid.off, ev->v_ts.len, ev->v_id.off };
    h = mix(h, nums, sizeof nums);
    /* the args members noted for the page's collectors (kept in the range's arena) */
    int64_t args[] = { ev->args_marked, ev->arg_seen, ev->arg_dup, ev->v_args.off, ev->v_args.len };
    h = mix(h, args, sizeof args);
    for (int a = 0; a < TPA_ARG_COUNT; a++) {
        const char *end = NULL, *v = tpa_event_arg(ev, a, &end);
        if (v) h = mix(h, v, (size_t)(end - v));
    }
    return mix(h, &ev->occupancy, sizeof ev->occupancy);
}

static uint64_t block_fp(const tpa_event *evs, long n)
{
    uint64_t h = 1469598103934665603ULL;
    for (long i = 0; i < n; i++) {
        uint64_t f = event_fp(&evs[i]);
        h = mix(h, &f, sizeof f);
    }
    return h;
}

static void check_kept(kept_blocks *k)
{
    for (int i = 0; i < k->count; i++)
        if (block_fp(k->evs[i], k->n[i]) != k->fp[i]) (*k->bad)++;
}

/* The reader's release: the kept blocks are still whole, and no longer kept. */
static void release_kept(void *arg)
{
    kept_blocks *k = arg;
    check_kept(k);
    k->count = 0;
}

static void keep_block(kept_blocks *k, const tpa_event *evs, long n)
{
    if (k->count == k->keep) {
        memmove(k->evs, k->evs + 1, (size_t)(k->keep - 1) * sizeof *k->evs);
        memmove(k->n, k->n + 1, (size_t)(k->keep - 1) * sizeof *k->n);
        memmove(k->fp, k->fp + 1, (size_t)(k->keep - 1) * sizeof *k->fp);
        k->count--;
    }
    k->evs[k->count] = evs;
    k->n[k->count] = n;
    k->fp[k->count++] = block_fp(evs, n);
}

/* block 0: tpa_reader_next; else tpa_reader_next_block with that max (each
 * block's events fingerprinted after the call: valid until the next one,
 * or with keep > 0 until keep calls later or the reader's release). */
static capture read_doc_keep(const char *doc, size_t len, int jobs, size_t max_read, bool lenient, size_t block,
                             int keep)
{
    capture c;
    memset(&c, 0, sizeof c);
    tpa_error err;
    memset(&err, 0, sizeof err);
    tpa_set_jobs(jobs);
    tpa_reader *r = tpa_reader_open_mem(doc, len, &err);
    tpa_set_jobs(1);
    tpa_reader_set_max_read(r, max_read);
    tpa_reader_set_lenient(r, lenient);
    kept_blocks kept = { .keep = keep, .bad = &c.kept_bad };
    if (keep) tpa_reader_keep_last(r, keep, release_kept, &kept);
    tpa_event ev;
    size_t cap = 0;
    c.fp = 1469598103934665603ULL;
    const tpa_event *evs = &ev;
    long got;
    while ((got = block ? tpa_reader_next_block(r, &evs, block, &err) : tpa_reader_next(r, &ev, &err)) > 0) {
        if (got > (long)block && block) c.rc = -2;  /* more than asked for */
        if (keep) {
            check_kept(&kept);
            keep_block(&kept, evs, got);
        }
        for (long i = 0; i < got; i++) {
            c.kind_bad += !evs[i].has_kind || evs[i].kind != tpa_classify(&evs[i]);
            if (c.n == cap) {
                cap = cap ? cap * 2 : 64;
                c.ev_fp = realloc(c.ev_fp, cap * sizeof *c.ev_fp);
            }
            c.ev_fp[c.n++] = event_fp(&evs[i]);
            c.fp = mix(c.fp, &c.ev_fp[c.n - 1], 8);
        }
    }
    if (c.rc != -2) c.rc = (int)got;
    if (c.rc < 0) {
        c.code = err.code;
        c.err_offset = err.offset;
        snprintf(c.msg, sizeof c.msg, "%s", err.msg);
    }
    c.meta = *tpa_reader_meta(r);
    c.meta.members = NULL;
    tpa_reader_close(r);
    return c;
}

static capture read_doc(const char *doc, size_t len, int jobs, size_t max_read, bool lenient, size_t block)
{
    return read_doc_keep(doc, len, jobs, max_read, lenient, block, 0);
}

static bool same(const capture *a, const capture *b, const char *what)
{
    bool ok = !a->kept_bad && !b->kept_bad && !a->kind_bad && !b->kind_bad &&
              a->rc == b->rc && a->code == b->code && a->err_offset == b->err_offset &&
              !strcmp(a->msg, b->msg) && a->n == b->n && a->fp == b->fp &&
              a->meta.events == b->meta.events && a->meta.non_objects == b->meta.non_objects &&
              a->meta.truncated == b->meta.truncated && a->meta.events_cut == b->meta.events_cut &&
              a->meta.truncated_at == b->meta.truncated_at && a->meta.good_end == b->meta.good_end &&
              !strcmp(a->meta.close, b->meta.close) &&
              /* bytes read: the -j reader reads ahead, so only equal when all was read */
              (a->rc < 0 || a->meta.events_cut || a->meta.bytes == b->meta.bytes) &&
              a->meta.n_members == b->meta.n_members && a->meta.has_base == b->meta.has_base;
    if (!ok) {
        size_t i = 0;
        while (i < a->n && i < b->n && a->ev_fp[i] == b->ev_fp[i]) i++;
        fprintf(stderr, "kept blocks changed %zu/%zu, kinds wrong %zu/%zu\n", a->kept_bad, b->kept_bad,
                a->kind_bad, b->kind_bad);
        fprintf(stderr, "differs (%s): rc %d/%d code %d/%d offset %llu/%llu msg '%s'/'%s' events %zu/%zu "
                "first differing event %zu, good_end %llu/%llu non_objects %llu/%llu\n", what,
                a->rc, b->rc, a->code, b->code, (unsigned long long)a->err_offset,
                (unsigned long long)b->err_offset, a->msg, b->msg, a->n, b->n, i,
                (unsigned long long)a->meta.good_end, (unsigned long long)b->meta.good_end,
                (unsigned long long)a->meta.non_objects, (unsigned long long)b->meta.non_objects);
    }
    return ok;
}

/* Window sizes and thread counts against the sequential read: every small
 * window for short documents, a few for long ones (a thread per range). */
static int check_doc(const char *doc, size_t len)
{
    int bad = 0;
    static const size_t all_windows[] = { 1, 2, 3, 5, 8, 13, 32, 100, 4096 };
    static const size_t long_windows[] = { 29, 300, 4096 };
    static const size_t reads[] = { 0, 1, 7 };
    bool is_long = len > 1000;
    const size_t *windows = is_long ? long_windows : all_windows;
    size_t n_windows = is_long ? 3 : sizeof all_windows / sizeof *all_windows;
    for (int lenient = 0; lenient < 2; lenient++) {
        capture seq = read_doc(doc, len, 1, 0, lenient, 0);
        capture seq_blocks = read_doc(doc, len, 1, 0, lenient, 3);
        if (!same(&seq, &seq_blocks, lenient ? "blocks, one thread, lenient" : "blocks, one thread")) bad++;
        free(seq_blocks.ev_fp);
        for (size_t w = 0; w < n_windows; w++)
            for (int jobs = 2; jobs <= 4; jobs++)
                for (size_t m = is_long ? 1 : 0; m < sizeof reads / sizeof *reads; m++) {
                    tpa_batch_set_window(windows[w], windows[w] / 4 + 1);
                    /* one event at a time, then in blocks (of 2 or of up to 4096) */
                    for (size_t block = 0; block <= 1; block++) {
                        size_t max = block ? (w % 2 ? 2 : 4096) : 0;
                        capture par = read_doc(doc, len, jobs, reads[m], lenient, max);
                        char what[120];
                        snprintf(what, sizeof what, "window %zu jobs %d read %zu lenient %d block %zu",
                                 windows[w], jobs, reads[m], lenient, max);
                        if (!same(&seq, &par, what)) bad++;
                        free(par.ev_fp);
                    }
                    /* blocks read on while earlier ones are kept (the page's lane 1) */
                    for (int keep = 1; keep <= 3 && jobs == 2; keep += 2) {
                        capture par = read_doc_keep(doc, len, jobs, reads[m], lenient, w % 2 ? 2 : 4096, keep);
                        char what[120];
                        snprintf(what, sizeof what, "window %zu jobs %d read %zu lenient %d keep %d",
                                 windows[w], jobs, reads[m], lenient, keep);
                        if (!same(&seq, &par, what)) bad++;
                        free(par.ev_fp);
                    }
                }
        free(seq.ev_fp);
    }
    tpa_batch_set_window(0, 0);
    return bad;
}

#define CHECK_DOC(s) CHECK_EQ_INT(check_doc((s), strlen(s)), 0)

/* ---- the guessed cut ------------------------------------------------------- */

TP_TEST(guess_finds_event_starts)
{
    const char *d = "[{\"a\":1},{\"b\":2} ,\n {\"c\":3}]";
    const char *g = tpa_split_guess(d, d + 2, d + strlen(d));
    CHECK(g == strchr(d + 2, '{'));
    g = tpa_split_guess(d, g + 1, d + strlen(d));
    CHECK(g && g[2] == 'c');
    CHECK(tpa_split_guess(d, g + 1, d + strlen(d)) == NULL);
    const char *none = "[{\"a\":[1,{\"x\":2}]}]";  /* ",{" after a number: no '}' before */
    CHECK(tpa_split_guess(none, none + 1, none + strlen(none)) == NULL);
    const char *lo = ",{";  /* nothing to look back at */
    CHECK(tpa_split_guess(lo, lo, lo + 2) == NULL);
}

/* A guess inside a string is only a guess: the reader must not trust it. */
TP_TEST(guess_inside_string_is_rejected)
{
    const char *d = "[{\"name\":\"a},{\\\"b\\\":1},{c\"},{\"name\":\"d\"}]";
    const char *g = tpa_split_guess(d, d + 2, d + strlen(d));
    CHECK(g && g < strstr(d, "},{\"name\":\"d"));  /* the first guess lies inside the name */
    CHECK_DOC(d);
}

/* ---- documents against the sequential reader ----------------------------------- */

TP_TEST(adversarial_documents)
{
    CHECK_DOC("[]");
    CHECK_DOC("{\"traceEvents\":[]}");
    CHECK_DOC("[{\"name\":\"one\",\"ph\":\"X\",\"ts\":1,\"dur\":2}]");
    CHECK_DOC("{\"traceEvents\":[{\"name\":\"x},{\\\"y\",\"ph\":\"X\",\"ts\":1,\"dur\":2},"
              "{\"name\":\"},{\",\"ph\":\"B\",\"ts\":2},{\"name\":\"\\\\\",\"ph\":\"E\",\"ts\":3}],"
              "\"baseTimeNanoseconds\":1000}");
    CHECK_DOC("[{\"args\":{\"l\":[{\"a\":1},{\"b\":[{\"c\":2} , {\"d\":\"},{\"}]}]},\"ph\":\"i\",\"ts\":1},"
              "  1 , \"s\" ,[{\"x\":1},{\"y\":2}],null,{\"ph\":\"X\",\"name\":\"k\",\"ts\":5,\"dur\":1}]");
    CHECK_DOC("[{\"name\":\"\\u00e9\\\"},{\\\"\",\"cat\":\"c\\\\\",\"ph\":\"X\",\"ts\":1.5,\"dur\":0.25,"
              "\"pid\":\"proc\",\"tid\":\"thr\"},\n\t{\"name\":\"n\",\"ph\":\"M\",\"args\":{\"name\":\"/device:GPU:0\"}}]");
    /* JAX: the events of a process named "/device:..." are device work (the
     * reader's kind follows, after the parser's) */
    CHECK_DOC("[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":5,\"args\":{\"name\":\"/device:GPU:0\"}},"
              "{\"name\":\"fusion.1\",\"ph\":\"X\",\"pid\":5,\"tid\":1,\"ts\":1,\"dur\":2},"
              "{\"name\":\"MemcpyH2D\",\"ph\":\"X\",\"pid\":5,\"tid\":2,\"ts\":2,\"dur\":1},"
              "{\"name\":\"ProfilerStep#3\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":9},"
              "{\"name\":\"all-reduce ncclKernel\",\"ph\":\"X\",\"pid\":5,\"tid\":1,\"ts\":4,\"dur\":1}]");
    /* deep nesting inside one event */
    char deep[600];
    size_t n = 0;
    n += (size_t)snprintf(deep + n, sizeof deep - n, "[{\"a\":1},{\"args\":");
    for (int i = 0; i < 100; i++) deep[n++] = '[';
    deep[n++] = '{'; deep[n++] = '}';
    for (int i = 0; i < 100; i++) deep[n++] = ']';
    snprintf(deep + n, sizeof deep - n, "},{\"b\":2}]");
    CHECK_DOC(deep);
}

TP_TEST(errors_and_cuts)
{
    CHECK_DOC("[{\"a\":1},{\"b\":2},{\"c\":3");                        /* cut inside an event */
    CHECK_DOC("[{\"a\":1},{\"b\":2},");                                 /* cut after a comma */
    CHECK_DOC("{\"traceEvents\":[{\"a\":1},{\"b\":2}");                 /* cut between events */
    CHECK_DOC("[{\"a\":1},{\"b\":2} {\"c\":3},{\"d\":4}]");             /* missing comma */
    CHECK_DOC("[{\"a\":1},{\"b\":2},{\"c\":3,},{\"d\":4}]");            /* trailing comma in event */
    CHECK_DOC("[{\"a\":1},{\"b\":\"\xff\"},{\"d\":4}]");                /* bad UTF-8 in a kept key */
    CHECK_DOC("[{\"name\":\"\xc3\"},{\"b\":2},{\"c\":3}]");             /* bad UTF-8 in a name */
    CHECK_DOC("[{\"a\":1},{\"ts\":1e999},{\"c\":3}]");                   /* number out of range */
    CHECK_DOC("[{\"a\":1},{\"b\":2}]   x");                              /* data after the end */
    CHECK_DOC("[{\"a\":1},{\"b\":2}],\"x\"");
}

/* ---- a larger generated document, then corruptions of it -------------------------- */

static const char *const NAMES[] = {
    "aten::mm", "},{", "\\\"},{\\\"", "x\\\\", "[{\\\"", "ProfilerStep#3", "\\u0041\\n", "enumerate(DataLoader)#_next_",
};

static size_t gen_doc(char *buf, size_t cap, unsigned seed)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "{\"schemaVersion\":1,\"traceEvents\":[");
    for (int i = 0; n + 512 < cap; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned k = seed >> 8;
        const char *sep = (k & 3) == 0 ? " ,\n  " : ",";
        if (i) n += (size_t)snprintf(buf + n, cap - n, "%s", sep);
        switch (k % 11) {
        case 0: n += (size_t)snprintf(buf + n, cap - n, "%u", k); break;
        case 1:
            n += (size_t)snprintf(buf + n, cap - n, "{\"ph\":\"i\",\"ts\":%u,\"args\":{\"v\":[{\"a\":\"},{\"},{\"b\":[1,{}]}]}}", k % 1000);
            break;
        case 2:  /* args members the parser notes: out of order, repeated, strings that look like cuts */
            n += (size_t)snprintf(buf + n, cap - n, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":%u,\"dur\":1,"
                                  "\"args\":{\"stream\":%u,\"External id\":\"},{\",\"grid\":[1,{\"a\":\"},{\"}],"
                                  "\"correlation\":%u%s}}", k % 1000, k % 7, k, (k & 16) ? ",\"stream\":2" : "");
            break;
        default:
            n += (size_t)snprintf(buf + n, cap - n,
                                  "{\"ph\":\"%c\",\"cat\":\"cpu_op\",\"name\":\"%s\",\"pid\":%u,\"tid\":%s,\"ts\":%u.%u,\"dur\":%u}",
                                  "XBEXXbe"[k % 7], NAMES[k % 8], k % 3, (k & 8) ? "\"t\\\"},{\"" : "7", k % 5000, k % 1000, k % 97);
        }
    }
    n += (size_t)snprintf(buf + n, cap - n, "],\"displayTimeUnit\":\"ms\"}");
    return n;
}

TP_TEST(generated_and_corrupted)
{
    static char doc[24000], bad[24000];
    size_t len = gen_doc(doc, sizeof doc, 7);
    CHECK_EQ_INT(check_doc(doc, len), 0);
    unsigned seed = 11;
    for (int t = 0; t < 12; t++) {
        seed = seed * 1103515245u + 12345u;
        size_t at = 40 + (seed >> 4) % (len - 80);
        memcpy(bad, doc, len);
        if (t % 3 == 0) {
            CHECK_EQ_INT(check_doc(bad, at), 0);         /* cut short */
        } else {
            bad[at] = "\"}{,]x\\"[t % 7];                 /* one byte replaced */
            CHECK_EQ_INT(check_doc(bad, len), 0);
        }
    }
}

/* ---- report over several files ----------------------------------------------- */

static void write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fwrite(text, 1, n, f);
    fclose(f);
}

TP_TEST(report_files_match_sequential)
{
    static char doc[24000];
    char paths[4][64];
    const char *p[4];
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], sizeof paths[i], "/tmp/tp_test_jobs_%d_%d.json", (int)getpid(), i);
        size_t len = gen_doc(doc, sizeof doc - 200 * (size_t)i, 3u + (unsigned)i);
        write_file(paths[i], doc, i == 2 ? len - 30 : len);  /* file 2 is cut short */
        p[i] = paths[i];
    }
    tpa_report_opts o = { .group_steps = true, .quiet = true };
    tpa_report a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    tpa_error ea, eb;
    tpa_set_jobs(2);
    CHECK_EQ_INT(tpa_report_files(&a, p, 4, &o, 1, &ea), 0);
    CHECK_EQ_INT(tpa_report_files(&b, p, 4, &o, 3, &eb), 0);
    tpa_set_jobs(1);
    CHECK_EQ_INT(a.n_ops, b.n_ops);
    CHECK_EQ_INT(a.events, b.events);
    CHECK_EQ_INT(a.truncated_files, 1);
    CHECK_EQ_INT(b.truncated_files, 1);
    CHECK_EQ_INT(a.async_pairs, b.async_pairs);
    for (size_t i = 0; i < a.n_ops && i < b.n_ops; i++) {
        CHECK_STR(a.ops[i].name, b.ops[i].name);
        CHECK_EQ_INT(a.ops[i].count, b.ops[i].count);
        CHECK_EQ_INT(a.ops[i].self_ns, b.ops[i].self_ns);
        CHECK_EQ_INT(a.ops[i].total_ns, b.ops[i].total_ns);
        CHECK_EQ_INT(a.ops[i].kind, b.ops[i].kind);
    }
    tpa_report_free(&a);
    tpa_report_free(&b);
    /* the first bad file in order is the one reported */
    write_file(paths[1], "[{\"a\":1} x", 10);
    write_file(paths[3], "[{", 2);
    memset(&a, 0, sizeof a);
    CHECK_EQ_INT(tpa_report_files(&a, p, 4, &o, 4, &ea), -1);
    CHECK_STR(ea.file, paths[1]);
    CHECK_EQ_INT(ea.offset, 9);
    tpa_report_free(&a);
    for (int i = 0; i < 4; i++) unlink(paths[i]);
}

/* ---- the worker's queue (worker.h) ------------------------------------------ */

typedef struct order_job {
    atomic_int *gate;        /* the job waits while it is 0 (NULL: does not) */
    int *log, *n_log, id;
} order_job;

static void run_order_job(void *arg)
{
    order_job *j = arg;
    while (j->gate && !atomic_load(j->gate)) {}
    j->log[(*j->n_log)++] = j->id;
}

TP_TEST(worker_queues_jobs_in_order)
{
    enum { N = 200 };
    int log[N], n_log = 0;
    order_job jobs[N];
    atomic_int gate = 0;
    tpu_worker *w = tpu_worker_start(3);
    CHECK(w != NULL);
    /* the first job holds the worker: two more are queued without a wait
     * (with a queue of one, this thread would wait for the gate it opens) */
    for (int i = 0; i < 3; i++) {
        jobs[i] = (order_job){ i == 0 ? &gate : NULL, log, &n_log, i };
        tpu_worker_post(w, run_order_job, &jobs[i]);
    }
    CHECK_EQ_INT(n_log, 0);
    atomic_store(&gate, 1);
    for (int i = 3; i < N; i++) {
        jobs[i] = (order_job){ NULL, log, &n_log, i };
        tpu_worker_post(w, run_order_job, &jobs[i]);
    }
    tpu_worker_wait(w);
    CHECK_EQ_INT(n_log, N);  /* every job done when the wait returns */
    for (int i = 0; i < N; i++) CHECK_EQ_INT(log[i], i);
    tpu_worker_stop(w);
}

int main(void)
{
    RUN(worker_queues_jobs_in_order);
    RUN(guess_finds_event_starts);
    RUN(guess_inside_string_is_rejected);
    RUN(adversarial_documents);
    RUN(errors_and_cuts);
    RUN(generated_and_corrupted);
    RUN(report_files_match_sequential);
    return tp_test_finish();
}
