/*
 * mem_summary.c - memory signals over a run, from the samples seen:
 * peaks, mean CPU, a robust growth slope (Theil-Sen: the median of the
 * slopes between every pair of points, insensitive to spikes), the
 * reserved-minus-allocated gap, and peak against the device total.
 *
 * Each series keeps at most SERIES_MAX points: when full, every other point
 * is dropped and only every 2nd (4th, ...) new sample is kept, so memory is
 * bounded and the points stay spread over the whole run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"
#include "util/json.h"

#define SERIES_MAX 512
#define MB (1024.0 * 1024.0)
#define GB (1024.0 * 1024.0 * 1024.0)
#define LEAK_MIN_POINTS 8
#define LEAK_MIN_SPAN 10.0           /* steps (or seconds without steps) */
#define LEAK_MIN_BYTES (16.0 * MB)
#define LEAK_MIN_FRACTION 0.05       /* of the first value */
#define LEAK_CHUNKS 8                /* the series' levels: the medians of 8 runs of points */
#define LEAK_MIN_KEPT 0.5            /* of the growth, still there at the end */
#define FRAG_MIN_BYTES (256.0 * MB)
#define FRAG_MIN_FRACTION 0.25       /* of reserved */
#define NEAR_FULL_FRACTION 0.90

typedef struct series {
    double x[SERIES_MAX], y[SERIES_MAX];
    int n, stride;
    uint64_t seen;
} series;

typedef struct dev_stats {
    char name[32], source[16];
    uint64_t peak_alloc, peak_reserved, peak, total, max_gap, gap_reserved;
    double util_sum;
    uint64_t util_n, samples;
    series by_step, by_time;
} dev_stats;

struct tpi_mem_summary {
    uint64_t samples, process_samples;
    uint64_t peak_rss, first_rss, last_rss;
    double cpu_sum, cpu_max, sys_max;
    int threads_max;
    uint64_t first_step, last_step;
    uint32_t cb_rejected, probe_errors;
    series rss_by_step, rss_by_time;
    int n_dev;
    dev_stats *dev[TPI_MAX_DEVICES]; /* allocated when a device is first seen (16 KB each) */
};

/* A robust slope with the x span it covers. */
typedef struct slope {
    int ok;
    double per_x, span, first;
    int points;
    int by_step; /* x is steps (else seconds) */
    /* levels (medians of LEAK_CHUNKS runs of points, spikes left out): the
     * first run's, the last run's, the highest */
    double level_first, level_last, level_top;
} slope;

tpi_mem_summary *tpi_mem_summary_new(void) { return calloc(1, sizeof(tpi_mem_summary)); }

void tpi_mem_summary_free(tpi_mem_summary *m)
{
    for (int i = 0; m && i < m->n_dev; i++)
        free(m->dev[i]);
    free(m);
}

static void series_add(series *s, double x, double y)
{
    if (!s->stride)
        s->stride = 1;
    if (s->seen++ % (uint64_t)s->stride != 0)
        return;
    if (s->n == SERIES_MAX) {
        for (int i = 0; i < SERIES_MAX / 2; i++) {
            s->x[i] = s->x[2 * i];
            s->y[i] = s->y[2 * i];
        }
        s->n = SERIES_MAX / 2;
        s->stride *= 2;
    }
    s->x[s->n] = x;
    s->y[s->n] = y;
    s->n++;
}

/* The k-th smallest of v[0..n) (0-based), by selection (Hoare partitions
 * around a median of three): v is reordered, O(n) on average where sorting
 * all n(n-1)/2 pairwise slopes at close was O(n log n) and most of the
 * close's memory cost. */
static double select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        double a = v[lo], b = v[mid], c = v[hi];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0) /* v[0] <= pivot: [0..0] is the lower part */
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* The median of v[0..k), k > 0 (v is reordered). */
static double median_of(double *v, size_t k)
{
    double upper = select_kth(v, k, k / 2);
    if (k % 2)
        return upper;
    double lower = v[0]; /* the largest of v[0..k/2), all <= upper */
    for (size_t i = 1; i < k / 2; i++)
        lower = v[i] > lower ? v[i] : lower;
    return (lower + upper) / 2;
}

static double pair_slope(const series *s, int i, int j)
{
    return (s->y[j] - s->y[i]) / (s->x[j] - s->x[i]);
}

/* The median of the slopes between every pair of points with distinct x
 * (at most `pairs`), all of them stored and selected; -1 when there are
 * none. */
