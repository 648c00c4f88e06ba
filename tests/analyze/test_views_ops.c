/* test_views_ops.c - attrib.c (nesting with torch's rules, launch
 * attribution) and the Operators, Kernels and Modules collectors, on small
 * hand-written traces whose answers are known, written out of order.
 *
 * `test_views_ops --dump TRACE...` prints {"operators":…, "kernels":…,
 * "modules":…} as the page would carry them (tests/analyze/
 * test_views_ops_torch.py compares that with torch's and HTA's numbers).
 */
#include "analyze/trace/trace.h"
#include "analyze/attrib/attrib.h"
#include "analyze/page/view.h"
#include "tp_test.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

/* ---- a visitor that sums nodes by name --------------------------------------- */

typedef struct agg {
    char name[64];
    int calls;
    int64_t total, self, dev_self, dev_total;
    uint32_t stack, module;
} agg;

typedef struct collected {
    agg a[64]; int n;
    tpa_at_gpu g[16]; char gop[16][64], grt[16][64], gname[16][64]; int ng;
    uint64_t folded;
} collected;

static void on_node(void *user, const tpa_attrib *at, const tpa_at_node *n)
{
    collected *c = user;
    const char *name = tpa_attrib_str(at, n->name, NULL);
    agg *a = NULL;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->a[i].name, name)) a = &c->a[i];
    if (!a) {
        a = &c->a[c->n++];
        memset(a, 0, sizeof *a);
        snprintf(a->name, sizeof a->name, "%s", name);
    }
    a->calls++;
    a->total += n->dur_ns;
    a->self += n->dur_ns - n->child_ns;
    a->dev_self += n->dev_self_ns;
    a->dev_total += n->dev_total_ns;
    a->stack = n->stack;
    a->module = n->module;
}

static void on_gpu(void *user, const tpa_attrib *at, const tpa_at_gpu *g)
{
    collected *c = user;
    if (c->ng >= 16) return;
    c->g[c->ng] = *g;
    snprintf(c->gop[c->ng], 64, "%s", tpa_attrib_str(at, g->op, NULL));
    snprintf(c->grt[c->ng], 64, "%s", tpa_attrib_str(at, g->runtime, NULL));
    snprintf(c->gname[c->ng], 64, "%s", tpa_attrib_str(at, g->name, NULL));
    c->ng++;
}

static const agg *find(const collected *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->a[i].name, name)) return &c->a[i];
    return NULL;
}

static const agg NONE;
#define GET(c, name) (find(c, name) ? find(c, name) : &NONE)

/* Runs attrib over the text; the attributor is returned for string look-ups. */
static tpa_attrib *run(const char *text, collected *c)
{
    memset(c, 0, sizeof *c);
    tpa_attrib *at = tpa_attrib_new();
    tpa_at_visitor v = { c, on_node, on_gpu };
    tpa_attrib_add_visitor(at, &v);
    tpa_error err;
    tpa_reader *r = tpa_reader_open_mem(text, strlen(text), &err);
    CHECK(r != NULL);
    if (!r) return at;
    tpa_event ev;
    while (tpa_reader_next(r, &ev, &err) > 0)
        tpa_attrib_feed(at, &ev, tpa_classify(&ev));
    tpa_attrib_file_end(at);
    tpa_reader_close(r);
    c->folded = tpa_attrib_stats(at)->folded;
    return at;
}

#define X(name, cat, ts, dur, tid, args) \
    "{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"" name "\",\"ts\":" #ts ",\"dur\":" #dur \
    ",\"pid\":1,\"tid\":" #tid ",\"args\":{" args "}},"
#define END "{\"ph\":\"i\",\"name\":\"end\",\"ts\":0,\"pid\":1,\"tid\":1}]}"

/* parent [0,100] > child [10,40] > grandchild [20,30]; sibling [50,60];
 * a span starting at parent's end is not its child (torch: start >= end
 * pops); an overlapping span is not nested; written in reverse. */
