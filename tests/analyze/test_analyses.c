/* test_analyses.c - report, steps, diff, slice, fix and merge on small
 * hand-written traces whose answers are known. */
#include "analyze/trace/trace.h"
#include "analyze/stats/stats.h"
#include "analyze/rewrite/rewrite.h"
#include "analyze/page/html.h"
#include "tp_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[] = "/tmp/tpa_test_XXXXXX";

static const char *write_tmp(const char *name, const char *text)
{
    static char path[8][256];
    static int k;
    char *p = path[k++ % 8];
    snprintf(p, 256, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "wb");
    fputs(text, f);
    fclose(f);
    return p;
}

static const tpa_op *find_op(const tpa_report *r, const char *name, int table)
{
    for (size_t i = 0; i < r->n_ops; i++)
        if (!strcmp(r->ops[i].name, name) && r->ops[i].table == table) return &r->ops[i];
    return NULL;
}

/* parent [0,100] > child [10,40] > grandchild [20,30]; sibling [50,60];
 * a runtime call [70,75] written late, as Kineto does; events shuffled. */
static const char NESTED[] =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"name\":\"child\",\"ts\":10,\"dur\":30,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"name\":\"parent\",\"ts\":0,\"dur\":100,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"name\":\"sibling\",\"ts\":50,\"dur\":10,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"name\":\"grandchild\",\"ts\":20,\"dur\":10,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"name\":\"other_thread\",\"ts\":5,\"dur\":500,\"pid\":1,\"tid\":2},"
    "{\"ph\":\"B\",\"name\":\"be\",\"ts\":200,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"E\",\"ts\":260,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":30,\"dur\":20,\"pid\":0,\"tid\":7,\"args\":{\"device\":0}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":70,\"dur\":5,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"Z\",\"name\":\"weird\"}"
    "]}";

TP_TEST(report_self_times)
{
    const char *p = write_tmp("nested.json", NESTED);
    tpa_report rep;
    memset(&rep, 0, sizeof rep);
    tpa_report_opts o;
    memset(&o, 0, sizeof o);
    tpa_error err;
    CHECK_EQ_INT(tpa_report_file(&rep, p, &o, &err), 0);
    const tpa_op *parent = find_op(&rep, "parent", -1), *child = find_op(&rep, "child", -1);
    CHECK(parent && child);
    if (parent) { CHECK_EQ_INT(parent->total_ns, 100000); CHECK_EQ_INT(parent->self_ns, 100000 - 30000 - 10000 - 5000); }
    if (child) CHECK_EQ_INT(child->self_ns, 20000);
    const tpa_op *be = find_op(&rep, "be", -1);
    CHECK(be && be->total_ns == 60000);
    const tpa_op *gemm = find_op(&rep, "gemm", 0);
    CHECK(gemm && gemm->count == 1 && gemm->self_ns == 20000);
    CHECK_EQ_INT(rep.skipped_unknown, 1);
    tpa_report_free(&rep);
}

TP_TEST(report_filters)
{
    const char *p = write_tmp("nested2.json", NESTED);
    tpa_report rep;
    memset(&rep, 0, sizeof rep);
    tpa_report_opts o;
    memset(&o, 0, sizeof o);
    o.cats = "kernel";
    tpa_error err;
    CHECK_EQ_INT(tpa_report_file(&rep, p, &o, &err), 0);
    CHECK_EQ_INT(rep.n_ops, 1);
    tpa_report_free(&rep);
    memset(&o, 0, sizeof o);
    o.has_tid = true;
    o.tid = 2;
    CHECK_EQ_INT(tpa_report_file(&rep, p, &o, &err), 0);
    CHECK_EQ_INT(rep.n_ops, 1);
    tpa_report_free(&rep);
}

