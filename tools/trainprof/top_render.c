/*
 * top_render.c - see top_render.h.
 *
 * The frame, for a terminal of `rows` lines:
 *   title (what is shown, time, refresh)
 *   summary (ranks per state, step range, median step, straggler)
 *   column header, then one row per run, worst first (top_state.c's
 *   order), as many as fit; one line sums up the rest
 *   blank, then the chosen run's detail: its step times as a sparkline
 *   and its top zones over the last steps with their share of the step.
 */
#include "top_render.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/json.h"

#define DETAIL_BAR 24 /* columns of a zone's share bar */

/* ---- formatting ---------------------------------------------------------- */

static void fmt_secs(char *out, size_t n, double s)
{
    if (isnan(s))
        snprintf(out, n, "-");
    else if (s < 1e-3)
        snprintf(out, n, "%.0fus", s * 1e6);
    else if (s < 1)
        snprintf(out, n, "%.1fms", s * 1e3);
    else if (s < 100)
        snprintf(out, n, "%.2fs", s);
    else if (s < 6000)
        snprintf(out, n, "%.0fm%02.0fs", floor(s / 60), fmod(s, 60));
    else
        snprintf(out, n, "%.1fh", s / 3600);
}

static void fmt_bytes(char *out, size_t n, int have, unsigned long long b)
{
    if (!have)
        snprintf(out, n, "-");
    else if (b < 1024ull * 1024)
        snprintf(out, n, "%lluK", b >> 10);
    else if (b < 10ull << 30)
        snprintf(out, n, "%lluM", b >> 20);
    else
        snprintf(out, n, "%.1fG", (double)b / (1 << 30));
}

static void fmt_share(char *out, size_t n, double s)
{
    if (isnan(s))
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%.0f%%", s * 100);
}

/* Appends text cut to the columns left in the line (UTF-8 aware). Control
 * characters (a zone named with an escape sequence) become '?': nothing
 * read from a state file moves the cursor or changes the terminal. */
static void put_cols(tpu_buf *b, const char *text, int *cols, int width)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        int starts = (*p & 0xC0) != 0x80;
        if (starts && *cols >= width)
            break;
        tpu_buf_putc(b, *p < 0x20 || *p == 0x7f ? '?' : (char)*p);
        *cols += starts;
    }
}

/* One line of at most width columns (printf style). */
__attribute__((format(printf, 3, 4))) static void line(tpu_buf *b, int width, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    int cols = 0;
    put_cols(b, text, &cols, width);
    tpu_buf_putc(b, '\n');
}

static const char *short_state(const top_run *r)
{
    if (r->state != TOP_ENDED)
        return top_state_name(r->state);
    if (strncmp(r->reason, "process gone", 12) == 0)
        return "ended:gone";
    if (strncmp(r->reason, "no update", 9) == 0)
        return "ended:silent";
    return "ended";
}

static const char *base_name(const char *dir)
{
    const char *s = strrchr(dir, '/');
    return s && s[1] ? s + 1 : dir;
}

/* ---- the table ------------------------------------------------------------ */

static int detail_lines(const top_set *set, long sel)
{
    if (sel < 0 || (size_t)sel >= set->n)
        return 0;
    /* blank, heading, where it is now, sparkline, zones */
    return 3 + (set->runs[sel].in_zone[0] != 0) + set->runs[sel].n_zones;
}

size_t top_rows_shown(const top_set *set, const top_view *v)
{
    if (v->rows <= 0)
        return set->n;
    int avail = v->rows - 3 - detail_lines(set, v->selected);
    if (avail < 2)
        avail = 2;
    if ((size_t)avail >= set->n)
        return set->n;
    return (size_t)avail - 1; /* one line sums up the rest */
}