TP_TEST(nesting_any_order)
{
    static const char t[] = "{\"traceEvents\":["
        X("after", "cpu_op", 100, 0, 1, "")
        X("sibling", "cpu_op", 50, 10, 1, "")
        X("grandchild", "cpu_op", 20, 10, 1, "")
        X("child", "cpu_op", 10, 30, 1, "")
        X("other_thread", "cpu_op", 15, 500, 2, "")
        X("parent", "cpu_op", 0, 100, 1, "")
        X("overlap", "cpu_op", 90, 20, 1, "")
        END;
    collected c;
    tpa_attrib *at = run(t, &c);
    CHECK_EQ_INT(GET(&c, "parent")->calls, 1);
    CHECK_EQ_INT(GET(&c, "parent")->total, 100000);
    CHECK_EQ_INT(GET(&c, "parent")->self, 100000 - 30000 - 10000);
    CHECK_EQ_INT(GET(&c, "child")->self, 20000);
    CHECK_EQ_INT(GET(&c, "grandchild")->self, 10000);
    CHECK_EQ_INT(GET(&c, "other_thread")->self, 500000);
    CHECK_EQ_INT(GET(&c, "after")->calls, 1);
    CHECK_EQ_INT(GET(&c, "overlap")->self, 20000);
    tpa_attrib_free(at);
}

/* torch's _remove_dup_nodes: an only child of the same name is not counted
 * (aten::div_ 6 calls, not 12), chains fold to the top, a same-name child
 * with a sibling stays. */
TP_TEST(fold_same_name_only_child)
{
    static const char t[] = "{\"traceEvents\":["
        X("mul", "cpu_op", 2, 1, 1, "")
        X("div_", "cpu_op", 1, 8, 1, "")
        X("div_", "cpu_op", 0, 10, 1, "")        /* folds: 1 call, self 10-1 */
        X("a", "cpu_op", 20, 10, 1, "")
        X("a", "cpu_op", 21, 8, 1, "")
        X("a", "cpu_op", 22, 6, 1, "")
        X("b", "cpu_op", 23, 1, 1, "")           /* a counted once, self 10-1 */
        X("add", "cpu_op", 40, 10, 1, "")
        X("add", "cpu_op", 41, 2, 1, "")
        X("sub", "cpu_op", 44, 1, 1, "")         /* two children: no fold */
        END;
    collected c;
    tpa_attrib *at = run(t, &c);
    CHECK_EQ_INT(GET(&c, "div_")->calls, 1);
    CHECK_EQ_INT(GET(&c, "div_")->total, 10000);
    CHECK_EQ_INT(GET(&c, "div_")->self, 9000);
    CHECK_EQ_INT(GET(&c, "mul")->calls, 1);
    CHECK_EQ_INT(GET(&c, "a")->calls, 1);
    CHECK_EQ_INT(GET(&c, "a")->self, 9000);
    CHECK_EQ_INT(GET(&c, "add")->calls, 2);
    CHECK_EQ_INT(GET(&c, "add")->total, 12000);
    CHECK_EQ_INT(GET(&c, "add")->self, (10000 - 2000 - 1000) + 2000);
    CHECK_EQ_INT(c.folded, 3);
    tpa_attrib_free(at);
}

/* Kernels written before their operators: one through its runtime call's
 * correlation id (to the innermost operator around the call, not the
 * annotation), one through External id only, one with neither. */