static const char STEPS[] =
    "[{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":0,\"dur\":100,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"ts\":100,\"dur\":50,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"enumerate(DataLoader)#_Iter.__next__\",\"ts\":0,\"dur\":10,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":10,\"dur\":40,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":20,\"dur\":5,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":22,\"dur\":30,\"pid\":0,\"tid\":7},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_AllReduce\",\"ts\":40,\"dur\":30,\"pid\":0,\"tid\":8},"
    "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\",\"ts\":90,\"dur\":20,\"pid\":0,\"tid\":9}]";

TP_TEST(steps_breakdown_sums)
{
    const char *p = write_tmp("steps.json", STEPS);
    tpa_steps_result res;
    tpa_error err;
    CHECK_EQ_INT(tpa_steps_file(p, &res, &err), 0);
    CHECK_EQ_INT(res.n, 2);
    CHECK(res.has_gpu);
    if (res.n == 2) {
        const tpa_step_row *s = &res.rows[0];
        CHECK_EQ_INT(s->dur_ns, 100000);
        CHECK_EQ_INT(s->part_ns[TPA_P_KERNEL], 30000);    /* 22..52 */
        CHECK_EQ_INT(s->part_ns[TPA_P_COMM], 18000);      /* 52..70 */
        CHECK_EQ_INT(s->part_ns[TPA_P_MEMCPY], 10000);    /* 90..100 */
        CHECK_EQ_INT(s->part_ns[TPA_P_RUNTIME], 2000);    /* 20..22 */
        CHECK_EQ_INT(s->part_ns[TPA_P_DATALOAD], 10000);  /* 0..10 */
        CHECK_EQ_INT(s->part_ns[TPA_P_CPU], 10000);       /* 10..20 */
        CHECK_EQ_INT(s->part_ns[TPA_P_OTHER], 20000);     /* 70..90 */
        int64_t sum = 0;
        for (int k = 0; k < TPA_P_COUNT; k++) sum += s->part_ns[k];
        CHECK_EQ_INT(sum, s->dur_ns);
        CHECK_EQ_INT(s->gpu_busy_ns, 58000);
        CHECK_EQ_INT(res.rows[1].part_ns[TPA_P_MEMCPY], 10000);
    }
    CHECK_EQ_INT(tpa_steps_mean(&res, -1), 75000);
    CHECK_EQ_INT(tpa_steps_quantile(&res, -1, 0.5), 75000);
    tpa_steps_free(&res);
}

/* A GPU trace (µs): kernel 0 launched before step 1 (60..120), step 1's
 * kernel running past its host end (130..250), step 2's kernel and copy
 * (250..320, 320..340), a launch straddling two steps (its kernel in no
 * step) and a last step that launched nothing. */
#define RT(ts, corr) "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":" #ts ",\"dur\":5,\"pid\":1,\"tid\":1,\"args\":{\"correlation\":" #corr "}},"
#define DEV(cat, ts, dur, corr) "{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"k" #corr "\",\"ts\":" #ts ",\"dur\":" #dur ",\"pid\":0,\"tid\":7,\"args\":{\"correlation\":" #corr "}},"
#define STEP(n, ts, dur) "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" #n "\",\"ts\":" #ts ",\"dur\":" #dur ",\"pid\":1,\"tid\":1},"
static const char STEPS_GPU[] =
    "[" STEP(1, 100, 100) STEP(2, 200, 100) STEP(3, 300, 10)
    RT(50, 1) DEV("kernel", 60, 60, 1) RT(110, 2) DEV("kernel", 130, 120, 2)
    RT(210, 3) DEV("kernel", 250, 70, 3) RT(290, 4) DEV("gpu_memcpy", 320, 20, 4)
    RT(197, 5) DEV("kernel", 400, 10, 5)
    "{\"ph\":\"i\",\"name\":\"end\",\"ts\":0,\"pid\":1,\"tid\":1}]";

