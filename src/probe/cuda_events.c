/*
 * cuda_events.c - GPU time of zones (TP_GPU_ZONE) from pairs of CUDA
 * events recorded on the zone's stream. The collector resolves them later
 * with cudaEventQuery, which never waits: a pair whose end has not run yet
 * stays queued for the next pass. Pairs come from a bounded pool and are
 * reused; a zone that finds none is counted lost.
 *
 * The CUDA runtime is the one the program loaded (dlopen RTLD_NOLOAD), or
 * TRAINPROF_CUDART_LIB (tests): trainprof never creates a CUDA context.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/gpu.h"
#include "probe/probe_internal.h"

#define CUDA_SUCCESS 0
#define CUDA_NOT_READY 600 /* cudaErrorNotReady */

typedef int cuda_err;
typedef void *cuda_event;

struct tpi_event_pair {
    cuda_event ev[2];
    void *stream;                       /* the zone's stream: both events go there */
    uint32_t name_id;
    uint64_t step;
    tpi_event_pair *next;
};

struct tpi_cuda_events {
    void *lib;
    cuda_err (*create)(cuda_event *, unsigned int);
    cuda_err (*record)(cuda_event, void *);
    cuda_err (*query)(cuda_event);
    cuda_err (*elapsed)(float *, cuda_event, cuda_event);
    cuda_err (*destroy)(cuda_event);
    pthread_mutex_t lock;
    tpi_event_pair *pairs;              /* max_pairs, allocated at open */
    int max_pairs;
    tpi_event_pair *free_list;          /* under lock */
    tpi_event_pair *pend_head, *pend_tail; /* under lock, in end order */
    uint64_t lost;                      /* under lock */
};

static int load(tpi_cuda_events *e)
{
    void *p[5] = {dlsym(e->lib, "cudaEventCreateWithFlags"), dlsym(e->lib, "cudaEventRecord"),
                  dlsym(e->lib, "cudaEventQuery"), dlsym(e->lib, "cudaEventElapsedTime"),
                  dlsym(e->lib, "cudaEventDestroy")};
    for (int i = 0; i < 5; i++)
        if (!p[i])
            return -1;
    memcpy(&e->create, &p[0], sizeof p[0]);
    memcpy(&e->record, &p[1], sizeof p[1]);
    memcpy(&e->query, &p[2], sizeof p[2]);
    memcpy(&e->elapsed, &p[3], sizeof p[3]);
    memcpy(&e->destroy, &p[4], sizeof p[4]);
    return 0;
}

tpi_cuda_events *tpi_cuda_events_open(int max_pairs, char *why, size_t whylen)
{
    void *lib = tpi_cudart_find_runtime(why, whylen);
    if (!lib)
        return NULL;
    tpi_cuda_events *e = calloc(1, sizeof *e);
    if (e)
        e->pairs = calloc((size_t)max_pairs, sizeof *e->pairs);
    if (!e || !e->pairs) {
        snprintf(why, whylen, "out of memory");
    } else if ((e->lib = lib), load(e) != 0) {
        snprintf(why, whylen, "the CUDA runtime lacks the cudaEvent* functions");
    } else {
        pthread_mutex_init(&e->lock, NULL);
        e->max_pairs = max_pairs;
        for (int i = max_pairs - 1; i >= 0; i--) {
            e->pairs[i].next = e->free_list;
            e->free_list = &e->pairs[i];
        }
        return e;
    }
    if (e)
        free(e->pairs);
    free(e);
    dlclose(lib);
    return NULL;
}

static void count_lost(tpi_cuda_events *e)
{
    pthread_mutex_lock(&e->lock);
    e->lost++;
    pthread_mutex_unlock(&e->lock);
}

static void give_back(tpi_cuda_events *e, tpi_event_pair *p)
{
    pthread_mutex_lock(&e->lock);
    p->next = e->free_list;
    e->free_list = p;
    pthread_mutex_unlock(&e->lock);
}

