/*
 * flight.c - when the flight recorder writes a capture (see flight.h):
 * a slow step (at its end, on the collector thread), SIGUSR1 (the handler
 * only counts; the collector's next pass writes), a request from any
 * thread (tp_session_capture), and a hang (no step ended for
 * profiling.hang_timeout, checked after every collector pass, so the dump
 * comes within ~20 ms of the timeout plus its own writing).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/collector_internal.h"
#include "core/flight.h"
#include "util/json.h"

#define MIN_HISTORY 5   /* step times needed before a step can be "slow" */
#define MIN_EXCESS_S 0.010 /* and at least this much over the median: a 1 ms
                            * step preempted for 3 ms on a busy machine is no news */

/* ---- SIGUSR1 ---------------------------------------------------------------
 * One handler for the process while a session with captures is open, and
 * only when the program has none (SIGUSR1's default action ends the
 * process: with trainprof it asks for a capture instead). The handler only
 * counts; every session's collector compares the count with what it saw. */
static uint32_t g_sigusr1;            /* atomic */
static pthread_mutex_t g_sig_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_sig_users, g_sig_installed, g_sig_warned;

static void on_sigusr1(int sig)
{
    (void)sig;
    __atomic_fetch_add(&g_sigusr1, 1, __ATOMIC_RELAXED); /* lock-free: safe in a handler */
}

static void signal_use(int add)
{
    pthread_mutex_lock(&g_sig_lock);
    if (add && g_sig_users++ == 0) {
        struct sigaction cur;
        if (sigaction(SIGUSR1, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
            cur.sa_handler == SIG_DFL) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_sigusr1;
            sa.sa_flags = SA_RESTART;
            sigemptyset(&sa.sa_mask);
            g_sig_installed = sigaction(SIGUSR1, &sa, NULL) == 0;
        } else if (!g_sig_warned) {
            g_sig_warned = 1;
            fprintf(stderr, "trainprof: note: the program handles SIGUSR1 itself: captures on "
                            "SIGUSR1 (and `trainprof capture`) are off in this process\n");
        }
    } else if (!add && g_sig_users > 0 && --g_sig_users == 0 && g_sig_installed) {
        struct sigaction cur;
        if (sigaction(SIGUSR1, NULL, &cur) == 0 && cur.sa_handler == on_sigusr1)
            signal(SIGUSR1, SIG_DFL);
        g_sig_installed = 0;
    }
    pthread_mutex_unlock(&g_sig_lock);
}

/* ---- open / close ---------------------------------------------------------- */

tpi_flight *tpi_flight_new(tpi_collector *c)
{
    const tpi_settings *st = &c->s->settings;
    if (!st->capture)
        return NULL;
    tpi_flight *f = calloc(1, sizeof *f);
    /* a quarter of max_buffer_mb (the recorder's pool has its own bound) */
    uint64_t bound = ((uint64_t)(st->max_buffer_mb > 0 ? st->max_buffer_mb : 64) << 20) / 4;
    if (!f || tpi_fl_ring_init(&f->ring, (uint32_t)st->capture_steps, bound) != 0) {
        free(f);
        fprintf(stderr, "trainprof: warning: out of memory: no flight recorder (captures off)\n");
        return NULL;
    }
    f->c = c;
    f->n_steps = (uint32_t)st->capture_steps;
    f->slow_ratio = st->capture_slow_step;
    f->max_captures = st->captures_max;
    f->hang_ns = (uint64_t)st->hang_timeout_ms * 1000000ull;
    f->progress_ns = tpi_mono_ns(); /* the hang timeout counts from the open */
    pthread_mutex_init(&f->lock, NULL);
    f->sig_seen = __atomic_load_n(&g_sigusr1, __ATOMIC_RELAXED);
    tpi_capture_open_index(f);
    signal_use(1);
    return f;
}

void tpi_flight_free(tpi_flight *f, int in_child)
{
    if (!f)
        return;
    signal_use(0);
    if (f->index_open && tpu_json_file_close(&f->index, 0) != 0 && !in_child)
        fprintf(stderr, "trainprof: warning: cannot write %s: %s\n", f->index.path,
                strerror(f->index.err));
    for (int i = 0; i < f->n_req; i++)
        free(f->req[i].detail);
    if (!in_child)
        pthread_mutex_destroy(&f->lock);
    tpu_buf_free(&f->entries);
    tpi_fl_ring_free(&f->ring);
    free(f);
}

/* ---- collector hooks -------------------------------------------------------- */

void tpi_flight_point(tpi_flight *f, int kind, uint32_t tid, uint32_t name_id, uint64_t ts_ns,
                      double value)
{
    tpi_fl_ev *e = tpi_fl_ring_push(&f->ring);
    if (!e)
        return;
    memset(e, 0, sizeof *e);
    e->ts_ns = ts_ns;
    memcpy(&e->u, &value, sizeof value);
    e->name_id = name_id;
    e->tid = tid;
    e->kind = (uint8_t)kind;
}

