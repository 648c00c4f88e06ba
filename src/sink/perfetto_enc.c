/* Perfetto packet encoders (see perfetto_enc.h). Field numbers: */
#include "sink/pbwire.h"
#include "sink/perfetto_enc.h"

enum {
    F_TRACE_PACKET = 1,
    /* TracePacket */
    F_CLOCK_SNAPSHOT = 6, F_TIMESTAMP = 8, F_SEQ_ID = 10, F_TRACK_EVENT = 11,
    F_INTERNED_DATA = 12, F_SEQ_FLAGS = 13, F_COMPRESSED = 50, F_TS_CLOCK_ID = 58,
    F_PACKET_DEFAULTS = 59, F_TRACK_DESCRIPTOR = 60,
    /* ClockSnapshot / Clock */
    F_CS_CLOCKS = 1, F_CS_PRIMARY = 2, F_CLOCK_ID = 1, F_CLOCK_TS = 2, F_CLOCK_INCR = 3,
    /* TracePacketDefaults / TrackEventDefaults */
    F_DEF_CLOCK_ID = 58, F_DEF_TRACK_EVENT = 11, F_TED_TRACK_UUID = 11,
    /* TrackDescriptor, ProcessDescriptor, ThreadDescriptor, CounterDescriptor */
    F_TD_UUID = 1, F_TD_NAME = 2, F_TD_PROCESS = 3, F_TD_THREAD = 4, F_TD_PARENT = 5,
    F_TD_COUNTER = 8, F_PD_PID = 1, F_PD_NAME = 6, F_THD_PID = 1, F_THD_TID = 2,
    F_THD_NAME = 5,
    /* TrackEvent */
    F_TE_CAT_IIDS = 3, F_TE_DEBUG_ANNOTATIONS = 4, F_TE_TYPE = 9, F_TE_NAME_IID = 10, F_TE_TRACK = 11, F_TE_NAME = 23,
    F_TE_INT_VALUE = 30, F_TE_DOUBLE_VALUE = 44,
    /* DebugAnnotation (debug_annotation.proto) */
    F_DA_STRING_VALUE = 6, F_DA_NAME = 10,
    /* InternedData, EventCategory, EventName */
    F_ID_CATEGORIES = 1, F_ID_NAMES = 2, F_IID = 1, F_IID_NAME = 2
};
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };

static void clock(tpu_buf *b, uint32_t id, uint64_t ts, int incremental)
{
    size_t m = tpi_pb_begin(b, F_CS_CLOCKS);
    tpi_pb_uint(b, F_CLOCK_ID, id);
    tpi_pb_uint(b, F_CLOCK_TS, ts);
    if (incremental)
        tpi_pb_uint(b, F_CLOCK_INCR, 1);
    tpi_pb_end(b, m);
}

void tpi_pf_clock_header(tpu_buf *b, uint32_t seq, uint64_t mono_ns, uint64_t wall_ns)
{
    size_t p = tpi_pb_begin(b, F_TRACE_PACKET);
    tpi_pb_uint(b, F_SEQ_ID, seq);
    size_t cs = tpi_pb_begin(b, F_CLOCK_SNAPSHOT);
    clock(b, TPI_PF_CLOCK_MONOTONIC, mono_ns, 0);
    clock(b, TPI_PF_CLOCK_REALTIME, wall_ns, 0);
    tpi_pb_uint(b, F_CS_PRIMARY, TPI_PF_CLOCK_MONOTONIC);
    tpi_pb_end(b, cs);
    tpi_pb_end(b, p);
}

