/* render_ranks.c - `trainprof ranks` and `combine` as text and JSON: the
 * per-rank table, the straggler, collectives and clock findings, and the
 * warnings, from what the reduce computed (ranks/ranks_reduce.c). */
#include "analyze/text/render.h"
#include "analyze/ranks/ranks.h"

#include <stdlib.h>
#include <string.h>

static const char *dur(char *buf, int64_t ns)
{
    tpa_fmt_dur(buf, 24, ns);
    return buf;
}

static const char *comm_word(const tpa_ranks *r)
{
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].comm_name[0]) return r->rows[i].comm_name;
    return "collectives";
}

static void finding_text(tpa_ranks *r, FILE *f)
{
    char a[24], b[24], c[24];
    int n = 0;
    if (tpa_ranks_has_straggler(r)) {
        fprintf(f, "%d. rank %lld is the slowest in %.0f%% of steps (%llu of %llu), by %s median (compute "
                   "outside collectives, vs the mean of the others); the other ranks wait %s per step in %s "
                   "(%.0f%% of their step time). Look at what rank %lld does differently (host, data, input sizes).\n",
                ++n, (long long)r->top_rank, 100.0 * (double)r->top_count / (double)r->contested_steps,
                (unsigned long long)r->top_count, (unsigned long long)r->contested_steps,
                dur(a, r->top_lead_p50), dur(b, r->others_wait_ns), comm_word(r),
                r->others_step_ns ? 100.0 * (double)r->others_wait_ns / (double)r->others_step_ns : 0.0,
                (long long)r->top_rank);
    } else if (r->n_rows >= 2 && r->contested_steps) {
        fprintf(f, "%d. no persistent straggler: the slowest rank changes from step to step (rank %lld most "
                   "often, %.0f%% of steps, by %s median).\n",
                ++n, (long long)r->top_rank, 100.0 * (double)r->top_count / (double)r->contested_steps,
                dur(a, r->top_lead_p50));
    }
    int64_t comm = 0, step = 0, overlap = 0, total_comm = 0;
    bool device = false;
    for (size_t i = 0; i < r->n_rows; i++) {
        comm += r->rows[i].comm_mean_ns;
        step += r->rows[i].mean_ns;
        overlap += r->rows[i].overlap_ns;
        total_comm += r->rows[i].comm_total_ns;
        device |= r->rows[i].device_comm;
    }
    if (step > 0 && comm > 0) {
        fprintf(f, "%d. collectives take %.1f%% of step time on average (%s per step per rank, %s of it the "
                   "transfer itself: the fastest rank's time)", ++n, 100.0 * (double)comm / (double)step,
                dur(a, comm / (int64_t)r->n_rows), dur(b, r->min_comm_mean));
        double share = total_comm ? 100.0 * (double)overlap / (double)total_comm : 0.0;
        if (device)
            fprintf(f, "; %.0f%% of collective time overlaps GPU compute", share);
        else if (overlap > 0)
            fprintf(f, "; %.0f%% of collective time runs beside the training thread's work (asynchronous "
                       "collectives, e.g. DDP buckets during backward)", share);
        else
            fprintf(f, "; the collectives block the training thread: no overlap with compute");
        fputs(".\n", f);
    }
    if (r->unsynced)
        fprintf(f, "%d. %zu rank(s) never ran tp_session_sync: their timelines rest on their own host's wall clock.\n",
                ++n, r->unsynced);
    else if (r->n_rows)
        fprintf(f, "%d. clocks aligned to rank 0 (error bound at most %s); step starts differ by %s median across ranks.\n",
                ++n, dur(a, r->max_clock_error), dur(c, r->spread_p50));
    if (!n) fputs("none\n", f);
}

static void row_text(FILE *f, const tpa_rank_row *w)
{
    char m[24], p50[24], p90[24], mx[24], cp[24], cm[24], wt[24];
    fprintf(f, "%6lld  %-12.12s %6zu %11s %11s %11s %11s %11s %11s %11s %12lld %6llu%s\n", (long long)w->rank,
            w->host, w->n_steps, dur(m, w->mean_ns), dur(p50, w->p50_ns), dur(p90, w->p90_ns), dur(mx, w->max_ns),
            dur(cp, w->compute_mean_ns), dur(cm, w->comm_mean_ns), dur(wt, w->wait_mean_ns),
            (long long)w->bytes_per_step, (unsigned long long)w->straggler_steps, w->truncated ? "  (cut short)" : "");
}

static int cmp_compute_desc(const void *a, const void *b)
{
    const tpa_rank_row *x = *(tpa_rank_row *const *)a, *y = *(tpa_rank_row *const *)b;
    return x->compute_mean_ns > y->compute_mean_ns ? -1 : x->compute_mean_ns < y->compute_mean_ns;
}

