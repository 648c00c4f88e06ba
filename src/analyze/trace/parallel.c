/* parallel.c - one window of traceEvents parsed by several threads (see
 * parallel.h for why the events come out exactly as the sequential
 * reader's). Threads are started per window: a window is megabytes, so
 * their start costs nothing next to the parse, and no pool outlives it. */
#include "analyze/trace/parallel.h"
#include "analyze/trace/split.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef TP_SMALL_LIMITS
#define PER_JOB_BYTES ((size_t)16 << 10)   /* small windows: many cuts (tests pick tinier ones) */
#define MIN_RANGE_BYTES ((size_t)512)
#else
#define PER_JOB_BYTES ((size_t)1 << 20)
#define MIN_RANGE_BYTES ((size_t)256 << 10) /* below this a thread costs more than it saves */
#endif
#define MAX_WINDOW_BYTES ((size_t)4 << 20)   /* bounds memory for any -j */
/* Threads on one file: the analyses take its events one by one in file
 * order, and with four threads parsing they are what the time waits for. */
#define MAX_FILE_THREADS 4
#define MIN_WINDOW_BYTES ((size_t)64 << 10)
/* Parsed events take 224 bytes each, more than small events' text: the
 * window shrinks so that one batch's events stay near this. */
#define EVENTS_BUDGET_BYTES ((size_t)3 << 20)

static int g_jobs = 1;
static size_t g_per_job = PER_JOB_BYTES, g_min_range = MIN_RANGE_BYTES;

void tpa_batch_set_window(size_t per_job, size_t min_range)
{
    g_per_job = per_job ? per_job : PER_JOB_BYTES;
    g_min_range = min_range ? min_range : MIN_RANGE_BYTES;
}

void tpa_set_jobs(int n) { g_jobs = n < 1 ? 1 : n > TPA_MAX_JOBS ? TPA_MAX_JOBS : n; }
int tpa_jobs(void) { return g_jobs; }

typedef struct range_task {
    tpa_range_out *out;
    const char *lo, *start, *limit, *end;
    int st;
} range_task;

struct tpa_batch {
    int jobs;
    tpa_range_out *outs;
    range_task *tasks;
    pthread_t threads[TPA_MAX_JOBS];
    bool started[TPA_MAX_JOBS];
    bool running;        /* started, not yet waited for */
    int n_ranges, n_proven;
    int cur;             /* range being handed out */
    size_t cur_ev;
    uint64_t non_objects;
    uint64_t seen_bytes, seen_events;  /* proven so far: the mean event size */
};

tpa_batch *tpa_batch_new(int jobs)
{
    tpa_batch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->jobs = jobs < MAX_FILE_THREADS ? jobs : MAX_FILE_THREADS;
    jobs = b->jobs;
    b->outs = calloc((size_t)jobs, sizeof *b->outs);
    b->tasks = calloc((size_t)jobs, sizeof *b->tasks);
    if (!b->outs || !b->tasks) { tpa_batch_free(b); return NULL; }
    return b;
}

void tpa_batch_free(tpa_batch *b)
{
    if (!b) return;
    if (b->running) tpa_batch_wait(b);
    for (int i = 0; b->outs && i < b->jobs; i++) tpa_range_out_free(&b->outs[i]);
    free(b->outs);
    free(b->tasks);
    free(b);
}

size_t tpa_batch_window(const tpa_batch *b)
{
    size_t w = g_per_job * (size_t)b->jobs;
    if (w > MAX_WINDOW_BYTES) w = MAX_WINDOW_BYTES;
    if (b->seen_events) {
        uint64_t fit = EVENTS_BUDGET_BYTES / sizeof(tpa_event) * (b->seen_bytes / b->seen_events);
        if (fit < w) w = fit > MIN_WINDOW_BYTES ? (size_t)fit : MIN_WINDOW_BYTES;
    }
    return w;
}

static void *run_task(void *arg)
{
    range_task *t = arg;
    tpa_range_parse(t->out, t->lo, t->start, t->st, t->limit, t->end);
    return NULL;
}

/* Guessed cuts at even spacing; a stretch without a plausible cut merges
 * into the range before it. */
