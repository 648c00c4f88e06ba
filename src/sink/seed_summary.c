/* training_summary.json and operations.json (see seed_json.h). */
#include <stdlib.h>
#include <string.h>

#include "sink/seed_json.h"
#include "util/json.h"

/* qsort_r (glibc): sessions of several threads may close at once */
static int by_total_desc(const void *a, const void *b, void *ops_arg)
{
    const tpi_op_stat *ops = ops_arg;
    double x = ops[*(const size_t *)a].total_s, y = ops[*(const size_t *)b].total_s;
    return x < y ? 1 : x > y ? -1 : 0;
}

size_t *tpi_seed_sorted_ops(const tpi_summary *sum)
{
    size_t *idx = malloc((sum->n_ops + 1) * sizeof *idx);
    if (!idx)
        return NULL;
    for (size_t i = 0; i < sum->n_ops; i++)
        idx[i] = i;
    qsort_r(idx, sum->n_ops, sizeof *idx, by_total_desc, (void *)sum->ops);
    return idx;
}

void tpi_seed_write_summary(tpu_buf *b, const tpi_sink_env *env, const tpi_summary *sum)
{
    tpu_json j;
    char t0[64], t1[64];
    tpi_seed_iso_time(t0, sizeof t0, sum->wall_start_ns);
    tpi_seed_iso_time(t1, sizeof t1, sum->wall_end_ns);
    tpu_json_init(&j, b, 1);
    tpu_json_begin_object(&j);
    tpu_json_kv_double(&j, "total_training_time_seconds", sum->total_time_s);
    tpu_json_kv_uint(&j, "total_steps", sum->total_steps);
    tpu_json_kv_double(&j, "average_time_per_step", sum->mean_step_s);
    tpu_json_kv_double(&j, "steps_per_second",
                       sum->step_time_total_s > 0 ? (double)sum->total_steps / sum->step_time_total_s : 0);
    tpu_json_kv_string(&j, "training_start_time", t0);
    tpu_json_kv_string(&j, "training_end_time", t1);
    tpu_json_kv_uint(&j, "total_samples", sum->total_samples);
    tpu_json_kv_double(&j, "samples_per_second",
                       sum->step_time_total_s > 0 ? (double)sum->total_samples / sum->step_time_total_s : 0);
    tpu_json_kv_double(&j, "step_time_total_seconds", sum->step_time_total_s);
    tpu_json_kv_double(&j, "median_time_per_step", sum->median_step_s);
    tpu_json_kv_double(&j, "p90_time_per_step", sum->p90_step_s);
    tpu_json_kv_double(&j, "min_time_per_step", sum->min_step_s);
    tpu_json_kv_double(&j, "max_time_per_step", sum->max_step_s);
    tpu_json_kv_uint(&j, "events_recorded", sum->events_recorded);
    tpu_json_kv_uint(&j, "dropped_events", sum->events_dropped);
    tpu_json_kv_uint(&j, "dropped_steps", sum->steps_dropped);
    tpu_json_kv_uint(&j, "unbalanced_zones", sum->unbalanced_zones);
    tpu_json_kv_uint(&j, "io_errors", sum->io_errors);
    tpu_json_kv_uint(&j, "trace_files", sum->trace_files);
    tpu_json_kv_uint(&j, "trace_events_dropped", sum->trace_events_dropped);
    if (sum->capture_on) { /* captures.json's entries (docs/CAPTURES.md) */
        tpu_json_key(&j, "captures");
        tpu_json_begin_array(&j);
        if (sum->captures_json)
            tpu_json_raw(&j, sum->captures_json, strlen(sum->captures_json));
        tpu_json_end_array(&j);
    }
    if (sum->gpu_found >= 0) { /* memory sampling looked for devices */
        tpu_json_kv_bool(&j, "gpu_found", sum->gpu_found);
        if (!sum->gpu_found)
            tpu_json_kv_string(&j, "gpu", "no GPU found: gpu_memory_* fields are 0.0");
    }
    if (sum->gpu_probe_note && sum->gpu_probe_note[0])
        tpu_json_kv_string(&j, "gpu_probe", sum->gpu_probe_note);
    tpu_json_kv_string(&j, "trainprof_version", tp_version());
    tpu_json_kv_string(&j, "host", env->host);
    tpu_json_kv_int(&j, "pid", env->pid);
    tpu_json_kv_int(&j, "rank", env->rank);
    tpu_json_kv_string(&j, "run_dir", env->run_dir);
    tpu_json_kv_uint(&j, "base_time_ns", env->wall_base_ns);
    tpu_json_kv_uint(&j, "monotonic_base_ns", env->mono_base_ns);
    tpi_sink_job_json(&j, env);
    if (sum->mem)
        tpi_mem_summary_write_json(sum->mem, &j);
    if (sum->alloc)
        tpi_alloc_write_json(sum->alloc, &j);
    tpu_json_end_object(&j);
    tpu_buf_putc(b, '\n');
}

void tpi_seed_write_operations(tpu_buf *b, const tpi_summary *sum)
{
    tpu_json j;
    size_t *idx = tpi_seed_sorted_ops(sum);
    tpu_json_init(&j, b, 1);
    tpu_json_begin_array(&j);
    for (size_t n = 0; idx && n < sum->n_ops; n++) {
        const tpi_op_stat *o = &sum->ops[idx[n]];
        tpu_json_begin_object(&j);
        tpu_json_kv_string(&j, "name", o->name);
        tpu_json_kv_uint(&j, "count", o->count);
        tpu_json_kv_double(&j, "total_time", o->total_s);
        tpu_json_kv_double(&j, "self_time", o->self_s);
        tpu_json_kv_double(&j, "avg_time", o->mean_s);
        tpu_json_kv_double(&j, "min_time", o->min_s);
        tpu_json_kv_double(&j, "max_time", o->max_s);
        tpu_json_kv_double(&j, "stddev_time", o->stddev_s);
        tpu_json_kv_double(&j, "p50_time", o->p50_s);
        tpu_json_kv_double(&j, "p90_time", o->p90_s);
        tpu_json_kv_double(&j, "p99_time", o->p99_s);
        tpu_json_kv_double(&j, "percent_of_step_time",
                           sum->step_time_total_s > 0 ? 100.0 * o->total_s / sum->step_time_total_s : 0);
        tpu_json_kv_bool(&j, "top_level", o->top_level);
        if (o->gpu_count) { /* TP_GPU_ZONE: GPU time from CUDA events */
            tpu_json_kv_uint(&j, "gpu_count", o->gpu_count);
            tpu_json_kv_double(&j, "gpu_total_time", o->gpu_total_s);
            tpu_json_kv_double(&j, "gpu_avg_time", o->gpu_mean_s);
            tpu_json_kv_double(&j, "gpu_min_time", o->gpu_min_s);
            tpu_json_kv_double(&j, "gpu_max_time", o->gpu_max_s);
        }
        tpu_json_end_object(&j);
    }
    tpu_json_end_array(&j);
    tpu_buf_putc(b, '\n');
    free(idx);
}
