/* steps_device.h - stats' own: steps extended to the device work they
 * launched, as the TensorBoard plugin does (steps.c uses it). */
#ifndef TRAINPROF_ANALYZE_STEPS_DEVICE_H
#define TRAINPROF_ANALYZE_STEPS_DEVICE_H

#include "analyze/stats/stats.h"

/* The runtime calls (cudaLaunchKernel, ...) and device records (kernels,
 * copies, sets) of a trace that carry a correlation id, kept while the
 * first pass reads it, 24 bytes each. Only the runtime calls that launch
 * device work are kept (a name with Launch, Memcpy or Memset:
 * cudaLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch, cudaMemcpyAsync,
 * hipMemsetAsync, ...): most runtime calls launch nothing. */
typedef struct tpa_ds_rt { int64_t corr, ts, end; } tpa_ds_rt;
typedef struct tpa_ds_dev { int64_t corr, ts, end; } tpa_ds_dev;
typedef struct tpa_devsteps {
    tpa_ds_rt *rt; size_t n_rt, cap_rt;
    tpa_ds_dev *dev; size_t n_dev, cap_dev;
} tpa_devsteps;

/* Notes a runtime call or device record (kind: its tpa_kind); others are
 * ignored, and so is an event without a correlation id or with dur < 0. */
void tpa__ds_note(tpa_devsteps *d, const tpa_event *ev, int kind);

/* The plugin's rule (kineto tb_plugin event_parser.py, _find_device_steps
 * and _update_steps_duration), on steps sorted by start that do not overlap:
 * a runtime call lying wholly inside a step's host span launched its
 * device records for that step; when any step launched some, each step
 * starts at the later of its host start and the previous step's end, and
 * ends at the later of its host end and the end of the last device record
 * it launched (a step that launched none ends at the later of its host end
 * and its start). The first step starts after the device records launched
 * before it (outside every step) that end before its own first record.
 * Trailing steps that launched nothing are dropped, and the last one left
 * too when it launched less than 0.8 of what the one before it did (the
 * profiler stopped before its kernels were recorded). Returns the number
 * of steps kept (*n_dropped: the steps dropped), or n unchanged with
 * *applied false when no step launched device work. Frees d's records. */
size_t tpa__ds_apply(tpa_devsteps *d, tpa_step *steps, size_t n, bool *applied, size_t *n_dropped);
void tpa__ds_free(tpa_devsteps *d);

#endif