static void row(tpu_buf *b, const top_set *set, size_t i, const top_view *v)
{
    const top_run *r = &set->runs[i];
    char rank[16], last[16], med[16], sps[24], data[8], zone[64], rss[16], gpu[16], since[16];
    snprintf(rank, sizeof rank, r->rank >= 0 ? "%d" : "-", r->rank);
    fmt_secs(last, sizeof last, r->last_step_s);
    fmt_secs(med, sizeof med, r->median_step_s);
    if (isnan(r->samples_per_s))
        snprintf(sps, sizeof sps, "-");
    else
        snprintf(sps, sizeof sps, "%.1f", r->samples_per_s);
    fmt_share(data, sizeof data, r->data_share);
    const char *inner = strrchr(r->in_zone, '>');
    inner = inner ? inner + 2 : r->in_zone;
    if (r->state == TOP_STALLED && r->in_zone[0]) /* where it waits, rather than the usual */
        snprintf(zone, sizeof zone, "in %.16s", inner);
    else if (r->n_zones)
        snprintf(zone, sizeof zone, "%.14s %.0f%%", r->zones[0].name, r->zones[0].share * 100);
    else
        snprintf(zone, sizeof zone, "-");
    fmt_bytes(rss, sizeof rss, r->have_rss, r->rss_bytes);
    fmt_bytes(gpu, sizeof gpu, r->have_gpu, r->gpu_bytes);
    fmt_secs(since, sizeof since, r->state == TOP_ENDED ? NAN : r->since_step_s);
    int hl = v->highlight && (long)i == v->selected;
    if (hl)
        tpu_buf_puts(b, "\033[7m");
    line(b, v->width, "%c%5s %-12s %8llu %8s %8s %9s %4s  %-19s %6s %6s %7s%s%s%s",
         (long)i == v->selected ? '>' : ' ', rank, short_state(r), (unsigned long long)r->step,
         last, med, sps, data, zone, rss, gpu, since, r->straggler ? "  straggler" : "",
         set->one_job ? "" : "  ", set->one_job ? "" : base_name(r->dir));
    if (hl) { /* the attribute off before the newline line() wrote */
        b->len--;
        tpu_buf_puts(b, "\033[0m\n");
    }
}

/* "… 1000 more: 998 running, 2 stalled; steps 120-131; median 9.9ms-10.4ms" */
static void rest_line(tpu_buf *b, const top_set *set, size_t from, int width)
{
    size_t count[4] = {0, 0, 0, 0};
    unsigned long long lo = ~0ull, hi = 0;
    double mlo = INFINITY, mhi = -INFINITY;
    for (size_t i = from; i < set->n; i++) {
        const top_run *r = &set->runs[i];
        count[r->state]++;
        if (r->step < lo) lo = r->step;
        if (r->step > hi) hi = r->step;
        if (!isnan(r->median_step_s)) {
            if (r->median_step_s < mlo) mlo = r->median_step_s;
            if (r->median_step_s > mhi) mhi = r->median_step_s;
        }
    }
    char a[16] = "-", z[16] = "-";
    if (mlo <= mhi) {
        fmt_secs(a, sizeof a, mlo);
        fmt_secs(z, sizeof z, mhi);
    }
    line(b, width, "  ... %zu more: %zu running, %zu stalled, %zu ended%s; steps %llu-%llu; median step %s-%s",
         set->n - from, count[TOP_RUNNING], count[TOP_STALLED], count[TOP_ENDED],
         count[TOP_UNKNOWN] ? ", some unknown" : "", lo, hi, a, z);
}

/* ---- the detail panel ------------------------------------------------------ */

static void sparkline(tpu_buf *b, const top_run *r, int utf8, int max_cols)
{
    static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[8] = {'_', '.', '-', '~', '=', '+', '*', '#'};
    double lo = INFINITY, hi = -INFINITY;
    int from = r->n_times > max_cols ? r->n_times - max_cols : 0;
    for (int i = from; i < r->n_times; i++) {
        lo = r->times[i] < lo ? r->times[i] : lo;
        hi = r->times[i] > hi ? r->times[i] : hi;
    }
    /* at least a quarter of the largest step from bottom to top: jitter of
     * a few percent stays low instead of filling the whole height */
    if (hi - lo < 0.25 * hi)
        lo = 0.75 * hi;
    for (int i = from; i < r->n_times; i++) {
        int k = hi > lo ? (int)((r->times[i] - lo) / (hi - lo) * 7.999) : 0;
        k = k < 0 ? 0 : k > 7 ? 7 : k;
        if (utf8)
            tpu_buf_puts(b, blocks[k]);
        else
            tpu_buf_putc(b, ascii[k]);
    }
}