static int plan_ranges(tpa_batch *b, const char *lo, const char *p, int st, const char *end)
{
    size_t len = (size_t)(end - p);
    int n = b->jobs;
    if ((size_t)n > len / g_min_range) n = (int)(len / g_min_range);
    if (n < 1) n = 1;
    int k = 0;
    b->tasks[0] = (range_task){ &b->outs[0], lo, p, NULL, end, st };
    for (int i = 1; i < n; i++) {
        const char *from = p + len / (size_t)n * (size_t)i;
        const char *to = p + len / (size_t)n * (size_t)(i + 1);
        if (from <= b->tasks[k].start) from = b->tasks[k].start + 1;
        const char *cut = tpa_split_guess(lo, from, to);
        if (!cut) continue;
        b->tasks[k].limit = cut;
        k++;
        b->tasks[k] = (range_task){ &b->outs[k], lo, cut, NULL, end, TPA_RS_ELEM };
    }
    return k + 1;
}

/* Each range's event array sized to what its bytes should hold (the mean
 * event size so far), so no array doubles past what it needs. */
static void reserve_events(tpa_batch *b, const char *end)
{
    if (!b->seen_events) return;
    uint64_t mean = b->seen_bytes / b->seen_events + 1;
    for (int i = 0; i < b->n_ranges; i++) {
        const char *stop = b->tasks[i].limit ? b->tasks[i].limit : end;
        tpa_range_reserve(b->tasks[i].out, (size_t)((uint64_t)(stop - b->tasks[i].start) / mean * 9 / 8) + 64);
    }
}

/* Ranges count while each one before ran exactly into the next one's start. */
static int proven_ranges(const tpa_batch *b)
{
    int k = 0;
    while (k + 1 < b->n_ranges) {
        const tpa_range_out *o = &b->outs[k];
        if (o->oom || o->stop != TPA_STOP_LIMIT || o->next_start != b->tasks[k + 1].start) break;
        k++;
    }
    return k + 1;
}

void tpa_batch_start(tpa_batch *b, const char *lo, const char *p, int st, const char *end)
{
    b->n_ranges = plan_ranges(b, lo, p, st, end);
    reserve_events(b, end);
    for (int i = 0; i < b->n_ranges; i++)
        b->started[i] = pthread_create(&b->threads[i], NULL, run_task, &b->tasks[i]) == 0;
    b->running = true;
}

void tpa_batch_wait(tpa_batch *b)
{
    for (int i = 0; i < b->n_ranges; i++) {
        if (b->started[i]) pthread_join(b->threads[i], NULL);
        else run_task(&b->tasks[i]);  /* no thread to be had: parse it here */
    }
    b->running = false;
    b->n_proven = proven_ranges(b);
    b->non_objects = 0;
    for (int i = 0; i < b->n_proven; i++) {
        b->non_objects += b->outs[i].non_objects;
        b->seen_events += b->outs[i].n;
        b->seen_bytes += (uint64_t)(b->outs[i].last_good - b->tasks[i].start);
    }
    b->cur = 0;
    b->cur_ev = 0;
}

void tpa_batch_parse(tpa_batch *b, const char *lo, const char *p, int st, const char *end)
{
    b->n_ranges = plan_ranges(b, lo, p, st, end);
    reserve_events(b, end);
    for (int i = 1; i < b->n_ranges; i++)
        b->started[i] = pthread_create(&b->threads[i], NULL, run_task, &b->tasks[i]) == 0;
    b->started[0] = false;  /* the calling thread takes the first range */
    b->running = true;
    tpa_batch_wait(b);
}

bool tpa_batch_has_next(tpa_batch *b)
{
    while (b->cur < b->n_proven && b->cur_ev >= b->outs[b->cur].n) {  /* past used-up ranges */
        b->cur++;
        b->cur_ev = 0;
    }
    return b->cur < b->n_proven;
}

tpa_event *tpa_batch_next_run(tpa_batch *b, size_t max, size_t *n)
{
    if (!tpa_batch_has_next(b)) {
        *n = 0;
        return NULL;
    }
    tpa_range_out *o = &b->outs[b->cur];
    size_t k = o->n - b->cur_ev < max ? o->n - b->cur_ev : max;
    tpa_event *run = &o->evs[b->cur_ev];
    b->cur_ev += k;
    *n = k;
    return run;
}

const tpa_event *tpa_batch_next(tpa_batch *b)
{
    size_t n;
    return tpa_batch_next_run(b, 1, &n);
}

uint64_t tpa_batch_non_objects(const tpa_batch *b) { return b->non_objects; }

const char *tpa_batch_resume(const tpa_batch *b, int *st)
{
    const tpa_range_out *o = &b->outs[b->n_proven - 1];
    *st = o->last_state;
    return o->last_good;
}
