"""Independent decoders for the exporter tests (no protobuf package).

A minimal protobuf wire decoder, a Perfetto trace reader that rebuilds
slices and counters the way trace_processor interprets the packets we use
(sequences, incremental state, interning, the delta clock), a TFRecord
reader that verifies both CRCs, and a TensorBoard Event decoder.
"""
import struct
import zlib

VARINT, I64, LEN, I32 = 0, 1, 2, 5


def varint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def fields(buf):
    """Yields (field, wire_type, value) of one message; LEN values are bytes."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = varint(buf, pos)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise ValueError("field 0 at %d" % pos)
        if wt == VARINT:
            v, pos = varint(buf, pos)
        elif wt == I64:
            v = buf[pos:pos + 8]
            pos += 8
        elif wt == I32:
            v = buf[pos:pos + 4]
            pos += 4
        elif wt == LEN:
            n, pos = varint(buf, pos)
            v = buf[pos:pos + n]
            if len(v) != n:
                raise ValueError("truncated field %d" % field)
            pos += n
        else:
            raise ValueError("wire type %d" % wt)
        yield field, wt, v
    if pos != end:
        raise ValueError("overrun")


def msg(buf):
    """Message as {field: [values]}."""
    out = {}
    for f, _, v in fields(buf):
        out.setdefault(f, []).append(v)
    return out


def one(m, f, default=None):
    v = m.get(f)
    return v[-1] if v else default


# ---- Perfetto ------------------------------------------------------------------

def trace_packets(data, stats):
    """TracePacket bytes in file order, inflating compressed_packets (50)."""
    for f, wt, v in fields(data):
        if f != 1 or wt != LEN:
            raise ValueError("Trace holds field %d" % f)
        p = msg(v)
        if 50 in p:
            stats["compressed_chunks"] += 1
            for inner in trace_packets(zlib.decompress(one(p, 50)), stats):
                yield inner
        else:
            yield p


class Seq:
    def __init__(self):
        self.valid = False
        self.names, self.cats = {}, {}
        self.clock_id, self.track = None, None
        self.incr = {}  # clock id -> last value (incremental clocks)


def read_perfetto(path):
    """Returns dict: slices [(tid, name, cat, ts, dur)], counters
    [(name, ts, value)], instants [(track, name, ts)], threads {tid: name},
    clocks, primary clock, stats."""
    data = open(path, "rb").read()
    stats = {"packets": 0, "compressed_chunks": 0, "absolute_ts": 0, "bytes": len(data)}
    seqs, tracks, open_slices = {}, {}, {}
    out = {"slices": [], "counters": [], "instants": [], "threads": {}, "clock": {}, "args": [],
           "primary": None, "stats": stats}
    for p in trace_packets(data, stats):
        stats["packets"] += 1
        sid = one(p, 10, 0)
        s = seqs.setdefault(sid, Seq())
        flags = one(p, 13, 0)
        if flags & 1:
            s.__init__()
            s.valid = True
        if 59 in p:
            d = msg(one(p, 59))
            s.clock_id = one(d, 58)
            if 11 in d:
                s.track = one(msg(one(d, 11)), 11)
        if 12 in p:
            if not s.valid:
                raise ValueError("interned data before incremental state cleared")
            idata = msg(one(p, 12))
            for e in idata.get(1, []):
                e = msg(e)
                s.cats[one(e, 1)] = one(e, 2).decode()
            for e in idata.get(2, []):
                e = msg(e)
                s.names[one(e, 1)] = one(e, 2).decode()
        if 6 in p:
            cs = msg(one(p, 6))
            if 2 in cs:
                out["primary"] = one(cs, 2)
            for c in cs.get(1, []):
                c = msg(c)
                cid, ts = one(c, 1), one(c, 2, 0)
                if one(c, 3, 0):
                    s.incr[cid] = ts
                elif 2 in cs:
                    out["clock"][cid] = ts
            continue
        if 60 in p:
            td = msg(one(p, 60))
            uuid = one(td, 1)
            info = {"name": (one(td, 2) or b"").decode(), "parent": one(td, 5)}
            if 4 in td:
                th = msg(one(td, 4))
                info["tid"] = one(th, 2)
                info["pid"] = one(th, 1)
                if 5 in th:
                    info["name"] = one(th, 5).decode()
                    out["threads"][info["tid"]] = info["name"]
            if 3 in td:
                info["pid"] = one(msg(one(td, 3)), 1)
            info["counter"] = 8 in td
            tracks[uuid] = info
        if 11 not in p:
            continue
        # timestamp
        clock = one(p, 58, s.clock_id)
        ts = one(p, 8)
        if clock in s.incr:
            s.incr[clock] += ts
            ts = s.incr[clock]
        else:
            if clock != 3:
                raise ValueError("unexpected clock %r" % clock)
            stats["absolute_ts"] += 1
        if flags & 2 and not s.valid:
            continue
        te = msg(one(p, 11))
        typ = one(te, 9)
        track = one(te, 11, s.track)
        name = s.names[one(te, 10)] if 10 in te else (one(te, 23) or b"").decode()
        cat = ",".join(s.cats[c] for c in te.get(3, []))
        if typ == 1:
            open_slices.setdefault(track, []).append((name, cat, ts))
            for a in te.get(4, []):  # debug annotations: record_shapes args
                a = msg(a)
                if (one(a, 10) or b"").decode() == "args":
                    out["args"].append((tracks[track].get("tid"), name, ts,
                                        one(a, 6, b"").decode()))
        elif typ == 2:
            n, c, t0 = open_slices[track].pop()
            out["slices"].append((tracks[track].get("tid"), n, c, t0, ts - t0))
        elif typ == 3:
            out["instants"].append((track, name, ts))
        elif typ == 4:
            if 30 in te:  # counter_value (int64)
                v = float(one(te, 30) - ((one(te, 30) >> 63) << 64))
            else:
                (v,) = struct.unpack("<d", one(te, 44))
            out["counters"].append((tracks[track]["name"], ts, v))
    leftover = sum(len(v) for v in open_slices.values())
    if leftover:
        raise ValueError("%d slices never ended" % leftover)
    out["tracks"] = tracks
    return out


# ---- TFRecord / TensorBoard ------------------------------------------------------

def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _T[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecords(path):
    data = open(path, "rb").read()
    pos = 0
    while pos < len(data):
        head = data[pos:pos + 8]
        (n,) = struct.unpack("<Q", head)
        (lcrc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if lcrc != masked(crc32c(head)):
            raise ValueError("length crc mismatch at %d" % pos)
        body = data[pos + 12:pos + 12 + n]
        (dcrc,) = struct.unpack("<I", data[pos + 12 + n:pos + 16 + n])
        if len(body) != n or dcrc != masked(crc32c(body)):
            raise ValueError("data crc mismatch at %d" % pos)
        yield body
        pos += 16 + n


def tb_event(body):
    m = msg(body)
    ev = {"wall_time": struct.unpack("<d", one(m, 1))[0] if 1 in m else None,
          "step": one(m, 2), "file_version": one(m, 3), "values": {}}
    if ev["file_version"] is not None:
        ev["file_version"] = ev["file_version"].decode()
    if 5 in m:
        for v in msg(one(m, 5)).get(1, []):
            v = msg(v)
            ev["values"][one(v, 1).decode()] = struct.unpack("<f", one(v, 2))[0]
    return ev
