/* render_diag.c - text and JSON for `trainprof analyze` (see diagnose.c). */
#include "analyze/text/render.h"

#include <inttypes.h>
#include <string.h>

static const char *const SEVERITY[3] = { "low", "medium", "high" };

static bool host_op(const tpa_op *o) { return o->table == -1; }
static bool gpu_op(const tpa_op *o) { return o->table >= 0 && o->table != TPA_TABLE_ASYNC; }

/* The k ops of one side with the most self time (ops are sorted per table). */
static size_t pick_top(const tpa_report *rep, bool gpu, size_t k, size_t *out)
{
    size_t n = 0;
    while (n < k) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < rep->n_ops; i++) {
            const tpa_op *o = &rep->ops[i];
            if (!(gpu ? gpu_op(o) : host_op(o))) continue;
            bool taken = false;
            for (size_t j = 0; j < n; j++) taken |= out[j] == i;
            if (!taken && (best == SIZE_MAX || o->self_ns > rep->ops[best].self_ns)) best = i;
        }
        if (best == SIZE_MAX) break;
        out[n++] = best;
    }
    return n;
}

static int64_t side_self(const tpa_report *rep, bool gpu)
{
    int64_t s = 0;
    for (size_t i = 0; i < rep->n_ops; i++)
        if (gpu ? gpu_op(&rep->ops[i]) : host_op(&rep->ops[i])) s = tpa_sat_add(s, rep->ops[i].self_ns);
    return s;
}

static double pct(int64_t a, int64_t b) { return b > 0 ? 100.0 * (double)a / (double)b : 0.0; }

/* Which steps a trace's findings come from: "the 3 traced steps #2-#4" (a
 * run directory's page remakes some of them from the whole run's files). */
static void findings_from(char *buf, size_t cap, const tpa_steps_result *s)
{
    if (!s->n) snprintf(buf, cap, "the trace's whole extent (no steps)");
    else if (s->n == 1) snprintf(buf, cap, "the one traced step #%" PRId64, s->rows[0].num);
    else snprintf(buf, cap, "the %zu traced steps #%" PRId64 "-#%" PRId64, s->n, s->rows[0].num, s->rows[s->n - 1].num);
}

void tpa_render_diagnosis_text(FILE *f, const tpa_diagnosis *d, size_t top)
{
    char a[32], b[32], c[32];
    const tpa_steps_result *s = &d->steps;
    fprintf(f, "trainprof analyze: %s\n", d->path);
    if (s->n) {
        tpa_fmt_dur(a, sizeof a, d->mean_ns);
        tpa_fmt_dur(b, sizeof b, tpa_steps_quantile(s, -1, 0.5));
        tpa_fmt_dur(c, sizeof c, tpa_steps_quantile(s, -1, 0.9));
        fprintf(f, "%zu steps: mean %s, median %s, p90 %s", s->n, a, b, c);
        if (d->has_gpu) fprintf(f, "; GPU idle %.1f%% of the step", 100 * d->gpu_idle);
        fputc('\n', f);
        if (s->step_source == TPA_STEPS_ANNOTATION)
            fprintf(f, "(no ProfilerStep#N in this trace: steps are the repeated annotation \"%s\")\n", s->step_name);
        else if (s->step_source == TPA_STEPS_STEP_NUM)
            fprintf(f, "(steps are the \"%s\" spans numbered by args.step_num)\n", s->step_name);
    } else {
        tpa_fmt_dur(a, sizeof a, d->basis_ns);
        fprintf(f, "no steps found (no ProfilerStep#N, no args.step_num, no repeated annotation); shares are of the trace's extent, %s", a);
        if (d->has_gpu && s->has_whole) fprintf(f, "; GPU idle %.1f%% of it", 100 * d->gpu_idle);
        fputc('\n', f);
    }
    if (s->n || s->has_whole) {
        fprintf(f, "\nWhere the %s time goes (%s; parts exclusive, by priority):\n", s->n ? "step" : "trace's",
                s->n ? "mean per step" : "its whole extent");
        for (int p = 0; p < TPA_P_COUNT; p++) {
            tpa_fmt_dur(a, sizeof a, d->part_mean_ns[p]);
            fprintf(f, "  %-14s %12s %6.1f%%\n", tpa_part_names[p], a, pct(d->part_mean_ns[p], d->mean_ns));
        }
    }
    for (int g = 0; g < 2; g++) {
        size_t idx[16], n = pick_top(&d->rep, g == 1, top < 16 ? top : 16, idx);
        if (!n) continue;
        int64_t total = side_self(&d->rep, g == 1);
        fprintf(f, "\nTop %s by self time:\n", g ? "GPU kernels and copies" : "host operations");
        if (!g && d->rep.late_events)
            fprintf(f, "  (%" PRIu64 " spans too far out of order: self times approximate; a file, "
                    "unlike stdin, is read again to make them exact)\n", d->rep.late_events);
        for (size_t i = 0; i < n; i++) {
            const tpa_op *o = &d->rep.ops[idx[i]];
            tpa_fmt_dur(a, sizeof a, o->self_ns);
            char name[TPA_FIT_CAP(56)];
            int extra = tpa_fit_name(name, 56, o->name);
            fprintf(f, "  %-*s %12s %6.1f%% %8" PRIu64 " calls\n", 56 + extra, name, a, pct(o->self_ns, total), o->count);
        }
    }
    if (d->kernel_calls) {
        tpa_fmt_dur(a, sizeof a, d->kernel_avg_ns);
        fprintf(f, "  (%" PRIu64 " kernel launches, average %s)\n", d->kernel_calls, a);
    }
    if (d->gpu_withheld)
        fprintf(f, "\nNo GPU finding: %" PRIu64 " device event(s) with a negative duration were dropped, so GPU idle,"
                   " kernel and copy statistics are incomplete.\n", d->gpu_withheld);
    if (!d->n_findings) {
        fprintf(f, "\nFindings: none above the thresholds.\n");
        return;
    }
    char from[96];
    findings_from(from, sizeof from, s);
    fprintf(f, "\nFindings (most step time first; from %s):\n", from);
    for (size_t i = 0; i < d->n_findings; i++) {
        const tpa_finding *x = &d->findings[i];
        fprintf(f, "%zu. [%s] %s: %.1f%% of step time\n", i + 1, SEVERITY[x->severity], x->title, 100 * x->share);
        fprintf(f, "   evidence: %s\n   try: %s\n", x->evidence, x->suggestion);
    }
}

