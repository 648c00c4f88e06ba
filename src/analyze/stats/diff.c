/* diff.c - per-operation and per-step changes between two traces.
 * GPU ops are matched by name across devices (device numbers differ between
 * runs); host ops by name. */
#include "analyze/text/render.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int by_kind_name(const void *a, const void *b)
{
    const tpa_op *x = a, *y = b;
    int gx = x->table < 0 ? 0 : x->table == TPA_TABLE_ASYNC ? 2 : 1;
    int gy = y->table < 0 ? 0 : y->table == TPA_TABLE_ASYNC ? 2 : 1;
    if (gx != gy) return gx > gy ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* Sorts ops by (host/gpu, name); equal neighbours are the same diff key. */
static void prepare(tpa_report *r)
{
    if (r->n_ops) qsort(r->ops, r->n_ops, sizeof *r->ops, by_kind_name);
}

static size_t fold(const tpa_report *r, size_t i, uint64_t *count, int64_t *total)
{
    size_t j = i;
    *count = 0;
    *total = 0;
    while (j < r->n_ops && by_kind_name(&r->ops[i], &r->ops[j]) == 0) {
        *count += r->ops[j].count;
        *total = tpa_sat_add(*total, r->ops[j].total_ns);
        j++;
    }
    return j;
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

static int by_change(const void *a, const void *b)
{
    const tpa_diff_row *x = a, *y = b;
    int64_t dx = abs64(x->total_b - x->total_a), dy = abs64(y->total_b - y->total_a);
    if (dx != dy) return dx > dy ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void push(tpa_diff *d, size_t *cap, tpa_diff_row row)
{
    if (d->n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        d->rows = realloc(d->rows, *cap * sizeof *d->rows);
        if (!d->rows) abort();
    }
    d->rows[d->n++] = row;
}

static int64_t host_self_total(const tpa_report *r)
{
    int64_t s = 0;
    for (size_t i = 0; i < r->n_ops; i++)
        if (r->ops[i].table < 0) s = tpa_sat_add(s, r->ops[i].self_ns);
    return s;
}

void tpa_diff_compute(tpa_diff *d, tpa_report *a, tpa_report *b,
                      const tpa_steps_result *sa, const tpa_steps_result *sb)
{
    memset(d, 0, sizeof *d);
    prepare(a);
    prepare(b);
    size_t i = 0, j = 0, cap = 0;
    while (i < a->n_ops || j < b->n_ops) {
        int c = i >= a->n_ops ? 1 : j >= b->n_ops ? -1 : by_kind_name(&a->ops[i], &b->ops[j]);
        tpa_diff_row row = {0};
        const tpa_op *ref = c <= 0 ? &a->ops[i] : &b->ops[j];
        row.name = ref->name;
        row.gpu = ref->table >= 0 && ref->table != TPA_TABLE_ASYNC;
        if (c <= 0) i = fold(a, i, &row.count_a, &row.total_a);
        if (c >= 0) j = fold(b, j, &row.count_b, &row.total_b);
        if (ref->table != TPA_TABLE_ASYNC) push(d, &cap, row);  /* async pairs: not ops */
    }
    if (d->n) qsort(d->rows, d->n, sizeof *d->rows, by_change);
    if (sa->n && sb->n) {
        d->metric = "mean step time";
        d->metric_a = tpa_steps_mean(sa, -1);
        d->metric_b = tpa_steps_mean(sb, -1);
    } else {
        d->metric = "host self time";
        d->metric_a = host_self_total(a);
        d->metric_b = host_self_total(b);
    }
    d->change_pct = d->metric_a ? 100.0 * (double)(d->metric_b - d->metric_a) / (double)d->metric_a : 0.0;
}

void tpa_diff_free(tpa_diff *d)
{
    free(d->rows);
    memset(d, 0, sizeof *d);
}

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