tpi_event_pair *tpi_cuda_events_begin(tpi_cuda_events *e, void *stream, uint32_t name_id)
{
    pthread_mutex_lock(&e->lock);
    tpi_event_pair *p = e->free_list;
    if (p)
        e->free_list = p->next;
    else
        e->lost++;
    pthread_mutex_unlock(&e->lock);
    if (!p)
        return NULL;
    /* events are created on first use, by a thread that uses CUDA */
    for (int i = 0; i < 2; i++) {
        if (!p->ev[i] && e->create(&p->ev[i], 0) != CUDA_SUCCESS) {
            p->ev[i] = NULL;
            give_back(e, p);
            count_lost(e);
            return NULL;
        }
    }
    p->stream = stream;
    p->name_id = name_id;
    if (e->record(p->ev[0], stream) != CUDA_SUCCESS) {
        give_back(e, p);
        count_lost(e);
        return NULL;
    }
    return p;
}

void tpi_cuda_events_end(tpi_cuda_events *e, tpi_event_pair *p, uint64_t step)
{
    if (!p)
        return;
    if (e->record(p->ev[1], p->stream) != CUDA_SUCCESS) {
        give_back(e, p);
        count_lost(e);
        return;
    }
    p->step = step;
    p->next = NULL;
    pthread_mutex_lock(&e->lock);
    if (e->pend_tail)
        e->pend_tail->next = p;
    else
        e->pend_head = p;
    e->pend_tail = p;
    pthread_mutex_unlock(&e->lock);
}

int tpi_cuda_events_poll(tpi_cuda_events *e, tpi_zone_time_fn fn, void *ctx)
{
    if (!e)
        return 0;
    pthread_mutex_lock(&e->lock);
    tpi_event_pair *list = e->pend_head;
    e->pend_head = e->pend_tail = NULL;
    pthread_mutex_unlock(&e->lock);
    tpi_event_pair *keep = NULL, *keep_tail = NULL;
    int pending = 0;
    while (list) {
        tpi_event_pair *p = list;
        list = p->next;
        p->next = NULL;
        cuda_err r = e->query(p->ev[1]);
        float ms = 0;
        if (r == CUDA_NOT_READY) {
            if (keep_tail)
                keep_tail->next = p;
            else
                keep = p;
            keep_tail = p;
            pending++;
            continue;
        }
        if (r == CUDA_SUCCESS && e->elapsed(&ms, p->ev[0], p->ev[1]) == CUDA_SUCCESS && ms >= 0)
            fn(ctx, p->name_id, p->step, (uint64_t)((double)ms * 1e6 + 0.5));
        else
            count_lost(e);
        give_back(e, p);
    }
    if (keep) {
        /* ahead of pairs ended meanwhile: the queue stays in end order */
        pthread_mutex_lock(&e->lock);
        keep_tail->next = e->pend_head;
        e->pend_head = keep;
        if (!e->pend_tail)
            e->pend_tail = keep_tail;
        pthread_mutex_unlock(&e->lock);
    }
    return pending;
}

uint64_t tpi_cuda_events_lost(tpi_cuda_events *e)
{
    if (!e)
        return 0;
    pthread_mutex_lock(&e->lock);
    uint64_t n = e->lost;
    pthread_mutex_unlock(&e->lock);
    return n;
}

void tpi_cuda_events_close(tpi_cuda_events *e)
{
    if (!e)
        return;
    for (tpi_event_pair *p = e->pend_head; p; p = p->next)
        e->lost++;
    for (int i = 0; i < e->max_pairs; i++)
        for (int k = 0; k < 2; k++)
            if (e->pairs[i].ev[k])
                e->destroy(e->pairs[i].ev[k]);
    pthread_mutex_destroy(&e->lock);
    free(e->pairs);
    dlclose(e->lib);
    free(e);
}