void tpi_pf_sequence_start(tpu_buf *b, uint32_t seq, uint64_t default_track, uint64_t mono_ns)
{
    size_t p = tpi_pb_begin(b, F_TRACE_PACKET);
    tpi_pb_uint(b, F_SEQ_ID, seq);
    tpi_pb_uint(b, F_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    size_t d = tpi_pb_begin(b, F_PACKET_DEFAULTS);
    tpi_pb_uint(b, F_DEF_CLOCK_ID, TPI_PF_CLOCK_INCREMENTAL);
    size_t ted = tpi_pb_begin(b, F_DEF_TRACK_EVENT);
    tpi_pb_uint(b, F_TED_TRACK_UUID, default_track);
    tpi_pb_end(b, ted);
    tpi_pb_end(b, d);
    tpi_pb_end(b, p);

    p = tpi_pb_begin(b, F_TRACE_PACKET);
    tpi_pb_uint(b, F_SEQ_ID, seq);
    tpi_pb_uint(b, F_TIMESTAMP, mono_ns);
    tpi_pb_uint(b, F_TS_CLOCK_ID, TPI_PF_CLOCK_MONOTONIC);
    size_t cs = tpi_pb_begin(b, F_CLOCK_SNAPSHOT);
    clock(b, TPI_PF_CLOCK_INCREMENTAL, mono_ns, 1);
    clock(b, TPI_PF_CLOCK_MONOTONIC, mono_ns, 0);
    tpi_pb_end(b, cs);
    tpi_pb_end(b, p);
}

static size_t descriptor_begin(tpu_buf *b, uint32_t seq, uint64_t uuid, size_t *packet)
{
    *packet = tpi_pb_begin(b, F_TRACE_PACKET);
    tpi_pb_uint(b, F_SEQ_ID, seq);
    size_t td = tpi_pb_begin(b, F_TRACK_DESCRIPTOR);
    tpi_pb_uint(b, F_TD_UUID, uuid);
    return td;
}

static void descriptor_end(tpu_buf *b, size_t td, size_t packet)
{
    tpi_pb_end(b, td);
    tpi_pb_end(b, packet);
}

void tpi_pf_process_track(tpu_buf *b, uint32_t seq, uint64_t uuid, int pid, const char *name)
{
    size_t p, td = descriptor_begin(b, seq, uuid, &p);
    size_t pd = tpi_pb_begin(b, F_TD_PROCESS);
    tpi_pb_int(b, F_PD_PID, pid);
    if (name)
        tpi_pb_string(b, F_PD_NAME, name);
    tpi_pb_end(b, pd);
    descriptor_end(b, td, p);
}

void tpi_pf_thread_track(tpu_buf *b, uint32_t seq, uint64_t uuid, uint64_t parent, int pid,
                         uint32_t tid, const char *name)
{
    size_t p, td = descriptor_begin(b, seq, uuid, &p);
    tpi_pb_uint(b, F_TD_PARENT, parent);
    size_t th = tpi_pb_begin(b, F_TD_THREAD);
    tpi_pb_int(b, F_THD_PID, pid);
    tpi_pb_int(b, F_THD_TID, (int32_t)tid);
    if (name && name[0])
        tpi_pb_string(b, F_THD_NAME, name);
    tpi_pb_end(b, th);
    descriptor_end(b, td, p);
}

void tpi_pf_counter_track(tpu_buf *b, uint32_t seq, uint64_t uuid, uint64_t parent,
                          const char *name)
{
    size_t p, td = descriptor_begin(b, seq, uuid, &p);
    tpi_pb_uint(b, F_TD_PARENT, parent);
    tpi_pb_string(b, F_TD_NAME, name);
    size_t cd = tpi_pb_begin(b, F_TD_COUNTER);
    tpi_pb_end(b, cd);
    descriptor_end(b, td, p);
}

static void interned(tpu_buf *b, const tpi_pf_event *e)
{
    size_t id = tpi_pb_begin(b, F_INTERNED_DATA);
    if (e->new_cat) {
        size_t c = tpi_pb_begin(b, F_ID_CATEGORIES);
        tpi_pb_uint(b, F_IID, e->new_cat_iid);
        tpi_pb_string(b, F_IID_NAME, e->new_cat);
        tpi_pb_end(b, c);
    }
    if (e->new_name) {
        size_t n = tpi_pb_begin(b, F_ID_NAMES);
        tpi_pb_uint(b, F_IID, e->new_name_iid);
        tpi_pb_string(b, F_IID_NAME, e->new_name);
        tpi_pb_end(b, n);
    }
    tpi_pb_end(b, id);
}

void tpi_pf_track_event(tpu_buf *b, const tpi_pf_event *e)
{
    size_t p = tpi_pb_begin(b, F_TRACE_PACKET);
    tpi_pb_uint(b, F_TIMESTAMP, e->ts);
    if (!e->incremental)
        tpi_pb_uint(b, F_TS_CLOCK_ID, TPI_PF_CLOCK_MONOTONIC);
    tpi_pb_uint(b, F_SEQ_ID, e->seq);
    tpi_pb_uint(b, F_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    if (e->new_name || e->new_cat)
        interned(b, e);
    size_t te = tpi_pb_begin(b, F_TRACK_EVENT);
    if (e->cat_iid)
        tpi_pb_uint(b, F_TE_CAT_IIDS, e->cat_iid);
    tpi_pb_uint(b, F_TE_TYPE, (uint64_t)e->type);
    if (e->name_iid)
        tpi_pb_uint(b, F_TE_NAME_IID, e->name_iid);
    else if (e->name_str)
        tpi_pb_string(b, F_TE_NAME, e->name_str);
    if (e->track)
        tpi_pb_uint(b, F_TE_TRACK, e->track);
    if (e->args) {
        size_t da = tpi_pb_begin(b, F_TE_DEBUG_ANNOTATIONS);
        tpi_pb_string(b, F_DA_NAME, "args");
        tpi_pb_string(b, F_DA_STRING_VALUE, e->args);
        tpi_pb_end(b, da);
    }
    /* whole values (bytes, counts) as a varint: 3-6 bytes instead of 10 */
    if (e->type == TPI_PF_COUNTER && e->value >= 0 && e->value < 9007199254740992.0 &&
        e->value == (double)(uint64_t)e->value)
        tpi_pb_uint(b, F_TE_INT_VALUE, (uint64_t)e->value);
    else if (e->type == TPI_PF_COUNTER)
        tpi_pb_double(b, F_TE_DOUBLE_VALUE, e->value);
    tpi_pb_end(b, te);
    tpi_pb_end(b, p);
}

void tpi_pf_compressed(tpu_buf *b, const void *z, size_t zlen)
{
    size_t p = tpi_pb_begin(b, F_TRACE_PACKET);
    tpi_pb_bytes(b, F_COMPRESSED, z, zlen);
    tpi_pb_end(b, p);
}
