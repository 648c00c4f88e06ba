/*
 * cupti_records.c - CUPTI activity records -> tpi_gpu_activity, named as
 * Kineto names them (so trainprof's traces read like torch.profiler's):
 * kernels by their demangled name, copies "Memcpy HtoD (Pinned -> Device)",
 * sets "Memset (Device)", synchronizations "Stream Sync", API calls by
 * their function name without CUPTI's "_v7000" version suffix.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/cupti_abi.h"
#include "probe/gpu.h"

#define NAME_CACHE 1024 /* direct-mapped: CUPTI name pointer -> demangled text */

struct tpi_cupti_names {
    const char *key[NAME_CACHE];
    char *text[NAME_CACHE];
    char scratch[256];      /* API names, copy names: valid until the next record */
    char scratch2[64];
};

tpi_cupti_names *tpi_cupti_names_new(void)
{
    return calloc(1, sizeof(tpi_cupti_names));
}

void tpi_cupti_names_free(tpi_cupti_names *n)
{
    if (!n)
        return;
    for (int i = 0; i < NAME_CACHE; i++)
        free(n->text[i]);
    free(n);
}

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static cxa_demangle_fn find_demangler(void)
{
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!f) {
        /* a C program: the C++ runtime is not loaded; it stays loaded once asked for */
        void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (lib)
            f = dlsym(lib, "__cxa_demangle");
    }
    cxa_demangle_fn fn;
    memcpy(&fn, &f, sizeof fn);
    return fn;
}