/* Steps on a GPU trace follow the TensorBoard plugin's rule (issue 31). */
TP_TEST(steps_device_rule)
{
    const char *p = write_tmp("steps_gpu.json", STEPS_GPU);
    tpa_steps_result res;
    tpa_error err;
    CHECK_EQ_INT(tpa_steps_file(p, &res, &err), 0);
    CHECK(res.device_rule);
    CHECK_EQ_INT(res.tail_dropped, 1);   /* step 3 launched nothing */
    CHECK_EQ_INT(res.n, 2);
    if (res.n == 2) {
        const tpa_step_row *a = &res.rows[0], *b = &res.rows[1];
        CHECK_EQ_INT(a->start_ns, 120000);  /* after kernel 0, launched before it */
        CHECK_EQ_INT(a->dur_ns, 130000);    /* to its kernel's end, 250 */
        CHECK_EQ_INT(a->part_ns[TPA_P_KERNEL], 120000);
        CHECK_EQ_INT(a->part_ns[TPA_P_OTHER], 10000);
        CHECK_EQ_INT(b->start_ns, 250000);  /* after step 1, not at its host start */
        CHECK_EQ_INT(b->dur_ns, 90000);     /* to its copy's end, 340 */
        CHECK_EQ_INT(b->part_ns[TPA_P_KERNEL], 70000);
        CHECK_EQ_INT(b->part_ns[TPA_P_MEMCPY], 20000);
    }
    tpa_steps_free(&res);
    /* host-only: the same steps without their device records keep their spans */
    CHECK_EQ_INT(tpa_steps_file(write_tmp("steps_host.json", STEPS), &res, &err), 0);
    CHECK(!res.device_rule);
    CHECK_EQ_INT(res.n, 2);
    if (res.n == 2) { CHECK_EQ_INT(res.rows[0].dur_ns, 100000); CHECK_EQ_INT(res.rows[1].dur_ns, 50000); }
    tpa_steps_free(&res);
    /* the last step launched under 0.8 of the one before it: left out */
    static const char FEWER[] =
        "[" STEP(1, 0, 100) STEP(2, 100, 100)
        RT(10, 1) DEV("kernel", 20, 5, 1) RT(20, 2) DEV("kernel", 30, 5, 2) RT(30, 3) DEV("kernel", 40, 5, 3)
        RT(110, 4) DEV("kernel", 120, 5, 4) RT(120, 5) DEV("kernel", 130, 5, 5)
        "{\"ph\":\"i\",\"name\":\"end\",\"ts\":0,\"pid\":1,\"tid\":1}]";
    CHECK_EQ_INT(tpa_steps_file(write_tmp("steps_fewer.json", FEWER), &res, &err), 0);
    CHECK_EQ_INT(res.n, 1);
    CHECK_EQ_INT(res.tail_dropped, 1);
    tpa_steps_free(&res);
}
#undef RT
#undef DEV
#undef STEP

/* The same two steps written as B/E pairs (ProfilerStep and host ops). */
static const char STEPS_BE[] =
    "[{\"ph\":\"B\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":0,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"B\",\"name\":\"DataLoader.next\",\"ts\":0,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"E\",\"ts\":10,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"B\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":10,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"E\",\"ts\":50,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"E\",\"ts\":100,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"B\",\"name\":\"ProfilerStep#2\",\"ts\":100,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"E\",\"ts\":150,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":22,\"dur\":30,\"pid\":0,\"tid\":7}]";

TP_TEST(steps_from_begin_end)
{
    const char *p = write_tmp("steps_be.json", STEPS_BE);
    tpa_steps_result res;
    tpa_error err;
    CHECK_EQ_INT(tpa_steps_file(p, &res, &err), 0);
    CHECK_EQ_INT(res.n, 2);
    if (res.n == 2) {
        CHECK_EQ_INT(res.rows[0].num, 1);
        CHECK_EQ_INT(res.rows[0].dur_ns, 100000);
        CHECK_EQ_INT(res.rows[0].part_ns[TPA_P_DATALOAD], 10000);
        CHECK_EQ_INT(res.rows[0].part_ns[TPA_P_KERNEL], 30000);
        CHECK_EQ_INT(res.rows[0].part_ns[TPA_P_CPU], 12000);   /* 10..22 */
        CHECK_EQ_INT(res.rows[0].part_ns[TPA_P_OTHER], 48000);
        CHECK_EQ_INT(res.rows[1].num, 2);
        CHECK_EQ_INT(res.rows[1].dur_ns, 50000);
    }
    tpa_steps_free(&res);
    tpa_step *st = NULL;
    size_t n = 0;
    int64_t lo;
    CHECK_EQ_INT(tpa_find_steps(p, &st, &n, &lo, &err), 0);
    CHECK_EQ_INT(n, 2);
    free(st);
}

