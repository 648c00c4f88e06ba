/* tp_session_open / tp_session_close: set-up and tear-down of a session. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/collector_internal.h"
#include "core/gpu_session.h"
#include "core/names.h"
#include "sink/live.h"
#include "util/fileio.h"

static void set_err(tp_error *err, int code, const char *msg)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->code = code;
    snprintf(err->message, sizeof err->message, "%s", msg);
}

/* 1 when k is now one of the session's sinks (else it is destroyed). */
static int add_sink(tp_session *s, tpi_sink *k)
{
    if (!k)
        return 0;
    if (s->n_sinks < TPI_MAX_SINKS) {
        k->env = &s->env;
        s->sinks[s->n_sinks++] = k;
        return 1;
    } else if (k->ops && k->ops->destroy) {
        k->ops->destroy(k);
    }
    return 0;
}

static void open_sinks(tp_session *s)
{
    const tpi_sink_env *e = &s->env;
    add_sink(s, tpi_sink_chrome_json_new(e));
    add_sink(s, tpi_sink_perfetto_new(e));
    add_sink(s, tpi_sink_stacks_new(e));
    add_sink(s, tpi_sink_seed_json_new(e));
    add_sink(s, tpi_sink_memory_json_new(e));
    add_sink(s, tpi_sink_jsonl_new(e));
    add_sink(s, tpi_sink_csv_new(e));
    add_sink(s, tpi_sink_tensorboard_new(e));
    add_sink(s, tpi_sink_console_new(e));
    tpi_live *live = tpi_sink_live_new(e); /* issue 30: written by the collector thread */
    if (add_sink(s, tpi_live_sink(live)))
        s->live = live;
}

static void open_memory(tp_session *s)
{
    const tpi_settings *st = &s->settings;
    if (st->memory || st->profile_memory)
        s->alloc = tpi_alloc_tracker_new();
    if (!st->memory)
        return;
    tp_error perr;
    memset(&perr, 0, sizeof perr);
    s->probes = tpi_probes_open(st, &perr);
    s->mem_summary = tpi_mem_summary_new();
    if (s->probes && st->memory_interval_ms > 0)
        s->sampler = tpi_sampler_start(s->probes, st->memory_interval_ms, tpi_session_sampler_cb, s);
}

/* Frees the session's memory. A fork child never destroys the mutexes and
 * condition variables: they may have had waiters (the parent's collector
 * thread) that do not exist in the child, and pthread_cond_destroy would
 * wait for them forever. */
static void free_session(tp_session *s, int in_fork_child)
{
    for (uint32_t i = 0; i < s->n_tbufs; i++)
        free(s->tbufs[i]);
    tpi_pool_free_chunks(&s->pool);
    if (!in_fork_child) {
        pthread_mutex_destroy(&s->pool.lock);
        pthread_mutex_destroy(&s->reg_lock);
        pthread_mutex_destroy(&s->wake_lock);
        pthread_cond_destroy(&s->wake_cond);
        pthread_mutex_destroy(&s->sample_lock);
        pthread_mutex_destroy(&s->stats_lock);
        pthread_mutex_destroy(&s->col_lock);
    }
    free(s->samples);
    free(s);
}

/* Trace files are <run_dir>/profiler_traces/<stem>.<ext>, with the stem
 * expanded from profiling.trace_filename. Refuse, before anything is
 * recorded, a configuration whose paths would not fit, rather than cut them
 * (a cut stem can lose {step}/{time_ns} and make windows overwrite each
 * other). The widest step and time values are used for the check. */
static int check_trace_paths(const tp_session *s, int rank, tp_error *err)
{
    char stem[512];
    tpi_trace_stem(&s->settings, stem, sizeof stem, s->host, s->pid, rank, UINT64_MAX,
                   UINT64_MAX);
    size_t stem_len = strlen(stem);
    size_t path_len = strlen(s->run_dir) + strlen("/profiler_traces/") + stem_len +
                      strlen(".native.stacks.txt");
    if (stem_len + 1 < sizeof stem && path_len < sizeof(((tpi_window *)0)->stem) - 8)
        return 0;
    if (err) {
        memset(err, 0, sizeof *err);
        err->code = TP_ERR_BAD_VALUE;
        snprintf(err->message, sizeof err->message,
                 "trace file paths would be too long (%zu bytes; at most %zu): use a shorter "
                 "profiling.log_dir, profiling.name or profiling.trace_filename (run directory "
                 "'%.300s')",
                 path_len, sizeof(((tpi_window *)0)->stem) - 9, s->run_dir);
    }
    return -1;
}

