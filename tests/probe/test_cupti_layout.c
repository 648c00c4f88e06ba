/* The record layouts of src/probe/cupti_abi.h against the real CUPTI
 * header (built only when the CUDA toolkit's cupti_activity.h is found):
 * every field trainprof reads sits at CUPTI's offset, so the library reads
 * real CUPTI buffers as it reads the fake's. */
#include <stddef.h>

#include <cupti_activity.h>

#include "probe/cupti_abi.h"
#include "tp_test.h"

#define SAME(ours, theirs, a, b) _Static_assert(offsetof(ours, a) == offsetof(theirs, b), #a)

SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, registers_per_thread, registersPerThread);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, start, start);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, end, end);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, device_id, deviceId);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, context_id, contextId);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, stream_id, streamId);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, grid_x, gridX);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, block_z, blockZ);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, static_shared_memory, staticSharedMemory);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, dynamic_shared_memory, dynamicSharedMemory);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, correlation_id, correlationId);
SAME(tpi_cupti_kernel, CUpti_ActivityKernel10, name, name);
SAME(tpi_cupti_memcpy, CUpti_ActivityMemcpy6, copy_kind, copyKind);
SAME(tpi_cupti_memcpy, CUpti_ActivityMemcpy6, src_kind, srcKind);
SAME(tpi_cupti_memcpy, CUpti_ActivityMemcpy6, dst_kind, dstKind);
SAME(tpi_cupti_memcpy, CUpti_ActivityMemcpy6, bytes, bytes);
SAME(tpi_cupti_memcpy, CUpti_ActivityMemcpy6, start, start);
SAME(tpi_cupti_memcpy, CUpti_ActivityMemcpy6, end, end);
SAME(tpi_cupti_memcpy, CUpti_ActivityMemcpy6, device_id, deviceId);
SAME(tpi_cupti_memcpy, CUpti_ActivityMemcpy6, stream_id, streamId);
SAME(tpi_cupti_memcpy, CUpti_ActivityMemcpy6, correlation_id, correlationId);
SAME(tpi_cupti_memset, CUpti_ActivityMemset4, bytes, bytes);
SAME(tpi_cupti_memset, CUpti_ActivityMemset4, start, start);
SAME(tpi_cupti_memset, CUpti_ActivityMemset4, device_id, deviceId);
SAME(tpi_cupti_memset, CUpti_ActivityMemset4, stream_id, streamId);
SAME(tpi_cupti_memset, CUpti_ActivityMemset4, correlation_id, correlationId);
SAME(tpi_cupti_memset, CUpti_ActivityMemset4, memory_kind, memoryKind);
SAME(tpi_cupti_api, CUpti_ActivityAPI, cbid, cbid);
SAME(tpi_cupti_api, CUpti_ActivityAPI, start, start);
SAME(tpi_cupti_api, CUpti_ActivityAPI, end, end);
SAME(tpi_cupti_api, CUpti_ActivityAPI, thread_id, threadId);
SAME(tpi_cupti_api, CUpti_ActivityAPI, correlation_id, correlationId);
SAME(tpi_cupti_sync, CUpti_ActivitySynchronization2, type, type);
SAME(tpi_cupti_sync, CUpti_ActivitySynchronization2, start, start);
SAME(tpi_cupti_sync, CUpti_ActivitySynchronization2, correlation_id, correlationId);
SAME(tpi_cupti_sync, CUpti_ActivitySynchronization2, context_id, contextId);
SAME(tpi_cupti_sync, CUpti_ActivitySynchronization2, stream_id, streamId);

TP_TEST(enums)
{
    CHECK_EQ_INT(TPI_CUPTI_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY);
    CHECK_EQ_INT(TPI_CUPTI_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
    CHECK_EQ_INT(TPI_CUPTI_KIND_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
    CHECK_EQ_INT(TPI_CUPTI_KIND_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER);
    CHECK_EQ_INT(TPI_CUPTI_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME);
    CHECK_EQ_INT(TPI_CUPTI_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    CHECK_EQ_INT(TPI_CUPTI_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    CHECK_EQ_INT(TPI_CUPTI_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
    CHECK_EQ_INT(TPI_CUPTI_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    CHECK_EQ_INT(TPI_CUPTI_DOMAIN_RUNTIME, CUPTI_CB_DOMAIN_RUNTIME_API);
    CHECK_EQ_INT(TPI_CUPTI_DOMAIN_DRIVER, CUPTI_CB_DOMAIN_DRIVER_API);
    CHECK_EQ_INT(TPI_CUPTI_COPY_KINDS, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP + 1);
    CHECK_EQ_INT(TPI_CUPTI_MEMORY_KINDS, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC + 1);
    CHECK_EQ_INT(TPI_CUPTI_INVALID_STREAM, CUPTI_INVALID_STREAM_ID);
}

int main(void)
{
    RUN(enums);
    return tp_test_finish();
}
