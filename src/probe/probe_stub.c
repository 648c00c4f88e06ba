/* PLACEHOLDER owned by the probes engineer: trivial versions of probe.h so
 * the tree links while src/probe is written. Delete when replaced. */
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"

tpi_probe_set *tpi_probes_open(const tpi_settings *s, tp_error *err) { (void)s; (void)err; return NULL; }
void tpi_probes_set_callback(tpi_probe_set *p, tp_device_memory_fn fn, void *user) { (void)p; (void)fn; (void)user; }
int tpi_probes_sample(tpi_probe_set *p, tpi_mem_sample *out) { (void)p; memset(out, 0, sizeof *out); return -1; }
void tpi_probes_close(tpi_probe_set *p) { (void)p; }
tpi_sampler *tpi_sampler_start(tpi_probe_set *p, int64_t ms, tpi_sample_fn fn, void *ctx) { (void)p; (void)ms; (void)fn; (void)ctx; return NULL; }
void tpi_sampler_stop(tpi_sampler *s) { (void)s; }
tpi_mem_summary *tpi_mem_summary_new(void) { return NULL; }
void tpi_mem_summary_add(tpi_mem_summary *m, const tpi_mem_sample *s) { (void)m; (void)s; }
void tpi_mem_summary_write_json(const tpi_mem_summary *m, struct tpu_json *j) { (void)m; (void)j; }
void tpi_mem_summary_print(const tpi_mem_summary *m, void *f) { (void)m; (void)f; }
void tpi_mem_summary_free(tpi_mem_summary *m) { (void)m; }
tpi_alloc_tracker *tpi_alloc_tracker_new(void) { return NULL; }
void tpi_alloc_record(tpi_alloc_tracker *t, const void *p, uint64_t b, const char *pool, uint32_t z, uint64_t *live) { (void)t; (void)p; (void)b; (void)pool; (void)z; if (live) *live = 0; }
uint64_t tpi_alloc_release(tpi_alloc_tracker *t, const void *p, const char *pool, uint64_t *live) { (void)t; (void)p; (void)pool; if (live) *live = 0; return 0; }
void tpi_alloc_write_json(const tpi_alloc_tracker *t, struct tpu_json *j) { (void)t; (void)j; }
void tpi_alloc_print(const tpi_alloc_tracker *t, void *f) { (void)t; (void)f; }
void tpi_alloc_tracker_free(tpi_alloc_tracker *t) { (void)t; }
tp_monitor *tp_monitor_new(int pid, tp_error *err) { (void)pid; (void)err; return NULL; }
int tp_monitor_sample(tp_monitor *m, tp_proc_sample *out, tp_error *err) { (void)m; (void)out; (void)err; return -1; }
int tp_monitor_gpus(tp_monitor *m, tp_device_memory *out, int max) { (void)m; (void)out; (void)max; return 0; }
void tp_monitor_free(tp_monitor *m) { (void)m; }
