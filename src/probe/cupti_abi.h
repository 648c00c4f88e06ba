/*
 * cupti_abi.h - the parts of CUPTI's ABI trainprof reads, written down from
 * the facts of cupti_activity.h (CUDA 13: CUpti_ActivityKernel10,
 * CUpti_ActivityMemcpy6, CUpti_ActivityMemset4, CUpti_ActivityAPI,
 * CUpti_ActivitySynchronization2) so the library builds without the CUDA
 * toolkit. Each record type below is the leading part of CUPTI's record:
 * fields at the same offsets, packed and 8-byte aligned as CUPTI declares
 * them. tests/probe/test_cupti_layout.c checks every offset against the
 * real header when the toolkit is installed. The fake CUPTI of the tests
 * writes its records with these types.
 */
#ifndef TP_PROBE_CUPTI_ABI_H
#define TP_PROBE_CUPTI_ABI_H

#include <stdint.h>

#define TPI_CUPTI_PACKED __attribute__((__packed__)) __attribute__((aligned(8)))

/* CUptiResult values */
enum { TPI_CUPTI_SUCCESS = 0, TPI_CUPTI_MAX_LIMIT_REACHED = 12 };

/* CUpti_ActivityKind values */
enum {
    TPI_CUPTI_KIND_MEMCPY = 1,
    TPI_CUPTI_KIND_MEMSET = 2,
    TPI_CUPTI_KIND_KERNEL = 3,
    TPI_CUPTI_KIND_DRIVER = 4,
    TPI_CUPTI_KIND_RUNTIME = 5,
    TPI_CUPTI_KIND_CONCURRENT_KERNEL = 10,
    TPI_CUPTI_KIND_SYNCHRONIZATION = 38
};

/* CUpti_CallbackDomain values */
enum { TPI_CUPTI_DOMAIN_DRIVER = 1, TPI_CUPTI_DOMAIN_RUNTIME = 2 };

/* CUPTI_ACTIVITY_FLAG_FLUSH_FORCED */
#define TPI_CUPTI_FLUSH_FORCED 1u

/* CUpti_ActivityKernel10 up to `name` */
typedef struct TPI_CUPTI_PACKED tpi_cupti_kernel {
    uint32_t kind;
    uint8_t cache_config, shared_memory_config;
    uint16_t registers_per_thread;
    uint32_t partitioned_cache_requested, partitioned_cache_executed;
    uint64_t start, end, completed;
    uint32_t device_id, context_id, stream_id;
    int32_t grid_x, grid_y, grid_z;
    int32_t block_x, block_y, block_z;
    int32_t static_shared_memory, dynamic_shared_memory;
    uint32_t local_memory_per_thread, local_memory_total;
    uint32_t correlation_id;
    int64_t grid_id;
    const char *name;
} tpi_cupti_kernel;

/* CUpti_ActivityMemcpy6 up to `runtimeCorrelationId` */
typedef struct TPI_CUPTI_PACKED tpi_cupti_memcpy {
    uint32_t kind;
    uint8_t copy_kind, src_kind, dst_kind, flags;
    uint64_t bytes, start, end;
    uint32_t device_id, context_id, stream_id, correlation_id;
    uint32_t runtime_correlation_id;
} tpi_cupti_memcpy;

/* CUpti_ActivityMemset4 up to `memoryKind` */
typedef struct TPI_CUPTI_PACKED tpi_cupti_memset {
    uint32_t kind;
    uint32_t value;
    uint64_t bytes, start, end;
    uint32_t device_id, context_id, stream_id, correlation_id;
    uint16_t flags, memory_kind;
} tpi_cupti_memset;

/* CUpti_ActivityAPI (runtime and driver calls), whole */
typedef struct TPI_CUPTI_PACKED tpi_cupti_api {
    uint32_t kind;
    uint32_t cbid;
    uint64_t start, end;
    uint32_t process_id, thread_id, correlation_id, return_value;
} tpi_cupti_api;

/* CUpti_ActivitySynchronization2 up to `cudaEventId` */
typedef struct TPI_CUPTI_PACKED tpi_cupti_sync {
    uint32_t kind;
    uint32_t type;            /* CUpti_ActivitySynchronizationType: 1 event, 2 stream wait,
                               * 3 stream, 4 context synchronize */
    uint64_t start, end;
    uint32_t correlation_id, context_id, stream_id, cuda_event_id;
} tpi_cupti_sync;

/* CUpti_ActivityMemcpyKind 1..10 and CUpti_ActivityMemoryKind 0..7 */
enum { TPI_CUPTI_COPY_KINDS = 11, TPI_CUPTI_MEMORY_KINDS = 8 };

#define TPI_CUPTI_INVALID_STREAM 0xFFFFFFFFu

#endif