/* A tiny interval budget forces many passes; the rows must not change. */
TP_TEST(steps_bounded_memory_exact)
{
    static const char *const files[] = { "trace_filter__sampled_rank-0.json.gz", "mlp_adam.pt.trace.json" };
    for (size_t f = 0; f < 2; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/fixtures/%s", TP_SOURCE_DIR, files[f]);
        tpa_steps_result a, b;
        tpa_error err;
        tpa_steps_set_budget((size_t)1 << 30);
        CHECK_EQ_INT(tpa_steps_file(path, &a, &err), 0);
        tpa_steps_set_budget(64);
        CHECK_EQ_INT(tpa_steps_file(path, &b, &err), 0);
        tpa_steps_set_budget(0);
        CHECK_EQ_INT(a.passes, 1);
        CHECK(b.passes > 1 || a.peak_intervals <= 64);
        CHECK(b.peak_intervals < a.peak_intervals || a.peak_intervals <= 64);
        CHECK_EQ_INT(a.n, b.n);
        CHECK(a.n > 0);
        for (size_t i = 0; i < a.n && i < b.n; i++) {
            CHECK_EQ_INT(a.rows[i].num, b.rows[i].num);
            CHECK_EQ_INT(a.rows[i].gpu_busy_ns, b.rows[i].gpu_busy_ns);
            for (int k = 0; k < TPA_P_COUNT; k++) CHECK_EQ_INT(a.rows[i].part_ns[k], b.rows[i].part_ns[k]);
        }
        tpa_steps_free(&a);
        tpa_steps_free(&b);
    }
}

/* One trace's events (3 streams of kernels, memcpy, 2 host threads of
 * nested spans, runtime calls, steps) as text lines, in time order. */
static size_t interleaved_events(char lines[][200], size_t cap)
{
    size_t n = 0;
    for (int step = 0; step < 6 && n + 64 < cap; step++) {
        int base = step * 1000;
        snprintf(lines[n++], 200, "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\",\"ts\":%d,"
                 "\"dur\":990,\"pid\":1,\"tid\":1}", step, base);
        for (int i = 0; i < 24; i++) {
            int t = base + 5 + i * 40;
            snprintf(lines[n++], 200, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"ts\":%d,\"dur\":%d,"
                     "\"pid\":1,\"tid\":%d}", t, 30 + i % 7, 1 + i % 2);
            snprintf(lines[n++], 200, "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":%d,"
                     "\"dur\":4,\"pid\":1,\"tid\":%d}", t + 3, 1 + i % 2);
            snprintf(lines[n++], 200, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"k\",\"ts\":%d,\"dur\":%d,\"pid\":0,"
                     "\"tid\":%d,\"args\":{\"device\":0}}", i % 5 == 4 ? "gpu_memcpy" : "kernel", t + 8 + i % 3 * 11,
                     25 + i % 4 * 9, 7 + i % 3);
        }
    }
    return n;
}

static const char *write_events(const char *name, char lines[][200], const size_t *order, size_t n)
{
    static char doc[160000];
    size_t k = (size_t)snprintf(doc, sizeof doc, "{\"traceEvents\":[");
    for (size_t i = 0; i < n && k + 210 < sizeof doc; i++)
        k += (size_t)snprintf(doc + k, sizeof doc - k, "%s%s\n", i ? "," : "", lines[order[i]]);
    snprintf(doc + k, sizeof doc - k, "]}");
    return write_tmp(name, doc);
}

/* The breakdown does not depend on the order spans come in: streams and
 * threads one after another, interleaved, shuffled; with room for all
 * intervals and with a budget that compacts the sets again and again. */
