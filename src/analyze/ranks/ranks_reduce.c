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
#include "util/buf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>



struct tpa_step_agg {
    int64_t num;
    int64_t n;
    int64_t max_compute, argmax_rank, sum_compute;
    int64_t min_comm;
    int64_t min_start, max_start;
};
typedef struct tpa_step_agg step_agg;


static void warn(tpa_ranks *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(tpa_ranks *r, const char *fmt, ...)
{
    if (r->n_warnings == TPA_RANKS_MAX_WARNINGS) { r->lost_warnings++; return; }
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
    r->steps = tpu_array_grow(r->steps, &r->cap_steps, r->n_steps + 1, sizeof *r->steps);
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
        r->seen = tpu_array_grow(r->seen, &r->seen_cap, byte + 1, 1);
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

static void fill_row(tpa_rank_row *w, const tpa_rank_summary *s)
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
    r->rows = tpu_array_grow(r->rows, &r->cap_rows, r->n_rows + 1, sizeof *r->rows);
    tpa_rank_row *w = &r->rows[r->n_rows++];
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
    if (err->code == TPA_ERR_IO)  /* the OS reason says it all: no byte offset */
        warn(r, "cannot analyze %s: %s%s%s", source, err->file[0] ? err->file : "", err->file[0] ? ": " : "", err->msg);
    else
        warn(r, "cannot analyze %s: %s%s%s (byte %llu)", source, err->file[0] ? err->file : "",
             err->file[0] ? ": " : "", err->msg, (unsigned long long)err->offset);
}

static int cmp_row(const void *a, const void *b)
{
    const tpa_rank_row *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static tpa_rank_row *find_row(tpa_ranks *r, int64_t rank)
{
    tpa_rank_row key = {.rank = rank};
    return bsearch(&key, r->rows, r->n_rows, sizeof *r->rows, cmp_row);
}

static void missing_ranks(tpa_ranks *r)
{
    if (r->world_size <= 0 || (size_t)r->world_size == r->n_rows) return;
    char list[256] = "";
    size_t used = 0, present = 0, listed = 0;
    /* rows are sorted by rank: O(rows + 12) whatever the world size a summary claims */
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].rank >= 0 && r->rows[i].rank < r->world_size && (!i || r->rows[i - 1].rank != r->rows[i].rank))
            present++;
    uint64_t missing = (uint64_t)r->world_size - present;
    size_t i = 0;
    for (int64_t k = 0; k < r->world_size && listed < 12; k++) {
        while (i < r->n_rows && r->rows[i].rank < k) i++;
        if (i < r->n_rows && r->rows[i].rank == k) continue;
        if (used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%lld", listed ? ", " : "", (long long)k);
        listed++;
    }
    if (missing)
        warn(r, "missing rank%s %s%s (world size %lld, %zu ranks found): analysis of the ranks present",
             missing > 1 ? "s" : "", list, missing > 12 ? ", ..." : "", (long long)r->world_size, r->n_rows);
}

void tpa_ranks_finalize(tpa_ranks *r)
{
    if (r->finalized) return;
    r->finalized = true;
    if (r->n_rows) qsort(r->rows, r->n_rows, sizeof *r->rows, cmp_row);  /* rows is NULL when none */
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
        tpa_rank_row *w = find_row(r, a->argmax_rank);
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
        tpa_rank_row *w = &r->rows[i];
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
    tpa_ranks_finalize(r);
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

bool tpa_ranks_has_straggler(const tpa_ranks *r)
{
    const tpa_rank_row *t = NULL;
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].rank == r->top_rank) t = &r->rows[i];
    /* the lead is at least 2 % of the step: in doubles, as a crafted summary's
     * lead can be near the int64 limit (50 x it overflowed) */
    return t && r->contested_steps && r->top_count >= r->contested_steps - r->top_count &&
           (double)r->top_lead_p50 * 50.0 >= (double)t->mean_ns && r->n_rows >= 2;
}
