/*
 * session_internal.h - the tp_session object shared by the hot path
 * (session.c), the collector (collector.c, step.c) and the memory glue.
 */
#ifndef TP_CORE_SESSION_INTERNAL_H
#define TP_CORE_SESSION_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "core/recorder.h"
#include "sink/sink.h"
#include "trainprof.h"

#define TPI_MAX_SINKS 16
#define TPI_SAMPLE_QUEUE 32

typedef struct tpi_collector tpi_collector;

/* Allocated with tpi_aligned_zalloc. The first cache lines hold what the
 * hot path reads (never written after open, except `gen`/`dead` by fork);
 * fields written while recording are grouped by writer, each group on its
 * own cache line, so no event store invalidates a line another thread
 * reads per event. */
struct tp_session {
    /* read by every event, written only at open / after fork */
    TPI_LINE uint64_t gen;        /* matches a thread's TLS generation */
    int dead;                     /* fork child: record nothing, write nothing */
    int pid;
    uint32_t opener_tid;
    tpi_settings settings;
    char run_dir[1024];
    char job_dir[1024];           /* "" unless one rank of a job (job.c) */
    tpi_job_info job;
    uint64_t sync_seq;            /* tp_session_sync calls (job.c) */
    char host[256];
    tpi_sink_env env;
    uint64_t base_ticks;          /* tick count at ts_ns == 0 */
    double ns_per_tick;

    tpi_pool pool;                /* own cache lines (TPI_LINE inside) */

    /* thread registration (once per thread) */
    TPI_LINE pthread_mutex_t reg_lock;
    uint32_t n_tbufs;             /* atomic */
    uint64_t dropped_unregistered;/* atomic: threads over TPI_MAX_THREADS */
    tpi_tbuf *tbufs[TPI_MAX_THREADS];

    /* written by the stepping thread once per step */
    TPI_LINE uint64_t steps_ended;/* atomic */
    uint64_t wake_seq;            /* atomic */

    /* collector thread */
    TPI_LINE pthread_t thread;
    int thread_started;
    int wake_each_step;           /* atomic: 1 while a trace window is open */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cond;
    int stop;                     /* atomic */
    tpi_collector *col;
    /* held by whoever drains: the collector thread, or a thread reading
     * the statistics (tp_session_operations) */
    pthread_mutex_t col_lock;

    tpi_sink *sinks[TPI_MAX_SINKS];
    int n_sinks;
    struct tpi_live *live;        /* live.json (sink/live.h), also in sinks; NULL when off */

    /* memory */
    tpi_probe_set *probes;
    tpi_sampler *sampler;
    tpi_mem_summary *mem_summary;
    tpi_alloc_tracker *alloc;
    struct tpi_gpu *gpu;          /* CUPTI + GPU zones (core/gpu_session.c), NULL when out of memory */
    pthread_mutex_t sample_lock;
    tpi_mem_sample *samples;      /* ring of TPI_SAMPLE_QUEUE, lazily allocated */
    unsigned sample_head, sample_count;
    uint64_t samples_lost;

    /* snapshot for tp_session_get_stats, written by the collector */
    TPI_LINE pthread_mutex_t stats_lock;
    tp_session_stats stats;
};

/* session time (ns since ts 0) of a tick value */
static inline uint64_t tpi_session_ns(const tp_session *s, uint64_t ticks)
{
    if (ticks <= s->base_ticks)
        return 0;
    return (uint64_t)((double)(ticks - s->base_ticks) * s->ns_per_tick + 0.5);
}

/* collector.c */
tpi_collector *tpi_collector_new(tp_session *s);
void tpi_collector_free(tpi_collector *c);
/* Processes every record with ts <= limit_ticks (UINT64_MAX: everything). */
void tpi_collector_drain(tpi_collector *c, uint64_t limit_ticks);
/* Takes queued memory samples and delivers them. */
void tpi_collector_samples(tpi_collector *c);
/* End of session: closes open zones and the window, writes summaries. */
int tpi_collector_finish(tpi_collector *c, uint64_t end_ticks);
void tpi_collector_publish_stats(tpi_collector *c);

/* job.c: for a rank of a named job, sets job_dir and writes job.json
 * when this rank is the first to arrive. */
void tpi_job_open(tp_session *s);

/* live_zone.c: under the collector lock, on the collector thread: formats
 * live.json when it is due (sink/live.h), with the stepping thread's open
 * zones; 1 when tpi_live_write has something to write. */
int tpi_session_live_prepare(tp_session *s, uint64_t now_mono);

/* session.c: queue a sample for the collector (any thread). */
void tpi_session_queue_sample(tp_session *s, const tpi_mem_sample *m);
/* Pops one queued sample; 0 when none. */
int tpi_session_pop_sample(tp_session *s, tpi_mem_sample *out);

/* session.c */
void tpi_session_live(tp_session *s, int add); /* fork guard + generation */
void *tpi_session_collector_main(void *arg);
void tpi_session_sampler_cb(void *ctx, tpi_mem_sample *m);
void tpi_session_pool_low(void *ctx); /* tpi_pool.low_cb */
uint32_t tpi_os_tid(void);

#endif