TP_TEST(device_attribution)
{
    static const char t[] = "{\"traceEvents\":["
        X("sm80_xmma_gemm", "kernel", 20, 30, 7, "\"device\":0,\"stream\":7,\"correlation\":100,"
          "\"External id\":7,\"grid\":[4,1,1],\"block\":[128,1,1],\"registers per thread\":64,"
          "\"shared memory\":1024,\"blocks per SM\":2.5,\"est. achieved occupancy %\":50")
        X("elementwise", "kernel", 70, 5, 7, "\"device\":0,\"correlation\":200,\"External id\":9")
        X("orphan", "kernel", 80, 4, 7, "\"device\":0")
        X("forward", "user_annotation", 0, 100, 1, "\"External id\":1")
        X("aten::mm", "cpu_op", 5, 45, 1, "\"External id\":7")
        X("cudaLaunchKernel", "cuda_runtime", 10, 5, 1, "\"External id\":7,\"correlation\":100")
        X("aten::add", "cpu_op", 60, 10, 1, "\"External id\":9")
        END;
    collected c;
    tpa_attrib *at = run(t, &c);
    CHECK_EQ_INT(GET(&c, "aten::mm")->dev_self, 30000);
    CHECK_EQ_INT(GET(&c, "aten::mm")->dev_total, 30000);
    CHECK_EQ_INT(GET(&c, "aten::add")->dev_self, 5000);
    CHECK_EQ_INT(GET(&c, "forward")->dev_self, 0);
    CHECK_EQ_INT(GET(&c, "forward")->dev_total, 35000);
    CHECK_EQ_INT(GET(&c, "cudaLaunchKernel")->dev_total, 0);
    CHECK_EQ_INT(c.ng, 3);
    for (int i = 0; i < c.ng; i++) {
        if (!strcmp(c.gname[i], "sm80_xmma_gemm")) {
            CHECK_STR(c.gop[i], "aten::mm");
            CHECK_STR(c.grt[i], "cudaLaunchKernel");
            CHECK_EQ_INT(c.g[i].grid[0], 4);
            CHECK_EQ_INT(c.g[i].block[0], 128);
            CHECK_EQ_INT(c.g[i].regs, 64);
            CHECK_EQ_INT(c.g[i].shmem, 1024);
            CHECK_NEAR(c.g[i].blocks_per_sm, 2.5, 1e-9);
            CHECK_NEAR(c.g[i].occupancy, 50, 1e-9);
            CHECK_EQ_INT(c.g[i].stream, 7);
        } else if (!strcmp(c.gname[i], "elementwise")) {
            CHECK_STR(c.gop[i], "aten::add");
            CHECK_STR(c.grt[i], "");
        } else {
            CHECK_STR(c.gop[i], "");
        }
    }
    const tpa_at_stats *st = tpa_attrib_stats(at);
    CHECK_EQ_INT(st->gpu_by_correlation, 1);
    CHECK_EQ_INT(st->gpu_by_external_id, 1);
    CHECK_EQ_INT(st->gpu_unattributed, 1);
    tpa_attrib_free(at);
}

/* HIP writes the launch configuration on hipLaunchKernel, not on the
 * kernel: the kernel takes it from its runtime call. */
TP_TEST(hip_launch_config)
{
    static const char t[] = "{\"traceEvents\":["
        X("Cijk_gemm", "kernel", 20, 30, 7, "\"device\":0,\"correlation\":118,\"External id\":13")
        X("aten::addmm", "cpu_op", 5, 45, 1, "\"External id\":13")
        X("hipLaunchKernel", "cuda_runtime", 10, 5, 1, "\"External id\":13,\"cid\":107,\"correlation\":118,"
          "\"stream\":\"0x0\",\"grid\":[3,1,1],\"block\":[128,2,1],\"shared memory\":512")
        END;
    collected c;
    tpa_attrib *at = run(t, &c);
    CHECK_EQ_INT(c.ng, 1);
    CHECK_STR(c.gop[0], "aten::addmm");
    CHECK_EQ_INT(c.g[0].grid[0], 3);
    CHECK_EQ_INT(c.g[0].block[1], 2);
    CHECK_EQ_INT(c.g[0].shmem, 512);
    CHECK_EQ_INT(c.g[0].regs, -1);
    tpa_attrib_free(at);
}

/* with_modules / with_stack: module frames make the tree, other python
 * frames the stack of the operators inside them. */
TP_TEST(modules_and_stacks)
{
    static const char t[] = "{\"traceEvents\":["
        X("aten::linear", "cpu_op", 12, 30, 1, "")
        X("nn.Module: Linear_0", "python_function", 10, 50, 1, "")
        X("train.py(40): step", "python_function", 5, 90, 1, "")
        X("nn.Module: Net_0", "python_function", 8, 80, 1, "")
        END;
    collected c;
    tpa_attrib *at = run(t, &c);
    const agg *lin = GET(&c, "aten::linear");
    uint32_t parent, name = tpa_attrib_stack(at, lin->stack, &parent);
    CHECK_STR(tpa_attrib_str(at, name, NULL), "train.py(40): step");
    CHECK_EQ_INT(parent, 0);
    name = tpa_attrib_module(at, lin->module, &parent);
    CHECK_STR(tpa_attrib_str(at, name, NULL), "nn.Module: Linear_0");
    name = tpa_attrib_module(at, parent, &parent);
    CHECK_STR(tpa_attrib_str(at, name, NULL), "nn.Module: Net_0");
    CHECK_EQ_INT(parent, 0);
    tpa_attrib_free(at);
}

/* Lightning's module ranges ("[pl][module]class: attr" annotations) make
 * the module tree as torch's "nn.Module: X" frames do. */
