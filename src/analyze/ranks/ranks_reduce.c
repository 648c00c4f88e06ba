/* ranks_reduce.c - rank summaries -> the cross-rank analysis (the reduce).
 *
 * Summaries are folded one at a time into one row per rank and one
 * aggregate per step number, so memory grows with ranks + steps, never
 * with events. Per step: the straggler is the rank with the most compute
 * (step time outside collectives), its lead the gap to the mean of the
 * others; the fastest rank's time in collectives is the transfer itself,
 * so a rank's wait is its collective time beyond that minimum. In a
 * synchronous job the others' wait is the straggler's lead.
 */
#include "analyze/ranks/ranks.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WARNINGS 64

typedef struct rank_row {
    int64_t rank, world_size;
    char host[64], format[12];
    char *source;
    size_t n_steps;
    int64_t mean_ns, p50_ns, p90_ns, max_ns;
    int64_t comm_mean_ns, compute_mean_ns, bytes_per_step, overlap_ns, comm_total_ns;
    int64_t clock_error_ns;
    bool truncated, synced, device_comm;
    uint64_t straggler_steps;
    int64_t wait_mean_ns;    /* filled by finalize */
    char comm_name[48];
} rank_row;

typedef struct step_agg {
    int64_t num;
    int64_t n;
    int64_t max_compute, argmax_rank, sum_compute;
    int64_t min_comm;
    int64_t min_start, max_start;
} step_agg;

struct tpa_ranks {
    rank_row *rows; size_t n_rows, cap_rows;
    step_agg *steps; size_t n_steps, cap_steps;
    unsigned char *seen; size_t seen_cap;   /* bit per rank number */
    char job_id[112], format[12];
    int64_t world_size;
    char *warnings[MAX_WARNINGS]; size_t n_warnings, lost_warnings;
    bool finalized;
    /* results of finalize */
    int64_t top_rank; uint64_t top_count, contested_steps;
    int64_t top_lead_p50, others_wait_ns, others_step_ns, spread_p50, min_comm_mean;
    int64_t max_clock_error; size_t unsynced;
};

static void warn(tpa_ranks *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(tpa_ranks *r, const char *fmt, ...)
{
    if (r->n_warnings == MAX_WARNINGS) { r->lost_warnings++; return; }
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->warnings[r->n_warnings] = strdup(buf);
    if (r->warnings[r->n_warnings]) r->n_warnings++;
}

tpa_ranks *tpa_ranks_new(void)
{
    tpa_ranks *r = calloc(1, sizeof *r);
    if (r) r->world_size = -1;
    return r;
}

size_t tpa_ranks_count(const tpa_ranks *r) { return r->n_rows; }

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t quantile(int64_t *v, size_t n, double q)
{
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_i64);
    return v[(size_t)(q * (double)(n - 1) + 0.5)];
}

static step_agg *step_slot(tpa_ranks *r, int64_t num)
{
    size_t lo = 0, hi = r->n_steps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->steps[mid].num < num) lo = mid + 1; else hi = mid;
    }
    if (lo < r->n_steps && r->steps[lo].num == num) return &r->steps[lo];
    r->steps = tpa_ranks_grow(r->steps, &r->cap_steps, r->n_steps + 1, sizeof *r->steps);
    memmove(&r->steps[lo + 1], &r->steps[lo], (r->n_steps - lo) * sizeof *r->steps);
    r->n_steps++;
    r->steps[lo] = (step_agg){num, 0, INT64_MIN, -1, 0, INT64_MAX, INT64_MAX, INT64_MIN};
    return &r->steps[lo];
}

/* Marks rank as seen; false when it already was. */
static bool mark_seen(tpa_ranks *r, int64_t rank)
{
    if (rank < 0 || rank > 100000000) return true;
    size_t byte = (size_t)rank / 8;
    if (byte >= r->seen_cap) {
        size_t old = r->seen_cap;
        r->seen = tpa_ranks_grow(r->seen, &r->seen_cap, byte + 1, 1);
        memset(r->seen + old, 0, r->seen_cap - old);
    }
    unsigned char bit = (unsigned char)(1u << (rank % 8));
    if (r->seen[byte] & bit) return false;
    r->seen[byte] |= bit;
    return true;
}

static void check_job(tpa_ranks *r, const tpa_rank_summary *s)
{
    if (!s->job_id[0]) return;
    if (!r->job_id[0]) snprintf(r->job_id, sizeof r->job_id, "%s", s->job_id);
    else if (strcmp(r->job_id, s->job_id) != 0)
        warn(r, "rank %lld (%s) belongs to job %s, not %s: analyzed with the others", (long long)s->rank,
             s->source, s->job_id, r->job_id);
}

