/* attrib_priv.h - what attrib.c (tables, feeding), attrib_nest.c (nesting,
 * attribution) and attrib_share.c (sharing, row tables) share. Not for the
 * collectors: they use attrib.h. */
#ifndef TRAINPROF_ANALYZE_ATTRIB_PRIV_H
#define TRAINPROF_ANALYZE_ATTRIB_PRIV_H

#include "analyze/attrib/attrib.h"
#include "util/worker.h"

#include <stdlib.h>
#include <string.h>

#ifdef TP_SMALL_LIMITS
#define HOST_BUDGET 64
#define GPU_BUDGET 32
#define MAX_STRINGS 4096
#define MAX_PAIRS 4096
#else
#define HOST_BUDGET ((size_t)1 << 20)    /* 56 MB of span records (a chunk's) */
#define GPU_BUDGET ((size_t)1 << 19)     /* 64 MB of device records (a chunk's) */
#define MAX_STRINGS ((uint32_t)1 << 20)
#define MAX_PAIRS ((uint32_t)1 << 20)
#endif
#define MAX_STRING_BYTES ((size_t)64 << 20)
#define RECENT_STRINGS 4096      /* intern's cache of recent strings (a power of 2) */
#define MAX_VISITORS 4
#define NO_FRAME UINT32_MAX

typedef struct strtab {
    char **s; uint32_t *len; uint64_t *hash;
    uint32_t n, cap;
    uint32_t *slots; size_t nslots;
    size_t bytes;
} strtab;

typedef struct pairtab {
    uint32_t *parent, *name;
    uint32_t n, cap;
    uint32_t *slots; size_t nslots;
} pairtab;

/* A host span of a chunk (40 bytes: a chunk holds a million). Its thread
 * is the list it is in (HOST_LIST). A runtime call reads its correlation
 * id and may carry a launch configuration; the other kinds read their
 * External id and input shapes: each keeps one key and one of the two. */
typedef struct hrec {
    int64_t start, end;
    uint64_t key;       /* runtime call: correlation id; else External id (has_key) */
    uint32_t name, seq;
    union {
        uint32_t shapes;  /* not a runtime call: the Input Dims string */
        uint32_t launch;  /* runtime call: launches[] index + 1, 0 without a configuration */
    } u;
    uint8_t kind;
    bool is_module, has_key;
} hrec;
_Static_assert(sizeof(hrec) == 40, "a chunk's host span stays at 40 bytes");

/* The launch configuration a runtime call carries (HIP writes grid, block
 * and shared memory on hipLaunchKernel, not on the kernel). */
typedef struct launch_cfg { uint32_t grid[3], block[3]; int64_t shmem; } launch_cfg;

typedef struct grec {
    tpa_at_gpu g;
    uint64_t corr, ext;
    bool has_corr, has_ext, matched;
} grec;

/* A device record (index into gpu) by one of its keys. */
typedef struct keyed { uint64_t key; uint32_t idx; } keyed;

typedef struct begin_rec { hrec r; } begin_rec;

typedef struct thread_ent {
    int64_t pid, tid;
    begin_rec *begins; size_t nbegins, cbegins;
} thread_ent;

/* Of one thread's spans: start, then the longer one first, then arrival:
 * a total order, the nesting's. */
static inline bool tpa__at_host_before(const hrec *x, const hrec *y)
{
    if (x->start != y->start) return x->start < y->start;
    if (x->end != y->end) return x->end > y->end;
    return x->seq < y->seq;
}

/* One thread's spans of a chunk of one sort (runtime calls, or the
 * rest), in arrival order until sorted; unsorted: one arrived before the
 * one before it (host_before). */
typedef struct host_list { hrec *r; size_t n, cap; bool unsorted; } host_list;

/* The list of thread t's runtime calls (runtime true) or other spans.
 * Kineto writes a thread's runtime calls after all its operators (and
 * in runs of their own order), so apart the operators mostly arrive in
 * order and need no sort, the runtime calls are sorted among themselves
 * only, and the nesting merges the two lists as it walks. */
#define HOST_LIST(thread, runtime) ((size_t)(thread) * 2 + ((runtime) ? 1 : 0))

/* One chunk: the spans (two lists per thread index: the nesting's
 * grouping comes free) and device records buffered between two nestings,
 * and the launch configurations its runtime calls point to (hrec.launch). */