TP_TEST(lightning_modules)
{
    static const char t[] = "{\"traceEvents\":["
        X("aten::addmm", "cpu_op", 6, 4, 1, "")
        X("[pl][module]torch.nn.modules.linear.Linear: body.0", "user_annotation", 5, 15, 1, "")
        X("[pl][module]torch.nn.modules.container.Sequential: body", "user_annotation", 0, 50, 1, "")
        END;
    collected c;
    tpa_attrib *at = run(t, &c);
    uint32_t parent, name = tpa_attrib_module(at, GET(&c, "aten::addmm")->module, &parent);
    CHECK_STR(tpa_attrib_str(at, name, NULL), "[pl][module]torch.nn.modules.linear.Linear: body.0");
    name = tpa_attrib_module(at, parent, &parent);
    CHECK_STR(tpa_attrib_str(at, name, NULL), "[pl][module]torch.nn.modules.container.Sequential: body");
    CHECK_EQ_INT(parent, 0);
    tpa_attrib_free(at);
}

/* B/E pairs nest like X spans. */
TP_TEST(begin_end_pairs)
{
    static const char t[] = "{\"traceEvents\":["
        "{\"ph\":\"B\",\"name\":\"outer\",\"ts\":0,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"B\",\"name\":\"inner\",\"ts\":2,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"E\",\"ts\":5,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"E\",\"ts\":10,\"pid\":1,\"tid\":1},"
        END;
    collected c;
    tpa_attrib *at = run(t, &c);
    CHECK_EQ_INT(GET(&c, "outer")->self, 7000);
    CHECK_EQ_INT(GET(&c, "inner")->total, 3000);
    tpa_attrib_free(at);
}

/* Collectors of one page share the attributor they are handed: one feeder,
 * every visitor served; once fed, it takes no more collectors. */
TP_TEST(shared_attributor)
{
    static const char t[] = "{\"traceEvents\":[" X("op", "cpu_op", 0, 10, 1, "") END;
    tpa_attrib *at = tpa_attrib_new();
    collected a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    tpa_at_visitor va = { &a, on_node, on_gpu }, vb = { &b, on_node, on_gpu };
    tpa_at_client ca, cb, cc;
    CHECK(!tpa_at_client_begin(&cc, NULL, &va));
    CHECK(tpa_at_client_begin(&ca, at, &va));
    CHECK(tpa_at_client_begin(&cb, at, &vb));
    CHECK(ca.at == at && cb.at == at && ca.feeder && !cb.feeder);
    tpa_error err;
    tpa_reader *r = tpa_reader_open_mem(t, strlen(t), &err);
    tpa_event ev;
    while (tpa_reader_next(r, &ev, &err) > 0) {
        tpa_at_client_feed(&ca, &ev, tpa_classify(&ev));
        tpa_at_client_feed(&cb, &ev, tpa_classify(&ev));
    }
    tpa_at_client_file_end(&ca, 0, tpa_reader_meta(r));
    tpa_at_client_file_end(&cb, 0, tpa_reader_meta(r));
    tpa_reader_close(r);
    CHECK_EQ_INT(GET(&a, "op")->calls, 1);
    CHECK_EQ_INT(GET(&b, "op")->calls, 1);
    CHECK(!tpa_at_client_begin(&cc, at, &va));  /* fed: sealed */
    CHECK(cc.at == NULL && !cc.feeder);
    tpa_at_client_end(&ca);
    tpa_at_client_end(&cb);
    tpa_attrib_free(at);
}

/* ---- the three collectors as the page builder drives them ------------------------- */

static const tpa_view_class *const g_views[] = { &tpa_view_operators, &tpa_view_kernels, &tpa_view_modules };
#define NVIEWS 3

static int views_json(const char *const *paths, int n, tpu_buf *out)
{
    tpa_attrib *at = tpa_attrib_new();
    tpa_view_input in = { .input = paths[0], .traces = paths, .n_traces = n, .attrib = at };
    void *st[NVIEWS];
    for (int v = 0; v < NVIEWS; v++) st[v] = g_views[v]->begin(&in);
    int rc = 0;
    for (int f = 0; f < n && rc == 0; f++) {
        tpa_error err;
        tpa_reader *r = tpa_reader_open(paths[f], &err);
        if (!r) { tpa_error_print(stderr, &err); rc = -1; break; }
        tpa_event ev;
        int k;
        while ((k = tpa_reader_next(r, &ev, &err)) > 0) {
            int kind = tpa_classify(&ev);
            for (int v = 0; v < NVIEWS; v++) if (st[v]) g_views[v]->feed(st[v], &ev, kind);
        }
        if (k < 0) { tpa_error_print(stderr, &err); rc = -1; }
        for (int v = 0; v < NVIEWS; v++) if (st[v]) g_views[v]->file_end(st[v], f, tpa_reader_meta(r));
        tpa_reader_close(r);
    }
    tpu_json j;
    tpu_json_init(&j, out, 0);
    tpu_json_begin_object(&j);
    for (int v = 0; v < NVIEWS; v++) {
        tpu_json_key(&j, g_views[v]->key);
        if (st[v]) g_views[v]->json(st[v], &j); else tpu_json_null(&j);
    }
    tpu_json_end_object(&j);
    for (int v = 0; v < NVIEWS; v++) if (st[v]) g_views[v]->free(st[v]);
    tpa_attrib_free(at);
    return rc;
}