static int median_all(const series *s, size_t pairs, double *out)
{
    double *v = malloc(pairs * sizeof *v);
    size_t k = 0;
    for (int i = 0; v && i < s->n; i++)
        for (int j = i + 1; j < s->n; j++)
            if (s->x[j] != s->x[i])
                v[k++] = pair_slope(s, i, j);
    if (k > 0)
        *out = median_of(v, k);
    free(v);
    return k > 0 ? 0 : -1;
}

/* The slopes of one pass over every pair, against a bracket [lo, hi]:
 * counted below, at lo, above and at hi, and kept strictly inside. */
typedef struct bracket {
    double lo, hi;
    size_t below, at_lo, at_hi, above, n_in, cap;
    double *in;
} bracket;

static int bracket_pass(const series *s, bracket *b)
{
    for (int i = 0; i < s->n; i++) {
        for (int j = i + 1; j < s->n; j++) {
            if (s->x[j] == s->x[i])
                continue;
            double v = pair_slope(s, i, j);
            if (v < b->lo)
                b->below++;
            else if (v > b->hi)
                b->above++;
            else if (v == b->lo)
                b->at_lo++;
            else if (v == b->hi)
                b->at_hi++;
            else if (v != v || b->n_in == b->cap)
                return -1; /* NaN, or the bracket missed: more inside than planned */
            else
                b->in[b->n_in++] = v;
        }
    }
    return 0;
}

/* The slope of rank r (0-based) in the bracket's counts; -1 when r is not
 * inside [lo, hi] (the sample missed the middle). */
static int bracket_rank(bracket *b, size_t r, double *out)
{
    if (r < b->below)
        return -1;
    r -= b->below;
    if (r < b->at_lo)
        return *out = b->lo, 0;
    r -= b->at_lo;
    if (r < b->n_in)
        return *out = select_kth(b->in, b->n_in, r), 0;
    r -= b->n_in;
    if (r < b->at_hi)
        return *out = b->hi, 0;
    return -1;
}

#define SAMPLE 1024 /* sampled slopes that place the bracket */
#define SAMPLE_MARGIN 64 /* sample ranks on each side: 4 standard deviations */

/* The median of the slopes (about `pairs` of them) without storing them
 * all: the median of SAMPLE random pairs' slopes, widened by the margin,
 * brackets it; one pass counts the slopes outside the bracket and keeps
 * those inside (about 2 * SAMPLE_MARGIN / SAMPLE of them) for selection.
 * The same doubles as median_all, so the same value; -1 (then median_all)
 * when the bracket misses, which the margin makes rare. */
static int median_sampled(const series *s, size_t pairs, double *out)
{
    double sample[SAMPLE];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int got = 0;
    for (int tries = 0; got < SAMPLE && tries < 4 * SAMPLE; tries++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int i = (int)(x % (uint64_t)s->n), j = (int)((x >> 32) % (uint64_t)s->n);
        if (i > j) {
            int t = i;
            i = j;
            j = t;
        }
        if (i != j && s->x[i] != s->x[j])
            sample[got++] = pair_slope(s, i, j);
    }
    if (got < SAMPLE)
        return -1;
    bracket b = {0};
    b.lo = select_kth(sample, SAMPLE, SAMPLE / 2 - SAMPLE_MARGIN);
    b.hi = select_kth(sample, SAMPLE, SAMPLE / 2 + SAMPLE_MARGIN);
    b.cap = pairs * 3 * SAMPLE_MARGIN / SAMPLE + 64;
    b.in = malloc(b.cap * sizeof *b.in);
    double lower, upper;
    int rc = -1;
    if (b.in && bracket_pass(s, &b) == 0) {
        size_t n = b.below + b.at_lo + b.n_in + b.at_hi + b.above; /* pairs, distinct x */
        if (bracket_rank(&b, n / 2, &upper) == 0 &&
            (n % 2 || bracket_rank(&b, n / 2 - 1, &lower) == 0)) {
            *out = n % 2 ? upper : (lower + upper) / 2;
            rc = 0;
        }
    }
    free(b.in);
    return rc;
}

/* The series' levels over its LEAK_CHUNKS runs of points (in order). */
static void levels(const series *s, slope *r)
{
    double v[SERIES_MAX / LEAK_CHUNKS + 1];
    for (int c = 0; c < LEAK_CHUNKS; c++) {
        int lo = (int)((long)s->n * c / LEAK_CHUNKS), hi = (int)((long)s->n * (c + 1) / LEAK_CHUNKS);
        if (hi <= lo)
            continue;
        memcpy(v, &s->y[lo], (size_t)(hi - lo) * sizeof *v);
        double m = median_of(v, (size_t)(hi - lo));
        if (lo == 0)
            r->level_first = r->level_top = m;
        r->level_last = m;
        r->level_top = m > r->level_top ? m : r->level_top;
    }
}