static void fill_row(rank_row *w, const tpa_rank_summary *s)
{
    memset(w, 0, sizeof *w);
    w->rank = s->rank;
    w->world_size = s->world_size;
    snprintf(w->host, sizeof w->host, "%s", s->host);
    snprintf(w->format, sizeof w->format, "%s", s->format);
    w->source = strdup(s->source);
    w->n_steps = s->n_steps;
    w->truncated = s->truncated;
    w->synced = s->synced;
    w->device_comm = s->device_comm;
    w->clock_error_ns = s->clock_error_ns;
    if (s->n_comm) snprintf(w->comm_name, sizeof w->comm_name, "%s", s->comm[0].name);
    int64_t *d = malloc((s->n_steps ? s->n_steps : 1) * sizeof *d);
    if (!d) abort();
    int64_t sum = 0, comm = 0, bytes = 0;
    for (size_t i = 0; i < s->n_steps; i++) {
        d[i] = s->steps[i].dur_ns;
        sum = tpa_sat_add(sum, d[i]);
        comm = tpa_sat_add(comm, s->steps[i].comm_ns);
        bytes = tpa_sat_add(bytes, s->steps[i].bytes);
        w->overlap_ns = tpa_sat_add(w->overlap_ns, s->steps[i].overlap_ns);
    }
    int64_t n = s->n_steps ? (int64_t)s->n_steps : 1;
    w->mean_ns = sum / n;
    w->comm_mean_ns = comm / n;
    w->comm_total_ns = comm;
    w->compute_mean_ns = (sum - comm) / n;
    w->bytes_per_step = bytes / n;
    w->max_ns = quantile(d, s->n_steps, 1.0);
    w->p50_ns = quantile(d, s->n_steps, 0.5);
    w->p90_ns = quantile(d, s->n_steps, 0.9);
    free(d);
}

void tpa_ranks_add(tpa_ranks *r, const tpa_rank_summary *s)
{
    r->finalized = false;
    if (s->rank < 0)
        warn(r, "%s names no rank (no distributedInfo, trainprof metadata or rank<r> directory): counted as rank %zu",
             s->source, r->n_rows);
    int64_t rank = s->rank < 0 ? (int64_t)r->n_rows : s->rank;
    if (!mark_seen(r, rank)) {
        warn(r, "two inputs claim rank %lld; the second, %s, is skipped", (long long)rank, s->source);
        return;
    }
    check_job(r, s);
    if (!r->format[0]) snprintf(r->format, sizeof r->format, "%s", s->format);
    else if (strcmp(r->format, s->format) != 0)
        warn(r, "mixed trainprof and Kineto traces: rank %lld (%s) is a %s trace, the first rank a %s one; "
                "its collectives are read the %s way", (long long)rank, s->source, s->format, r->format, s->format);
    if (s->truncated)
        warn(r, "rank %lld (%s) was cut short (a trace ends early, e.g. killed): its %zu complete steps are analyzed",
             (long long)rank, s->source, s->n_steps);
    if (!s->n_steps)
        warn(r, "rank %lld (%s) has no ProfilerStep#N spans: no step times", (long long)rank, s->source);
    if (s->world_size > r->world_size) r->world_size = s->world_size;
    r->rows = tpa_ranks_grow(r->rows, &r->cap_rows, r->n_rows + 1, sizeof *r->rows);
    rank_row *w = &r->rows[r->n_rows++];
    fill_row(w, s);
    w->rank = rank;
    for (size_t i = 0; i < s->n_steps; i++) {
        const tpa_rank_step *t = &s->steps[i];
        step_agg *a = step_slot(r, t->num);
        int64_t compute = t->dur_ns - t->comm_ns;
        a->n++;
        a->sum_compute = tpa_sat_add(a->sum_compute, compute);
        if (compute > a->max_compute || (compute == a->max_compute && rank < a->argmax_rank))
            a->max_compute = compute, a->argmax_rank = rank;
        if (t->comm_ns < a->min_comm) a->min_comm = t->comm_ns;
        if (s->has_base) {
            if (t->start_ns < a->min_start) a->min_start = t->start_ns;
            if (t->start_ns > a->max_start) a->max_start = t->start_ns;
        }
    }
}

void tpa_ranks_add_failure(tpa_ranks *r, const char *source, const tpa_error *err)
{
    warn(r, "cannot analyze %s: %s%s%s (byte %llu)", source, err->file[0] ? err->file : "", err->file[0] ? ": " : "",
         err->msg, (unsigned long long)err->offset);
}