static void detail(tpu_buf *b, const top_set *set, const top_view *v)
{
    if (v->selected < 0 || (size_t)v->selected >= set->n)
        return;
    const top_run *r = &set->runs[v->selected];
    char who[64], why[200] = "", med[16], lo[16], hi[16];
    snprintf(who, sizeof who, r->rank >= 0 ? "rank %d" : "run", r->rank);
    if (r->reason[0])
        snprintf(why, sizeof why, " (%s)", r->reason);
    tpu_buf_putc(b, '\n');
    line(b, v->width, "%s%s: %s%s, pid %d on %s, %s", who, r->straggler ? " (straggler)" : "",
         top_state_name(r->state), why, r->pid, r->host[0] ? r->host : "?", r->dir);
    if (r->in_zone[0]) {
        char for_s[16];
        fmt_secs(for_s, sizeof for_s, r->in_zone_s);
        line(b, v->width, "  %s: %s (for %s)", r->state == TOP_STALLED ? "now in" : "in, at the last update",
             r->in_zone, for_s);
    }
    double mn = INFINITY, mx = -INFINITY;
    for (int i = 0; i < r->n_times; i++) {
        mn = r->times[i] < mn ? r->times[i] : mn;
        mx = r->times[i] > mx ? r->times[i] : mx;
    }
    fmt_secs(med, sizeof med, r->median_step_s);
    fmt_secs(lo, sizeof lo, r->n_times ? mn : NAN);
    fmt_secs(hi, sizeof hi, r->n_times ? mx : NAN);
    char head[128];
    int n = snprintf(head, sizeof head, "  step time, last %d: min %s  median %s  max %s  ",
                     r->n_times, lo, med, hi);
    int cols = 0;
    put_cols(b, head, &cols, v->width);
    if (v->width - n > 4)
        sparkline(b, r, v->utf8, v->width - n);
    tpu_buf_putc(b, '\n');
    for (int z = 0; z < r->n_zones; z++) {
        char bar[DETAIL_BAR * 3 + 1];
        int fill = (int)(r->zones[z].share * DETAIL_BAR + 0.5), k = 0;
        if (fill > DETAIL_BAR)
            fill = DETAIL_BAR;
        for (int i = 0; i < fill; i++) {
            if (v->utf8) {
                memcpy(bar + k, "\u2588", 3);
                k += 3;
            } else {
                bar[k++] = '#';
            }
        }
        bar[k] = '\0';
        line(b, v->width, "  %-32.32s %6.1f%%  %s", r->zones[z].name, r->zones[z].share * 100, bar);
    }
}