/* Theil-Sen slope of a series; ok = 0 with fewer than 2 distinct x. */
static slope theil_sen(const series *s)
{
    slope r = {0, 0, 0, 0, s->n, 0, 0, 0, 0};
    if (s->n < 2)
        return r;
    size_t pairs = (size_t)s->n * (size_t)(s->n - 1) / 2;
    double lo = s->x[0], hi = s->x[0];
    for (int i = 0; i < s->n; i++) {
        lo = s->x[i] < lo ? s->x[i] : lo;
        hi = s->x[i] > hi ? s->x[i] : hi;
    }
    if ((pairs < 4 * SAMPLE || median_sampled(s, pairs, &r.per_x) != 0) &&
        median_all(s, pairs, &r.per_x) != 0)
        return r;
    r.span = hi - lo;
    r.first = s->y[0];
    levels(s, &r);
    r.ok = 1;
    return r;
}

/* The step series when steps advanced, else the time series. */
static slope growth(const series *by_step, const series *by_time)
{
    slope r = theil_sen(by_step);
    r.by_step = 1;
    if (r.ok && r.span >= 1)
        return r;
    r = theil_sen(by_time);
    r.by_step = 0;
    return r;
}

/* Growth that does not come back: the last level keeps at least half of
 * the growth the slope gives, and is down from the highest level by at most
 * half of the rise to it (memory that grows, then is given back - a cache
 * filled, then freed - is not a leak). */
static int growth_kept(const slope *g, double grown)
{
    double kept = g->level_last - g->level_first, rise = g->level_top - g->level_first;
    return kept >= LEAK_MIN_KEPT * grown && g->level_top - g->level_last <= LEAK_MIN_KEPT * rise;
}

static int is_leak(const slope *g)
{
    double grown = g->per_x * g->span;
    double floor = g->first * LEAK_MIN_FRACTION;
    return g->ok && g->points >= LEAK_MIN_POINTS && g->span >= LEAK_MIN_SPAN && g->per_x > 0 &&
           grown >= LEAK_MIN_BYTES && grown >= floor && growth_kept(g, grown);
}

static dev_stats *dev_find(tpi_mem_summary *m, const char *name)
{
    for (int i = 0; i < m->n_dev; i++)
        if (strcmp(m->dev[i]->name, name) == 0)
            return m->dev[i];
    if (m->n_dev == TPI_MAX_DEVICES)
        return NULL;
    dev_stats *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    m->dev[m->n_dev++] = d;
    snprintf(d->name, sizeof d->name, "%s", name);
    return d;
}

static void add_device(tpi_mem_summary *m, const tpi_device_sample *ds, double step, double t)
{
    dev_stats *d = dev_find(m, ds->mem.device);
    if (!d)
        return;
    const tp_device_memory *x = &ds->mem;
    snprintf(d->source, sizeof d->source, "%s", ds->source);
    d->samples++;
    d->peak_alloc = x->allocated_bytes > d->peak_alloc ? x->allocated_bytes : d->peak_alloc;
    d->peak_reserved = x->reserved_bytes > d->peak_reserved ? x->reserved_bytes : d->peak_reserved;
    uint64_t pk = x->peak_bytes > x->allocated_bytes ? x->peak_bytes : x->allocated_bytes;
    d->peak = pk > d->peak ? pk : d->peak;
    if (x->total_bytes)
        d->total = x->total_bytes;
    if (x->reserved_bytes > x->allocated_bytes && x->reserved_bytes - x->allocated_bytes > d->max_gap) {
        d->max_gap = x->reserved_bytes - x->allocated_bytes;
        d->gap_reserved = x->reserved_bytes;
    }
    if (ds->have_utilization) {
        d->util_sum += ds->utilization_percent;
        d->util_n++;
    }
    series_add(&d->by_step, step, (double)x->allocated_bytes);
    series_add(&d->by_time, t, (double)x->allocated_bytes);
}

