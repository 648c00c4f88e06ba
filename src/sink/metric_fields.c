/* Per-step scalars shared by the metrics exporters (see metric_fields.h). */
#include <stdio.h>
#include <string.h>

#include "sink/metric_fields.h"

#define GB (1024.0 * 1024.0 * 1024.0)

static void op_fields(const tpi_op_stat *op, tpi_metric_fn fn, void *ctx)
{
    char key[320];
    const char *name = op->name ? op->name : "unnamed";
    /* a long name is cut, never the suffix: the three keys stay distinct */
    int nl = (int)(sizeof key - sizeof "profiling/" - sizeof "_total_time");
    if (strlen(name) > (size_t)nl)
        while (nl > 0 && ((unsigned char)name[nl] & 0xC0) == 0x80)
            nl--; /* not inside a UTF-8 sequence */
    snprintf(key, sizeof key, "profiling/%.*s_avg_time", nl, name);
    fn(ctx, key, op->count ? op->total_s / (double)op->count : 0.0);
    snprintf(key, sizeof key, "profiling/%.*s_total_time", nl, name);
    fn(ctx, key, op->total_s);
    snprintf(key, sizeof key, "profiling/%.*s_count", nl, name);
    fn(ctx, key, (double)op->count);
}

/* counter/<name>: the latest value; counter/<name>_mean: the mean of the
 * values since the previous row, when there were any. */
static void counter_fields(const tpi_counter_stat *ctr, tpi_metric_fn fn, void *ctx)
{
    char key[320];
    const char *name = ctr->name ? ctr->name : "unnamed";
    int nl = (int)(sizeof key - sizeof "counter/" - sizeof "_mean");
    if (strlen(name) > (size_t)nl)
        while (nl > 0 && ((unsigned char)name[nl] & 0xC0) == 0x80)
            nl--;
    snprintf(key, sizeof key, "counter/%.*s", nl, name);
    fn(ctx, key, ctr->last);
    if (ctr->n) {
        snprintf(key, sizeof key, "counter/%.*s_mean", nl, name);
        fn(ctx, key, ctr->sum / (double)ctr->n);
    }
}

static void device_fields(const tpi_device_sample *d, tpi_metric_fn fn, void *ctx)
{
    char key[160];
    const char *dev = d->mem.device[0] ? d->mem.device : "device";
    snprintf(key, sizeof key, "profiling/%s_memory_allocated_gb", dev);
    fn(ctx, key, (double)d->mem.allocated_bytes / GB);
    snprintf(key, sizeof key, "profiling/%s_memory_reserved_gb", dev);
    fn(ctx, key, (double)d->mem.reserved_bytes / GB);
    snprintf(key, sizeof key, "profiling/%s_memory_peak_gb", dev);
    fn(ctx, key, (double)d->mem.peak_bytes / GB);
    if (d->have_utilization) {
        snprintf(key, sizeof key, "profiling/%s_utilization_percent", dev);
        fn(ctx, key, d->utilization_percent);
    }
}

static void mem_fields(const tpi_mem_sample *m, tpi_metric_fn fn, void *ctx)
{
    if (m->have_process) {
        fn(ctx, "profiling/rss_bytes", (double)m->rss_bytes);
        fn(ctx, "profiling/peak_rss_bytes", (double)m->peak_rss_bytes);
        fn(ctx, "profiling/cpu_percent", m->cpu_percent);
    }
    if (m->have_system)
        fn(ctx, "profiling/cpu_memory_percent", m->system_memory_percent);
    for (int i = 0; i < m->n_devices && i < TPI_MAX_DEVICES; i++)
        device_fields(&m->devices[i], fn, ctx);
}

void tpi_metric_fields(const tpi_step_info *si, const tpi_mem_sample *fallback_mem,
                       tpi_metric_fn fn, void *ctx)
{
    fn(ctx, "profiling/step_time", si->step_time_s);
    fn(ctx, "profiling/samples_per_second", si->samples_per_second);
    for (size_t i = 0; i < si->n_totals; i++)
        op_fields(&si->totals[i], fn, ctx);
    for (size_t i = 0; i < si->n_counters; i++)
        counter_fields(&si->counters[i], fn, ctx);
    const tpi_mem_sample *m = si->mem ? si->mem : fallback_mem;
    if (m)
        mem_fields(m, fn, ctx);
}

const tpi_step_info *tpi_metric_final_row(const tpi_settings *s, const tpi_summary *sum)
{
    if (!sum || !sum->last_step || tpi_metric_due(s, sum->last_step))
        return NULL;
    return sum->last_step;
}

int tpi_metric_due(const tpi_settings *s, const tpi_step_info *si)
{
    if (!s || s->log_every <= 1)
        return 1;
    return (si->step + 1) % (uint64_t)s->log_every == 0;
}
