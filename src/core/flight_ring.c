/*
 * flight_ring.c - the flight recorder's bounded ring of events, step rows
 * and memory samples (see flight.h). Collector thread only.
 *
 * Blocks of events are allocated as the last n_steps steps need them, up
 * to the byte bound, and reused: a loop of 100 zones a step holds 10 steps
 * in two blocks (64 KB); one that records a million zones a step stays
 * within the bound and loses its oldest events (counted). Nothing is ever
 * copied: an earlier version grew one array by doubling, and the copies
 * were most of the collector's extra cost in the first steps.
 */
#include <stdlib.h>
#include <string.h>

#include "core/flight.h"

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
    uint64_t block_bytes = (uint64_t)TPI_FL_BLOCK * sizeof(tpi_fl_ev) + sizeof(tpi_fl_ev *);
    r->n_blocks = 2;
    while (r->n_blocks * 2 * block_bytes <= room)
        r->n_blocks *= 2; /* a power of two, so the block is a mask */
    r->max_events = r->n_blocks * TPI_FL_BLOCK;
    r->blocks = calloc(r->n_blocks, sizeof *r->blocks);
    r->rows = calloc(r->n_steps, sizeof *r->rows);
    if (!r->blocks || !r->rows) {
        tpi_fl_ring_free(r);
        return -1;
    }
    return 0;
}

void tpi_fl_ring_free(tpi_fl_ring *r)
{
    for (uint64_t i = 0; r->blocks && i < r->n_blocks; i++)
        free(r->blocks[i]);
    free(r->spare[0]);
    free(r->spare[1]);
    free(r->blocks);
    free(r->rows);
    free(r->mem);
    memset(r, 0, sizeof *r);
}

/* Blocks wholly before the tail (it moved from old_tail) are no longer
 * needed: two are kept spare, the others freed. */
static void release(tpi_fl_ring *r, uint64_t old_tail)
{
    for (uint64_t b = old_tail >> TPI_FL_BLOCK_SHIFT; b < r->tail >> TPI_FL_BLOCK_SHIFT; b++) {
        tpi_fl_ev **slot = &r->blocks[b & (r->n_blocks - 1)];
        if (!*slot)
            continue;
        if (!r->spare[0])
            r->spare[0] = *slot;
        else if (!r->spare[1])
            r->spare[1] = *slot;
        else {
            free(*slot);
            r->n_allocated--;
        }
        *slot = NULL;
    }
}

/* A block for a slot: a spare one, or a new one. */
static tpi_fl_ev *take_block(tpi_fl_ring *r)
{
    for (int i = 0; i < 2; i++) {
        if (r->spare[i]) {
            tpi_fl_ev *b = r->spare[i];
            r->spare[i] = NULL;
            return b;
        }
    }
    tpi_fl_ev *b = malloc((size_t)TPI_FL_BLOCK * sizeof *b);
    if (b)
        r->n_allocated++;
    return b;
}

/* head is at the start of a block: the block of its slot becomes the
 * current one, after the events still in it (the oldest) are let go. */
tpi_fl_ev *tpi_fl_ring_push_slow(tpi_fl_ring *r)
{
    if (!r->blocks)
        return NULL;
    uint64_t h = r->head;
    /* the slot's previous positions are h - n_blocks * BLOCK + [0, BLOCK) */
    uint64_t keep_from = h >= (r->n_blocks - 1) * TPI_FL_BLOCK ? h - (r->n_blocks - 1) * TPI_FL_BLOCK : 0;
    if (r->tail < keep_from) { /* full at the bound: the oldest events go */
        uint64_t old = r->tail;
        r->dropped += keep_from - r->tail;
        r->tail = keep_from;
        if (r->step_begin < r->tail)
            r->step_begin = r->tail;
        release(r, old);
    }
    tpi_fl_ev **slot = &r->blocks[(h >> TPI_FL_BLOCK_SHIFT) & (r->n_blocks - 1)];
    if (!*slot && !(*slot = take_block(r)))
        return NULL;
    r->cur = *slot;
    r->head = h + 1;
    return &r->cur[0];
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
    if (oldest->ev_begin > r->tail) {
        uint64_t old = r->tail;
        r->tail = oldest->ev_begin;
        release(r, old);
    }
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
    return r->n_allocated * TPI_FL_BLOCK * sizeof(tpi_fl_ev) + r->n_blocks * sizeof(tpi_fl_ev *) +
           (uint64_t)r->n_steps * sizeof(tpi_fl_step) +
           (r->mem ? (uint64_t)r->n_mem * sizeof(tpi_mem_sample) : 0);
}
