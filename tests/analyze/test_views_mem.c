/* test_views_mem.c - the Memory view's collector (page/view_memory.c) on
 * small hand-written traces whose answers are known: each device its own
 * operator statistics, allocation/free pairs matched by device and address
 * (one address on three devices), the caller of an aten::empty* allocation,
 * the first GPU shown first, and past PAIRS_ALL pairs each device keeps its
 * own largest; a page of two ranks keeps them apart (issue 31 item 7: each
 * its own devices, pairs, operators, peak and times from its own start).
 * Runs in every build (the sanitizers' too).
 */
#include "analyze/trace/trace.h"
#include "analyze/page/view.h"
#include "tp_test.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

/* The view's JSON value for n traces held in memory (named paths), fed as the page builder does. */
static char *memory_json_files(const char *const *texts, const char *const *paths, int n)
{
    tpa_view_input in = { .input = paths[0], .traces = paths, .n_traces = n };
    const tpa_view_class *vc = &tpa_view_memory;
    void *st = vc->begin(&in);
    CHECK(st != NULL);
    if (!st) return NULL;
    for (int f = 0; f < n; f++) {
        tpa_error err;
        tpa_reader *r = tpa_reader_open_mem(texts[f], strlen(texts[f]), &err);
        CHECK(r != NULL);
        vc->file_begin(st, f, paths[f]);
        tpa_event ev;
        while (r && tpa_reader_next(r, &ev, &err) > 0) vc->feed(st, &ev, tpa_classify(&ev));
        vc->file_end(st, f, r ? tpa_reader_meta(r) : NULL);
        if (r) tpa_reader_close(r);
    }
    tpu_buf out = {0};
    tpu_json j;
    tpu_json_init(&j, &out, 0);
    vc->json(st, &j);
    vc->free(st);
    return out.data;
}

static char *memory_json(const char *text, size_t n)
{
    const char *paths[1] = { "mem.json" };
    char *copy = malloc(n + 1);
    if (!copy) return NULL;
    memcpy(copy, text, n);
    copy[n] = 0;
    const char *texts[1] = { copy };
    char *js = memory_json_files(texts, paths, 1);
    free(copy);
    return js;
}

#define OP(name, ts, dur, tid) \
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" name "\",\"ts\":" #ts ",\"dur\":" #dur ",\"pid\":1,\"tid\":" #tid "},"
#define MEM(ts, type, id, bytes, total, addr, tid) \
    "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\",\"ts\":" #ts ",\"pid\":1,\"tid\":" #tid \
    ",\"args\":{\"Total Reserved\":0,\"Total Allocated\":" #total ",\"Bytes\":" #bytes ",\"Addr\":" #addr \
    ",\"Device Type\":" #type ",\"Device Id\":" #id "}},"
#define END "{\"ph\":\"i\",\"name\":\"end\",\"ts\":950,\"pid\":1,\"tid\":1}]}"

/* The pairs array: [device, op, bytes, t_alloc, t_free or -1, caller] each. */
typedef struct pr { long long v[6]; } pr;

static int parse_pairs(const char *js, pr *out, int cap)
{
    const char *p = js ? strstr(js, "\"pairs\":[") : NULL;
    if (!p) return -1;
    p += 9;
    int n = 0;
    while (*p == '[' && n < cap) {
        p++;
        for (int k = 0; k < 6; k++) {
            if (!strncmp(p, "null", 4)) { out[n].v[k] = -1; p += 4; }
            else out[n].v[k] = strtoll(p, (char **)&p, 10);
            if (*p == ',') p++;
        }
        if (*p++ != ']') return -1;
        n++;
        if (*p == ',') p++;
    }
    return n;
}

/* The id of name in "op_names" (its place in the array), -1 when absent. */
static int name_id(const char *js, const char *name)
{
    const char *p = js ? strstr(js, "\"op_names\":[") : NULL;
    if (!p) return -1;
    p += 12;
    char want[128];
    snprintf(want, sizeof want, "\"%s\"", name);
    for (int i = 0; *p == '"'; i++) {
        if (!strncmp(p, want, strlen(want))) return i;
        p = strchr(p + 1, '"');
        if (!p) return -1;
        p++;
        if (*p == ',') p++;
    }
    return -1;
}

/* Three devices, one address (0x1000) on each: CPU (slot 0), cuda:1 (slot 1),
 * cuda:0 (slot 2). */
