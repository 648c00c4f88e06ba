/*
 * exp_synth.h - a synthetic profiled run fed straight into sinks (no core):
 * two threads, nested zones, a zone spanning steps, counters, memory events,
 * step rows with per-op totals. Used by the unit tests, the file generator
 * the Python decoders check, and the exporter benchmark.
 */
#ifndef TP_TEST_EXP_SYNTH_H
#define TP_TEST_EXP_SYNTH_H

#include <stdio.h>

#include "sink/sink.h"

#define EXP_MAX_SINKS 8

typedef struct exp_run {
    tpi_settings settings;
    tpi_sink_env env;
    char run_dir[512];
    tpi_sink *sinks[EXP_MAX_SINKS];
    int n_sinks;
    FILE *expected;        /* NULL, or JSON lines of every slice/counter fed */
    uint64_t slices;       /* slices fed (zones + steps) */
} exp_run;

/* Settings: perfetto + every metric + with_stack 1; env over run_dir. */
void exp_run_init(exp_run *r, const char *run_dir);
/* Creates every exporter sink (NULL ones are skipped). */
void exp_run_add_exporters(exp_run *r);
/* Feeds `steps` steps of the synthetic loop (one trace window over them,
 * `zones_per_step` inner zones under forward) and closes the session. */
void exp_run_feed(exp_run *r, int steps, int zones_per_step);
/* close + destroy every sink; returns the number of failed sinks. */
int exp_run_finish(exp_run *r);

#endif
