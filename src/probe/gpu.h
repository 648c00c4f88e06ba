/*
 * gpu.h - GPU activity (CUPTI) and CUDA-event timing, the probe side.
 * Interface between src/probe (cupti*.c, cuda_events.c) and src/core/gpu.c.
 *
 * Both load their libraries with dlopen at run time: a program without CUDA
 * never loads them, and the library builds without the CUDA toolkit.
 * TRAINPROF_CUPTI_LIB and TRAINPROF_CUDART_LIB name other libraries (the
 * tests load fakes).
 */
#ifndef TP_PROBE_GPU_H
#define TP_PROBE_GPU_H

#include <stddef.h>
#include <stdint.h>

typedef enum tpi_gpu_kind {
    TPI_GPU_KERNEL = 0,
    TPI_GPU_MEMCPY,
    TPI_GPU_MEMSET,
    TPI_GPU_SYNC,     /* a synchronization the CPU waited for */
    TPI_GPU_RUNTIME,  /* a CUDA runtime API call (cudaLaunchKernel ...) */
    TPI_GPU_DRIVER    /* a CUDA driver API call (cuLaunchKernel ...) */
} tpi_gpu_kind;

/* One activity record, converted to session time. Strings live until the
 * delivering call returns. */
typedef struct tpi_gpu_activity {
    tpi_gpu_kind kind;
    const char *name;         /* demangled kernel, "Memcpy HtoD (Pinned -> Device)", API name */
    uint64_t start_ns, end_ns;/* session time */
    uint32_t device, context, stream, correlation;
    uint32_t pid, tid;        /* runtime/driver calls: calling process and thread */
    uint32_t cbid;            /* runtime/driver calls: CUPTI callback id */
    int32_t grid[3], block[3];/* kernels */
    uint32_t registers;       /* kernels: registers per thread */
    uint32_t shared_bytes;    /* kernels: static + dynamic shared memory */
    uint64_t bytes;           /* copies and sets */
    const char *copy_kind;    /* copies: "HtoD", "DtoH", ... */
    const char *sync_kind;    /* syncs: "Stream Sync", "Event Sync", ... */
} tpi_gpu_activity;

typedef void (*tpi_gpu_fn)(void *ctx, const tpi_gpu_activity *a);

/* Counts since open, for the summary and the traces. */
typedef struct tpi_cupti_counts {
    uint64_t records;         /* delivered */
    uint64_t dropped;         /* lost: CUPTI's own count + buffers refused at the bound */
    uint64_t unknown;         /* record kinds trainprof does not read (skipped) */
    uint64_t incomplete;      /* records without an end time (still running at flush) */
    uint64_t buffers_refused; /* buffer requests refused at max_bytes */
} tpi_cupti_counts;

/* --- cupti.c ------------------------------------------------------------- */

typedef struct tpi_cupti tpi_cupti;

/* Loads CUPTI (TRAINPROF_CUPTI_LIB, else libcupti.so[.13|.12|.11]) and
 * registers the buffer callbacks; activities stay disabled until
 * tpi_cupti_start. Record buffers never exceed max_bytes in all (at least
 * two buffers). mono_base_ns: CLOCK_MONOTONIC at session time 0. NULL with a
 * one-line reason in why when CUPTI is missing, lacks a function, fails to
 * initialize, or another session already uses it (CUPTI is per process). */
tpi_cupti *tpi_cupti_open(uint64_t max_bytes, uint64_t mono_base_ns, char *why, size_t whylen);
/* Enables kernel, copy, set, synchronization and API records (window
 * begin). Returns 0, or -1 with why filled (then nothing is enabled). */
int tpi_cupti_start(tpi_cupti *c, char *why, size_t whylen);
/* Window end: forced flush, then every kind disabled (zero cost outside
 * windows). Records stay queued for tpi_cupti_drain. */
void tpi_cupti_stop(tpi_cupti *c);
/* Asks CUPTI for the buffers whose records are all complete (never waits
 * for the GPU). */
void tpi_cupti_flush(tpi_cupti *c);
/* Delivers the records of every completed buffer to fn, on the calling
 * thread, then recycles the buffers. Returns the records delivered. */
uint64_t tpi_cupti_drain(tpi_cupti *c, tpi_gpu_fn fn, void *ctx);
void tpi_cupti_get_counts(tpi_cupti *c, tpi_cupti_counts *out);
void tpi_cupti_close(tpi_cupti *c);

/* --- cupti_records.c: CUPTI records -> tpi_gpu_activity --------------------- */

typedef struct tpi_cupti_names tpi_cupti_names;
/* name of a callback id (cuptiGetCallbackName), NULL when unknown */
typedef const char *(*tpi_cbid_name_fn)(void *ctx, int domain, uint32_t cbid);

/* Kernel names demangled once per CUPTI name pointer (which CUPTI keeps for
 * the life of the module). */
tpi_cupti_names *tpi_cupti_names_new(void);
void tpi_cupti_names_free(tpi_cupti_names *n);

/* Converts one record; returns 1 when out is filled, 0 for a kind trainprof
 * does not read, -1 for a record without an end time. to_session(ts) maps
 * a CUPTI timestamp to session ns. */
int tpi_cupti_convert(const void *record, tpi_cupti_names *names, tpi_cbid_name_fn cbid_name,
                      void *cbid_ctx, int64_t to_session_ns, tpi_gpu_activity *out);

/* "Memcpy HtoD (Pinned -> Device)" as Kineto names copies. */
void tpi_cupti_memcpy_name(char *buf, size_t n, unsigned copy_kind, unsigned src_kind,
                           unsigned dst_kind, const char **short_kind);

/* Demangles an Itanium C++ name with the C++ runtime's __cxa_demangle when
 * the process has one (looked up with dlsym, libstdc++ loaded on demand);
 * returns a malloc'ed string, or NULL (then the mangled name is used). */
char *tpi_demangle(const char *mangled);

/* --- cuda_events.c: CUDA-event timing of GPU zones -------------------------- */

typedef struct tpi_cuda_events tpi_cuda_events;
typedef struct tpi_event_pair tpi_event_pair;

/* Uses the CUDA runtime the program loaded (or TRAINPROF_CUDART_LIB).
 * max_pairs bounds the event pairs in flight. NULL with why filled. */
tpi_cuda_events *tpi_cuda_events_open(int max_pairs, char *why, size_t whylen);
/* Records the start event of zone name_id on stream (any thread). NULL
 * when the pool is exhausted or the runtime refused (counted lost). */
tpi_event_pair *tpi_cuda_events_begin(tpi_cuda_events *e, void *stream, uint32_t name_id);
/* Records the end event on the same stream and queues the pair for
 * resolution, with the step it belongs to. */
void tpi_cuda_events_end(tpi_cuda_events *e, tpi_event_pair *p, uint64_t step);
/* Resolves the finished pairs (cudaEventQuery, never a synchronize):
 * fn(ctx, name_id, step, gpu_ns) for each; the others stay queued.
 * Returns how many are still pending. */
typedef void (*tpi_zone_time_fn)(void *ctx, uint32_t name_id, uint64_t step, uint64_t gpu_ns);
int tpi_cuda_events_poll(tpi_cuda_events *e, tpi_zone_time_fn fn, void *ctx);
/* Zones lost: no free pair, a runtime error, or still pending at close. */
uint64_t tpi_cuda_events_lost(tpi_cuda_events *e);
/* Drops pending pairs (counted lost) and frees every event. */
void tpi_cuda_events_close(tpi_cuda_events *e);

#endif
