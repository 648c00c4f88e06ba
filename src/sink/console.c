/*
 * console.c - human output on stdout:
 *   every log_every steps:  --- Profiling Metrics (Step N) ---  (N: metrics.jsonl's step)
 *                           name: avg=23.400 ms, total=2.340 s, count=100
 *   at close:               the top operations table (name, calls, total,
 *                           self, avg, min, max, p99, % of step time) and
 *                           the memory / allocation lines of the probes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sink/seed_json.h"

typedef struct console_sink {
    tpi_sink base;
    FILE *out;
} console_sink;

/* "1.234 ms" style, 4 significant digits */
static const char *fmt_time(char *buf, size_t n, double s)
{
    if (s >= 1)
        snprintf(buf, n, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.3f ms", s * 1e3);
    else
        snprintf(buf, n, "%.3f us", s * 1e6);
    return buf;
}

static void co_step(tpi_sink *k, const tpi_step_info *si)
{
    console_sink *c = (console_sink *)k;
    int64_t every = k->env->settings->log_every;
    if (every <= 0 || (si->step + 1) % (uint64_t)every != 0)
        return;
    char a[32], b[32];
    /* the step as metrics.jsonl numbers it (0-based), times as the table shows them */
    fprintf(c->out, "--- Profiling Metrics (Step %llu) ---\n", (unsigned long long)si->step);
    for (size_t i = 0; i < si->n_totals; i++) {
        const tpi_op_stat *o = &si->totals[i];
        fprintf(c->out, "%s: avg=%s, total=%s, count=%llu\n", o->name,
                fmt_time(a, sizeof a, o->mean_s), fmt_time(b, sizeof b, o->total_s),
                (unsigned long long)o->count);
    }
    fflush(c->out);
}

static int co_close(tpi_sink *k, const tpi_summary *sum)
{
    console_sink *c = (console_sink *)k;
    FILE *o = c->out;
    char a[32], b[32], d[32], e[32], f[32], g[32];
    int top = k->env->settings->top_n > 0 ? k->env->settings->top_n : 20;
    size_t *idx = tpi_seed_sorted_ops(sum);
    fprintf(o, "\n=== trainprof: %llu steps, %.3f s, mean step %s, median %s, %.1f samples/s ===\n",
            (unsigned long long)sum->total_steps, sum->total_time_s,
            fmt_time(a, sizeof a, sum->mean_step_s), fmt_time(b, sizeof b, sum->median_step_s),
            sum->step_time_total_s > 0 ? (double)sum->total_samples / sum->step_time_total_s : 0);
    int w = 32; /* the Name column fits the longest name shown (up to 200 bytes) */
    for (size_t n = 0; idx && n < sum->n_ops && (int)n < top; n++) {
        size_t len = strlen(sum->ops[idx[n]].name);
        if (len > (size_t)w)
            w = len > 200 ? 200 : (int)len;
    }
    fprintf(o, "%-*s %9s %12s %12s %12s %12s %12s %12s %7s\n", w, "Name", "Calls", "Total", "Self",
            "Avg", "Min", "Max", "P99", "%Step");
    for (size_t n = 0; idx && n < sum->n_ops && (int)n < top; n++) {
        const tpi_op_stat *op = &sum->ops[idx[n]];
        char total[32];
        fprintf(o, "%-*.*s %9llu %12s %12s %12s %12s %12s %12s %6.1f%%\n", w, w, op->name,
                (unsigned long long)op->count, fmt_time(total, sizeof total, op->total_s),
                fmt_time(a, sizeof a, op->self_s), fmt_time(b, sizeof b, op->mean_s),
                fmt_time(d, sizeof d, op->min_s), fmt_time(e, sizeof e, op->max_s),
                fmt_time(f, sizeof f, op->p99_s),
                sum->step_time_total_s > 0 ? 100.0 * op->total_s / sum->step_time_total_s : 0);
    }
    (void)g;
    if (sum->n_ops > (size_t)top)
        fprintf(o, "(%zu more operations in operations.json)\n", sum->n_ops - (size_t)top);
    if (sum->events_dropped || sum->unbalanced_zones || sum->io_errors)
        fprintf(o, "events dropped: %llu, unbalanced zones: %llu, I/O errors: %llu\n",
                (unsigned long long)sum->events_dropped, (unsigned long long)sum->unbalanced_zones,
                (unsigned long long)sum->io_errors);
    if (sum->mem)
        tpi_mem_summary_print(sum->mem, o);
    if (sum->alloc)
        tpi_alloc_print(sum->alloc, o);
    /* "results in" only when they are there, whole */
    if (tpi_sink_run_dir_gone(k->env))
        fprintf(o, "trainprof: results lost: %s was removed during the run\n", k->env->run_dir);
    else if (sum->io_errors)
        fprintf(o, "trainprof: results in %s are incomplete: %llu write error(s) (see the warnings above)\n",
                k->env->run_dir, (unsigned long long)sum->io_errors);
    else
        fprintf(o, "trainprof: results in %s\n", k->env->run_dir);
    fflush(o);
    free(idx);
    return 0;
}

static void co_destroy(tpi_sink *k)
{
    free(k);
}

static const tpi_sink_ops co_ops = {
    .name = "console",
    .step = co_step,
    .close = co_close,
    .destroy = co_destroy,
};

tpi_sink *tpi_sink_console_new(const tpi_sink_env *env)
{
    const tpi_settings *st = env->settings;
    /* profiling.metrics lists "console" by default; a list without it (for
     * example `jsonl` alone) keeps stdout quiet. */
    if (!(st->metrics & TPI_METRIC_CONSOLE))
        return NULL;
    console_sink *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base.ops = &co_ops;
    c->base.env = env;
    c->out = stdout;
    return &c->base;
}