static void warnings_text(const tpa_ranks *r, FILE *f)
{
    if (r->n_warnings) fputs("\nwarnings:\n", f);
    for (size_t i = 0; i < r->n_warnings; i++) fprintf(f, "  %s\n", r->warnings[i]);
    if (r->lost_warnings) fprintf(f, "  ... and %zu more\n", r->lost_warnings);
}

void tpa_ranks_render_text(tpa_ranks *r, FILE *f, bool steps_only)
{
    tpa_ranks_finalize(r);
    if (!r->n_rows && r->hang && r->hang->hung) {  /* hung before any trace was written */
        fputs("job: no rank has written a trace yet", f);
        tpa_render_job_hang_text(f, r->hang);
        warnings_text(r, f);
        return;
    }
    fprintf(f, "job %s: %zu rank(s) (world size %lld), %zu step number(s), %s traces\n\n",
            r->job_id[0] ? r->job_id : "(unnamed)", r->n_rows, (long long)r->world_size, r->n_steps,
            r->format[0] ? r->format : "no");
    fprintf(f, "%6s  %-12s %6s %11s %11s %11s %11s %11s %11s %11s %12s %6s\n", "rank", "host", "steps",
            "mean", "p50", "p90", "max", "compute", "in_coll", "wait", "bytes/step", "slow");
    if (r->n_rows <= 32) {
        for (size_t i = 0; i < r->n_rows; i++) row_text(f, &r->rows[i]);
    } else { /* the 16 ranks with the most compute per step */
        tpa_rank_row **by = malloc(r->n_rows * sizeof *by);
        if (!by) abort();
        for (size_t i = 0; i < r->n_rows; i++) by[i] = &r->rows[i];
        qsort(by, r->n_rows, sizeof *by, cmp_compute_desc);
        for (size_t i = 0; i < 16; i++) row_text(f, by[i]);
        fprintf(f, "   ... %zu more ranks (--json lists all)\n", r->n_rows - 16);
        free(by);
    }
    fputs("\n(compute = step time outside collectives; in_coll = time in collectives per step; wait = in_coll\n"
          " beyond the fastest rank's; slow = steps where the rank was the straggler)\n", f);
    if (!steps_only) {
        fputs("\nfindings:\n", f);
        finding_text(r, f);
    }
    if (r->hang) tpa_render_job_hang_text(f, r->hang);
    warnings_text(r, f);
}

static void json_str(FILE *f, const char *s) { tpa_json_str(f, s, strlen(s)); }

void tpa_ranks_render_json(tpa_ranks *r, FILE *f)
{
    tpa_ranks_finalize(r);
    fputs("{\"job_id\":", f);
    json_str(f, r->job_id);
    fprintf(f, ",\"ranks\":%zu,\"world_size\":%lld,\"steps\":%zu,\"format\":", r->n_rows, (long long)r->world_size,
            r->n_steps);
    json_str(f, r->format);
    fprintf(f, ",\n\"straggler\":{\"rank\":%lld,\"steps\":%llu,\"contested_steps\":%llu,\"share\":%.4f,"
               "\"lead_p50_ns\":%lld,\"persistent\":%s,\"others_wait_ns\":%lld,\"others_step_ns\":%lld},\n",
            (long long)r->top_rank, (unsigned long long)r->top_count, (unsigned long long)r->contested_steps,
            r->contested_steps ? (double)r->top_count / (double)r->contested_steps : 0.0, (long long)r->top_lead_p50,
            tpa_ranks_has_straggler(r) ? "true" : "false", (long long)r->others_wait_ns, (long long)r->others_step_ns);
    fprintf(f, "\"clock\":{\"unsynced_ranks\":%zu,\"max_error_ns\":%lld,\"start_spread_p50_ns\":%lld},\n",
            r->unsynced, (long long)r->max_clock_error, (long long)r->spread_p50);
    fputs("\"per_rank\":[", f);
    for (size_t i = 0; i < r->n_rows; i++) {
        const tpa_rank_row *w = &r->rows[i];
        fprintf(f, "%s{\"rank\":%lld,\"host\":", i ? ",\n" : "\n", (long long)w->rank);
        json_str(f, w->host);
        fputs(",\"source\":", f);
        json_str(f, w->source ? w->source : "");
        fprintf(f, ",\"steps\":%zu,\"mean_ns\":%lld,\"p50_ns\":%lld,\"p90_ns\":%lld,\"max_ns\":%lld,"
                   "\"compute_mean_ns\":%lld,\"comm_mean_ns\":%lld,\"wait_mean_ns\":%lld,\"bytes_per_step\":%lld,"
                   "\"overlap_ns\":%lld,\"straggler_steps\":%llu,\"truncated\":%s,\"synced\":%s,\"clock_error_ns\":%lld,"
                   "\"collective\":",
                w->n_steps, (long long)w->mean_ns, (long long)w->p50_ns, (long long)w->p90_ns, (long long)w->max_ns,
                (long long)w->compute_mean_ns, (long long)w->comm_mean_ns, (long long)w->wait_mean_ns,
                (long long)w->bytes_per_step, (long long)w->overlap_ns, (unsigned long long)w->straggler_steps,
                w->truncated ? "true" : "false", w->synced ? "true" : "false", (long long)w->clock_error_ns);
        json_str(f, w->comm_name);
        fputc('}', f);
    }
    fputs("],\n\"findings\":", f);
    /* the findings as text lines, the same as the table output */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (mem) {
        finding_text(r, mem);
        fclose(mem);
    }
    fputc('[', f);
    int first = 1;
    for (char *line = text, *nl; line && *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl) nl = line + strlen(line) - 1;
        if (strncmp(line, "none", 4) != 0) {
            fputs(first ? "" : ",", f);
            tpa_json_str(f, line, (size_t)(nl - line) + (*nl == '\n' ? 0 : 1));
            first = 0;
        }
    }
    free(text);
    fputs("],\n\"hang\":", f);
    if (r->hang) tpa_render_job_hang_json(f, r->hang);
    else fputs("null", f);
    fputs(",\n\"warnings\":[", f);
    for (size_t i = 0; i < r->n_warnings; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_str(f, r->warnings[i]);
    }
    fputs("]}\n", f);
}