TP_TEST(steps_any_write_order)
{
    static char lines[700][200];
    size_t n = interleaved_events(lines, 700), order[700];
    for (size_t i = 0; i < n; i++) order[i] = i;
    tpa_steps_result want, got;
    tpa_error err;
    CHECK_EQ_INT(tpa_steps_file(write_events("in_order.json", lines, order, n), &want, &err), 0);
    CHECK_EQ_INT(want.n, 6);
    for (int way = 0; way < 3; way++) {
        size_t k = 0;
        if (way == 0) {        /* thread by thread, stream by stream, each in time order */
            for (int pass = 0; pass < 5; pass++)
                for (size_t i = 0; i < n; i++) {
                    static const char *const tids[] = { "\"tid\":1}", "\"tid\":2}", "\"tid\":7,", "\"tid\":8,", "\"tid\":9," };
                    if (strstr(lines[i], tids[pass])) order[k++] = i;
                }
        } else if (way == 1) { /* reversed */
            for (size_t i = 0; i < n; i++) order[k++] = n - 1 - i;
        } else {               /* shuffled */
            for (size_t i = 0; i < n; i++) order[k++] = i;
            tp_test_shuffle(order, n, 99);
        }
        CHECK_EQ_INT(k, n);
        for (int budget = 0; budget < 2; budget++) {
            tpa_steps_set_budget(budget ? 16 : 0);
            CHECK_EQ_INT(tpa_steps_file(write_events("other_order.json", lines, order, n), &got, &err), 0);
            tpa_steps_set_budget(0);
            CHECK_EQ_INT(got.n, want.n);
            for (size_t i = 0; i < want.n && i < got.n; i++) {
                CHECK_EQ_INT(got.rows[i].gpu_busy_ns, want.rows[i].gpu_busy_ns);
                for (int p = 0; p < TPA_P_COUNT; p++) CHECK_EQ_INT(got.rows[i].part_ns[p], want.rows[i].part_ns[p]);
            }
            tpa_steps_free(&got);
        }
    }
    CHECK(want.rows[0].part_ns[TPA_P_KERNEL] > 0 && want.rows[0].part_ns[TPA_P_MEMCPY] > 0);
    tpa_steps_free(&want);
}

TP_TEST(slice_fix_merge_round_trip)
{
    const char *p = write_tmp("steps2.json", STEPS);
    char out[256];
    snprintf(out, sizeof out, "%s/slice.json", g_dir);
    tpa_slice_opts so;
    memset(&so, 0, sizeof so);
    CHECK(tpa_parse_range("2", &so.steps));
    tpa_write_stats st;
    tpa_error err;
    CHECK_EQ_INT(tpa_slice(p, out, &so, &st, &err), 0);
    CHECK_EQ_INT(st.out_events, 2);  /* step 2 and the memcpy that overlaps it */

    const char *cut = write_tmp("cut.json", "{\"traceEvents\": [{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1},\n{\"ph\":\"X\",\"na");
    char fixed[256];
    snprintf(fixed, sizeof fixed, "%s/fixed.json", g_dir);
    bool was_ok = true;
    CHECK_EQ_INT(tpa_fix(cut, fixed, &st, &was_ok, &err), 0);
    CHECK(!was_ok);
    tpa_report rep;
    memset(&rep, 0, sizeof rep);
    tpa_report_opts o;
    memset(&o, 0, sizeof o);
    CHECK_EQ_INT(tpa_report_file(&rep, fixed, &o, &err), 0);
    CHECK_EQ_INT(rep.truncated_files, 0);
    CHECK_EQ_INT(rep.events, 1);
    tpa_report_free(&rep);

    const char *ins[2] = { p, cut };
    char merged[256];
    snprintf(merged, sizeof merged, "%s/merged.json.gz", g_dir);
    CHECK_EQ_INT(tpa_merge(ins, 2, merged, &st, &err), 0);
    memset(&rep, 0, sizeof rep);
    CHECK_EQ_INT(tpa_report_file(&rep, merged, &o, &err), 0);
    CHECK_EQ_INT(rep.truncated_files, 0);
    tpa_report_free(&rep);
}

