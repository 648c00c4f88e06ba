/* render_diff.c - `trainprof diff` as text and JSON: per-step and
 * per-operation changes (stats/diff.c) and the findings that moved
 * (stats/diff_findings.c). */
#include "analyze/text/render.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static double pct(int64_t a, int64_t b) { return a ? 100.0 * (double)(b - a) / (double)a : 0.0; }

static void text_steps(FILE *f, const tpa_steps_result *sa, const tpa_steps_result *sb)
{
    char x[32], y[32], z[32];
    fprintf(f, "Steps: %zu vs %zu\n", sa->n, sb->n);
    if (!sa->n || !sb->n) { fputc('\n', f); return; }
    fprintf(f, "%-15s %14s %14s %14s\n", "", "A", "B", "change");
    static const char *const names[3] = { "mean", "median", "p90" };
    for (int s = 0; s < 3; s++) {
        int64_t va = s ? tpa_steps_quantile(sa, -1, s == 1 ? 0.5 : 0.9) : tpa_steps_mean(sa, -1);
        int64_t vb = s ? tpa_steps_quantile(sb, -1, s == 1 ? 0.5 : 0.9) : tpa_steps_mean(sb, -1);
        tpa_fmt_dur(x, sizeof x, va); tpa_fmt_dur(y, sizeof y, vb); tpa_fmt_dur(z, sizeof z, vb - va);
        fprintf(f, "%-15s %14s %14s %14s %+8.1f%%\n", names[s], x, y, z, pct(va, vb));
    }
    for (int p = 0; p < TPA_P_COUNT; p++) {
        int64_t va = tpa_steps_mean(sa, p), vb = tpa_steps_mean(sb, p);
        if (!va && !vb) continue;
        tpa_fmt_dur(x, sizeof x, va); tpa_fmt_dur(y, sizeof y, vb); tpa_fmt_dur(z, sizeof z, vb - va);
        fprintf(f, "  %-13s %14s %14s %14s %+8.1f%%\n", tpa_part_names[p], x, y, z, pct(va, vb));
    }
    fprintf(f, "\n%-15s %14s %14s %9s\n", "step (A / B)", "A", "B", "change");
    size_t n = sa->n < sb->n ? sa->n : sb->n;
    for (size_t i = 0; i < n; i++) {
        char label[48];
        snprintf(label, sizeof label, "#%" PRId64 " / #%" PRId64, sa->rows[i].num, sb->rows[i].num);
        tpa_fmt_dur(x, sizeof x, sa->rows[i].dur_ns); tpa_fmt_dur(y, sizeof y, sb->rows[i].dur_ns);
        fprintf(f, "%-15s %14s %14s %+8.1f%%\n", label, x, y, pct(sa->rows[i].dur_ns, sb->rows[i].dur_ns));
    }
    fputc('\n', f);
}

void tpa_render_diff_text(FILE *f, const tpa_diff *d, const tpa_steps_result *sa,
                          const tpa_steps_result *sb, size_t top)
{
    text_steps(f, sa, sb);
    const int W = 44;
    char x[32], y[32], z[32], ax[32], ay[32], name[TPA_FIT_CAP(44)];
    fprintf(f, "Operations by absolute change of total time (A -> B)\n");
    fprintf(f, "%-*s %-4s %15s %12s %12s %12s %8s %12s %12s\n", W, "Name", "Kind", "Calls A->B",
            "Total A", "Total B", "Change", "", "Avg A", "Avg B");
    size_t shown = 0;
    for (size_t i = 0; i < d->n && (!top || shown < top); i++, shown++) {
        const tpa_diff_row *r = &d->rows[i];
        int extra = tpa_fit_name(name, (size_t)W, r->name);
        char calls[40];
        snprintf(calls, sizeof calls, "%" PRIu64 "->%" PRIu64, r->count_a, r->count_b);
        tpa_fmt_dur(x, sizeof x, r->total_a); tpa_fmt_dur(y, sizeof y, r->total_b);
        tpa_fmt_dur(z, sizeof z, r->total_b - r->total_a);
        tpa_fmt_dur(ax, sizeof ax, r->count_a ? r->total_a / (int64_t)r->count_a : 0);
        tpa_fmt_dur(ay, sizeof ay, r->count_b ? r->total_b / (int64_t)r->count_b : 0);
        char pc[16];
        if (r->total_a) snprintf(pc, sizeof pc, "%+.1f%%", pct(r->total_a, r->total_b));
        else snprintf(pc, sizeof pc, "new");
        fprintf(f, "%-*s %-4s %15s %12s %12s %12s %8s %12s %12s\n", W + extra, name, r->gpu ? "gpu" : "host", calls,
                x, y, z, r->count_b ? pc : "gone", ax, ay);
    }
    if (shown < d->n) fprintf(f, "... %zu more (use --top 0 for all)\n", d->n - shown);
    fputc('\n', f);
    tpa_render_finding_moves_text(f, d);
    tpa_fmt_dur(x, sizeof x, d->metric_a); tpa_fmt_dur(y, sizeof y, d->metric_b);
    fprintf(f, "\n%s: %s -> %s (%+.2f%%)\n", d->metric, x, y, d->change_pct);
}