TP_TEST(devices_pairs_callers)
{
    static const char t[] = "{\"traceEvents\":["
        OP("aten::zeros_like", 100, 100, 1)
        OP("aten::empty_like", 110, 40, 1)
        OP("aten::empty_strided", 120, 10, 1)
        MEM(125, 0, -1, 4096, 4096, 4096, 1)        /* CPU: caller aten::zeros_like (not aten::empty_like) */
        OP("aten::addmm", 300, 100, 1)
        MEM(310, 1, 1, 1000, 1000, 4096, 1)         /* cuda:1, same address: no caller (addmm allocates) */
        OP("aten::to", 500, 100, 2)
        OP("aten::_to_copy", 510, 80, 2)
        OP("aten::empty", 520, 10, 2)
        MEM(525, 1, 0, 777, 777, 4096, 2)           /* cuda:0, same address again: caller aten::_to_copy */
        MEM(700, 0, -1, -4096, 0, 4096, 1)          /* frees the CPU tensor only */
        OP("aten::add_", 800, 50, 2)
        MEM(810, 1, 0, -777, 0, 4096, 2)            /* frees cuda:0's, inside aten::add_ */
        MEM(900, 1, 0, 2048, 2048, 4096, 2)         /* cuda:0 reuses the address, outside every operator */
        END;
    char *js = memory_json(t, sizeof t - 1);
    CHECK(js != NULL);
    if (!js) return;
    CHECK(strstr(js, "{\"name\":\"CPU\",\"type\":0,\"id\":-1,") != NULL);
    CHECK(strstr(js, "{\"name\":\"cuda:1\",\"type\":1,\"id\":1,") != NULL);
    CHECK(strstr(js, "{\"name\":\"cuda:0\",\"type\":1,\"id\":0,") != NULL);
    CHECK(strstr(js, "\"default_device\":2") != NULL);  /* cuda:0, the first GPU */
    int zl = name_id(js, "aten::zeros_like"), tc = name_id(js, "aten::_to_copy"), es = name_id(js, "aten::empty_strided");
    int em = name_id(js, "aten::empty"), mm = name_id(js, "aten::addmm");
    CHECK(zl >= 0 && tc >= 0 && es >= 0 && em >= 0 && mm >= 0);
    pr p[8];
    int n = parse_pairs(js, p, 8);
    CHECK_EQ_INT(n, 4);
    /* largest first: CPU 4096, cuda:0 2048, cuda:1 1000, cuda:0 777 */
    long long want[4][6] = {
        { 0, es, 4096, 125000, 700000, zl },
        { 2, -1, 2048, 900000, -1, -1 },
        { 1, mm, 1000, 310000, -1, -1 },   /* not freed by the CPU's or cuda:0's free of its address */
        { 2, em, 777, 525000, 810000, tc },
    };
    for (int i = 0; i < n && i < 4; i++)
        for (int k = 0; k < 6; k++) {
            /* times are from the earliest event (100 us) */
            long long w = want[i][k];
            if ((k == 3 || k == 4) && w >= 0) w -= 100000;
            if (p[i].v[k] != w) fprintf(stderr, "pair %d field %d: %lld, want %lld\n", i, k, p[i].v[k], w);
            CHECK(p[i].v[k] == w);
        }
    /* each device its own statistics: [id, allocs, bytes, frees, freed, self, total] */
    char frag[160];
    snprintf(frag, sizeof frag, "\"ops\":[[%d,1,1000,0,0,1000,1000]]", mm);     /* cuda:1: addmm only */
    CHECK(strstr(js, frag) != NULL);
    snprintf(frag, sizeof frag, "[%d,1,777,0,0,777,777]", em);                  /* cuda:0: aten::empty */
    CHECK(strstr(js, frag) != NULL);
    snprintf(frag, sizeof frag, "[%d,0,0,0,0,0,777]", tc);                      /* cuda:0: _to_copy's total */
    CHECK(strstr(js, frag) != NULL);
    snprintf(frag, sizeof frag, "[%d,0,0,0,0,0,4096]", zl);                     /* CPU: zeros_like's total */
    CHECK(strstr(js, frag) != NULL);
    snprintf(frag, sizeof frag, "[%d,1,4096,0,0,4096,4096]", es);               /* CPU: the allocator op */
    CHECK(strstr(js, frag) != NULL);
    free(js);
}

/* Past PAIRS_ALL (10,000) pairs: each device its own 200 largest, so the
 * CPU's 3 small allocations stay listed beside cuda:0's 10,000 big ones. */