TP_TEST(option_parsers)
{
    int64_t ns;
    tpa_range r;
    CHECK(tpa_parse_duration("5us", &ns) && ns == 5000);
    CHECK(tpa_parse_duration("2.5ms", &ns) && ns == 2500000);
    CHECK(tpa_parse_duration("7", &ns) && ns == 7000);
    CHECK(!tpa_parse_duration("5 parsecs", &ns));
    CHECK(tpa_parse_range("10-12", &r) && r.lo == 10 && r.hi == 12);
    CHECK(tpa_parse_range("10-", &r) && r.hi == INT64_MAX);
    CHECK(!tpa_parse_range("12-10", &r));
    CHECK(tpa_parse_time_range("1ms-2ms", &r) && r.lo == 1000000 && r.hi == 2000000);
}

/* PyTorch 1.8-1.10 order: the step parent after its 5000 children (more than
 * any first-pass window); "blk" alone in "blk" merges as torch does, "two"
 * with two "two" children does not. */
static char *late_parent_trace(void)
{
    size_t cap = 5100 * 96, n = 0;
    char *t = malloc(cap);
    n += (size_t)snprintf(t + n, cap - n, "{\"traceEvents\": [");
    for (int i = 0; i < 5000; i++)
        n += (size_t)snprintf(t + n, cap - n, "{\"ph\":\"X\",\"name\":\"op\",\"ts\":%d,\"dur\":1,\"pid\":1,\"tid\":1},",
                              10 + 2 * i);
    n += (size_t)snprintf(t + n, cap - n,
        "{\"ph\":\"X\",\"name\":\"ProfilerStep#1\",\"ts\":0,\"dur\":20000,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"blk\",\"ts\":30000,\"dur\":100,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"blk\",\"ts\":30010,\"dur\":50,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"two\",\"ts\":40000,\"dur\":100,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"two\",\"ts\":40010,\"dur\":10,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"two\",\"ts\":40030,\"dur\":10,\"pid\":1,\"tid\":1}]}");
    return t;
}

TP_TEST(report_late_parent_exact)
{
    char *text = late_parent_trace();
    const char *p = write_tmp("late_parent.json", text);
    tpa_report rep;
    memset(&rep, 0, sizeof rep);
    tpa_report_opts o;
    memset(&o, 0, sizeof o);
    o.group_steps = true;
    tpa_error err;
    CHECK_EQ_INT(tpa_report_file(&rep, p, &o, &err), 0);
    const tpa_op *step = find_op(&rep, "ProfilerStep*", -1), *blk = find_op(&rep, "blk", -1),
                 *two = find_op(&rep, "two", -1);
    CHECK(step && blk && two);
    if (step) CHECK_EQ_INT(step->self_ns, (20000 - 5000) * 1000LL);
    if (blk) { CHECK_EQ_INT(blk->count, 1); CHECK_EQ_INT(blk->total_ns, 100000); CHECK_EQ_INT(blk->self_ns, 100000); }
    if (two) { CHECK_EQ_INT(two->count, 3); CHECK_EQ_INT(two->total_ns, 120000); CHECK_EQ_INT(two->self_ns, 100000); }
    CHECK_EQ_INT(rep.late_events, 0);
    tpa_report_free(&rep);

    /* not re-readable (as stdin): approximate, and counted */
    memset(&rep, 0, sizeof rep);
    tpa_reader *r = tpa_reader_open_mem(text, strlen(text), &err);
    tpa_report_run *run = tpa_report_begin(&rep, NULL, &o, &err);
    tpa_event ev;
    while (tpa_reader_next(r, &ev, &err) > 0) tpa_report_feed(run, &ev);
    tpa_report_end(run, tpa_reader_meta(r), "-");
    tpa_reader_close(r);
    CHECK(rep.late_events > 0);
    tpa_report_free(&rep);
    free(text);
}