static char g_dir[] = "/tmp/tpa_views_XXXXXX";

static const char *write_tmp(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
    return path;
}

TP_TEST(collectors_json)
{
    static const char t[] = "{\"traceEvents\":["
        X("sm80_xmma_gemm", "kernel", 20, 30, 7, "\"device\":0,\"correlation\":100,\"grid\":[4,1,1],"
          "\"block\":[128,1,1],\"registers per thread\":64,\"shared memory\":0,"
          "\"est. achieved occupancy %\":40")
        X("sm80_xmma_gemm", "kernel", 60, 10, 7, "\"device\":0,\"correlation\":101,\"grid\":[4,1,1],"
          "\"block\":[128,1,1],\"registers per thread\":64,\"shared memory\":0,"
          "\"est. achieved occupancy %\":100")
        X("ProfilerStep#3", "user_annotation", 0, 100, 1, "")
        X("[LightningModule]Net.training_step", "user_annotation", 1, 98, 1, "")
        X("aten::mm", "cpu_op", 5, 45, 1, "\"External id\":7,\"Input Dims\":[[2, 3], [3, 4]]")
        X("cudaLaunchKernel", "cuda_runtime", 10, 5, 1, "\"correlation\":100")
        X("aten::mm", "cpu_op", 55, 10, 1, "\"Input Dims\":[[5, 3], [3, 4]]")
        X("cudaLaunchKernel", "cuda_runtime", 56, 5, 1, "\"correlation\":101")
        X("nn.Module: Net_0", "python_function", 2, 90, 1, "")
        X("<!--<script>\\\"q\\\\", "cpu_op", 70, 1, 1, "")
        END;
    const char *p = write_tmp("views.json", t);
    tpu_buf out = {0};
    CHECK_EQ_INT(views_json(&p, 1, &out), 0);
    const char *s = out.data;
    CHECK_CONTAINS(s, "{\"name\":\"aten::mm\",\"kind\":\"op\",\"calls\":2,\"self\":45000,"
                      "\"total\":55000,\"dself\":40000,\"dtotal\":40000,");
    CHECK_CONTAINS(s, "{\"name\":\"ProfilerStep*\",\"kind\":\"step\",\"calls\":1,");
    CHECK_CONTAINS(s, "\"shapes\":\"[[2, 3], [3, 4]]\",\"calls\":1,\"self\":40000,\"total\":45000,"
                      "\"dself\":30000");
    /* kernels: duration-weighted occupancy (40*30 + 100*10) / 40 = 55 */
    CHECK_CONTAINS(s, "\"name\":\"sm80_xmma_gemm\",\"kind\":\"kernel\",\"calls\":2,\"total\":40000,"
                      "\"min\":10000,\"max\":30000,\"mean\":20000,\"occupancy\":55,");
    CHECK_CONTAINS(s, "\"tensor_cores\":true");
    CHECK_CONTAINS(s, "\"op\":\"aten::mm\",\"grid\":[4,1,1],\"block\":[128,1,1],\"regs\":64,\"shmem\":0,"
                      "\"op_tc_eligible\":true,\"tensor_cores\":true");
    CHECK_CONTAINS(s, "\"modules\":[{\"id\":1,\"parent\":0,\"name\":\"Net_0\",\"calls\":1,\"total\":90000,"
                      "\"dtotal\":40000,\"dself\":40000,");
    /* tensor cores: aten::mm launched two xmma kernels (all its device time) */
    CHECK_CONTAINS(s, "\"dtotal\":40000,\"min\":10000,\"max\":45000,\"tc_self\":40000,\"tc_total\":40000,"
                      "\"tc_eligible\":true");
    CHECK_CONTAINS(s, "\"timeline\":{\"t0\":2000,\"all_calls\":1,\"lanes\":[[1,1]],"
                      "\"modules\":[[1,0,\"Net_0\"]],\"calls\":[[0,0,90000,1]]}");
    CHECK_CONTAINS(s, "\"hooks\":[{\"name\":\"[LightningModule]Net.training_step\",\"calls\":1");
    CHECK_CONTAINS(s, "\"name\":\"<!--<script>\\\"q\\\\\"");  /* data, escaped as JSON */
    free(out.data);
}

