/*
 * flight.h - the always-on flight recorder (issue 34, docs/CAPTURES.md).
 *
 * The collector keeps the events it processes from the last
 * profiling.capture_steps steps in a bounded ring (flight_ring.c), in a
 * compact form (32 bytes an event, no text), whether or not a trace window
 * is open. A capture writes the ring into <run_dir>/captures/ (capture.c)
 * and appends an entry to <run_dir>/captures.json, when a step is slow, on
 * SIGUSR1, on request (tp_session_capture: an exception in Python) and when
 * no step ends for profiling.hang_timeout (flight.c). Everything here runs
 * on the collector thread (or the closing thread after it stopped), except
 * tp_session_capture and the signal handler, which only queue a request.
 */
#ifndef TP_CORE_FLIGHT_H
#define TP_CORE_FLIGHT_H

#include <pthread.h>
#include <stdint.h>

#include "probe/probe.h"
#include "util/buf.h"
#include "util/json_file.h"

/* ---- the ring (flight_ring.c) -------------------------------------------- */

enum { TPI_FL_SLICE = 1, TPI_FL_COUNTER = 2, TPI_FL_INSTANT = 3, TPI_FL_OP = 4 };
#define TPI_FL_UNTERMINATED 1 /* flags: a slice closed by trainprof */
#define TPI_FL_BACKGROUND 2   /* flags: an op row of another thread than the stepping one */

/* One event as the collector saw it. */
typedef struct tpi_fl_ev {
    uint64_t ts_ns;   /* SLICE: begin; COUNTER, INSTANT: time; OP: its step */
    uint64_t u;       /* SLICE: duration; COUNTER: the double's bits; OP: total ns */
    uint32_t name_id;
    uint32_t tid;     /* OS thread id */
    uint32_t count;   /* OP: zones of the op in its step (saturated) */
    uint8_t kind, depth, flags, pad;
} tpi_fl_ev;

/* One step's row (scalars: its op rows are TPI_FL_OP events). */
typedef struct tpi_fl_step {
    uint64_t step, epoch, batch_idx, begin_ns, end_ns, samples;
    uint64_t ev_begin; /* ring position where the step's events begin */
} tpi_fl_step;

/* Events live at positions tail..head-1 (positions only grow). They are
 * stored in blocks of TPI_FL_BLOCK events, allocated as the ring first
 * needs them and reused after: position p is in block (p / TPI_FL_BLOCK) %
 * n_blocks. A push inside a block is one store of the position; the
 * collector never copies events; blocks the tail has passed go back (two
 * kept spare), so memory follows what the last steps hold. The ring keeps the events since the
 * beginning of the oldest of the last n_steps steps, plus the step in
 * progress; when the blocks are all in use first (max_bytes), the oldest
 * events go (counted in dropped). */
#define TPI_FL_BLOCK_SHIFT 10
#define TPI_FL_BLOCK (1u << TPI_FL_BLOCK_SHIFT) /* events per block (32 KB) */
typedef struct tpi_fl_ring {
    tpi_fl_ev **blocks;           /* n_blocks, a power of two (>= 2); NULL until used */
    uint64_t n_blocks, max_events;/* max_events = n_blocks * TPI_FL_BLOCK */
    uint64_t n_allocated;         /* blocks allocated (in use and spare) */
    tpi_fl_ev *spare[2];          /* blocks the tail passed, for the next ones */
    tpi_fl_ev *cur;               /* the block of position head (when head % TPI_FL_BLOCK != 0) */
    uint64_t head, tail, dropped;
    uint64_t step_begin;          /* position where the step in progress began */
    uint32_t n_steps;
    tpi_fl_step *rows;            /* n_steps rows, a ring: rows_done % n_steps is next */
    uint64_t rows_done;
    tpi_mem_sample *mem;          /* n_mem samples, a ring (allocated on the first) */
    uint32_t n_mem;
    uint64_t mem_done;
} tpi_fl_ring;

/* n_steps >= 1; max_bytes bounds the whole ring (events, rows, samples;
 * at least two blocks). 0, or -1 when out of memory. */
int tpi_fl_ring_init(tpi_fl_ring *r, uint32_t n_steps, uint64_t max_bytes);
void tpi_fl_ring_free(tpi_fl_ring *r);
tpi_fl_ev *tpi_fl_ring_push_slow(tpi_fl_ring *r);
/* The slot of a new event (filled by the caller); NULL when out of memory
 * (the event is not kept). */
static inline tpi_fl_ev *tpi_fl_ring_push(tpi_fl_ring *r)
{
    uint64_t h = r->head;
    if (__builtin_expect((h & (TPI_FL_BLOCK - 1)) != 0, 1)) {
        r->head = h + 1;
        return &r->cur[h & (TPI_FL_BLOCK - 1)];
    }
    return tpi_fl_ring_push_slow(r); /* a block begins */
}
static inline const tpi_fl_ev *tpi_fl_ring_at(const tpi_fl_ring *r, uint64_t pos)
{
    return &r->blocks[(pos >> TPI_FL_BLOCK_SHIFT) & (r->n_blocks - 1)][pos & (TPI_FL_BLOCK - 1)];
}
/* A step ended (row->ev_begin is set here): the events of steps older than
 * the last n_steps go. */