void tpi_mem_summary_add(tpi_mem_summary *m, const tpi_mem_sample *s)
{
    if (!m || !s)
        return;
    double step = (double)s->step, t = (double)s->ts_ns / 1e9;
    if (m->samples == 0 || s->step < m->first_step)
        m->first_step = s->step;
    if (s->step > m->last_step)
        m->last_step = s->step;
    m->samples++;
    if (s->have_process) {
        if (m->process_samples++ == 0)
            m->first_rss = s->rss_bytes;
        m->last_rss = s->rss_bytes;
        uint64_t pk = s->peak_rss_bytes > s->rss_bytes ? s->peak_rss_bytes : s->rss_bytes;
        m->peak_rss = pk > m->peak_rss ? pk : m->peak_rss;
        m->cpu_sum += s->cpu_percent;
        m->cpu_max = s->cpu_percent > m->cpu_max ? s->cpu_percent : m->cpu_max;
        m->threads_max = s->threads > m->threads_max ? s->threads : m->threads_max;
        series_add(&m->rss_by_step, step, (double)s->rss_bytes);
        series_add(&m->rss_by_time, t, (double)s->rss_bytes);
    }
    if (s->have_system && s->system_memory_percent > m->sys_max)
        m->sys_max = s->system_memory_percent;
    for (int i = 0; i < s->n_devices && i < TPI_MAX_DEVICES; i++)
        add_device(m, &s->devices[i], step, t);
    m->cb_rejected = s->callback_rejected > m->cb_rejected ? s->callback_rejected : m->cb_rejected;
    m->probe_errors = s->probe_errors > m->probe_errors ? s->probe_errors : m->probe_errors;
}

/* "RSS grows 3.1 MB/step over 400 steps - possible leak" (UTF-8 dash). */
static void growth_line(char *out, size_t n, const char *what, const slope *g)
{
    snprintf(out, n, "%s grows %.1f MB/%s over %.0f %s \xe2\x80\x94 possible leak", what,
             g->per_x / MB, g->by_step ? "step" : "s", g->span, g->by_step ? "steps" : "seconds");
}

static int frag_signal(const dev_stats *d)
{
    return !strcmp(d->source, "callback") && d->max_gap >= FRAG_MIN_BYTES &&
           (double)d->max_gap >= FRAG_MIN_FRACTION * (double)d->gap_reserved;
}

static double peak_fraction(const dev_stats *d)
{
    uint64_t top = d->peak_reserved > d->peak ? d->peak_reserved : d->peak;
    return d->total ? (double)top / (double)d->total : 0.0;
}

static void write_growth(tpu_json *j, const char *prefix, const slope *g)
{
    char key[64];
    snprintf(key, sizeof key, "%s_growth_bytes_per_%s", prefix, g->by_step ? "step" : "second");
    tpu_json_kv_double(j, key, g->ok ? g->per_x : 0.0);
    snprintf(key, sizeof key, "%s_growth_span_%s", prefix, g->by_step ? "steps" : "seconds");
    tpu_json_kv_double(j, key, g->span);
}

/* Every series' growth slope, computed once per summary written or
 * printed (each is a Theil-Sen over up to 130,816 pairs). */
typedef struct growths {
    slope rss, dev[TPI_MAX_DEVICES];
} growths;

static void all_growths(const tpi_mem_summary *m, growths *g)
{
    g->rss = growth(&m->rss_by_step, &m->rss_by_time);
    for (int i = 0; i < m->n_dev; i++)
        g->dev[i] = growth(&m->dev[i]->by_step, &m->dev[i]->by_time);
}

static void write_device(tpu_json *j, const dev_stats *d, slope g)
{
    tpu_json_key(j, d->name);
    tpu_json_begin_object(j);
    tpu_json_kv_string(j, "source", d->source);
    tpu_json_kv_uint(j, "peak_allocated_bytes", d->peak_alloc);
    tpu_json_kv_uint(j, "peak_reserved_bytes", d->peak_reserved);
    tpu_json_kv_uint(j, "peak_bytes_in_use", d->peak);
    if (d->total) {
        tpu_json_kv_uint(j, "total_bytes", d->total);
        tpu_json_kv_double(j, "peak_percent_of_total", 100.0 * peak_fraction(d));
    }
    tpu_json_kv_uint(j, "max_reserved_minus_allocated_bytes", d->max_gap);
    if (d->util_n)
        tpu_json_kv_double(j, "mean_utilization_percent", d->util_sum / (double)d->util_n);
    write_growth(j, "allocated", &g);
    tpu_json_kv_bool(j, "possible_leak", is_leak(&g));
    tpu_json_kv_bool(j, "fragmentation", frag_signal(d));
    tpu_json_end_object(j);
}

