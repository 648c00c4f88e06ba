/* worker.c - one more thread, its jobs in a ring (worker.h). */
#include "util/worker.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct tpu_worker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct { void (*fn)(void *); void *arg; } jobs[TPU_WORKER_QUEUE];
    uint64_t posted, done;      /* jobs[n % TPU_WORKER_QUEUE] is the n-th */
    uint64_t depth;
    bool quit;
};

static void *worker_main(void *arg)
{
    tpu_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->done == w->posted && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
        if (w->done == w->posted) break;
        void (*fn)(void *) = w->jobs[w->done % TPU_WORKER_QUEUE].fn;
        void *arg = w->jobs[w->done % TPU_WORKER_QUEUE].arg;
        pthread_mutex_unlock(&w->mu);
        fn(arg);
        pthread_mutex_lock(&w->mu);
        w->done++;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

tpu_worker *tpu_worker_start(int depth)
{
    tpu_worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->depth = depth < 1 ? 1 : depth > TPU_WORKER_QUEUE ? TPU_WORKER_QUEUE : (uint64_t)depth;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        return NULL;
    }
    return w;
}

void tpu_worker_wait(tpu_worker *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    while (w->done != w->posted) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void tpu_worker_post(tpu_worker *w, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&w->mu);
    while (w->posted - w->done >= w->depth) pthread_cond_wait(&w->cv, &w->mu);
    w->jobs[w->posted % TPU_WORKER_QUEUE].fn = fn;
    w->jobs[w->posted % TPU_WORKER_QUEUE].arg = arg;
    w->posted++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void tpu_worker_stop(tpu_worker *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->quit = true;  /* the jobs handed still run first */
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