static int cmp_row(const void *a, const void *b)
{
    const rank_row *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static rank_row *find_row(tpa_ranks *r, int64_t rank)
{
    rank_row key = {.rank = rank};
    return bsearch(&key, r->rows, r->n_rows, sizeof *r->rows, cmp_row);
}

static void missing_ranks(tpa_ranks *r)
{
    if (r->world_size <= 0 || (size_t)r->world_size == r->n_rows) return;
    char list[256] = "";
    size_t used = 0, missing = 0;
    for (int64_t k = 0; k < r->world_size; k++) {
        if (find_row(r, k)) continue;
        if (missing++ < 12)
            used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0, "%s%lld",
                                     missing > 1 ? ", " : "", (long long)k);
    }
    if (missing)
        warn(r, "missing rank%s %s%s (world size %lld, %zu ranks found): analysis of the ranks present",
             missing > 1 ? "s" : "", list, missing > 12 ? ", ..." : "", (long long)r->world_size, r->n_rows);
}

static void finalize(tpa_ranks *r)
{
    if (r->finalized) return;
    r->finalized = true;
    qsort(r->rows, r->n_rows, sizeof *r->rows, cmp_row);
    missing_ranks(r);
    int64_t *leads = malloc((r->n_steps ? r->n_steps : 1) * sizeof *leads);
    int64_t *spreads = malloc((r->n_steps ? r->n_steps : 1) * sizeof *spreads);
    if (!leads || !spreads) abort();
    size_t n_spreads = 0, n_leads = 0;
    int64_t min_comm_sum = 0;
    r->contested_steps = 0;
    for (size_t i = 0; i < r->n_rows; i++) r->rows[i].straggler_steps = 0;
    for (size_t i = 0; i < r->n_steps; i++) {
        step_agg *a = &r->steps[i];
        min_comm_sum = tpa_sat_add(min_comm_sum, a->min_comm == INT64_MAX ? 0 : a->min_comm);
        if (a->max_start >= a->min_start && a->n >= 2) spreads[n_spreads++] = a->max_start - a->min_start;
        if (a->n < 2) continue;
        r->contested_steps++;
        rank_row *w = find_row(r, a->argmax_rank);
        if (w) w->straggler_steps++;
    }
    r->top_rank = -1;
    r->top_count = 0;
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].straggler_steps > r->top_count) r->top_count = r->rows[i].straggler_steps, r->top_rank = r->rows[i].rank;
    for (size_t i = 0; i < r->n_steps; i++) {
        step_agg *a = &r->steps[i];
        if (a->n >= 2 && a->argmax_rank == r->top_rank)
            leads[n_leads++] = a->max_compute - (a->sum_compute - a->max_compute) / (a->n - 1);
    }
    r->top_lead_p50 = quantile(leads, n_leads, 0.5);
    r->spread_p50 = quantile(spreads, n_spreads, 0.5);
    r->min_comm_mean = r->n_steps ? min_comm_sum / (int64_t)r->n_steps : 0;
    int64_t wait_sum = 0, step_sum = 0, others = 0;
    r->max_clock_error = 0;
    r->unsynced = 0;
    for (size_t i = 0; i < r->n_rows; i++) {
        rank_row *w = &r->rows[i];
        w->wait_mean_ns = w->comm_mean_ns - r->min_comm_mean;
        if (w->wait_mean_ns < 0) w->wait_mean_ns = 0;
        if (!w->synced) r->unsynced++;
        else if (w->clock_error_ns > r->max_clock_error) r->max_clock_error = w->clock_error_ns;
        if (w->rank == r->top_rank) continue;
        wait_sum += w->wait_mean_ns;
        step_sum += w->mean_ns;
        others++;
    }
    r->others_wait_ns = others ? wait_sum / others : 0;
    r->others_step_ns = others ? step_sum / others : 0;
    free(leads);
    free(spreads);
}

void tpa_ranks_free(tpa_ranks *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_rows; i++) free(r->rows[i].source);
    for (size_t i = 0; i < r->n_warnings; i++) free(r->warnings[i]);
    free(r->rows);
    free(r->steps);
    free(r->seen);
    free(r);
}

void tpa_ranks_job_stats(tpa_ranks *r, tpa_job_stats *out)
{
    finalize(r);
    memset(out, 0, sizeof *out);
    out->ranks = r->n_rows;
    out->steps = r->n_steps;
    int64_t n = r->n_rows ? (int64_t)r->n_rows : 1;
    for (size_t i = 0; i < r->n_rows; i++) {
        out->step_mean_ns += r->rows[i].mean_ns / n;
        out->compute_mean_ns += r->rows[i].compute_mean_ns / n;
        out->comm_mean_ns += r->rows[i].comm_mean_ns / n;
    }
    out->others_wait_ns = r->others_wait_ns;
    out->straggler_rank = r->top_rank;
    out->straggler_share = r->contested_steps ? (double)r->top_count / (double)r->contested_steps : 0;
    out->straggler_lead_ns = r->top_lead_p50;
}