/* Every human signal line, in order; returns how many. */
static int signal_lines(const tpi_mem_summary *m, const growths *g, char lines[][200], int max)
{
    int n = 0;
    if (is_leak(&g->rss) && n < max)
        growth_line(lines[n++], 200, "RSS", &g->rss);
    for (int i = 0; i < m->n_dev && n < max; i++) {
        const dev_stats *d = m->dev[i];
        const slope dg = g->dev[i];
        char what[64];
        snprintf(what, sizeof what, "%s allocated memory", d->name);
        if (is_leak(&dg))
            growth_line(lines[n++], 200, what, &dg);
        if (frag_signal(d) && n < max)
            snprintf(lines[n++], 200, "%s: reserved exceeds allocated by %.2f GB (%.0f%% of "
                     "reserved) \xe2\x80\x94 allocator cache or fragmentation", d->name,
                     d->max_gap / GB, 100.0 * (double)d->max_gap / (double)d->gap_reserved);
        if (peak_fraction(d) >= NEAR_FULL_FRACTION && n < max)
            snprintf(lines[n++], 200, "%s: peak %.2f of %.2f GB (%.0f%%) \xe2\x80\x94 close to "
                     "out of memory", d->name, (d->peak_reserved > d->peak ? d->peak_reserved
                     : d->peak) / GB, d->total / GB, 100.0 * peak_fraction(d));
    }
    return n;
}

void tpi_mem_summary_write_json(const tpi_mem_summary *m, tpu_json *j)
{
    if (!m || !j)
        return;
    growths all;
    all_growths(m, &all);
    const slope g = all.rss;
    tpu_json_key(j, "memory");
    tpu_json_begin_object(j);
    tpu_json_kv_uint(j, "samples", m->samples);
    if (m->process_samples) {
        tpu_json_kv_uint(j, "peak_rss_bytes", m->peak_rss);
        tpu_json_kv_uint(j, "first_rss_bytes", m->first_rss);
        tpu_json_kv_uint(j, "last_rss_bytes", m->last_rss);
        tpu_json_kv_double(j, "mean_cpu_percent", m->cpu_sum / (double)m->process_samples);
        tpu_json_kv_double(j, "max_cpu_percent", m->cpu_max);
        tpu_json_kv_int(j, "max_threads", m->threads_max);
        write_growth(j, "rss", &g);
        tpu_json_kv_bool(j, "possible_leak", is_leak(&g));
    }
    if (m->sys_max > 0)
        tpu_json_kv_double(j, "peak_system_memory_percent", m->sys_max);
    tpu_json_key(j, "devices");
    tpu_json_begin_object(j);
    for (int i = 0; i < m->n_dev; i++)
        write_device(j, m->dev[i], all.dev[i]);
    tpu_json_end_object(j);
    char lines[8][200];
    int n = signal_lines(m, &all, lines, 8);
    tpu_json_key(j, "signals");
    tpu_json_begin_array(j);
    for (int i = 0; i < n; i++)
        tpu_json_string(j, lines[i]);
    tpu_json_end_array(j);
    tpu_json_kv_uint(j, "callback_rejected", m->cb_rejected);
    tpu_json_kv_uint(j, "probe_errors", m->probe_errors);
    tpu_json_end_object(j);
}

void tpi_mem_summary_print(const tpi_mem_summary *m, void *file)
{
    FILE *f = file ? file : stderr;
    if (!m || !m->samples)
        return;
    if (m->process_samples)
        fprintf(f, "Memory: peak RSS %.1f MB, mean CPU %.1f%%, %llu samples\n", m->peak_rss / MB,
                m->cpu_sum / (double)m->process_samples, (unsigned long long)m->samples);
    for (int i = 0; i < m->n_dev; i++)
        fprintf(f, "  %s (%s): peak in use %.2f GB, peak reserved %.2f GB%s\n", m->dev[i]->name,
                m->dev[i]->source, m->dev[i]->peak / GB, m->dev[i]->peak_reserved / GB,
                m->dev[i]->total ? "" : " (device total unknown)");
    char lines[8][200];
    growths all;
    all_growths(m, &all);
    int n = signal_lines(m, &all, lines, 8);
    for (int i = 0; i < n; i++)
        fprintf(f, "  %s\n", lines[i]);
    if (m->cb_rejected)
        fprintf(f, "  %u allocator-callback results rejected as inconsistent\n", m->cb_rejected);
}