static int init_session(tp_session *s, const tpi_settings *st, tp_error *err)
{
    s->settings = *st;
    s->pid = (int)getpid();
    s->opener_tid = tpi_os_tid();
    tpu_hostname(s->host, sizeof s->host);
    tpi_job_detect(st, &s->job);
    int rank = s->job.rank;
    if (tpi_rundir_create(st, rank, s->run_dir, sizeof s->run_dir, err) != 0)
        return -1;
    if (st->trace && check_trace_paths(s, rank, err) != 0) {
        rmdir(s->run_dir); /* created just now and still empty */
        return -1;
    }
    const tpi_clock_info *ck = tpi_clock_get();
    s->ns_per_tick = ck->ns_per_tick;
    uint64_t mb = st->max_buffer_mb > 0 ? (uint64_t)st->max_buffer_mb : 64;
    tpi_pool_init(&s->pool, mb << 20);
    s->pool.low_cb = tpi_session_pool_low;
    s->pool.low_ctx = s;
    tpi_pool_top_up(&s->pool); /* the first chunks ready before the first event */
    pthread_mutex_init(&s->reg_lock, NULL);
    pthread_mutex_init(&s->wake_lock, NULL);
    pthread_cond_init(&s->wake_cond, NULL);
    pthread_mutex_init(&s->sample_lock, NULL);
    pthread_mutex_init(&s->stats_lock, NULL);
    pthread_mutex_init(&s->col_lock, NULL);
    s->env.settings = &s->settings;
    s->env.run_dir = s->run_dir;
    s->env.host = s->host;
    s->env.pid = s->pid;
    s->env.rank = rank;
    s->base_ticks = tpi_ticks();
    s->env.mono_base_ns = tpi_mono_ns();
    s->env.wall_base_ns = tpi_wall_ns();
    s->env.job = &s->job;
    struct stat rd;
    if (stat(s->run_dir, &rd) == 0) {
        s->env.run_dir_dev = (uint64_t)rd.st_dev;
        s->env.run_dir_ino = (uint64_t)rd.st_ino;
    }
    tpi_job_open(s);
    return 0;
}

/* profiling.ranks: does this process profile? */
static int rank_selected(const tpi_settings *st)
{
    int selected = 1;
    tpi_ranks_select(st->ranks, tpi_detect_rank(st), &selected);
    return selected;
}

/* config.json: every key's value and where it came from. A failure is a
 * warning: profiling goes on without it. */
static void write_effective_config(const tp_config *cfg, const char *run_dir)
{
    tp_error e;
    if (tpi_config_write_json(cfg, run_dir, &e) != 0)
        fprintf(stderr, "trainprof: warning: %s\n", e.message);
}

tp_session *tp_session_open(const tp_config *cfg, tp_error *err)
{
    tp_config *own = NULL;
    if (err)
        memset(err, 0, sizeof *err);
    if (!cfg) {
        own = tp_config_new();
        if (!own) {
            set_err(err, TP_ERR_NOMEM, "out of memory");
            return NULL;
        }
        if (tp_config_load_env(own, err) != 0) {
            tp_config_free(own);
            return NULL;
        }
        cfg = own;
    }
    const tpi_settings *st = tpi_config_settings(cfg);
    if (st && st->enabled && !rank_selected(st)) {
        tp_config_free(own);
        return NULL; /* profiling.ranks leaves this rank out: off, err->code stays TP_OK */
    }
    if (!st || !st->enabled) {
        if (!st)
            set_err(err, TP_ERR_INVALID, "invalid configuration");
        tp_config_free(own);
        return NULL; /* profiling off: err->code stays TP_OK */
    }
    tpi_clock_init();
    tp_session *s = tpi_aligned_zalloc(sizeof *s);
    if (!s) {
        tp_config_free(own);
        set_err(err, TP_ERR_NOMEM, "out of memory");
        return NULL;
    }
    int rc = init_session(s, st, err);
    if (rc == 0)
        write_effective_config(cfg, s->run_dir);
    tp_config_free(own);
    if (rc != 0) {
        if (err && err->code == TP_OK)
            set_err(err, TP_ERR_IO, "cannot create the run directory");
        free(s);
        return NULL;
    }
    tpi_session_live(s, 1);
    s->col = tpi_collector_new(s);
    open_memory(s);
    open_sinks(s);
    s->gpu = tpi_gpu_open(s);
    if (!s->col) {
        set_err(err, TP_ERR_NOMEM, "out of memory");
        tp_session_close(s, NULL);
        return NULL;
    }
    tpi_col_update_window(s->col, 0); /* step 0 may be active */
    if (pthread_create(&s->thread, NULL, tpi_session_collector_main, s) == 0)
        s->thread_started = 1;
    return s;
}

/* Frees every chunk still linked to a thread buffer: the chunk the
 * collector was reading and its successors, or the whole chain of a buffer
 * it never read (chunks already drained are in the pool's free list). Only
 * once the collector has stopped and the last drain is done. No pool lock:
 * in a fork child it may be held by a thread that no longer exists. */