/* key_averages(group_by_input_shape=True) groups by FunctionEvent.input_shapes,
 * where a TensorList argument is []: the trace's structured Input Dims of
 * aten::cat ([[[2, 3], [2, 3]], []]), whatever the list's shapes, 0-dim
 * tensors' lists ([[], []]) and empty lists included, make one row. */
TP_TEST(shapes_as_torch_groups)
{
    static const char t[] = "{\"traceEvents\":["
        X("aten::cat", "cpu_op", 0, 10, 1, "\"Input Dims\":[[[2, 3], [2, 3]], []]")
        X("aten::cat", "cpu_op", 20, 10, 1, "\"Input Dims\":[[[0, 6], [2, 6], [1, 6]], []]")
        X("aten::cat", "cpu_op", 40, 10, 1, "\"Input Dims\":[[], []]")
        X("aten::_foreach_add_", "cpu_op", 60, 10, 1, "\"Input Dims\":[[[], [], [], []], [], []]")
        X("aten::_foreach_mul_", "cpu_op", 80, 10, 1, "\"Input Dims\":[[[[4, 6], [4]]], [[4, 6], [4]], []]")
        X("aten::mm", "cpu_op", 100, 10, 1, "\"Input Dims\":[[2, 3], [3, 4]]")
        END;
    const char *p = write_tmp("shapes.json", t);
    tpu_buf out = {0};
    CHECK_EQ_INT(views_json(&p, 1, &out), 0);
    const char *s = out.data;
    CHECK_CONTAINS(s, "{\"name\":\"aten::cat\",\"kind\":\"op\",\"shapes\":\"[[], []]\",\"calls\":3,");
    CHECK_CONTAINS(s, "{\"name\":\"aten::_foreach_add_\",\"kind\":\"op\",\"shapes\":\"[[], [], []]\",\"calls\":1,");
    /* one level deeper than torch writes is still one list argument: [] */
    CHECK_CONTAINS(s, "{\"name\":\"aten::_foreach_mul_\",\"kind\":\"op\",\"shapes\":\"[[], [], []]\",\"calls\":1,");
    CHECK_CONTAINS(s, "\"shapes\":\"[[2, 3], [3, 4]]\"");
    free(out.data);
}

/* The TensorBoard plugin's tensor-core rules: a kernel by its name (an MMA
 * shape, xmma, hmma ...), an operator eligible by name (aten::linear), by an
 * eligible child operator (my_op above aten::mm) or by launching
 * tensor-core kernels itself (custom_gemm); annotations take no
 * eligibility from their children. */
