/* Synthetic profiled run for the exporter tests (see exp_synth.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "exp_synth.h"

#define TID_MAIN 4242u
#define TID_LOADER 4343u

/* Names: ids 1.. as the core's registry would give them. */
static const char *const names[] = { NULL, "forward", "linear", "relu", "backward",
                                     "optimizer_step", "data_loader", "loss", "prefetch" };
enum { N_FORWARD = 1, N_LINEAR, N_RELU, N_BACKWARD, N_OPT, N_LOADER, N_LOSS, N_PREFETCH };

const char *tpi_names_get(uint32_t id)
{
    return id < sizeof names / sizeof names[0] ? names[id] : NULL;
}

void exp_run_init(exp_run *r, const char *run_dir)
{
    memset(r, 0, sizeof *r);
    snprintf(r->run_dir, sizeof r->run_dir, "%s", run_dir);
    mkdir(run_dir, 0755);
    tpi_settings *s = &r->settings;
    s->enabled = 1;
    s->trace = 1;
    s->trace_formats = TPI_TRACE_PERFETTO;
    s->metrics = TPI_METRIC_JSONL | TPI_METRIC_CSV | TPI_METRIC_TENSORBOARD;
    s->with_stack = 1;
    r->env.settings = s;
    r->env.run_dir = r->run_dir;
    r->env.host = "testhost";
    r->env.pid = 777;
    r->env.rank = -1;
    r->env.wall_base_ns = 1700000000000000000ull;
    r->env.mono_base_ns = 5000000000ull;
}

static void add(exp_run *r, tpi_sink *k)
{
    if (k && r->n_sinks < EXP_MAX_SINKS)
        r->sinks[r->n_sinks++] = k;
}

void exp_run_add_exporters(exp_run *r)
{
    add(r, tpi_sink_perfetto_new(&r->env));
    add(r, tpi_sink_stacks_new(&r->env));
    add(r, tpi_sink_jsonl_new(&r->env));
    add(r, tpi_sink_csv_new(&r->env));
    add(r, tpi_sink_tensorboard_new(&r->env));
}