void top_render_text(tpu_buf *b, const top_set *set, const top_view *v)
{
    size_t count[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < set->n; i++)
        count[set->runs[i].state]++;
    char clock[32], strag[64];
    time_t t = time(NULL);
    struct tm tm;
    strftime(clock, sizeof clock, "%H:%M:%S", localtime_r(&t, &tm));
    if (v->interval_s > 0)
        line(b, v->width, "trainprof top - %s - %s, every %gs (arrows choose, q quits)", set->title,
             clock, v->interval_s);
    else
        line(b, v->width, "trainprof top - %s - %s", set->title, clock);
    if (set->one_job && set->straggler >= 0)
        snprintf(strag, sizeof strag, "; straggler: rank %d", set->runs[set->straggler].rank);
    else
        snprintf(strag, sizeof strag, "%s", set->one_job ? "; straggler: none" : "");
    line(b, v->width, "%zu %s: %zu running, %zu stalled, %zu ended%s%s", set->n,
         set->one_job ? "ranks" : "runs", count[TOP_RUNNING], count[TOP_STALLED],
         count[TOP_ENDED], count[TOP_UNKNOWN] ? ", some unknown" : "", strag);
    line(b, v->width, " %5s %-12s %8s %8s %8s %9s %4s  %-19s %6s %6s %7s%s", "RANK", "STATE", "STEP",
         "LAST", "MEDIAN", "SAMPLES/S", "DATA", "TOP ZONE", "RSS", "GPU", "SINCE",
         set->one_job ? "" : "  RUN");
    size_t shown = top_rows_shown(set, v);
    for (size_t i = 0; i < shown; i++)
        row(b, set, i, v);
    if (shown < set->n)
        rest_line(b, set, shown, v->width);
    detail(b, set, v);
}

/* ---- JSON ------------------------------------------------------------------ */

static void kv_num(tpu_json *j, const char *key, double v)
{
    tpu_json_key(j, key);
    if (isnan(v))
        tpu_json_null(j);
    else
        tpu_json_double(j, v);
}

static void kv_int_or_null(tpu_json *j, const char *key, long long v)
{
    tpu_json_key(j, key);
    if (v < 0)
        tpu_json_null(j);
    else
        tpu_json_int(j, v);
}

void top_render_json(tpu_buf *b, const top_set *set)
{
    tpu_json j;
    tpu_json_init(&j, b, 0);
    tpu_json_begin_object(&j);
    tpu_json_key(&j, "runs");
    tpu_json_begin_array(&j);
    for (size_t i = 0; i < set->n; i++) {
        const top_run *r = &set->runs[i];
        tpu_json_begin_object(&j);
        tpu_json_kv_string(&j, "dir", r->dir);
        kv_int_or_null(&j, "rank", r->rank);
        kv_int_or_null(&j, "pid", r->pid);
        tpu_json_kv_string(&j, "state", top_state_name(r->state));
        tpu_json_key(&j, "ended_reason");
        if (r->state == TOP_ENDED || r->state == TOP_UNKNOWN)
            tpu_json_string(&j, r->reason);
        else
            tpu_json_null(&j);
        tpu_json_kv_uint(&j, "step", r->step);
        kv_num(&j, "last_step_s", r->last_step_s);
        kv_num(&j, "median_step_s", r->median_step_s);
        kv_num(&j, "samples_per_s", r->samples_per_s);
        kv_num(&j, "since_step_s", r->since_step_s);
        kv_num(&j, "data_share", r->data_share);
        tpu_json_key(&j, "top");
        tpu_json_begin_array(&j);
        for (int z = 0; z < r->n_zones; z++) {
            tpu_json_begin_object(&j);
            tpu_json_kv_string(&j, "name", r->zones[z].name);
            tpu_json_kv_double(&j, "share", r->zones[z].share);
            tpu_json_end_object(&j);
        }
        tpu_json_end_array(&j);
        tpu_json_key(&j, "in_zone");
        if (r->in_zone[0])
            tpu_json_string(&j, r->in_zone);
        else
            tpu_json_null(&j);
        kv_num(&j, "in_zone_s", r->in_zone_s);
        kv_int_or_null(&j, "rss_bytes", r->have_rss ? (long long)r->rss_bytes : -1);
        kv_int_or_null(&j, "gpu_bytes", r->have_gpu ? (long long)r->gpu_bytes : -1);
        tpu_json_kv_string(&j, "host", r->host);
        tpu_json_end_object(&j);
    }
    tpu_json_end_array(&j);
    tpu_json_key(&j, "straggler");
    if (set->straggler >= 0)
        tpu_json_int(&j, set->runs[set->straggler].rank);
    else
        tpu_json_null(&j);
    tpu_json_end_object(&j);
    tpu_buf_putc(b, '\n');
}