/* The step-like names (a training loop's own annotation): the one-pass
 * matcher against every spelling, case, place and near miss. */
TP_TEST(step_like_names)
{
    const char *yes[] = {"train_step", "TRAINING_STEP", "my Train Step 3", "xx_training step",
                         "## anything ##", "trainttrain_step", "traininGtraining_Step", "a train_steps"};
    const char *no[] = {"", "train", "train_ste", "trainstep", "training-step", "train__step",
                        "trainingstep", "step_train", "## x", "rain_step", "train_stop"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        CHECK(tpa_name_is_step_like((tpa_sv){yes[i], strlen(yes[i])}));
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECK(!tpa_name_is_step_like((tpa_sv){no[i], strlen(no[i])}));
}

/* The name matchers scan 16 places at a time: each spelling and near miss
 * at every offset of a padded name, with letters around that start the
 * patterns ('t', 'd') but finish none. */
TP_TEST(name_matchers_at_every_offset)
{
    const char *step_yes[] = {"train_step", "TRAINING STEP", "tRaIn_StEp"};
    const char *step_no[] = {"train", "trainstep", "training-step", "tr", "t"};
    const char *data_yes[] = {"DataLoader", "data_batch", "DATA_LOAD", "data loading", "data_wait"};
    const char *data_no[] = {"data", "dataloade", "data-loader", "data_", "da", "d"};
    char name[128];
    int bad = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *const *yes = pass ? data_yes : step_yes, *const *no = pass ? data_no : step_no;
        size_t ny = pass ? 5 : 3, nn = pass ? 6 : 5;
        bool (*match)(tpa_sv) = pass ? tpa_name_is_data_loading : tpa_name_is_step_like;
        for (size_t w = 0; w < ny + nn; w++) {
            const char *word = w < ny ? yes[w] : no[w - ny];
            size_t wn = strlen(word);
            for (size_t at = 0; at < 40; at++)
                for (size_t tail = 0; tail < 20; tail += 3) {
                    for (size_t i = 0; i < at; i++) name[i] = "xtTdDaxr"[i % 8];
                    memcpy(name + at, word, wn);
                    for (size_t i = 0; i < tail; i++) name[at + wn + i] = "xDtx"[i % 4];
                    bad += match((tpa_sv){name, at + wn + tail}) != (w < ny);
                }
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static char *script_safe(const char *s, size_t n)
{
    tpu_buf b = {0};
    tpa_html_script_safe(&b, s, n);
    return tpu_buf_detach(&b);
}

/* The page's data block: '<' and U+2028/U+2029 written as escapes, alone
 * in plain text at every position of strings up to 70 bytes (the scan
 * takes 16 bytes at a time); every other byte as it is. */
TP_TEST(script_safe_at_every_position)
{
    static const tp_test_piece piece[] = {
        { "<", "\\u003c" }, { "\xe2\x80\xa8", "\\u2028" }, { "\xe2\x80\xa9", "\\u2029" },
        { "\xe2\x80\xa7", "\xe2\x80\xa7" }, { "\xe2\x82\xac", "\xe2\x82\xac" }, { "\xe2", "\xe2" },
        { ">", ">" }, { "\\u003c", "\\u003c" },
    };
    CHECK_EQ_INT(tp_test_every_offset(piece, sizeof piece / sizeof *piece, script_safe), 0);
}

int main(void)
{
    if (!mkdtemp(g_dir)) return 1;
    RUN(report_self_times);
    RUN(report_filters);
    RUN(report_late_parent_exact);
    RUN(steps_breakdown_sums);
    RUN(steps_from_begin_end);
    RUN(steps_device_rule);
    RUN(steps_bounded_memory_exact);
    RUN(steps_any_write_order);
    RUN(slice_fix_merge_round_trip);
    RUN(option_parsers);
    RUN(step_like_names);
    RUN(script_safe_at_every_position);
    RUN(name_matchers_at_every_offset);
    int rc = tp_test_finish();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) rc = 1;
    return rc;
}