static void json_ops(FILE *f, const tpa_report *rep, bool gpu, size_t top)
{
    size_t idx[16], n = pick_top(rep, gpu, top < 16 ? top : 16, idx);
    int64_t total = side_self(rep, gpu);
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        const tpa_op *o = &rep->ops[idx[i]];
        fputs(i ? ", {\"name\": " : "{\"name\": ", f);
        tpa_json_str(f, o->name, strlen(o->name));
        fprintf(f, ", \"calls\": %" PRIu64 ", \"self_us\": ", o->count);
        tpa_print_us(f, o->self_ns);
        fprintf(f, ", \"self_pct\": %.3f}", pct(o->self_ns, total));
    }
    fputc(']', f);
}

void tpa_render_diagnosis_json(FILE *f, const tpa_diagnosis *d, size_t top)
{
    const tpa_steps_result *s = &d->steps;
    fputs("{\"file\": ", f);
    tpa_json_str(f, d->path, strlen(d->path));
    fprintf(f, ", \"steps\": %zu, \"step_source\": \"%s\", \"step_name\": ", s->n,
            tpa_step_source_names[s->step_source]);
    tpa_json_str(f, s->step_name, strlen(s->step_name));
    fprintf(f, ", \"has_gpu\": %s, \"truncated\": %s, \"late_events\": %" PRIu64 ", \"step_rule\": \"%s\", "
            "\"gpu_findings_withheld\": %" PRIu64 ", \"basis_us\": ",
            d->has_gpu ? "true" : "false", s->truncated ? "true" : "false", d->rep.late_events,
            s->device_rule ? "device" : "host", d->gpu_withheld);
    tpa_print_us(f, d->basis_ns);
    fputs(", \"step_mean_us\": ", f);
    tpa_print_us(f, d->mean_ns);
    fputs(", \"step_median_us\": ", f);
    tpa_print_us(f, tpa_steps_quantile(s, -1, 0.5));
    fputs(", \"step_p90_us\": ", f);
    tpa_print_us(f, tpa_steps_quantile(s, -1, 0.9));
    if (d->has_gpu && (s->n || s->has_whole)) fprintf(f, ", \"gpu_idle_pct\": %.3f", 100 * d->gpu_idle);
    else fputs(", \"gpu_idle_pct\": null", f);
    fputs(",\n \"breakdown\": {", f);
    for (int p = 0; p < TPA_P_COUNT; p++) {
        fprintf(f, "%s\"%s\": {\"mean_us\": ", p ? ", " : "", tpa_part_names[p]);
        tpa_print_us(f, d->part_mean_ns[p]);
        fprintf(f, ", \"pct\": %.3f}", pct(d->part_mean_ns[p], d->mean_ns));
    }
    fprintf(f, "},\n \"kernel_calls\": %" PRIu64 ", \"kernel_avg_us\": ", d->kernel_calls);
    tpa_print_us(f, d->kernel_avg_ns);
    fputs(",\n \"top_host_ops\": ", f);
    json_ops(f, &d->rep, false, top);
    fputs(",\n \"top_gpu_ops\": ", f);
    json_ops(f, &d->rep, true, top);
    char from[96];
    findings_from(from, sizeof from, s);
    fputs(",\n \"findings_from\": ", f);  /* the steps every finding below comes from */
    tpa_json_str(f, from, strlen(from));
    if (s->n) fprintf(f, ", \"findings_steps\": [%" PRId64 ", %" PRId64 ", %zu]", s->rows[0].num, s->rows[s->n - 1].num, s->n);
    else fputs(", \"findings_steps\": null", f);
    fputs(",\n \"findings\": [", f);
    for (size_t i = 0; i < d->n_findings; i++) {
        const tpa_finding *x = &d->findings[i];
        fprintf(f, "%s\n  {\"id\": \"%s\", \"severity\": \"%s\", \"share_pct\": %.3f, \"title\": ", i ? "," : "",
                x->id, SEVERITY[x->severity], 100 * x->share);
        tpa_json_str(f, x->title, strlen(x->title));
        fputs(", \"evidence\": ", f);
        tpa_json_str(f, x->evidence, strlen(x->evidence));
        fputs(", \"suggestion\": ", f);
        tpa_json_str(f, x->suggestion, strlen(x->suggestion));
        fputc('}', f);
    }
    fputs("]}\n", f);
}
