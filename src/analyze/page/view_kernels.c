/* view_kernels.c - the page's Kernels view: device kernels by name, and by
 * name + launching operator + grid + block + registers per thread + shared
 * memory; calls, total/mean/min/max, blocks per SM and est. achieved
 * occupancy (both weighted by duration), tensor-core use. Launching
 * operators come from attrib.c.
 */
#include "analyze/attrib/attrib.h"
#include "util/hash.h"
#include "analyze/page/view.h"

#include <stdlib.h>
#include <string.h>

#ifdef TP_SMALL_LIMITS
#define TOP_ROWS 16
#define MAX_ROWS 256
#else
#define TOP_ROWS 2000
#define MAX_ROWS ((size_t)1 << 20)
#endif

typedef struct k_row {
    uint32_t name, op;
    uint32_t grid[3], block[3];
    int64_t regs, shmem;
    int kind;
    bool tc;                    /* the kernel uses tensor cores (by its name) */
    bool op_tc;                 /* by-config rows: the launching operator is eligible (by its name) */
    uint64_t calls;
    int64_t total, min, max;
    double occ_w, occ_dur;      /* sum of occupancy x duration; duration of kernels that have it */
    double bps_w, bps_dur;      /* blocks per SM, the same way */
} k_row;

typedef struct k_state {
    tpa_at_client c;    /* first: the class's feed and file_end take it */
    tpa_at_rows by_name, by_config;  /* k_row */
    int64_t total_ns, tc_ns;
    uint64_t memcpy_calls, memset_calls;
    int64_t memcpy_ns, memset_ns;
} k_state;

static k_row *k_row_for(tpa_at_rows *t, uint64_t key, bool *fresh)
{
    k_row *r = tpa_at_rows_get(t, key, fresh);
    if (r && *fresh) r->min = INT64_MAX;
    return r;
}

static void k_add(k_row *r, const tpa_at_gpu *g)
{
    r->calls++;
    r->total = tpa_sat_add(r->total, g->dur_ns);
    if (g->dur_ns < r->min) r->min = g->dur_ns;
    if (g->dur_ns > r->max) r->max = g->dur_ns;
    if (g->occupancy >= 0) { r->occ_w += g->occupancy * (double)g->dur_ns; r->occ_dur += (double)g->dur_ns; }
    if (g->blocks_per_sm >= 0) { r->bps_w += g->blocks_per_sm * (double)g->dur_ns; r->bps_dur += (double)g->dur_ns; }
}

/* The plugin's "Op is Tensor Cores eligible" of a kernel: its operator's own
 * eligibility when the kernel is attached, which is by name (children make
 * an operator eligible only after its kernels took the flag). */
static bool op_eligible(const tpa_attrib *at, uint32_t op)
{
    size_t n;
    const char *p = op ? tpa_attrib_str(at, op, &n) : NULL;
    return p && tpa_op_tensor_core_eligible(p, n);
}

static void on_gpu(void *user, const tpa_attrib *at, const tpa_at_gpu *g)
{
    k_state *s = user;
    if (g->kind == TPA_K_MEMCPY) { s->memcpy_calls++; s->memcpy_ns = tpa_sat_add(s->memcpy_ns, g->dur_ns); return; }
    if (g->kind == TPA_K_MEMSET) { s->memset_calls++; s->memset_ns = tpa_sat_add(s->memset_ns, g->dur_ns); return; }
    s->total_ns = tpa_sat_add(s->total_ns, g->dur_ns);
    bool fresh;
    k_row *r = k_row_for(&s->by_name, g->name, &fresh);
    if (r) {
        if (fresh) {
            r->name = g->name;
            r->kind = g->kind;
            r->tc = g->tensor_cores;
        }
        k_add(r, g);
        if (r->tc) s->tc_ns = tpa_sat_add(s->tc_ns, g->dur_ns);
    }
    uint64_t cfg[8] = { (uint64_t)g->name << 32 | g->op, g->grid[0], g->grid[1], g->grid[2],
                        (uint64_t)g->block[0] << 32 | g->block[1], g->block[2],
                        (uint64_t)g->regs, (uint64_t)g->shmem };
    if ((r = k_row_for(&s->by_config, tpu_hash_bytes(cfg, sizeof cfg), &fresh))) {
        if (fresh) {
            r->name = g->name;
            r->op = g->op;
            r->kind = g->kind;
            memcpy(r->grid, g->grid, sizeof r->grid);
            memcpy(r->block, g->block, sizeof r->block);
            r->regs = g->regs;
            r->shmem = g->shmem;
            r->tc = g->tensor_cores;
            r->op_tc = op_eligible(at, g->op);
        }
        k_add(r, g);
    }
}

static void *k_begin(const tpa_view_input *in)
{
    k_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->by_name = (tpa_at_rows){ .size = sizeof(k_row), .max = MAX_ROWS };
    s->by_config = s->by_name;
    tpa_at_visitor v = { s, NULL, on_gpu };
    if (!tpa_at_client_begin(&s->c, in->attrib, &v)) { free(s); return NULL; }
    return s;
}