typedef struct at_chunk {
    host_list *host; size_t nlists, clists;
    size_t nhost;       /* spans in all lists */
    grec *gpu; size_t ngpu, cgpu;
    launch_cfg *launches; size_t nlaunches, claunches;
} at_chunk;


typedef struct frame {
    tpa_at_node n;
    int64_t end;
    int64_t child_sum, dev_own, dev_child;
    int64_t tc_own, tc_child;   /* the same two of tensor-core kernels */
    uint32_t nchild, op_frame, ctx_stack, ctx_module;
    bool has_pending;
    tpa_at_node pending;
} frame;

struct tpa_attrib {
    strtab str;
    uint32_t recent[RECENT_STRINGS];  /* string ids by recent_mark (0: none) */
    pairtab stacks, modules;
    thread_ent *threads; size_t nthreads, cthreads, last_thread;
    at_chunk fill;      /* what the feed buffers */
    at_chunk work;      /* what is nested (attrib_nest.c): on the nester thread, when
                           there is one, while the feed fills the other chunk */
    tpu_worker *nester; /* NULL: chunks are nested on the feeding thread */
    bool may_thread;    /* the reader has threads to spare (tpa_jobs() > 1) */
    size_t host_budget, gpu_budget;  /* a chunk's records (HOST_BUDGET, GPU_BUDGET) */
    uint32_t seq;
    uint32_t step_name, other_name;
    bool chunked_file;   /* this file needed more than one chunk */
    frame *stack; size_t nstack, cstack;
    uint32_t nest_thread;               /* the thread index being nested */
    hrec *htmp; size_t chtmp;           /* the host sort's scratch (sort_host); these four */
    keyed *corrs; size_t ccorrs;         /* the chunk's runtime correlations, sorted */
    keyed *by_dev; size_t cby_dev;       /* device records by key: by_corr and by_ext point in;
                                            freed at the chunk's end (tpa__at_drop_scratch) */
    keyed *ktmp; size_t cktmp;           /* the device index's sorts' scratch (not the host
                                            sort's: the two may run side by side) */
    keyed *by_corr, *by_ext; size_t nby_corr, nby_ext, hint_corr, hint_ext;
    tpa_at_visitor vis[MAX_VISITORS]; int nvis;
    tpa_at_stats stats;
    uint8_t *name_flags; size_t cname_flags;  /* NAME_* by string id (attrib_torch.c): read and
                                                 written while nesting only */
    int clients;        /* collectors joined (tpa_at_client_begin): the first feeds */
    bool sealed;        /* fed: no more collectors may join */
};

#define GROW(ptr, n, cap) do { \
    if ((n) == (cap)) { size_t nc_ = (cap) ? (cap) * 2 : 16; \
        void *np_ = realloc((ptr), nc_ * sizeof *(ptr)); if (!np_) abort(); \
        (ptr) = np_; (cap) = nc_; } } while (0)


/* (parent, name) -> id in a stack or module tree (attrib.c). */
uint32_t tpa__at_pair_id(pairtab *t, uint32_t parent, uint32_t name);
uint32_t tpa__at_pair_get(const pairtab *t, uint32_t id, uint32_t *parent);
void tpa__at_pair_free(pairtab *t);
/* Hands the fill chunk over to be nested (attrib_nest.c): it becomes the
 * work chunk, nested on the nester thread (started at the first chunk
 * when may_thread) or, when last or without one, here before the return
 * (a last chunk's host sort then on the nester thread, beside the device
 * index here). Waits first for the chunk handed over before. The last
 * chunk of a file also frees the sorts' scratch (kept, it raised the
 * page's peak by what the other views then allocated beside it). */
void tpa__at_hand_over(tpa_attrib *at, bool last);

/* attrib_torch.c: "Input Dims" text as torch's input_shapes key (out has
 * room for n bytes; returns the length), and what a name is to the
 * TensorBoard plugin's tensor-core rules, found once per string id (call
 * while nesting: the table is the nesting's). */
size_t tpa__at_torch_shapes(const char *v, size_t n, char *out);
/* Whether v holds a list inside an argument (the rewrite has work to do). */
bool tpa__at_shapes_have_lists(const char *v, size_t n);
#define NAME_KNOWN 1u
#define NAME_TC_KERNEL 2u   /* tpa_kernel_uses_tensor_cores */
#define NAME_TC_OP 4u       /* tpa_op_tensor_core_eligible */
bool tpa__at_name_flag(tpa_attrib *at, uint32_t id, uint8_t flag);
void tpa__at_drop_scratch(tpa_attrib *at);

#endif