char *tpi_demangle(const char *mangled)
{
    static cxa_demangle_fn fn;
    static int looked;
    if (!mangled || strncmp(mangled, "_Z", 2) != 0)
        return NULL;
    if (!looked) { /* collector thread only */
        fn = find_demangler();
        looked = 1;
    }
    int status = -1;
    char *out = fn ? fn(mangled, NULL, NULL, &status) : NULL;
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

static const char *kernel_name(tpi_cupti_names *n, const char *raw)
{
    if (!raw)
        return "(unnamed kernel)";
    size_t slot = ((uintptr_t)raw >> 3) % NAME_CACHE;
    if (n->key[slot] == raw && n->text[slot])
        return n->text[slot];
    char *d = tpi_demangle(raw);
    if (!d)
        d = strdup(raw);
    if (!d)
        return raw;
    free(n->text[slot]);
    n->key[slot] = raw;
    n->text[slot] = d;
    return d;
}

static const char *memory_kind(unsigned k)
{
    static const char *const NAMES[TPI_CUPTI_MEMORY_KINDS] = {
        "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static",
        "Managed Static"};
    return k < TPI_CUPTI_MEMORY_KINDS ? NAMES[k] : "Unknown";
}

void tpi_cupti_memcpy_name(char *buf, size_t n, unsigned copy_kind, unsigned src_kind,
                           unsigned dst_kind, const char **short_kind)
{
    static const char *const KINDS[TPI_CUPTI_COPY_KINDS] = {
        "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
    const char *k = copy_kind < TPI_CUPTI_COPY_KINDS ? KINDS[copy_kind] : "Unknown";
    snprintf(buf, n, "Memcpy %s (%s -> %s)", k, memory_kind(src_kind), memory_kind(dst_kind));
    if (short_kind)
        *short_kind = k;
}

static const char *sync_name(uint32_t type)
{
    switch (type) {
    case 1: return "Event Sync";
    case 2: return "Stream Wait Event";
    case 3: return "Stream Sync";
    case 4: return "Context Sync";
    default: return "Unknown Sync";
    }
}

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" */
static const char *api_name(tpi_cupti_names *n, const char *raw, int domain, uint32_t cbid)
{
    if (!raw) {
        snprintf(n->scratch, sizeof n->scratch, "%s API %u",
                 domain == TPI_CUPTI_DOMAIN_RUNTIME ? "runtime" : "driver", cbid);
        return n->scratch;
    }
    snprintf(n->scratch, sizeof n->scratch, "%s", raw);
    char *v = strstr(n->scratch, "_v");
    if (v && v[2] >= '0' && v[2] <= '9' && strspn(v + 2, "0123456789") == strlen(v + 2))
        *v = '\0';
    return n->scratch;
}

static uint64_t to_session(uint64_t ts, int64_t delta)
{
    int64_t v = (int64_t)ts + delta;
    return v > 0 ? (uint64_t)v : 0;
}

/* Start/end of a record; -1 when the record has no end yet. */
static int set_times(tpi_gpu_activity *o, uint64_t start, uint64_t end, int64_t delta)
{
    if (start == 0 || end < start)
        return -1;
    o->start_ns = to_session(start, delta);
    o->end_ns = to_session(end, delta);
    return 1;
}

static int kernel(const tpi_cupti_kernel *k, tpi_cupti_names *n, int64_t d, tpi_gpu_activity *o)
{
    o->kind = TPI_GPU_KERNEL;
    o->name = kernel_name(n, k->name);
    o->device = k->device_id;
    o->context = k->context_id;
    o->stream = k->stream_id;
    o->correlation = k->correlation_id;
    o->grid[0] = k->grid_x, o->grid[1] = k->grid_y, o->grid[2] = k->grid_z;
    o->block[0] = k->block_x, o->block[1] = k->block_y, o->block[2] = k->block_z;
    o->registers = k->registers_per_thread;
    o->shared_bytes = (uint32_t)(k->static_shared_memory + k->dynamic_shared_memory);
    return set_times(o, k->start, k->end, d);
}

static int memcpy_rec(const tpi_cupti_memcpy *m, tpi_cupti_names *n, int64_t d,
                      tpi_gpu_activity *o)
{
    o->kind = TPI_GPU_MEMCPY;
    tpi_cupti_memcpy_name(n->scratch, sizeof n->scratch, m->copy_kind, m->src_kind, m->dst_kind,
                          &o->copy_kind);
    o->name = n->scratch;
    o->bytes = m->bytes;
    o->device = m->device_id;
    o->context = m->context_id;
    o->stream = m->stream_id;
    o->correlation = m->correlation_id;
    return set_times(o, m->start, m->end, d);
}

static int memset_rec(const tpi_cupti_memset *m, tpi_cupti_names *n, int64_t d,
                      tpi_gpu_activity *o)
{
    o->kind = TPI_GPU_MEMSET;
    snprintf(n->scratch, sizeof n->scratch, "Memset (%s)", memory_kind(m->memory_kind));
    o->name = n->scratch;
    o->bytes = m->bytes;
    o->device = m->device_id;
    o->context = m->context_id;
    o->stream = m->stream_id;
    o->correlation = m->correlation_id;
    return set_times(o, m->start, m->end, d);
}

int tpi_cupti_convert(const void *record, tpi_cupti_names *names, tpi_cbid_name_fn cbid_name,
                      void *cbid_ctx, int64_t d, tpi_gpu_activity *o)
{
    uint32_t kind;
    memcpy(&kind, record, sizeof kind);
    memset(o, 0, sizeof *o);
    switch (kind) {
    case TPI_CUPTI_KIND_KERNEL:
    case TPI_CUPTI_KIND_CONCURRENT_KERNEL:
        return kernel(record, names, d, o);
    case TPI_CUPTI_KIND_MEMCPY:
        return memcpy_rec(record, names, d, o);
    case TPI_CUPTI_KIND_MEMSET:
        return memset_rec(record, names, d, o);
    case TPI_CUPTI_KIND_RUNTIME:
    case TPI_CUPTI_KIND_DRIVER: {
        const tpi_cupti_api *a = record;
        int domain = kind == TPI_CUPTI_KIND_RUNTIME ? TPI_CUPTI_DOMAIN_RUNTIME
                                                    : TPI_CUPTI_DOMAIN_DRIVER;
        o->kind = kind == TPI_CUPTI_KIND_RUNTIME ? TPI_GPU_RUNTIME : TPI_GPU_DRIVER;
        o->name = api_name(names, cbid_name(cbid_ctx, domain, a->cbid), domain, a->cbid);
        o->cbid = a->cbid;
        o->pid = a->process_id;
        o->tid = a->thread_id;
        o->correlation = a->correlation_id;
        return set_times(o, a->start, a->end, d);
    }
    case TPI_CUPTI_KIND_SYNCHRONIZATION: {
        const tpi_cupti_sync *s = record;
        o->kind = TPI_GPU_SYNC;
        o->name = o->sync_kind = sync_name(s->type);
        o->context = s->context_id;
        o->stream = s->stream_id;
        o->correlation = s->correlation_id;
        return set_times(o, s->start, s->end, d);
    }
    default:
        return 0;
    }
}