TP_TEST(each_device_keeps_its_pairs)
{
    tpu_buf b = {0};
    tpu_buf_puts(&b, "{\"traceEvents\":[" OP("aten::mm", 0, 100000, 1));
    for (int i = 0; i < 10000; i++)
        tpu_buf_printf(&b, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"[memory]\",\"ts\":%d,\"pid\":1,\"tid\":1,\"args\":"
                       "{\"Total Allocated\":%lld,\"Bytes\":%d,\"Addr\":%d,\"Device Type\":1,\"Device Id\":0}},",
                       1 + i, (long long)(i + 1) * 1000000, 1000000 + i, 4096 * (i + 1));
    for (int i = 0; i < 3; i++)
        tpu_buf_printf(&b, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"[memory]\",\"ts\":%d,\"pid\":1,\"tid\":1,\"args\":"
                       "{\"Total Allocated\":%d,\"Bytes\":%d,\"Addr\":%d,\"Device Type\":0,\"Device Id\":-1}},",
                       20000 + i, 64 * (i + 1), 64, 4096 * (i + 1));
    tpu_buf_puts(&b, END);
    char *js = memory_json(b.data, b.len);
    free(b.data);
    CHECK(js && strstr(js, "\"n_pairs\":10003,\"n_pairs_device\":[10000,3],\"pairs_all\":false") != NULL);
    static pr p[2000];
    int n = parse_pairs(js, p, 2000);
    int cpu = 0, gpu = 0;
    CHECK(strstr(js, "{\"name\":\"cuda:0\"") < strstr(js, "{\"name\":\"CPU\""));  /* slots 0 and 1: first seen */
    for (int i = 0; i < n; i++) {
        if (p[i].v[0] == 1) cpu++; else gpu++;
    }
    CHECK_EQ_INT(cpu, 3);
    /* cuda:0's 200 largest, then up to 300 more alive at its peak (the last event: all are) */
    CHECK_EQ_INT(gpu, 500);
    free(js);
}

/* 17 GPUs: 16 are kept, the page says the 17th's events were left out. */
TP_TEST(devices_past_the_cap)
{
    tpu_buf b = {0};
    tpu_buf_puts(&b, "{\"traceEvents\":[");
    for (int d = 0; d < 17; d++)
        tpu_buf_printf(&b, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"[memory]\",\"ts\":%d,\"pid\":1,\"tid\":1,\"args\":"
                       "{\"Total Allocated\":8,\"Bytes\":8,\"Addr\":64,\"Device Type\":1,\"Device Id\":%d}},", d, d);
    tpu_buf_puts(&b, END);
    char *js = memory_json(b.data, b.len);
    free(b.data);
    CHECK(js && strstr(js, "\"name\":\"cuda:15\"") && !strstr(js, "\"name\":\"cuda:16\""));
    CHECK(js && strstr(js, "\"n_events\":16,") != NULL);
    CHECK(js && strstr(js, "\"left_out\":[\"1 [memory] events of devices past the first 16\"]") != NULL);
    free(js);
}

/* Two ranks' traces on the CPU, with clocks 1 ms apart. Rank A (t0 = 100 us):
 * aten::add allocates 1000 B at 150 us and frees it at 250 (peak 1000),
 * aten::mul allocates 64 B at address 8192 at 305, never freed. Rank B
 * (t0 = 1100 us): aten::mm allocates 3000 B at 1120 and frees it at 1160;
 * at 1130 a free of 500 B at 8192 allocated before its profiler started:
 * merged, it would close A's allocation. */
#define RANK_A \
    "{\"traceEvents\":[" OP("aten::add", 100, 200, 1) MEM(150, 0, -1, 1000, 1000, 4096, 1) \
    MEM(250, 0, -1, -1000, 0, 4096, 1) OP("aten::mul", 300, 20, 1) MEM(305, 0, -1, 64, 64, 8192, 1) \
    "{\"ph\":\"i\",\"name\":\"end\",\"ts\":400,\"pid\":1,\"tid\":1}]"
#define RANK_B \
    "{\"traceEvents\":[" OP("aten::mm", 1100, 100, 1) MEM(1120, 0, -1, 3000, 3000, 4096, 1) \
    MEM(1130, 0, -1, -500, 2500, 8192, 1) MEM(1160, 0, -1, -3000, -500, 4096, 1) \
    "{\"ph\":\"i\",\"name\":\"end\",\"ts\":1200,\"pid\":1,\"tid\":1}]"

/* The device object of rank r (its CPU) in js, to the end of js. */
static const char *device_of(const char *js, int r)
{
    char want[64];
    snprintf(want, sizeof want, "{\"name\":\"CPU\",\"type\":0,\"id\":-1,\"rank\":%d,", r);
    return js ? strstr(js, want) : NULL;
}