TP_TEST(tensor_cores)
{
    static const char t[] = "{\"traceEvents\":["
        X("ampere_fp16_s16816gemm_fp16_128x128", "kernel", 20, 30, 7, "\"device\":0,\"correlation\":1")
        X("vectorized_elementwise_kernel", "kernel", 60, 10, 7, "\"device\":0,\"correlation\":2")
        X("sm90_xmma_gemm_bf16", "kernel", 80, 8, 7, "\"device\":0,\"correlation\":3")
        X("forward", "user_annotation", 0, 100, 1, "")
        X("my_op", "cpu_op", 1, 98, 1, "")
        X("aten::mm", "cpu_op", 5, 45, 1, "")
        X("cudaLaunchKernel", "cuda_runtime", 10, 5, 1, "\"correlation\":1")
        X("cudaLaunchKernel", "cuda_runtime", 30, 5, 1, "\"correlation\":2")
        X("custom_gemm", "cpu_op", 70, 20, 1, "")
        X("cudaLaunchKernel", "cuda_runtime", 71, 5, 1, "\"correlation\":3")
        X("aten::linear", "cpu_op", 120, 5, 1, "")
        END;
    const char *p = write_tmp("tc.json", t);
    tpu_buf out = {0};
    CHECK_EQ_INT(views_json(&p, 1, &out), 0);
    const char *s = out.data;
    CHECK_CONTAINS(s, "\"name\":\"aten::mm\",\"kind\":\"op\",\"calls\":1,\"self\":35000,\"total\":45000,"
                      "\"dself\":40000,\"dtotal\":40000,\"min\":45000,\"max\":45000,\"tc_self\":30000,"
                      "\"tc_total\":30000,\"tc_eligible\":true");
    CHECK_CONTAINS(s, "\"name\":\"custom_gemm\",\"kind\":\"op\",\"calls\":1,\"self\":15000,\"total\":20000,"
                      "\"dself\":8000,\"dtotal\":8000,\"min\":20000,\"max\":20000,\"tc_self\":8000,"
                      "\"tc_total\":8000,\"tc_eligible\":true");
    CHECK_CONTAINS(s, "\"name\":\"my_op\",\"kind\":\"op\",\"calls\":1,\"self\":33000,\"total\":98000,"
                      "\"dself\":0,\"dtotal\":48000,\"min\":98000,\"max\":98000,\"tc_self\":0,"
                      "\"tc_total\":38000,\"tc_eligible\":true");
    CHECK_CONTAINS(s, "\"name\":\"forward\",\"kind\":\"annotation\",\"calls\":1,\"self\":2000,\"total\":100000,"
                      "\"dself\":0,\"dtotal\":48000,\"min\":100000,\"max\":100000,\"tc_self\":0,"
                      "\"tc_total\":38000,\"tc_eligible\":false");
    /* no device time: no tensor-core fields */
    CHECK_CONTAINS(s, "\"name\":\"aten::linear\",\"kind\":\"op\",\"calls\":1,\"self\":5000,\"total\":5000,"
                      "\"dself\":0,\"dtotal\":0,\"min\":5000,\"max\":5000}");
    CHECK_CONTAINS(s, "\"name\":\"ampere_fp16_s16816gemm_fp16_128x128\",\"kind\":\"kernel\"");
    CHECK_CONTAINS(s, "\"tensor_core_total\":38000,");
    /* by launch configuration: the plugin's "Op is Tensor Cores eligible" is
     * the launching operator's by its name (custom_gemm is eligible on the
     * Operators view only from the tensor-core kernels it launched) */
    CHECK_CONTAINS(s, "\"op\":\"custom_gemm\",\"grid\":null,\"block\":null,\"regs\":null,\"shmem\":null,"
                      "\"op_tc_eligible\":false,\"tensor_cores\":true");
    CHECK_CONTAINS(s, "\"op\":\"aten::mm\",\"grid\":null,\"block\":null,\"regs\":null,\"shmem\":null,"
                      "\"op_tc_eligible\":true,\"tensor_cores\":false");
    CHECK(tpa_kernel_uses_tensor_cores("volta_h884gemm_64x64", 20));
    CHECK(tpa_kernel_uses_tensor_cores("cudnn::conv1x1_kernel", 21));
    CHECK(!tpa_kernel_uses_tensor_cores("void at::native::reduce_kernel<512, 1>", 38));
    CHECK(tpa_op_tensor_core_eligible("MmBackward", 10));
    CHECK(!tpa_op_tensor_core_eligible("aten::mm_", 9));
    free(out.data);
}

/* The module timeline keeps the earliest calls, at most its cap, whatever
 * the order they come in, and counts them all. */
