/*
 * sampler.c - background memory sampler: one thread that takes a sample
 * every interval_ms and hands it to a callback. It blocks every signal (the
 * host's handlers keep running on the host's threads) and sleeps on a
 * condition variable, so stopping it is immediate.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe/probe.h"

struct tpi_sampler {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
    int64_t interval_ms;
    tpi_probe_set *probes;
    tpi_sample_fn fn;
    void *ctx;
    tpi_mem_sample sample; /* large: kept off the thread's stack */
};

static void add_ms(struct timespec *t, int64_t ms)
{
    t->tv_sec += (time_t)(ms / 1000);
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

static void *sampler_main(void *arg)
{
    tpi_sampler *s = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        add_ms(&next, s->interval_ms);
        while (!s->stop && pthread_cond_timedwait(&s->cond, &s->lock, &next) == 0) {
        }
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->lock);
        tpi_probes_sample(s->probes, &s->sample);
        s->fn(s->ctx, &s->sample);
        pthread_mutex_lock(&s->lock);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec + 1) /* fell far behind (suspended): no burst */
            next = now;
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

tpi_sampler *tpi_sampler_start(tpi_probe_set *p, int64_t interval_ms, tpi_sample_fn fn, void *ctx)
{
    if (!p || !fn || interval_ms <= 0)
        return NULL;
    tpi_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->interval_ms = interval_ms;
    s->probes = p;
    s->fn = fn;
    s->ctx = ctx;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->lock, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, sampler_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        fprintf(stderr, "trainprof: warning: cannot start the memory sampler thread: %s "
                "(background samples off)\n", strerror(rc));
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
#if defined(__GLIBC__)
    pthread_setname_np(s->thread, "tp-sampler");
#endif
    return s;
}

void tpi_sampler_stop(tpi_sampler *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