#define EACH(r, k) for (int k##_i = 0; k##_i < (r)->n_sinks; k##_i++) \
    for (tpi_sink *k = (r)->sinks[k##_i]; k; k = NULL) if (!k->failed)

static void deliver(exp_run *r, const tpi_event *e)
{
    EACH(r, k) if (k->ops->event) k->ops->event(k, e);
    if (!r->expected)
        return;
    if (e->kind == TPI_EV_SLICE)
        fprintf(r->expected, "{\"k\":\"slice\",\"tid\":%u,\"name\":\"%s\",\"ts\":%llu,\"dur\":%llu,"
                "\"self\":%llu,\"depth\":%d,\"step\":%llu,\"is_step\":%d}\n", e->tid, e->name,
                (unsigned long long)e->ts_ns, (unsigned long long)e->dur_ns,
                (unsigned long long)e->self_ns, e->depth, (unsigned long long)e->step, e->is_step);
    else if (e->kind == TPI_EV_COUNTER)
        fprintf(r->expected, "{\"k\":\"counter\",\"name\":\"%s\",\"ts\":%llu,\"value\":%.17g}\n",
                e->name, (unsigned long long)e->ts_ns, e->value);
}

/* One zone as the collector reports it, with its enclosing stack. */
static void zone(exp_run *r, uint32_t tid, uint32_t id, const uint32_t *stack, int depth,
                 uint64_t ts, uint64_t dur, uint64_t self, uint64_t step)
{
    tpi_event e = { .kind = TPI_EV_SLICE, .tid = tid, .name_id = id, .name = names[id],
                    .cat = "user_annotation", .ts_ns = ts, .dur_ns = dur, .self_ns = self,
                    .depth = depth, .stack = stack, .step = step };
    deliver(r, &e);
    r->slices++;
}

/* Deterministic jitter (0..996 ns) so durations look measured, not constant. */
static uint64_t jitter(void)
{
    static uint64_t x = 88172645463325252ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % 997;
}

/* forward { linear, relu } x n ; backward ; optimizer_step ; loader in parallel. */
static uint64_t feed_step(exp_run *r, uint64_t step, uint64_t t0, int n, int in_prefetch)
{
    static const uint32_t st_fwd[1] = { N_FORWARD }, st_pre[1] = { N_PREFETCH };
    uint64_t t = t0 + 1000, lin = 2000 + step * 7, relu = 500;
    uint64_t child = 0;
    for (int i = 0; i < n; i++) {
        uint64_t d = (i % 2 ? relu : lin) + jitter();
        zone(r, TID_MAIN, i % 2 ? N_RELU : N_LINEAR, st_fwd, 1, t, d, d, step);
        child += d;
        t += d + 100 + jitter() / 8;
    }
    uint64_t fwd_dur = t - (t0 + 1000) + 300;
    zone(r, TID_MAIN, N_FORWARD, NULL, 0, t0 + 1000, fwd_dur, fwd_dur - child, step);
    t = t0 + 1000 + fwd_dur;
    zone(r, TID_MAIN, N_BACKWARD, NULL, 0, t, 30000, 30000, step);
    t += 30000;
    zone(r, TID_MAIN, N_OPT, NULL, 0, t, 5000, 5000, step);
    t += 5000 + 800;
    zone(r, TID_LOADER, N_LOADER, in_prefetch ? st_pre : NULL, in_prefetch, t0 + 200, 9000, 9000,
         step);
    tpi_event c = { .kind = TPI_EV_COUNTER, .tid = TID_MAIN, .name_id = N_LOSS, .name = "loss",
                    .cat = "counter", .ts_ns = t - 400, .step = step, .value = 2.5 / (step + 1) };
    deliver(r, &c);
    tpi_event m = { .kind = TPI_EV_MEMORY, .tid = TID_MAIN, .name = "[memory]", .ts_ns = t - 300,
                    .bytes = 4096, .total_allocated = 1000000 + step * 4096, .device_type = 1,
                    .device_id = 0, .step = step };
    deliver(r, &m);
    char sname[48];
    snprintf(sname, sizeof sname, "ProfilerStep#%llu", (unsigned long long)step);
    tpi_event s = { .kind = TPI_EV_SLICE, .tid = TID_MAIN, .name = sname,
                    .cat = "user_annotation", .ts_ns = t0, .dur_ns = t - t0, .self_ns = t - t0,
                    .is_step = 1, .step = step };
    deliver(r, &s);
    r->slices++;
    return t;
}

static void step_row(exp_run *r, uint64_t step, uint64_t t0, uint64_t t1, tpi_op_stat *tot,
                     tpi_mem_sample *mem)
{
    double dt = (double)(t1 - t0) * 1e-9;
    for (int i = 0; i < 3; i++) {
        tot[i].count++;
        tot[i].total_s += (i == 0 ? 0.00002 : i == 1 ? 0.00003 : 0.000005);
        tot[i].mean_s = tot[i].total_s / (double)tot[i].count;
    }
    mem->ts_ns = t1;
    mem->step = step;
    mem->rss_bytes = 100000000 + step * 1000;
    tpi_step_info si = { .step = step, .batch_idx = step, .begin_ns = t0, .end_ns = t1,
                         .step_time_s = dt, .samples = 32, .samples_per_second = 32 / dt,
                         .phase = TPI_PHASE_ACTIVE, .totals = tot, .n_totals = 3,
                         .mem = step % 2 ? mem : NULL };
    EACH(r, k) if (k->ops->step) k->ops->step(k, &si);
    EACH(r, k) if (k->ops->flush) k->ops->flush(k);
}

void exp_run_feed(exp_run *r, int steps, int zones_per_step)
{
    tpi_window w = { .index = 0, .first_step = 0, .last_step = (uint64_t)steps - 1 };
    char dir[600];
    snprintf(dir, sizeof dir, "%s/profiler_traces", r->run_dir);
    mkdir(dir, 0755);
    snprintf(w.stem, sizeof w.stem, "%s/testhost_777.1", dir);
    EACH(r, k) if (k->ops->window_begin) k->ops->window_begin(k, &w);
    EACH(r, k) if (k->ops->thread_name) k->ops->thread_name(k, TID_MAIN, "main");
    EACH(r, k) if (k->ops->thread_name) k->ops->thread_name(k, TID_LOADER, "loader");
    tpi_op_stat tot[3] = { { .name_id = N_FORWARD, .name = "forward", .top_level = 1 },
                           { .name_id = N_BACKWARD, .name = "backward", .top_level = 1 },
                           { .name_id = N_OPT, .name = "optimizer_step", .top_level = 1 } };
    tpi_mem_sample mem = { .have_process = 1, .have_system = 1, .system_memory_percent = 42.5,
                           .n_devices = 1 };
    snprintf(mem.devices[0].mem.device, sizeof mem.devices[0].mem.device, "cuda:0");
    mem.devices[0].mem.allocated_bytes = 1u << 30;
    uint64_t t0 = 1000000, prefetch_begin = t0 + 100;
    for (int i = 0; i < steps; i++) {
        /* a loader zone spanning steps 0..1: delivered in step 1, it begins
         * before what the loader's sequence already wrote in step 0 */
        uint64_t t1 = feed_step(r, (uint64_t)i, t0, zones_per_step, i == 0 && steps > 2);
        if (i == 1 && steps > 2)
            zone(r, TID_LOADER, N_PREFETCH, NULL, 0, prefetch_begin, t0 + 150 - prefetch_begin,
                 t0 + 150 - prefetch_begin - 9000, (uint64_t)i);
        step_row(r, (uint64_t)i, t0, t1, tot, &mem);
        t0 = t1;
    }
    EACH(r, k) if (k->ops->window_end) k->ops->window_end(k, &w, 3);
}

int exp_run_finish(exp_run *r)
{
    tpi_summary sum = { 0 };
    int failed = 0;
    for (int i = 0; i < r->n_sinks; i++) {
        tpi_sink *k = r->sinks[i];
        if (!k->failed && k->ops->close)
            k->ops->close(k, &sum);
        failed += k->failed != 0;
        if (k->ops->destroy)
            k->ops->destroy(k);
    }
    r->n_sinks = 0;
    return failed;
}
