/*
 * perfetto_enc.h - hand-written encoders for the Perfetto trace packets the
 * perfetto sink writes (field numbers from perfetto's trace_packet.proto,
 * track_event.proto, track_descriptor.proto, interned_data.proto and
 * clock_snapshot.proto). Each function appends one whole `Trace.packet`
 * (field 1, length-delimited) to a tpu_buf, so the output is a valid Trace
 * message at every packet boundary. docs/EXPORTERS.md explains why this is
 * hand encoding and not protobuf-c.
 */
#ifndef TP_SINK_PERFETTO_ENC_H
#define TP_SINK_PERFETTO_ENC_H

#include <stdint.h>

#include "util/buf.h"

enum {
    TPI_PF_CLOCK_REALTIME = 1,
    TPI_PF_CLOCK_MONOTONIC = 3,
    TPI_PF_CLOCK_INCREMENTAL = 64   /* sequence-scoped, delta encoded, ns */
};
enum { TPI_PF_SLICE_BEGIN = 1, TPI_PF_SLICE_END = 2, TPI_PF_INSTANT = 3, TPI_PF_COUNTER = 4 };

/* Snapshot that makes MONOTONIC the trace clock and ties REALTIME to it. */
void tpi_pf_clock_header(tpu_buf *b, uint32_t seq, uint64_t mono_ns, uint64_t wall_ns);

/* Starts (or restarts) a sequence: clears its incremental state, sets the
 * defaults (incremental clock, default track) and anchors the incremental
 * clock at mono_ns. */
void tpi_pf_sequence_start(tpu_buf *b, uint32_t seq, uint64_t default_track, uint64_t mono_ns);

void tpi_pf_process_track(tpu_buf *b, uint32_t seq, uint64_t uuid, int pid, const char *name);
void tpi_pf_thread_track(tpu_buf *b, uint32_t seq, uint64_t uuid, uint64_t parent, int pid,
                         uint32_t tid, const char *name);
void tpi_pf_counter_track(tpu_buf *b, uint32_t seq, uint64_t uuid, uint64_t parent,
                          const char *name);

/* One TrackEvent packet. */
typedef struct tpi_pf_event {
    uint32_t seq;
    int incremental;        /* ts is a delta on the incremental clock */
    uint64_t ts;            /* delta (incremental) or absolute MONOTONIC ns */
    int type;               /* TPI_PF_* */
    uint64_t name_iid;      /* 0: none (or name_str) */
    const char *name_str;   /* inline name, when not interned */
    uint64_t cat_iid;       /* 0: none */
    uint64_t track;         /* 0: the sequence's default track */
    double value;           /* counters */
    const char *args;       /* NULL, or a debug annotation "args" (record_shapes) */
    /* interned entries to define in this packet (0/NULL: none) */
    uint64_t new_name_iid;
    const char *new_name;
    uint64_t new_cat_iid;
    const char *new_cat;
} tpi_pf_event;

void tpi_pf_track_event(tpu_buf *b, const tpi_pf_event *e);

/* A packet holding `raw` (serialized packets) zlib-compressed. */
void tpi_pf_compressed(tpu_buf *b, const void *z, size_t zlen);

#endif