/* ---- rendering ---------------------------------------------------------- */

static const char *dur(char *buf, int64_t ns)
{
    tpa_fmt_dur(buf, 24, ns);
    return buf;
}

/* Is the top straggler a finding? Slowest in at least half the contested
 * steps, by at least 2% of the step time. */
static bool has_straggler(const tpa_ranks *r)
{
    const rank_row *t = NULL;
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].rank == r->top_rank) t = &r->rows[i];
    return t && r->contested_steps && 2 * r->top_count >= r->contested_steps &&
           r->top_lead_p50 * 50 >= t->mean_ns && r->n_rows >= 2;
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
    if (has_straggler(r)) {
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

static void row_text(FILE *f, const rank_row *w)
{
    char m[24], p50[24], p90[24], mx[24], cp[24], cm[24], wt[24];
    fprintf(f, "%6lld  %-12.12s %6zu %11s %11s %11s %11s %11s %11s %11s %12lld %6llu%s\n", (long long)w->rank,
            w->host, w->n_steps, dur(m, w->mean_ns), dur(p50, w->p50_ns), dur(p90, w->p90_ns), dur(mx, w->max_ns),
            dur(cp, w->compute_mean_ns), dur(cm, w->comm_mean_ns), dur(wt, w->wait_mean_ns),
            (long long)w->bytes_per_step, (unsigned long long)w->straggler_steps, w->truncated ? "  (cut short)" : "");
}

static int cmp_compute_desc(const void *a, const void *b)
{
    const rank_row *x = *(rank_row *const *)a, *y = *(rank_row *const *)b;
    return x->compute_mean_ns > y->compute_mean_ns ? -1 : x->compute_mean_ns < y->compute_mean_ns;
}

void tpa_ranks_render_text(tpa_ranks *r, FILE *f, bool steps_only)
{
    finalize(r);
    fprintf(f, "job %s: %zu rank(s) (world size %lld), %zu step number(s), %s traces\n\n",
            r->job_id[0] ? r->job_id : "(unnamed)", r->n_rows, (long long)r->world_size, r->n_steps,
            r->format[0] ? r->format : "no");
    fprintf(f, "%6s  %-12s %6s %11s %11s %11s %11s %11s %11s %11s %12s %6s\n", "rank", "host", "steps",
            "mean", "p50", "p90", "max", "compute", "in_coll", "wait", "bytes/step", "slow");
    if (r->n_rows <= 32) {
        for (size_t i = 0; i < r->n_rows; i++) row_text(f, &r->rows[i]);
    } else { /* the 16 ranks with the most compute per step */
        rank_row **by = malloc(r->n_rows * sizeof *by);
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
    if (r->n_warnings) fputs("\nwarnings:\n", f);
    for (size_t i = 0; i < r->n_warnings; i++) fprintf(f, "  %s\n", r->warnings[i]);
    if (r->lost_warnings) fprintf(f, "  ... and %zu more\n", r->lost_warnings);
}

static void json_str(FILE *f, const char *s) { tpa_json_str(f, s, strlen(s)); }

void tpa_ranks_render_json(tpa_ranks *r, FILE *f)
{
    finalize(r);
    fputs("{\"job_id\":", f);
    json_str(f, r->job_id);
    fprintf(f, ",\"ranks\":%zu,\"world_size\":%lld,\"steps\":%zu,\"format\":", r->n_rows, (long long)r->world_size,
            r->n_steps);
    json_str(f, r->format);
    fprintf(f, ",\n\"straggler\":{\"rank\":%lld,\"steps\":%llu,\"contested_steps\":%llu,\"share\":%.4f,"
               "\"lead_p50_ns\":%lld,\"persistent\":%s,\"others_wait_ns\":%lld,\"others_step_ns\":%lld},\n",
            (long long)r->top_rank, (unsigned long long)r->top_count, (unsigned long long)r->contested_steps,
            r->contested_steps ? (double)r->top_count / (double)r->contested_steps : 0.0, (long long)r->top_lead_p50,
            has_straggler(r) ? "true" : "false", (long long)r->others_wait_ns, (long long)r->others_step_ns);
    fprintf(f, "\"clock\":{\"unsynced_ranks\":%zu,\"max_error_ns\":%lld,\"start_spread_p50_ns\":%lld},\n",
            r->unsynced, (long long)r->max_clock_error, (long long)r->spread_p50);
    fputs("\"per_rank\":[", f);
    for (size_t i = 0; i < r->n_rows; i++) {
        const rank_row *w = &r->rows[i];
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
    fputs("],\n\"warnings\":[", f);
    for (size_t i = 0; i < r->n_warnings; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_str(f, r->warnings[i]);
    }
    fputs("]}\n", f);
}