void tpi_flight_memory(tpi_flight *f, const tpi_mem_sample *m)
{
    tpi_fl_ring_sample(&f->ring, m);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of the kept step times (at most 64: sorted, only when a step is
 * slower than the ratio times the fastest one). */
static double median_time(const tpi_flight *f)
{
    double v[64];
    memcpy(v, f->times, f->n_times * sizeof v[0]);
    qsort(v, f->n_times, sizeof v[0], cmp_double);
    return v[f->n_times / 2];
}

static int capture_budget(tpi_flight *f)
{
    if ((int64_t)f->n_captures < f->max_captures)
        return 1;
    if (!f->max_warned) {
        f->max_warned = 1;
        fprintf(stderr, "trainprof: note: profiling.captures_max (%lld) reached in %s: no more "
                        "captures in this run\n", (long long)f->max_captures, f->c->s->run_dir);
    }
    return 0;
}

/* A capture's trace window: with profiling.torch_ops (and trace) on, the
 * next capture_steps steps are traced too (Python adds torch's operators). */
static void arm_window(tpi_flight *f, uint64_t step)
{
    const tpi_settings *st = &f->c->s->settings;
    if (!st->torch_ops || !st->trace || st->unit != TPI_UNIT_STEP)
        return;
    f->window_until = step + 1 + f->n_steps;
    f->window_capture = f->n_captures;
}

int tpi_flight_wants_window(const tpi_flight *f, uint64_t next_step)
{
    return f && next_step < f->window_until;
}

/* A step inside a trace window (the schedule's or a capture's), or the one
 * right after it (torch.profiler exports there with torch_ops), is slower
 * by the tracing itself: neither checked nor part of the median. */
static int traced(tpi_flight *f, const tpi_step_info *si)
{
    int now = si->phase == TPI_PHASE_WARMUP || si->phase == TPI_PHASE_ACTIVE ||
              si->step < f->window_until;
    int was = f->prev_traced;
    f->prev_traced = now;
    return now || was;
}

static void check_slow(tpi_flight *f, const tpi_step_info *si)
{
    double dt = si->step_time_s;
    if (traced(f, si))
        return;
    if (f->slow_ratio > 0 && f->n_times >= MIN_HISTORY && si->step >= f->quiet_until) {
        double lo = f->times[0];
        for (uint32_t i = 1; i < f->n_times; i++)
            lo = f->times[i] < lo ? f->times[i] : lo;
        double med = dt > (double)f->slow_ratio * lo ? median_time(f) : 0;
        if (med > 0 && dt > (double)f->slow_ratio * med && dt - med >= MIN_EXCESS_S &&
            capture_budget(f)) {
            char detail[256];
            snprintf(detail, sizeof detail,
                     "step %llu took %.6f s: %.1fx the median %.6f s of the %u steps before it "
                     "(profiling.capture_slow_step = %lld)",
                     (unsigned long long)si->step, dt, dt / med, med, f->n_times,
                     (long long)f->slow_ratio);
            if (tpi_capture_write(f, "slow_step", detail, 0) == 0)
                arm_window(f, si->step);
            f->quiet_until = si->step + 1 + f->n_steps; /* one capture for a run of slow steps */
        }
    }
    uint32_t cap = (uint32_t)(sizeof f->times / sizeof f->times[0]);
    if (f->n_times < cap)
        f->times[f->n_times++] = dt;
    else
        f->times[si->step % cap] = dt;
}

void tpi_flight_step_end(tpi_flight *f, const tpi_step_info *si)
{
    for (size_t i = 0; i < si->n_ops; i++) {
        tpi_fl_ev *e = tpi_fl_ring_push(&f->ring);
        if (!e)
            break;
        memset(e, 0, sizeof *e);
        e->kind = TPI_FL_OP;
        e->ts_ns = si->step;
        e->u = si->ops[i].total_ns;
        e->name_id = si->ops[i].name_id;
        e->count = si->ops[i].count > UINT32_MAX ? UINT32_MAX : (uint32_t)si->ops[i].count;
        e->flags = si->ops[i].background ? TPI_FL_BACKGROUND : 0;
    }
    tpi_fl_step row = {si->step, si->epoch, si->batch_idx, si->begin_ns, si->end_ns,
                       si->samples, 0};
    tpi_fl_ring_step_end(&f->ring, &row);
    check_slow(f, si);
}

/* ---- requests, SIGUSR1, hangs ------------------------------------------------ */

static void take_requests(tpi_flight *f)
{
    for (;;) {
        tpi_fl_request r = {{0}, NULL};
        pthread_mutex_lock(&f->lock);
        int have = f->n_req > 0;
        if (have) {
            r = f->req[0];
            memmove(&f->req[0], &f->req[1], (size_t)(f->n_req - 1) * sizeof f->req[0]);
            f->n_req--;
        }
        pthread_mutex_unlock(&f->lock);
        if (!have)
            return;
        if (capture_budget(f) && tpi_capture_write(f, r.reason, r.detail ? r.detail : "", 0) == 0 &&
            strcmp(r.reason, "exception") != 0)
            arm_window(f, f->c->step ? f->c->step - 1 : 0);
        free(r.detail);
    }
}

/* PyTorch's Flight Recorder (collectives of each rank, dumped by the NCCL
 * watchdog): where its dump goes, when it is on. */
static void flight_recorder_note(char *out, size_t n)
{
    const char *size = getenv("TORCH_FR_BUFFER_SIZE");
    if (!size || !*size)
        size = getenv("TORCH_NCCL_TRACE_BUFFER_SIZE"); /* its older name */
    if (!size || !*size || strcmp(size, "0") == 0) {
        out[0] = '\0';
        return;
    }
    const char *file = getenv("TORCH_FR_DUMP_TEMP_FILE");
    if (!file || !*file)
        file = getenv("TORCH_NCCL_DEBUG_INFO_TEMP_FILE");
    snprintf(out, n,
             "; PyTorch Flight Recorder is on (TORCH_FR_BUFFER_SIZE=%s): its dump of the "
             "collectives goes to %s<rank> when the NCCL watchdog times out (read it with "
             "`python -m torch.distributed.flight_recorder.fr_trace`)",
             size, file && *file ? file : "/tmp/nccl_trace_rank_");
}

static void check_hang(tpi_flight *f)
{
    uint64_t n = __atomic_load_n(&f->c->s->steps_ended, __ATOMIC_RELAXED);
    uint64_t now = tpi_mono_ns();
    if (n != f->seen_steps) {
        f->seen_steps = n;
        f->progress_ns = now;
        f->hang_fired = 0;
        return;
    }
    if (!f->hang_ns || f->hang_fired || now - f->progress_ns < f->hang_ns)
        return;
    f->hang_fired = 1; /* once, until a step ends again */
    if (!capture_budget(f))
        return;
    char fr[512], detail[1024];
    flight_recorder_note(fr, sizeof fr);
    snprintf(detail, sizeof detail, "no step ended for %.1f s (%llu steps ended so far)%s",
             (double)(now - f->progress_ns) / 1e9, (unsigned long long)n, fr);
    tpi_capture_write(f, "hang", detail, 1);
}

void tpi_flight_poll(tpi_flight *f)
{
    if (!f)
        return;
    uint32_t sig = __atomic_load_n(&g_sigusr1, __ATOMIC_RELAXED);
    if (sig != f->sig_seen) {
        f->sig_seen = sig;
        if (capture_budget(f) && tpi_capture_write(f, "signal", "SIGUSR1", 0) == 0)
            arm_window(f, f->c->step ? f->c->step - 1 : 0);
    }
    if (__atomic_load_n(&f->n_req, __ATOMIC_RELAXED) > 0)
        take_requests(f);
    check_hang(f);
}

void tpi_flight_close(tpi_flight *f)
{
    if (!f)
        return;
    f->window_until = 0; /* no window after the end */
    take_requests(f);
}

const char *tpi_flight_entries(tpi_flight *f)
{
    return f && f->entries.len && !f->entries.oom ? tpu_buf_cstr(&f->entries) : NULL;
}

/* ---- public API ----------------------------------------------------------------- */

static int reason_ok(const char *r)
{
    size_t n = strlen(r);
    if (n == 0 || n >= sizeof(((tpi_fl_request *)0)->reason))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '_'))
            return 0;
    return 1;
}

