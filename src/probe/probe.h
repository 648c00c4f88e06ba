/*
 * probe.h - memory and system probes (process, system, NVML, CUDA runtime,
 * framework allocator callback) and allocation tracking. Each probe is
 * optional: one that is unavailable leaves its fields absent (have_* = 0).
 * Interface between src/probe and the core / sinks.
 */
#ifndef TP_PROBE_PROBE_H
#define TP_PROBE_PROBE_H

#include <stdint.h>

#include "trainprof.h"
#include "config/settings.h"

#define TPI_MAX_DEVICES 16

typedef struct tpi_device_sample {
    tp_device_memory mem;      /* device name, allocated/reserved/peak/total */
    int have_utilization;
    double utilization_percent;/* NVML gpu utilization */
    int have_power;
    double power_watts;        /* NVML power draw */
    int have_process_used;
    uint64_t process_used_bytes; /* NVML per-process used memory */
    char source[16];           /* "nvml", "cudart", "callback" */
} tpi_device_sample;

typedef struct tpi_mem_sample {
    uint64_t ts_ns;            /* session time (ns since the session base) */
    uint64_t step;             /* last step ended when sampled */
    int have_process;
    uint64_t rss_bytes, peak_rss_bytes;
    double cpu_percent;        /* process CPU since previous sample, 100 = 1 core */
    int threads;
    int have_system;
    double system_memory_percent;
    uint64_t system_available_bytes, system_total_bytes;
    int n_devices;
    tpi_device_sample devices[TPI_MAX_DEVICES];
    /* added by the probes: running totals since the probes opened */
    uint32_t callback_rejected; /* allocator-callback results rejected as inconsistent */
    uint32_t probe_errors;      /* failed reads (/proc unreadable, NVML errors) */
} tpi_mem_sample;

typedef struct tpi_probe_set tpi_probe_set;

/* Opens the probes the settings ask for; prints one info line for a probe
 * that is unavailable (no GPU, no driver) and never fails for that reason. */
tpi_probe_set *tpi_probes_open(const tpi_settings *s, tp_error *err);
void tpi_probes_set_callback(tpi_probe_set *p, tp_device_memory_fn fn, void *user);
/* One sample of everything available; ts_ns/step are filled by the caller. */
int tpi_probes_sample(tpi_probe_set *p, tpi_mem_sample *out);
void tpi_probes_close(tpi_probe_set *p);
/* Which probes answered at open: "process,system,nvml" (for the info line
 * and the summary). */
const char *tpi_probes_describe(const tpi_probe_set *p);
/* Why no GPU memory probe opened (NVML's and the CUDA runtime's reasons),
 * "" when one did: training_summary.json says it. */
const char *tpi_probes_gpu_note(const tpi_probe_set *p);

/* Background sampler every interval_ms, delivering to fn on its own thread. */
typedef void (*tpi_sample_fn)(void *ctx, tpi_mem_sample *sample);
typedef struct tpi_sampler tpi_sampler;
tpi_sampler *tpi_sampler_start(tpi_probe_set *p, int64_t interval_ms, tpi_sample_fn fn, void *ctx);
void tpi_sampler_stop(tpi_sampler *s);

/* Memory signals over the run, computed from the samples seen. */
typedef struct tpi_mem_summary tpi_mem_summary;
tpi_mem_summary *tpi_mem_summary_new(void);
void tpi_mem_summary_add(tpi_mem_summary *m, const tpi_mem_sample *s);
struct tpu_json;
/* Writes the memory fields of training_summary.json (peaks, growth slope,
 * fragmentation gap, leak signal) into an open JSON object. */
void tpi_mem_summary_write_json(const tpi_mem_summary *m, struct tpu_json *j);
/* One or more human lines for the console summary ("" when nothing to say). */
void tpi_mem_summary_print(const tpi_mem_summary *m, void *file);
void tpi_mem_summary_free(tpi_mem_summary *m);

/* Allocation tracking (tp_mem_alloc / tp_mem_free). */
typedef struct tpi_alloc_tracker tpi_alloc_tracker;
tpi_alloc_tracker *tpi_alloc_tracker_new(void);
/* zone_id: innermost open zone of the calling thread (0 = none). On return
 * On return total_live holds the live bytes of all pools after the change. */
void tpi_alloc_record(tpi_alloc_tracker *t, const void *ptr, uint64_t bytes, const char *pool,
                      uint32_t zone_id, uint64_t *total_live);
/* Returns the freed block's size (0 when unknown: counted as a bad free). */
uint64_t tpi_alloc_release(tpi_alloc_tracker *t, const void *ptr, const char *pool,
                           uint64_t *total_live);
/* Pools, live/peak bytes, counts and outstanding blocks (possible leaks)
 * grouped by pool and zone, as JSON fields of the summary / console lines. */
void tpi_alloc_write_json(const tpi_alloc_tracker *t, struct tpu_json *j);
void tpi_alloc_print(const tpi_alloc_tracker *t, void *file);
void tpi_alloc_tracker_free(tpi_alloc_tracker *t);

#endif