TP_TEST(module_timeline_bounded)
{
    enum { N = 12000 };
    tpu_buf b = {0};
    tpu_buf_puts(&b, "{\"traceEvents\":[");
    char line[200];
    for (int i = 0; i < N; i++) {
        int k = (i * 7919) % N;  /* every start once, out of order */
        snprintf(line, sizeof line, "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"nn.Module: M_%d\","
                 "\"ts\":%d,\"dur\":5,\"pid\":1,\"tid\":%d},", k % 3, k * 10, 1 + k % 2);
        tpu_buf_puts(&b, line);
    }
    tpu_buf_puts(&b, END);
    const char *p = write_tmp("mods.json", b.data);
    free(b.data);
    tpu_buf out = {0};
    CHECK_EQ_INT(views_json(&p, 1, &out), 0);
    const char *tl = out.data ? strstr(out.data, "\"timeline\":{\"t0\":0,\"all_calls\":12000,") : NULL;
    CHECK(tl != NULL);
    const char *calls = tl ? strstr(tl, "\"calls\":[") : NULL;
    CHECK(calls != NULL);
    if (calls) {
        /* [lane, start - t0, dur, id] each: the kept starts are 0, 10000, 20000 ... in a row */
        int n = 0, lanes[2] = { 0, 0 };
        long long max_start = -1;
        for (const char *q = strstr(calls, "[[") + 1; q && *q == '['; n++) {
            int lane;
            long long start;
            if (sscanf(q, "[%d,%lld,", &lane, &start) != 2) break;
            if (start > max_start) max_start = start;
            if (lane == 0 || lane == 1) lanes[lane]++;
            q = strchr(q, ']');
            q = q ? q + 1 + (q[1] == ',') : NULL;
        }
        CHECK(n > 0 && n < N);
        CHECK_EQ_INT(max_start, (long long)(n - 1) * 10000);
        CHECK(lanes[0] > 0 && lanes[1] > 0 && lanes[0] + lanes[1] == n);
    }
    free(out.data);
}

/* Long names: each table stops at its byte budget and counts the rest as
 * left out, so the page stays bounded (1,000 names of 4,000 bytes would
 * be 8 MB in the two operator tables). */
TP_TEST(tables_bounded_in_bytes)
{
    tpu_buf b = {0};
    tpu_buf_puts(&b, "{\"traceEvents\":[");
    char *name = malloc(4001);
    for (int i = 0; i < 1000; i++) {
        memset(name, 'a' + i % 26, 4000);
        snprintf(name, 8, "%05d_", i);
        name[6] = 'x';  /* over the NUL snprintf wrote */
        name[4000] = 0;
        char head[160];
        snprintf(head, sizeof head, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"ts\":%d,\"dur\":5,\"pid\":1,\"tid\":1,\"name\":\"", i * 10);
        tpu_buf_puts(&b, head);
        tpu_buf_puts(&b, name);
        tpu_buf_puts(&b, "\"},");
    }
    tpu_buf_puts(&b, END);
    free(name);
    const char *p = write_tmp("long.json", b.data);
    free(b.data);
    tpu_buf out = {0};
    CHECK_EQ_INT(views_json(&p, 1, &out), 0);
    CHECK(out.len < ((size_t)4 << 20));
    const char *lo = out.data ? strstr(out.data, "\"left_out\":") : NULL;
    CHECK(lo && atoi(lo + 11) > 0);
    free(out.data);
}

/* Over the span budget (TP_SMALL_LIMITS: 64) a file is nested in chunks:
 * counts and totals stay exact. */
TP_TEST(chunks_keep_counts)
{
    tpu_buf b = {0};
    tpu_buf_puts(&b, "{\"traceEvents\":[");
    char line[160];
    for (int i = 0; i < 300; i++) {
        snprintf(line, sizeof line, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op%d\",\"ts\":%d,\"dur\":5,"
                 "\"pid\":1,\"tid\":1},", i % 3, (299 - i) * 10);
        tpu_buf_puts(&b, line);
    }
    tpu_buf_puts(&b, END);
    collected c;
    tpa_attrib *at = run(b.data, &c);
    CHECK_EQ_INT(GET(&c, "op0")->calls, 100);
    CHECK_EQ_INT(GET(&c, "op1")->total, 100 * 5000);
    CHECK_EQ_INT(GET(&c, "op2")->self, 100 * 5000);
    tpa_attrib_free(at);
    free(b.data);
}


int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "--dump")) {
        tpu_buf out = {0};
        int rc = views_json((const char *const *)argv + 2, argc - 2, &out);
        if (out.data) fputs(out.data, stdout);
        putchar('\n');
        free(out.data);
        return rc ? 1 : 0;
    }
    if (!mkdtemp(g_dir)) return 1;
    RUN(nesting_any_order);
    RUN(fold_same_name_only_child);
    RUN(device_attribution);
    RUN(modules_and_stacks);
    RUN(hip_launch_config);
    RUN(lightning_modules);
    RUN(begin_end_pairs);
    RUN(shared_attributor);
    RUN(collectors_json);
    RUN(shapes_as_torch_groups);
    RUN(tensor_cores);
    RUN(module_timeline_bounded);
    RUN(chunks_keep_counts);
    RUN(tables_bounded_in_bytes);
    tp_test_rm_rf(g_dir);
    return tp_test_finish();
}