int tp_session_capture(tp_session *s, const char *reason, const char *detail)
{
    if (!s || !reason || !reason_ok(reason))
        return TP_ERR_INVALID;
    tpi_flight *f = s->col ? s->col->fl : NULL;
    if (!f || s->dead)
        return TP_ERR_STATE;
    char *copy = NULL;
    if (detail && *detail) {
        size_t n = strnlen(detail, TPI_FL_DETAIL_MAX);
        copy = malloc(n + 1);
        if (copy) {
            memcpy(copy, detail, n);
            copy[n] = '\0';
        }
    }
    int rc = 0;
    pthread_mutex_lock(&f->lock);
    if (f->n_req < TPI_FL_REQUESTS) {
        snprintf(f->req[f->n_req].reason, sizeof f->req[0].reason, "%s", reason);
        f->req[f->n_req].detail = copy;
        __atomic_store_n(&f->n_req, f->n_req + 1, __ATOMIC_RELAXED);
        copy = NULL;
    } else {
        f->req_lost++;
        rc = TP_ERR_STATE;
    }
    pthread_mutex_unlock(&f->lock);
    free(copy);
    __atomic_fetch_add(&s->wake_seq, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&s->wake_cond);
    return rc;
}

void tp_session_set_stack_dumper(tp_session *s, tp_stack_dump_fn fn, void *user)
{
    tpi_flight *f = s && s->col ? s->col->fl : NULL;
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->dumper = fn;
    f->dumper_user = user;
    pthread_mutex_unlock(&f->lock);
}

uint64_t tp_session_captures(const tp_session *s)
{
    const tpi_flight *f = s && s->col ? s->col->fl : NULL;
    return f ? __atomic_load_n(&f->n_captures, __ATOMIC_RELAXED) : 0;
}
