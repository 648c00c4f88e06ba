/*
 * flight_ring.c - the flight recorder's bounded ring of events, step rows
 * and memory samples (see flight.h). Collector thread only.
 *
 * The event array starts small and doubles while the last n_steps steps
 * need more room, up to max_events (from the byte bound): a loop of 100
 * zones a step holds 10 steps in 32 KB; one that records a million zones a
 * step stays within the bound and loses its oldest events (counted).
 */
#include <stdlib.h>
#include <string.h>

#include "core/flight.h"

#define FIRST_CAP 1024

static uint32_t mem_slots(uint32_t n_steps)
{
    uint64_t n = 2ull * n_steps + 4;
    return n > 64 ? 64 : (uint32_t)n;
}

int tpi_fl_ring_init(tpi_fl_ring *r, uint32_t n_steps, uint64_t max_bytes)
{
    memset(r, 0, sizeof *r);
    r->n_steps = n_steps ? n_steps : 1;
    r->n_mem = mem_slots(r->n_steps);
    uint64_t fixed = (uint64_t)r->n_steps * sizeof(tpi_fl_step) +
                     (uint64_t)r->n_mem * sizeof(tpi_mem_sample);
    uint64_t room = max_bytes > fixed ? max_bytes - fixed : 0;
    uint64_t max_events = 1;
    while (max_events * 2 * sizeof(tpi_fl_ev) <= room)
        max_events *= 2; /* a power of two, so the slot is a mask */
    r->max_events = max_events;
    r->cap = max_events < FIRST_CAP ? max_events : FIRST_CAP;
    r->ev = malloc(r->cap * sizeof *r->ev);
    r->rows = calloc(r->n_steps, sizeof *r->rows);
    if (!r->ev || !r->rows) {
        tpi_fl_ring_free(r);
        return -1;
    }
    return 0;
}

void tpi_fl_ring_free(tpi_fl_ring *r)
{
    free(r->ev);
    free(r->rows);
    free(r->mem);
    memset(r, 0, sizeof *r);
}

/* Doubles the array (positions keep their meaning: each event moves to its
 * slot in the larger one); -1 when it cannot. */
static int grow(tpi_fl_ring *r)
{
    if (r->cap >= r->max_events)
        return -1;
    uint64_t cap = r->cap * 2;
    tpi_fl_ev *ev = malloc(cap * sizeof *ev);
    if (!ev)
        return -1;
    for (uint64_t p = r->tail; p < r->head; p++)
        ev[p & (cap - 1)] = r->ev[p & (r->cap - 1)];
    free(r->ev);
    r->ev = ev;
    r->cap = cap;
    return 0;
}

tpi_fl_ev *tpi_fl_ring_push_slow(tpi_fl_ring *r)
{
    if (!r->ev)
        return NULL;
    if (grow(r) != 0) { /* full at the bound: the oldest event goes */
        r->tail++;
        r->dropped++;
        if (r->step_begin < r->tail)
            r->step_begin = r->tail;
    }
    return &r->ev[r->head++ & (r->cap - 1)];
}

void tpi_fl_ring_step_end(tpi_fl_ring *r, const tpi_fl_step *row)
{
    if (!r->rows)
        return;
    tpi_fl_step *slot = &r->rows[r->rows_done % r->n_steps];
    *slot = *row;
    slot->ev_begin = r->step_begin;
    r->rows_done++;
    r->step_begin = r->head;
    /* the oldest row kept begins the ring */
    const tpi_fl_step *oldest = tpi_fl_ring_row(r, 0);
    if (oldest->ev_begin > r->tail)
        r->tail = oldest->ev_begin;
}

uint32_t tpi_fl_ring_rows(const tpi_fl_ring *r)
{
    return r->rows_done < r->n_steps ? (uint32_t)r->rows_done : r->n_steps;
}

const tpi_fl_step *tpi_fl_ring_row(const tpi_fl_ring *r, uint32_t i)
{
    uint64_t first = r->rows_done - tpi_fl_ring_rows(r);
    return &r->rows[(first + i) % r->n_steps];
}

void tpi_fl_ring_sample(tpi_fl_ring *r, const tpi_mem_sample *m)
{
    if (!r->mem && !(r->mem = malloc((size_t)r->n_mem * sizeof *r->mem)))
        return;
    r->mem[r->mem_done % r->n_mem] = *m;
    r->mem_done++;
}

uint32_t tpi_fl_ring_samples(const tpi_fl_ring *r)
{
    if (!r->mem)
        return 0;
    return r->mem_done < r->n_mem ? (uint32_t)r->mem_done : r->n_mem;
}

const tpi_mem_sample *tpi_fl_ring_sample_at(const tpi_fl_ring *r, uint32_t i)
{
    uint64_t first = r->mem_done - tpi_fl_ring_samples(r);
    return &r->mem[(first + i) % r->n_mem];
}

uint64_t tpi_fl_ring_bytes(const tpi_fl_ring *r)
{
    return r->cap * sizeof(tpi_fl_ev) + (uint64_t)r->n_steps * sizeof(tpi_fl_step) +
           (r->mem ? (uint64_t)r->n_mem * sizeof(tpi_mem_sample) : 0);
}