void tpa_render_diff_json(FILE *f, const tpa_diff *d, const tpa_steps_result *sa,
                          const tpa_steps_result *sb, size_t top)
{
    fputs("{\"metric\": ", f);
    tpa_json_str(f, d->metric, strlen(d->metric));
    fputs(", \"metric_a_us\": ", f); tpa_print_us(f, d->metric_a);
    fputs(", \"metric_b_us\": ", f); tpa_print_us(f, d->metric_b);
    fprintf(f, ", \"change_pct\": %.4f,\n \"steps\": {\"count_a\": %zu, \"count_b\": %zu, \"pairs\": [", d->change_pct, sa->n, sb->n);
    size_t n = sa->n < sb->n ? sa->n : sb->n;
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s{\"step_a\": %" PRId64 ", \"step_b\": %" PRId64 ", \"dur_a_us\": ", i ? ", " : "",
                sa->rows[i].num, sb->rows[i].num);
        tpa_print_us(f, sa->rows[i].dur_ns);
        fputs(", \"dur_b_us\": ", f);
        tpa_print_us(f, sb->rows[i].dur_ns);
        fputc('}', f);
    }
    fputs("]},\n \"ops\": [", f);
    size_t shown = 0;
    for (size_t i = 0; i < d->n && (!top || shown < top); i++, shown++) {
        const tpa_diff_row *r = &d->rows[i];
        fputs(shown ? ",\n  " : "\n  ", f);
        fputs("{\"name\": ", f);
        tpa_json_str(f, r->name, strlen(r->name));
        fprintf(f, ", \"kind\": \"%s\", \"calls_a\": %" PRIu64 ", \"calls_b\": %" PRIu64 ", \"total_a_us\": ",
                r->gpu ? "gpu" : "host", r->count_a, r->count_b);
        tpa_print_us(f, r->total_a);
        fputs(", \"total_b_us\": ", f);
        tpa_print_us(f, r->total_b);
        fputs(", \"change_us\": ", f);
        tpa_print_us(f, r->total_b - r->total_a);
        fputc('}', f);
    }
    fputs("],\n \"findings_moved\": ", f);
    tpa_render_finding_moves_json(f, d);
    fputs("}\n", f);
}

void tpa_render_finding_moves_text(FILE *f, const tpa_diff *d)
{
    if (!d->n_moves) { fprintf(f, "Findings: none above the thresholds in A or B.\n"); return; }
    fprintf(f, "Findings that moved (share of step time, A -> B; - = below its threshold):\n");
    for (size_t i = 0; i < d->n_moves; i++) {
        const tpa_finding_move *m = &d->moves[i];
        char sa[16], sb[16];
        if (m->in_a) snprintf(sa, sizeof sa, "%.1f%%", 100 * m->share_a); else snprintf(sa, sizeof sa, "-");
        if (m->in_b) snprintf(sb, sizeof sb, "%.1f%%", 100 * m->share_b); else snprintf(sb, sizeof sb, "-");
        fprintf(f, "  %-16s %7s -> %-7s %+6.1f pts  %-6s %s\n", m->id, sa, sb,
                100 * (m->share_b - m->share_a), tpa_finding_move_verdict(m), m->title);
    }
}

void tpa_render_finding_moves_json(FILE *f, const tpa_diff *d)
{
    fputs("[", f);
    for (size_t i = 0; i < d->n_moves; i++) {
        const tpa_finding_move *m = &d->moves[i];
        fprintf(f, "%s{\"id\": \"%s\", \"in_a\": %s, \"in_b\": %s, \"share_a_pct\": %.3f, \"share_b_pct\": %.3f, "
                "\"change_pts\": %.3f, \"verdict\": \"%s\", \"title\": ", i ? ", " : "", m->id,
                m->in_a ? "true" : "false", m->in_b ? "true" : "false", 100 * m->share_a, 100 * m->share_b,
                100 * (m->share_b - m->share_a), tpa_finding_move_verdict(m));
        tpa_json_str(f, m->title, strlen(m->title));
        fputc('}', f);
    }
    fputc(']', f);
}
