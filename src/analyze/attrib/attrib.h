/* attrib.h - host nesting and launch attribution, shared by the page's
 * Operators, Kernels and Modules collectors.
 *
 * Host spans (cpu_op, user_annotation, ProfilerStep#N, python_function,
 * runtime calls, uncategorised spans) are nested per thread (pid, tid) with
 * torch's rule (profiler_util.py, _populate_cpu_children): spans sorted by
 * (start, later end first, then file order); a span is a child of the
 * innermost open span when it starts before that span's end and ends at or
 * before it. Then torch's _remove_dup_nodes: a span whose parent has the
 * same name and no other child is folded into the parent (it is not
 * counted; the parent takes its children and its device time), repeated to
 * the fixpoint. Nothing depends on the order events are written in.
 *
 * Device events (kernels, memcpy, memset, collectives) are attributed with
 * args.correlation to the runtime call of the same correlation id (the
 * cudaLaunchKernel / hipLaunchKernel span; Kineto's ac2g flows carry the
 * same id), and through it to the innermost operator (cpu_op or
 * user_annotation) enclosing that call. A device event whose correlation
 * matches no runtime call falls back to args["External id"] (the operator
 * with that External id). The time of a device event counts as the device
 * self time of its operator and in the device total of every enclosing span.
 *
 * Memory stays bounded: each file's spans are buffered (compact records)
 * up to a budget, then sorted and nested; a file with more spans than the
 * budget is nested in chunks (counts stay exact; self times of spans cut
 * by a chunk boundary are not, nor the attribution of a device event whose
 * runtime call is in another chunk, and `chunks` says it happened). With
 * tpa_jobs() > 1 a full chunk is nested on a thread of its own while the
 * next one is fed (two chunks' buffers); the visitors are then called on
 * that thread, one chunk at a time, in file order.
 *
 * One attributor serves several collectors: the page builder makes one per
 * page and hands it to its views (tpa_view_input.attrib); the first
 * collector to join it is its feeder (its feed/file callbacks are
 * forwarded), every one gets the nodes and device events through its
 * visitor. Nothing here knows the page: the attributor is passed in, never
 * looked up.
 */
#ifndef TRAINPROF_ANALYZE_ATTRIB_H
#define TRAINPROF_ANALYZE_ATTRIB_H

#include "analyze/trace/trace.h"

/* What a host span is, for the collectors. */
enum tpa_at_kind {
    TPA_AT_OP,          /* cpu_op and uncategorised host spans */
    TPA_AT_ANNOTATION,  /* user_annotation / record_function ranges */
    TPA_AT_STEP,        /* ProfilerStep#N (named "ProfilerStep*", as key_averages groups it) */
    TPA_AT_PYTHON,      /* python_function (with_stack), nn.Module frames included */
    TPA_AT_RUNTIME,     /* cuda_runtime, cuda_driver, HIP runtime */
    TPA_AT_KIND_COUNT
};
extern const char *const tpa_at_kind_names[TPA_AT_KIND_COUNT];

/* A host span as counted (after torch's folding), handed to visitors once
 * its subtree is complete. Ids are strings of tpa_attrib_str (0: none). */
typedef struct tpa_at_node {
    int64_t start_ns, dur_ns;
    int64_t child_ns;          /* durations of its children: self = dur - child */
    int64_t dev_self_ns;       /* device events attributed to it */
    int64_t dev_total_ns;      /* ... to it and every span inside it */
    uint32_t name;             /* grouped name (ProfilerStep#N -> ProfilerStep*) */
    uint32_t shapes;           /* args["Input Dims"] text, 0 without record_shapes */
    uint32_t stack;            /* tpa_attrib_stack id of the python frames around it */
    uint32_t module;           /* tpa_attrib_module id: the module frame it is (an
                                  "nn.Module: X" python frame, or Lightning's
                                  "[pl][module]class: attr" annotation) or is
                                  inside; 0 outside any module */
    uint32_t thread;           /* tpa_attrib_thread index of its (pid, tid) */
    int64_t tc_self_ns;        /* of dev_self_ns: kernels that use tensor cores */
    int64_t tc_total_ns;       /* of dev_total_ns: the same */
    uint8_t kind;              /* enum tpa_at_kind */
    bool is_module;            /* a module frame (see module) */
    bool tc_eligible;          /* the TensorBoard plugin's rule: its name is in the
                                  eligible list, or (an operator) a child is eligible
                                  or it launched tensor-core kernels itself */
} tpa_at_node;

/* A device event with what launched it. */
typedef struct tpa_at_gpu {
    int64_t start_ns, dur_ns;
    uint32_t name;
    uint32_t op;               /* name of the launching operator, 0 when unknown */
    uint32_t runtime;          /* name of the runtime call, 0 when unknown */
    int kind;                  /* enum tpa_kind (KERNEL, COMM, MEMCPY, MEMSET) */
    int64_t device, stream;    /* -1 when absent */
    uint32_t grid[3], block[3];/* 0 when absent */
    int64_t regs, shmem;       /* registers per thread, shared memory bytes; -1 absent */
    double blocks_per_sm, warps_per_sm, occupancy;  /* -1 when absent */
    bool tensor_cores;         /* tpa_kernel_uses_tensor_cores(name) */
} tpa_at_gpu;

