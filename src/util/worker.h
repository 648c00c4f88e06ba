/* worker.h - one more thread that runs the jobs it is handed, in order, one
 * at a time, while the thread that handed them goes on: the page builder's
 * lane 1 (html_build.c) and the attributor's nester (attrib_nest.c). */
#ifndef TRAINPROF_UTIL_WORKER_H
#define TRAINPROF_UTIL_WORKER_H

typedef struct tpu_worker tpu_worker;

/* The most jobs a worker can hold handed and not done. */
#define TPU_WORKER_QUEUE 8

/* A started worker that holds up to depth jobs handed and not done (1 to
 * TPU_WORKER_QUEUE), or NULL when no thread can be had (the caller then
 * runs its jobs itself). */
tpu_worker *tpu_worker_start(int depth);
/* Queues fn(arg) behind the jobs handed before and returns; waits first
 * while depth jobs are not done. What the caller wrote before
 * is visible to fn. */
void tpu_worker_post(tpu_worker *w, void (*fn)(void *), void *arg);
/* Waits until every job handed is done (what they wrote is then
 * visible). NULL: nothing to wait for. */
void tpu_worker_wait(tpu_worker *w);
/* Waits for the jobs, ends the thread and frees w. NULL: nothing. */
void tpu_worker_stop(tpu_worker *w);

#endif