/* A fed first (slot 0), B second (slot 1); rank_a: A's rank (B's is the other). */
static void check_two_ranks(const char *js, int rank_a)
{
    CHECK(js != NULL);
    if (!js) return;
    char frag[240];
    /* in rank order, each its own slot; the first rank's device is shown first */
    int first = rank_a == 0 ? 0 : 1;
    snprintf(frag, sizeof frag, "\"default_device\":%d,\"ranks\":[{\"rank\":0,\"default_device\":%d,\"devices\":[%d],\"n_events\":3},"
             "{\"rank\":1,\"default_device\":%d,\"devices\":[%d],\"n_events\":3}]", first, first, first, 1 - first, 1 - first);
    if (!strstr(js, frag)) fprintf(stderr, "want %s in %s\n", frag, js);
    CHECK(strstr(js, frag) != NULL);
    CHECK(strstr(js, "\"n_events\":6,") != NULL);
    /* each its own events, peak and times from its own first event */
    const char *a = device_of(js, rank_a), *b = device_of(js, 1 - rank_a);
    CHECK(a && strstr(a, "\"events\":3,\"peak_bytes\":1000,\"peak_t\":50000,\"curve\":[[50000,1000,0],[150000,0,0],[205000,64,0]]"));
    CHECK(b && strstr(b, "\"events\":3,\"peak_bytes\":3000,\"peak_t\":20000,\"curve\":[[20000,3000,0],[30000,2500,0],[60000,-500,0]]"));
    /* each rank's operators only */
    int add = name_id(js, "aten::add"), mul = name_id(js, "aten::mul"), mm = name_id(js, "aten::mm");
    snprintf(frag, sizeof frag, "\"ops\":[[%d,1,1000,1,1000,0,0],[%d,1,64,0,0,64,64]]}", add, mul);
    CHECK(a && strstr(a, frag) != NULL);
    snprintf(frag, sizeof frag, "\"ops\":[[%d,1,3000,2,3500,-500,-500]]}", mm);
    CHECK(b && strstr(b, frag) != NULL);
    /* pairs: A's 64 B stays alive (B's free of 8192 is not of A's memory) */
    pr p[8];
    int n = parse_pairs(js, p, 8);
    CHECK_EQ_INT(n, 3);
    long long want[3][6] = {
        { 1, mm, 3000, 20000, 60000, -1 },
        { 0, add, 1000, 50000, 150000, -1 },
        { 0, mul, 64, 205000, -1, -1 },
    };
    for (int i = 0; i < n && i < 3; i++)
        for (int k = 0; k < 6; k++) {
            if (p[i].v[k] != want[i][k]) fprintf(stderr, "pair %d field %d: %lld, want %lld\n", i, k, p[i].v[k], want[i][k]);
            CHECK(p[i].v[k] == want[i][k]);
        }
    CHECK(strstr(js, "\"n_pairs\":3,\"n_pairs_device\":[2,1]") != NULL);
    /* the range filter's events: each from its rank's start */
    CHECK(strstr(js, "\"events\":[[50000,1000,0,0],[150000,-1000,0,0],[205000,64,1,0],[20000,3000,2,1],[30000,-500,2,1],[60000,-3000,2,1]]"));
}

/* Issue 31 item 7: two ranks by their rank<r>/ directories: never merged. */
TP_TEST(ranks_apart)
{
    const char *texts[2] = { RANK_A "}", RANK_B "}" };
    const char *paths[2] = { "job/rank0/a.json", "job/rank1/b.json" };
    char *js = memory_json_files(texts, paths, 2);
    check_two_ranks(js, 0);
    free(js);
}

/* The same two traces named by distributedInfo.rank, A being rank 1: in rank order. */
TP_TEST(ranks_by_distributed_info)
{
    const char *texts[2] = { RANK_A ",\"distributedInfo\":{\"rank\":1}}", RANK_B ",\"distributedInfo\":{\"rank\":0}}" };
    const char *paths[2] = { "a.json", "b.json" };
    char *js = memory_json_files(texts, paths, 2);
    check_two_ranks(js, 1);
    free(js);
    /* one rank: no ranks member (the page names none), its devices say which it is */
    js = memory_json_files(texts, paths, 1);
    CHECK(js && strstr(js, "\"ranks\":null") && strstr(js, "{\"name\":\"CPU\",\"type\":0,\"id\":-1,\"rank\":1,"));
    free(js);
}

/* A trace without [memory] events: null (the page lists the view as missing). */
TP_TEST(no_events_null)
{
    static const char t[] = "{\"traceEvents\":[" OP("aten::mm", 0, 10, 1) END;
    char *js = memory_json(t, sizeof t - 1);
    CHECK(js && !strcmp(js, "null"));
    free(js);
}

int main(void)
{
    RUN(devices_pairs_callers);
    RUN(each_device_keeps_its_pairs);
    RUN(devices_past_the_cap);
    RUN(ranks_apart);
    RUN(ranks_by_distributed_info);
    RUN(no_events_null);
    return tp_test_finish();
}
