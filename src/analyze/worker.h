/* worker.h - one more thread that runs the job it is handed, one job at a
 * time, while the thread that handed it goes on: the page builder's lane 1
 * (html_build.c) and the attributor's nester (attrib_nest.c). */
#ifndef TRAINPROF_ANALYZE_WORKER_H
#define TRAINPROF_ANALYZE_WORKER_H

typedef struct tpa_worker tpa_worker;

/* A started worker, or NULL when no thread can be had (the caller then
 * runs its jobs itself). */
tpa_worker *tpa_worker_start(void);
/* Hands fn(arg) to the worker and returns; waits first for the job handed
 * before. What the caller wrote before is visible to fn. */
void tpa_worker_post(tpa_worker *w, void (*fn)(void *), void *arg);
/* Waits until the job handed is done (what fn wrote is then visible).
 * NULL: nothing to wait for. */
void tpa_worker_wait(tpa_worker *w);
/* Waits for the job, ends the thread and frees w. NULL: nothing. */
void tpa_worker_stop(tpa_worker *w);

#endif