static void release_chunks(tp_session *s)
{
    for (uint32_t i = 0; i < s->n_tbufs; i++) {
        tpi_chunk *ch = s->tbufs[i]->first;
        if (s->col && i < s->col->n_th && s->col->th[i]->cur.chunk)
            ch = s->col->th[i]->cur.chunk;
        while (ch) {
            tpi_chunk *next = ch->next;
            free(ch);
            ch = next;
        }
        s->tbufs[i]->first = s->tbufs[i]->cur = NULL;
        s->tbufs[i]->pos = s->tbufs[i]->cap = 0;
    }
}

/* A fork child's copy: release the core's memory only, write nothing. The
 * sinks are left alone: destroying them would close (gzip) streams whose
 * state belongs to the parent's files. */
static int close_in_child(tp_session *s)
{
    release_chunks(s);
    tpi_collector_free(s->col);
    return 0;
}

/* Whether the run directory's disk is (nearly) full: under 4 MiB left. */
static int disk_full(const char *dir)
{
    struct statvfs v;
    return statvfs(dir, &v) == 0 && (uint64_t)v.f_bavail * v.f_frsize < (4u << 20);
}

/* report.html, read from the run directory's files once they are complete.
 * A failure is a warning and one more I/O error; the rest of close goes on.
 * On a full disk the page is only a warning: it is derived from files that
 * are all written (the summaries had the reserve), like the trace window
 * that stopped and counted its drops, and it can be made later. */
static uint64_t write_html_report(const tp_session *s)
{
    char out[1200];
    tp_error e = { .message = "run directory path too long" };
    if (!s->settings.html_report || !s->run_dir[0]) return 0;
    if (tpu_path_join(out, sizeof out, s->run_dir, "report.html") == 0 &&
        tp_report_html(s->run_dir, out, &e) == 0)
        return 0;
    fprintf(stderr, "trainprof: warning: report.html not written in %s: %s\n", s->run_dir, e.message);
    if (e.code == TP_ERR_IO && disk_full(s->run_dir)) {
        fprintf(stderr, "trainprof: the disk is full; make the page later with "
                        "`trainprof report --html OUT.html %s`\n", s->run_dir);
        return 0;
    }
    return 1;
}

/* Every loss said once at close, whatever the metrics setting: events and
 * steps dropped with the buffers full (the summary counts them:
 * dropped_events, dropped_steps), and a run directory removed during the
 * run (one more I/O error when nothing else failed, so close fails). */
static uint64_t report_losses(tp_session *s, uint64_t io)
{
    pthread_mutex_lock(&s->stats_lock);
    uint64_t dropped = s->stats.events_dropped, timed = s->stats.steps;
    pthread_mutex_unlock(&s->stats_lock);
    uint64_t called = tp_session_steps(s);
    if (dropped)
        fprintf(stderr, "trainprof: warning: %llu event(s) dropped: the recording buffers were full "
                "(profiling.max_buffer_mb); %llu of %llu step(s) are in no step statistic\n",
                (unsigned long long)dropped, (unsigned long long)(called > timed ? called - timed : 0),
                (unsigned long long)called);
    if (!tpi_sink_run_dir_gone(&s->env))
        return 0;
    fprintf(stderr, "trainprof: warning: the run directory %s was removed during the run: its files "
            "are lost\n", s->run_dir);
    return io ? 0 : 1;
}

int tp_session_close(tp_session *s, tp_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!s)
        return 0;
    if (s->dead) {
        close_in_child(s);
        free_session(s, 1);
        return 0;
    }
    uint64_t end = tpi_ticks();
    if (s->sampler)
        tpi_sampler_stop(s->sampler);
    if (s->thread_started) {
        __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
        pthread_mutex_lock(&s->wake_lock);
        pthread_cond_signal(&s->wake_cond);
        pthread_mutex_unlock(&s->wake_lock);
        pthread_join(s->thread, NULL);
    }
    int rc = 0;
    if (s->col) {
        tpi_collector_samples(s->col);
        tpi_collector_drain(s->col, UINT64_MAX);
        tpi_flight_close(s->col->fl); /* captures still asked for (an exception) */
        rc = tpi_collector_finish(s->col, end);
    }
    uint64_t io = 0;
    for (int i = 0; i < s->n_sinks; i++) {
        tpi_sink *k = s->sinks[i];
        io += k->io_errors;
        if (k->ops->destroy)
            k->ops->destroy(k);
    }
    io += write_html_report(s);
    if (s->col)
        io += s->col->lost_traces;
    io += report_losses(s, io);
    if (rc != 0 || io) {
        rc = TP_ERR_IO; /* returned with or without err */
        if (err) {
            err->code = TP_ERR_IO;
            snprintf(err->message, sizeof err->message,
                     "%llu write error(s) in %.600s (see warnings above)",
                     (unsigned long long)io, s->run_dir);
        }
    }
    release_chunks(s);
    tpi_collector_free(s->col);
    tpi_probes_close(s->probes);
    tpi_gpu_close(s->gpu);
    tpi_mem_summary_free(s->mem_summary);
    tpi_alloc_tracker_free(s->alloc);
    tpi_session_live(s, 0);
    free_session(s, 0);
    return rc;
}