/* ---- a hung job ------------------------------------------------------------ */

static void hang_rank_text(FILE *f, const tpa_rank_hang *h)
{
    fprintf(f, "  rank %lld: ", (long long)h->rank);
    if (!h->hang) {
        fprintf(f, "%s at step %lld, no hang capture%s%.200s\n", h->reason, (long long)h->step,
                h->detail[0] ? ": " : "", h->detail);
        return;
    }
    fprintf(f, "step %lld, ", (long long)h->step);
    if (h->in_collective) fprintf(f, "waiting in %s", h->waiting_in);
    else fprintf(f, "not in a collective%s%s", h->zone[0] ? ": in zone " : "", h->zone);
    if (h->where[0]) fprintf(f, ", in %s", h->where);
    if (!h->has_stacks) fputs(" (no Python stacks in its dump)", f);
    fprintf(f, "%s\n", h->late ? "  <- did not arrive" : "");
}

void tpa_render_job_hang_text(FILE *f, const tpa_job_hang *h)
{
    if (!h->hung) return;
    fprintf(f, "\nhang: %zu rank(s) wrote a hang capture (no step ended for profiling.hang_timeout)\n", h->hung);
    for (size_t i = 0; i < h->n; i++)
        if (h->ranks[i].reason[0]) hang_rank_text(f, &h->ranks[i]);
    if (!h->n_late) {
        fputs("  every hung rank is at the same step and place: no rank is behind the others\n", f);
        return;
    }
    fputs("  did not arrive:", f);
    for (size_t i = 0; i < h->n; i++)
        if (h->ranks[i].late) fprintf(f, " rank %lld", (long long)h->ranks[i].rank);
    fputs(" (the others wait for it; its dump says where it is)\n", f);
    for (size_t i = 0; i < h->n; i++)
        if (h->ranks[i].late && h->ranks[i].dump[0])
            fprintf(f, "  rank %lld's dump: %s\n", (long long)h->ranks[i].rank, h->ranks[i].dump);
}

void tpa_render_job_hang_json(FILE *f, const tpa_job_hang *h)
{
    if (!h->hung) { fputs("null", f); return; }
    fprintf(f, "{\"hung_ranks\":%zu,\"late\":[", h->hung);
    bool first = true;
    for (size_t i = 0; i < h->n; i++)
        if (h->ranks[i].late) { fprintf(f, "%s%lld", first ? "" : ",", (long long)h->ranks[i].rank); first = false; }
    fputs("],\"ranks\":[", f);
    first = true;
    for (size_t i = 0; i < h->n; i++) {
        const tpa_rank_hang *r = &h->ranks[i];
        if (!r->reason[0]) continue;
        fprintf(f, "%s\n{\"rank\":%lld,\"reason\":", first ? "" : ",", (long long)r->rank);
        first = false;
        json_str(f, r->reason);
        fprintf(f, ",\"step\":%lld,\"in_collective\":%s,\"late\":%s,\"waiting_in\":", (long long)r->step,
                r->in_collective ? "true" : "false", r->late ? "true" : "false");
        json_str(f, r->waiting_in);
        fputs(",\"zone\":", f);
        json_str(f, r->zone);
        fputs(",\"where\":", f);
        json_str(f, r->where);
        fputs(",\"dump\":", f);
        json_str(f, r->dump);
        fputs(",\"detail\":", f);
        json_str(f, r->detail);
        fputc('}', f);
    }
    fputs("]}", f);
}