void tpi_fl_ring_step_end(tpi_fl_ring *r, const tpi_fl_step *row);
/* Rows kept, and the i-th oldest. */
uint32_t tpi_fl_ring_rows(const tpi_fl_ring *r);
const tpi_fl_step *tpi_fl_ring_row(const tpi_fl_ring *r, uint32_t i);
void tpi_fl_ring_sample(tpi_fl_ring *r, const tpi_mem_sample *m);
uint32_t tpi_fl_ring_samples(const tpi_fl_ring *r);
const tpi_mem_sample *tpi_fl_ring_sample_at(const tpi_fl_ring *r, uint32_t i); /* oldest first */
/* Bytes the ring holds allocated now. */
uint64_t tpi_fl_ring_bytes(const tpi_fl_ring *r);

/* ---- the recorder (flight.c) ---------------------------------------------- */

struct tpi_collector;
struct tp_session;

#define TPI_FL_REQUESTS 8
#define TPI_FL_DETAIL_MAX 16384

typedef struct tpi_fl_request {
    char reason[32];
    char *detail; /* malloc'ed, may be NULL */
} tpi_fl_request;

typedef struct tpi_flight {
    struct tpi_collector *c;
    tpi_fl_ring ring;
    uint32_t n_steps;
    int64_t slow_ratio, max_captures;
    uint64_t hang_ns;
    /* slow steps: the step times of the last TPI_FL_MEDIAN steps */
    double times[64];
    uint32_t n_times;
    uint64_t quiet_until;       /* no slow-step capture before this step */
    int prev_traced;            /* the step before was in a trace window */
    /* captures */
    uint32_t n_captures;        /* written (atomic: tp_session_captures reads it) */
    int max_warned;
    tpu_json_file index;        /* captures.json */
    int index_open;
    tpu_buf entries;            /* the entries, for the summary: "{...},{...}" */
    uint64_t window_until;      /* trace window after a capture: steps before this */
    uint32_t window_capture;    /* the capture the window follows */
    /* hang */
    uint64_t seen_steps, progress_ns;
    int hang_fired;
    uint32_t sig_seen;          /* SIGUSR1s handled */
    /* requests from any thread (tp_session_capture) and the stack dumper */
    pthread_mutex_t lock;
    tpi_fl_request req[TPI_FL_REQUESTS];
    int n_req;
    uint64_t req_lost;
    void (*dumper)(int fd, void *user);
    void *dumper_user;
} tpi_flight;

/* NULL when profiling.capture is off (or out of memory: warned). Creates
 * captures.json and installs the SIGUSR1 handler (when the program has
 * none). */
tpi_flight *tpi_flight_new(struct tpi_collector *c);
/* The fork child frees without writing (in_child). */
void tpi_flight_free(tpi_flight *f, int in_child);

/* Collector hooks. */
static inline void tpi_flight_slice(tpi_flight *f, uint32_t tid, uint32_t name_id,
                                    uint64_t begin_ns, uint64_t dur_ns, int depth,
                                    int unterminated)
{
    tpi_fl_ev *e = tpi_fl_ring_push(&f->ring);
    if (__builtin_expect(e != NULL, 1)) {
        e->ts_ns = begin_ns;
        e->u = dur_ns;
        e->name_id = name_id;
        e->tid = tid;
        e->kind = TPI_FL_SLICE;
        e->depth = depth > 255 ? 255 : (uint8_t)depth;
        e->flags = unterminated ? TPI_FL_UNTERMINATED : 0;
    }
}
void tpi_flight_point(tpi_flight *f, int kind, uint32_t tid, uint32_t name_id, uint64_t ts_ns,
                      double value);
void tpi_flight_memory(tpi_flight *f, const tpi_mem_sample *m);
/* After the sinks saw step si: the step's row and op rows, then the
 * slow-step check (a capture written here when it trips). */
struct tpi_step_info;
void tpi_flight_step_end(tpi_flight *f, const struct tpi_step_info *si);
/* Does the step about to begin belong to a capture's trace window? */
int tpi_flight_wants_window(const tpi_flight *f, uint64_t next_step);
/* After each collector pass: SIGUSR1, requests, the hang timeout. */
void tpi_flight_poll(tpi_flight *f);
/* At close, after the last drain: the requests still queued. */
void tpi_flight_close(tpi_flight *f);
/* The entries written, as JSON array items (NULL when none or off). */
const char *tpi_flight_entries(tpi_flight *f);

/* ---- writing a capture (capture.c) ------------------------------------------ */

/* Creates captures.json (pid, host, rank, process start, then the entries). */
void tpi_capture_open_index(tpi_flight *f);
/* Writes the ring (and for a hang the threads' stacks) into captures/ and
 * appends its entry; 0, or -1 after a warning. */
int tpi_capture_write(tpi_flight *f, const char *reason, const char *detail, int hang);

/* ---- the hang dump (flight_hang.c) ------------------------------------------- */

/* Writes path: detail, every thread's open zones, each task's state, kernel
 * wait channel and system call (/proc/self/task), then the stack dumper's
 * output (Python: every thread's stack, read without the GIL). 0 or -1. */
int tpi_capture_hang_dump(tpi_flight *f, const char *path, const char *detail, uint64_t now_ns);

#endif
