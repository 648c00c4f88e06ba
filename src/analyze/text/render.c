/* render.c - readable tables and JSON for report and steps. */
#include "analyze/text/render.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Exact microseconds from ns: "1234.567". */
void tpa_print_us(FILE *f, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(f, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
}

static int64_t table_self_sum(const tpa_report *rep, size_t from, size_t to)
{
    int64_t s = 0;
    for (size_t i = from; i < to; i++) s = tpa_sat_add(s, rep->ops[i].self_ns);
    return s;
}

static size_t table_end(const tpa_report *rep, size_t from)
{
    size_t to = from;
    while (to < rep->n_ops && rep->ops[to].table == rep->ops[from].table) to++;
    return to;
}

static bool utf8_cont(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

/* Bytes of the first k characters of s (n bytes). */
static size_t head_bytes(const char *s, size_t n, size_t k)
{
    size_t i = 0;
    while (i < n && k) { i++; while (i < n && utf8_cont(s[i])) i++; k--; }
    return i;
}

int tpa_fit_name(char *dst, size_t w, const char *name)
{
    size_t n = strlen(name), cols = 0;
    for (size_t i = 0; i < n; i++) cols += !utf8_cont(name[i]);
    if (cols <= w && n < TPA_FIT_CAP(w)) { memcpy(dst, name, n + 1); return (int)(n - cols); }
    size_t keep = w > 1 ? w - 1 : 0, tail = keep / 3, head = keep - tail;
    size_t hb = head_bytes(name, n, head), tb = n - head_bytes(name, n, cols - tail);
    memcpy(dst, name, hb);
    memcpy(dst + hb, "\xE2\x80\xA6", 3);  /* … */
    memcpy(dst + hb + 3, name + n - tb, tb);
    dst[hb + 3 + tb] = 0;
    return (int)(hb + 3 + tb - w);
}

static void text_table(FILE *f, const tpa_report *rep, size_t from, size_t to, size_t top)
{
    const int W = 48;
    int64_t self_sum = table_self_sum(rep, from, to);
    uint64_t calls = 0;
    for (size_t i = from; i < to; i++) calls += rep->ops[i].count;
    int table = rep->ops[from].table;
    char d[6][32], name[TPA_FIT_CAP(48)];
    tpa_fmt_dur(d[0], sizeof d[0], self_sum);
    if (table < 0) fprintf(f, "Host operations: %zu names, %" PRIu64 " calls, self time %s\n", to - from, calls, d[0]);
    else if (table == TPA_TABLE_ASYNC)
        fprintf(f, "Async spans (b/e pairs): %zu names, %" PRIu64 " pairs, total %s\n", to - from, calls, d[0]);
    else fprintf(f, "GPU %d kernels and copies: %zu names, %" PRIu64 " calls, busy %s\n", table, to - from, calls, d[0]);
    fprintf(f, "%-*s %9s %12s %7s %12s %12s %12s %12s\n", W, "Name", "Calls", "Self total", "Self %",
            "Total", "Avg", "Min", "Max");
    for (int i = 0; i < W + 84; i++) fputc('-', f);
    fputc('\n', f);
    size_t shown = 0;
    for (size_t i = from; i < to && (!top || shown < top); i++, shown++) {
        const tpa_op *o = &rep->ops[i];
        int extra = tpa_fit_name(name, (size_t)W, o->name);
        tpa_fmt_dur(d[0], sizeof d[0], o->self_ns);
        tpa_fmt_dur(d[1], sizeof d[1], o->total_ns);
        tpa_fmt_dur(d[2], sizeof d[2], o->count ? o->total_ns / (int64_t)o->count : 0);
        tpa_fmt_dur(d[3], sizeof d[3], o->count ? o->min_ns : 0);
        tpa_fmt_dur(d[4], sizeof d[4], o->max_ns);
        fprintf(f, "%-*s %9" PRIu64 " %12s %6.2f%% %12s %12s %12s %12s\n", W + extra, name, o->count, d[0],
                self_sum ? 100.0 * (double)o->self_ns / (double)self_sum : 0.0, d[1], d[2], d[3], d[4]);
    }
    if (shown < to - from) fprintf(f, "... %zu more (use --top 0 for all)\n", to - from - shown);
    fputc('\n', f);
}

void tpa_render_report_text(FILE *f, const tpa_report *rep, size_t top)
{
    if (!rep->n_ops) fprintf(f, "No spans matched.\n\n");
    for (size_t from = 0; from < rep->n_ops;) {
        size_t to = table_end(rep, from);
        text_table(f, rep, from, to, top);
        from = to;
    }
    fprintf(f, "%" PRIu64 " events in %d file(s), %.1f MB", rep->events, rep->n_files, (double)rep->bytes / 1e6);
    if (rep->skipped_unknown) fprintf(f, "; %" PRIu64 " events of unknown kind skipped", rep->skipped_unknown);
    if (rep->late_events) fprintf(f, "; %" PRIu64 " spans too far out of order (self time approximate)", rep->late_events);
    if (rep->unmatched_end) fprintf(f, "; %" PRIu64 " unmatched E events", rep->unmatched_end);
    if (rep->async_unmatched) fprintf(f, "; %" PRIu64 " unpaired async b/e events", rep->async_unmatched);
    if (rep->truncated_files) fprintf(f, "; %d truncated file(s)", rep->truncated_files);
    fputc('\n', f);
}

static void json_op(FILE *f, const tpa_op *o, int64_t self_sum)
{
    fputs("{\"name\": ", f);
    tpa_json_str(f, o->name, strlen(o->name));
    fprintf(f, ", \"calls\": %" PRIu64 ", \"self_us\": ", o->count);
    tpa_print_us(f, o->self_ns);
    fprintf(f, ", \"self_pct\": %.4f, \"total_us\": ", self_sum ? 100.0 * (double)o->self_ns / (double)self_sum : 0.0);
    tpa_print_us(f, o->total_ns);
    fputs(", \"avg_us\": ", f);
    tpa_print_us(f, o->count ? o->total_ns / (int64_t)o->count : 0);
    fputs(", \"min_us\": ", f);
    tpa_print_us(f, o->count ? o->min_ns : 0);
    fputs(", \"max_us\": ", f);
    tpa_print_us(f, o->max_ns);
    fputc('}', f);
}

void tpa_render_report_json(FILE *f, const tpa_report *rep, size_t top)
{
    fprintf(f, "{\"files\": %d, \"bytes\": %" PRIu64 ", \"events\": %" PRIu64 ", \"spans\": %" PRIu64
            ", \"skipped_unknown\": %" PRIu64 ", \"late_events\": %" PRIu64 ", \"truncated_files\": %d"
            ", \"async_pairs\": %" PRIu64 ", \"async_unmatched\": %" PRIu64 ",\n \"tables\": [",
            rep->n_files, rep->bytes, rep->events, rep->spans, rep->skipped_unknown, rep->late_events,
            rep->truncated_files, rep->async_pairs, rep->async_unmatched);
    bool first_table = true;
    for (size_t from = 0; from < rep->n_ops;) {
        size_t to = table_end(rep, from);
        int table = rep->ops[from].table;
        int64_t self_sum = table_self_sum(rep, from, to);
        fprintf(f, "%s\n  {\"table\": \"%s\", \"device\": ", first_table ? "" : ",",
                table < 0 ? "host" : table == TPA_TABLE_ASYNC ? "async" : "gpu");
        if (table < 0 || table == TPA_TABLE_ASYNC) fputs("null", f); else fprintf(f, "%d", table);
        fputs(", \"self_total_us\": ", f);
        tpa_print_us(f, self_sum);
        fputs(", \"ops\": [", f);
        size_t shown = 0;
        for (size_t i = from; i < to && (!top || shown < top); i++, shown++) {
            fputs(shown ? ",\n   " : "\n   ", f);
            json_op(f, &rep->ops[i], self_sum);
        }
        fputs("]}", f);
        first_table = false;
        from = to;
    }
    fputs("]}\n", f);
}

/* ---- steps ------------------------------------------------------------------------------- */

static const char *const STAT_NAMES[3] = { "mean", "median", "p90" };

/* Summary row s (mean, median, p90): each column's own statistic, GPU
 * util included (not derived from the other columns' statistics). */
static void summary_row(const tpa_steps_result *res, int s, int64_t *v, int64_t *dur, double *util)
{
    double q = s == 1 ? 0.5 : 0.9;
    for (int p = -1; p < TPA_P_COUNT; p++) {
        int64_t x = s == 0 ? tpa_steps_mean(res, p) : tpa_steps_quantile(res, p, q);
        if (p < 0) *dur = x; else v[p] = x;
    }
    *util = tpa_steps_util_stat(res, s);
}

static double row_util(const tpa_step_row *r, bool gpu)
{
    return gpu && r->dur_ns > 0 ? 100.0 * (double)r->gpu_busy_ns / (double)r->dur_ns : -1;
}

static void ms(char *b, size_t n, int64_t ns) { snprintf(b, n, "%.3f", (double)ns / 1e6); }

static void step_line(FILE *f, const char *label, const int64_t *vals, int64_t dur, double util)
{
    char b[32];
    fprintf(f, "%-10s", label);
    ms(b, sizeof b, dur);
    fprintf(f, " %11s", b);
    for (int p = 0; p < TPA_P_COUNT; p++) {
        ms(b, sizeof b, vals[p]);
        fprintf(f, " %10s", b);
    }
    if (util >= 0) fprintf(f, " %7.1f%%\n", util);
    else fprintf(f, " %8s\n", "-");
}

void tpa_render_steps_text(FILE *f, const tpa_steps_result *res)
{
    static const char *const short_names[TPA_P_COUNT] = {
        "kernel", "memcpy", "memset", "comm", "runtime", "dataload", "cpu", "other" };
    if (!res->n) {
        fprintf(f, "No steps in this trace: no ProfilerStep#N spans, no args.step_num, no repeated annotation.\n");
        if (!res->has_whole) return;
        fprintf(f, "The whole trace instead (ms; parts exclusive, by priority left to right):\n");
    }
    if (res->step_source == TPA_STEPS_ANNOTATION)
        fprintf(f, "No ProfilerStep#N in this trace: steps are the repeated annotation \"%s\", numbered from 0.\n", res->step_name);
    else if (res->step_source == TPA_STEPS_STEP_NUM)
        fprintf(f, "Steps are the \"%s\" spans numbered by args.step_num.\n", res->step_name);
    if (res->device_rule)
        fprintf(f, "GPU steps (TensorBoard plugin's rule): each step runs to the end of the device work it launched,"
                   " the next starts after it.\n");
    if (res->tail_dropped)
        fprintf(f, "(the last %zu step%s left out, as the plugin does: the profiler stopped before their kernels were recorded)\n",
                res->tail_dropped, res->tail_dropped == 1 ? "" : "s");
    fprintf(f, "Step time breakdown (ms); parts are exclusive, by priority left to right, and sum to the step\n");
    fprintf(f, "%-10s %11s", "Step", "Duration");
    for (int p = 0; p < TPA_P_COUNT; p++) fprintf(f, " %10s", short_names[p]);
    fprintf(f, " %8s\n", "GPU util");
    for (int i = 0; i < 22 + 11 * TPA_P_COUNT + 8; i++) fputc('-', f);
    fputc('\n', f);
    char label[32];
    if (!res->n) {
        step_line(f, "whole", res->whole.part_ns, res->whole.dur_ns, row_util(&res->whole, res->has_gpu));
        return;
    }
    for (size_t i = 0; i < res->n; i++) {
        const tpa_step_row *r = &res->rows[i];
        snprintf(label, sizeof label, "#%" PRId64, r->num);
        step_line(f, label, r->part_ns, r->dur_ns, row_util(r, res->has_gpu));
    }
    for (int i = 0; i < 22 + 11 * TPA_P_COUNT + 8; i++) fputc('-', f);
    fputc('\n', f);
    for (int s = 0; s < 3; s++) {
        int64_t v[TPA_P_COUNT], dur = 0;
        double util;
        summary_row(res, s, v, &dur, &util);
        step_line(f, STAT_NAMES[s], v, dur, util);
    }
    if (res->truncated) fprintf(f, "(trace truncated: steps after the cut are missing)\n");
}

static void json_parts(FILE *f, const int64_t *v, int64_t dur, double util)
{
    fputs("\"dur_us\": ", f);
    tpa_print_us(f, dur);
    for (int p = 0; p < TPA_P_COUNT; p++) {
        fprintf(f, ", \"%s_us\": ", tpa_part_names[p]);
        tpa_print_us(f, v[p]);
    }
    if (util >= 0) fprintf(f, ", \"gpu_util_pct\": %.3f", util);
    else fputs(", \"gpu_util_pct\": null", f);
}

void tpa_render_steps_json(FILE *f, const tpa_steps_result *res)
{
    fprintf(f, "{\"has_gpu\": %s, \"truncated\": %s, \"step_source\": \"%s\", \"step_name\": ",
            res->has_gpu ? "true" : "false", res->truncated ? "true" : "false",
            tpa_step_source_names[res->step_source]);
    tpa_json_str(f, res->step_name, strlen(res->step_name));
    fprintf(f, ", \"step_rule\": \"%s\", \"steps_left_out\": %zu", res->device_rule ? "device" : "host", res->tail_dropped);
    fputs(", \"steps\": [", f);
    for (size_t i = 0; i < res->n; i++) {
        const tpa_step_row *r = &res->rows[i];
        fprintf(f, "%s\n  {\"step\": %" PRId64 ", \"start_us\": ", i ? "," : "", r->num);
        tpa_print_us(f, r->start_ns);
        fputs(", ", f);
        json_parts(f, r->part_ns, r->dur_ns, row_util(r, res->has_gpu));
        fputc('}', f);
    }
    fputs("],\n \"whole\": ", f);  /* the trace's span, when it has no steps */
    if (res->has_whole) {
        fputs("{\"start_us\": ", f);
        tpa_print_us(f, res->whole.start_ns);
        fputs(", ", f);
        json_parts(f, res->whole.part_ns, res->whole.dur_ns, row_util(&res->whole, res->has_gpu));
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputs(",\n \"summary\": {", f);
    for (int s = 0; s < 3; s++) {
        int64_t v[TPA_P_COUNT], dur = 0;
        double util;
        summary_row(res, s, v, &dur, &util);
        fprintf(f, "%s\"%s\": {", s ? ", " : "", STAT_NAMES[s]);
        json_parts(f, v, dur, util);
        fputc('}', f);
    }
    fprintf(f, "}, \"count\": %zu}\n", res->n);
}