static int k_cmp(const void *a, const void *b)
{
    const k_row *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    if (x->calls != y->calls) return x->calls > y->calls ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

static void json_id(tpu_json *j, const tpa_attrib *at, const char *key, uint32_t id)
{
    size_t n;
    const char *p = tpa_attrib_str(at, id, &n);
    tpu_json_key(j, key);
    tpu_json_string_n(j, p, n);
}

static void json_dim3(tpu_json *j, const char *key, const uint32_t d[3])
{
    tpu_json_key(j, key);
    if (!d[0] && !d[1] && !d[2]) { tpu_json_null(j); return; }
    tpu_json_begin_array(j);
    for (int i = 0; i < 3; i++) tpu_json_uint(j, d[i]);
    tpu_json_end_array(j);
}

static void json_stats(tpu_json *j, const k_row *r)
{
    tpu_json_kv_string(j, "kind", r->kind == TPA_K_COMM ? "communication" : "kernel");
    tpu_json_kv_uint(j, "calls", r->calls);
    tpu_json_kv_int(j, "total", r->total);
    tpu_json_kv_int(j, "min", r->calls ? r->min : 0);
    tpu_json_kv_int(j, "max", r->max);
    tpu_json_kv_int(j, "mean", r->calls ? r->total / (int64_t)r->calls : 0);
    tpu_json_key(j, "occupancy");
    if (r->occ_dur > 0) tpu_json_double(j, r->occ_w / r->occ_dur); else tpu_json_null(j);
    tpu_json_key(j, "blocks_per_sm");
    if (r->bps_dur > 0) tpu_json_double(j, r->bps_w / r->bps_dur); else tpu_json_null(j);
}

static void json_rows(tpu_json *j, const tpa_attrib *at, tpa_at_rows *t, bool config)
{
    k_row *rows = (k_row *)(void *)t->rows;
    if (t->n) qsort(rows, t->n, sizeof *rows, k_cmp);
    size_t n = t->n < TOP_ROWS ? t->n : TOP_ROWS;
    tpu_json_begin_object(j);
    tpu_json_key(j, "rows");
    tpu_json_begin_array(j);
    size_t start = j->out->len, i;
    for (i = 0; i < n && j->out->len - start < TPA_AT_TABLE_BYTES; i++) {
        const k_row *r = &rows[i];
        tpu_json_begin_object(j);
        json_id(j, at, "name", r->name);
        json_stats(j, r);
        if (config) {
            json_id(j, at, "op", r->op);
            json_dim3(j, "grid", r->grid);
            json_dim3(j, "block", r->block);
            tpu_json_key(j, "regs");
            if (r->regs >= 0) tpu_json_int(j, r->regs); else tpu_json_null(j);
            tpu_json_key(j, "shmem");
            if (r->shmem >= 0) tpu_json_int(j, r->shmem); else tpu_json_null(j);
            tpu_json_kv_bool(j, "op_tc_eligible", r->op_tc);
        }
        tpu_json_kv_bool(j, "tensor_cores", r->tc);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
    n = i;
    uint64_t calls = 0;
    int64_t total = 0;
    for (size_t i = n; i < t->n; i++) { calls += rows[i].calls; total = tpa_sat_add(total, rows[i].total); }
    tpu_json_kv_uint(j, "left_out", (uint64_t)(t->n - n));
    tpu_json_kv_uint(j, "left_out_calls", calls);
    tpu_json_kv_int(j, "left_out_total", total);
    tpu_json_kv_uint(j, "dropped_calls", t->dropped);
    tpu_json_end_object(j);
}

static void k_json(void *state, tpu_json *j)
{
    k_state *s = state;
    if (!s->by_name.n) { tpu_json_null(j); return; }
    tpu_json_begin_object(j);
    tpu_json_kv_int(j, "total", s->total_ns);
    tpu_json_kv_int(j, "tensor_core_total", s->tc_ns);
    tpu_json_kv_uint(j, "memcpy_calls", s->memcpy_calls);
    tpu_json_kv_int(j, "memcpy_total", s->memcpy_ns);
    tpu_json_kv_uint(j, "memset_calls", s->memset_calls);
    tpu_json_kv_int(j, "memset_total", s->memset_ns);
    tpu_json_key(j, "by_name");
    json_rows(j, s->c.at, &s->by_name, false);
    tpu_json_key(j, "by_config");
    json_rows(j, s->c.at, &s->by_config, true);
    tpu_json_end_object(j);
}

static void k_free(void *state)
{
    k_state *s = state;
    if (!s) return;
    tpa_at_rows_free(&s->by_name);
    tpa_at_rows_free(&s->by_config);
    tpa_at_client_end(&s->c);
    free(s);
}

const tpa_view_class tpa_view_kernels = {
    .key = "kernels",
    .begin = k_begin,
    .feed = tpa_at_client_feed,
    .lane = 1,  /* the attributor: the three views of attrib.h share it */
    .file_end = tpa_at_client_file_end,
    .json = k_json,
    .free = k_free,
};