typedef struct tpa_attrib tpa_attrib;

typedef struct tpa_at_visitor {
    void *user;
    void (*node)(void *user, const tpa_attrib *at, const tpa_at_node *n);
    void (*gpu)(void *user, const tpa_attrib *at, const tpa_at_gpu *g);
} tpa_at_visitor;

/* A standalone attributor (tests, tools): feed it, end each file. */
tpa_attrib *tpa_attrib_new(void);
void tpa_attrib_add_visitor(tpa_attrib *at, const tpa_at_visitor *v);
void tpa_attrib_feed(tpa_attrib *at, const tpa_event *ev, int kind);
/* Nests what is buffered and calls the visitors; call after each file. */
void tpa_attrib_file_end(tpa_attrib *at);
void tpa_attrib_free(tpa_attrib *at);
/* Tests: the chunk budgets (host spans, device records) of attributors
 * made afterwards; 0 keeps the default. With tpa_jobs() > 1 a file of more
 * than one chunk is nested on a thread of its own while the feed goes on;
 * the visitors see the same nodes, in the same order, either way. */
void tpa_attrib_set_chunk_budget(size_t host_spans, size_t device_records);

/* Interned strings: id -> text (id 0 is ""). */
const char *tpa_attrib_str(const tpa_attrib *at, uint32_t id, size_t *len);
/* Python stacks and the module tree are trees of (parent, name) pairs:
 * the frame's name id, *parent set to the enclosing frame's id (0: none). */
uint32_t tpa_attrib_stack(const tpa_attrib *at, uint32_t id, uint32_t *parent);
uint32_t tpa_attrib_module(const tpa_attrib *at, uint32_t id, uint32_t *parent);
/* The (pid, tid) of a node's thread index; false for an index never seen.
 * Call after the last file has ended (the feed adds threads). */
bool tpa_attrib_thread(const tpa_attrib *at, uint32_t thread, int64_t *pid, int64_t *tid);

typedef struct tpa_at_stats {
    uint64_t host_spans, gpu_events;
    uint64_t gpu_by_correlation, gpu_by_external_id, gpu_unattributed;
    uint64_t folded;           /* spans folded into a same-name parent */
    uint64_t chunks;           /* files nested in more than one chunk add their extra chunks */
    uint64_t names_capped;     /* strings past the string table's budget (named "(other)") */
} tpa_at_stats;
const tpa_at_stats *tpa_attrib_stats(const tpa_attrib *at);

/* A map from 64-bit keys to the collectors' row indexes: the slot of key
 * (*fresh: just added; the caller stores index + 1 there, never 0). */
typedef struct tpa_u64map { uint64_t *keys; uint32_t *vals; size_t cap, n; } tpa_u64map;
uint32_t *tpa_u64map_slot(tpa_u64map *m, uint64_t key, bool *fresh);
void tpa_u64map_free(tpa_u64map *m);

/* The collectors' row tables: rows of `size` bytes keyed by 64-bit keys,
 * zeroed when new, at most `max` (past it: NULL, counted in dropped). */
typedef struct tpa_at_rows {
    char *rows; size_t n, cap, size, max;
    tpa_u64map map;
    uint64_t dropped;
} tpa_at_rows;
void *tpa_at_rows_get(tpa_at_rows *t, uint64_t key, bool *fresh);
void tpa_at_rows_free(tpa_at_rows *t);

/* A collector on a shared attributor: its state starts with this, so
 * tpa_at_client_feed / _file_end serve as its tpa_view_class callbacks.
 * begin joins at (owned by the caller, who frees it after every client
 * has ended): the first client to join is the feeder; a client may join
 * only before the first event (false then, or when at is NULL). */
typedef struct tpa_at_client { tpa_attrib *at; bool feeder; } tpa_at_client;
bool tpa_at_client_begin(tpa_at_client *c, tpa_attrib *at, const tpa_at_visitor *v);
void tpa_at_client_feed(void *state, const tpa_event *ev, int kind);
void tpa_at_client_file_end(void *state, int file, const tpa_meta *meta);
void tpa_at_client_end(tpa_at_client *c);

/* Tensor-core kernels by name (Kineto writes no flag for it): the
 * TensorBoard plugin's substrings (h884, s884, h1688, s1688, c1688, i8816,
 * 16816, hmma, xmma, cuDNN's conv1x1, direct_group, ...) and newer kernels'
 * (gmma, wmma, imma, tensorop, _mma_), ignoring ASCII case (attrib_torch.c). */
bool tpa_kernel_uses_tensor_cores(const char *name, size_t n);
/* Operators the plugin calls tensor-core eligible by name (its allowlist:
 * aten::mm, aten::conv2d, aten::linear, ..., MmBackward, ...), whole names. */
bool tpa_op_tensor_core_eligible(const char *name, size_t n);

/* What one table of a view may write into the page: rows past it are left
 * out (and counted) like rows past the table's row limit. */
#ifdef TP_SMALL_LIMITS
#define TPA_AT_TABLE_BYTES ((size_t)4096)
#else
#define TPA_AT_TABLE_BYTES ((size_t)3 << 19)   /* 1.5 MB */
#endif

/* Names longer than this are cut (at a UTF-8 boundary) when interned. */
#define TPA_AT_MAX_NAME 8192

#endif
