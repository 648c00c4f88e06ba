"""Cross-check of the hand-encoded protobuf files with a decoder we did not
write: Google's `protoc --decode_raw` (Debian package protobuf-compiler,
installed by scripts/install-deps.sh).

Runs examples/train_mlp once with Perfetto uncompressed
(TRAINPROF_PERFETTO_COMPRESS=0) and the TensorBoard sink on, then:

* Perfetto: the whole file must decode as a message (a Trace: repeated
  field 1 TracePacket); protoc must see as many packets as pbdecode.py, the
  same top-level and TrackEvent varints in each packet, the interned event
  names and categories, the inline step names, and the thread names of the
  track descriptors.
* TensorBoard: TFRecord frames are split here (both masked CRC-32C checked
  with pbdecode's Python CRC-32C); each record's payload must decode: the
  first carries file_version "brain.Event:2" (field 3), later ones a
  wall_time (1), increasing steps (2) and a summary (5) whose tags and
  values match metrics.jsonl.

A missing protoc fails the test (install-deps installs it), unless
TP_ALLOW_MISSING_PROTOC=1, which skips (77). Skips (77) when the example is
not built."""
import glob
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pbdecode  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


# ---- protoc --decode_raw text ------------------------------------------------

def decode_raw(protoc, data, what):
    """Runs protoc --decode_raw on data; returns (ok, text)."""
    r = subprocess.run([protoc, "--decode_raw"], input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        print("protoc --decode_raw on %s: exit %d: %s" %
              (what, r.returncode, r.stderr.decode(errors="replace").strip()))
    return r.returncode == 0, r.stdout.decode("utf-8", errors="replace")


def parse_text(text):
    """protoc's decode_raw text as a tree: [(field, value)], value a nested
    list (a LEN field protoc parsed as a message) or the printed scalar
    (decimal varint, 0x... fixed, "..." string)."""
    root = []
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
            if not stack:
                raise ValueError("unbalanced }")
        elif line.endswith(" {"):
            node = []
            stack[-1].append((int(line[:-2]), node))
            stack.append(node)
        else:
            f, _, v = line.partition(": ")
            stack[-1].append((int(f), v))
    if len(stack) != 1:
        raise ValueError("unbalanced {")
    return root


def get(node, f):
    return [v for k, v in node if k == f]


def unquote(v):
    """A printed string; protoc C-escapes, our names are plain ASCII."""
    if not (isinstance(v, str) and len(v) >= 2 and v[0] == '"' and v[-1] == '"'):
        return None
    return v[1:-1].encode().decode("unicode_escape")


def scalar_varints(node):
    """Varints of a message as protoc printed them (no quotes, no 0x)."""
    return [(k, int(v)) for k, v in node
            if isinstance(v, str) and not v.startswith(('"', "0x"))]


def raw_varints(buf):
    return [(f, v) for f, wt, v in pbdecode.fields(buf) if wt == pbdecode.VARINT]


def fixed(v, fmt):
    """A fixed32/fixed64 as printed (0x... in protoc 3.x) -> float."""
    if v.startswith("0x"):
        n = int(v, 16)
        return struct.unpack("<" + fmt, struct.pack("<" + ("I" if fmt == "f" else "Q"), n))[0]
    return float(v)


# ---- Perfetto ------------------------------------------------------------------

def check_perfetto(protoc, path):
    data = open(path, "rb").read()
    mine = pbdecode.read_perfetto(path)
    check(mine["stats"]["compressed_chunks"] == 0,
          "TRAINPROF_PERFETTO_COMPRESS=0 gives plain packets")
    ok, text = decode_raw(protoc, data, path)
    check(ok, "protoc --decode_raw accepts the whole Perfetto file")
    if not ok:
        return
    tree = parse_text(text)
    tops = text.count("\n1 {\n") + text.startswith("1 {\n")
    check(all(k == 1 for k, _ in tree), "Trace holds only field 1 (TracePacket)")
    check(tops == len(tree) == mine["stats"]["packets"],
          "protoc packets == pbdecode packets (%d, %d vs %d)" %
          (tops, len(tree), mine["stats"]["packets"]))

    # the same varints, packet by packet, at the top and inside TrackEvent
    raw = [v for f, wt, v in pbdecode.fields(data)]
    same = len(raw) == len(tree)
    for i, ((_, pkt), buf) in enumerate(zip(tree, raw)):
        if not isinstance(pkt, list) or scalar_varints(pkt) != raw_varints(buf):
            same = False
            print("packet %d: protoc %r vs pbdecode %r" %
                  (i, pkt if not isinstance(pkt, list) else scalar_varints(pkt),
                   raw_varints(buf)))
            break
        te_p, te_b = get(pkt, 11), pbdecode.msg(buf).get(11, [])
        if len(te_p) != len(te_b) or any(
                not isinstance(a, list) or scalar_varints(a) != raw_varints(b)
                for a, b in zip(te_p, te_b)):
            same = False
            print("packet %d: TrackEvent varints differ" % i)
            break
    check(same, "protoc and pbdecode read the same varints in every packet")

    pkts = [p for _, p in tree if isinstance(p, list)]
    # interned names and categories (TracePacket.interned_data = 12,
    # InternedData.event_categories = 1 / event_names = 2, EventName.name = 2)
    names, cats, inline, threads = set(), set(), set(), set()
    for p in pkts:
        for idata in get(p, 12):
            for e in get(idata, 2):
                names.update(unquote(v) for v in get(e, 2))
            for e in get(idata, 1):
                cats.update(unquote(v) for v in get(e, 2))
        for te in get(p, 11):
            inline.update(unquote(v) for v in get(te, 23))
        # TrackDescriptor (60).thread (4).thread_name (5)
        for td in get(p, 60):
            for th in get(td, 4):
                threads.update(unquote(v) for v in get(th, 5))
    zone_names = {n for _, n, _, _, _ in mine["slices"] if not n.startswith("ProfilerStep#")}
    step_names = {n for _, n, _, _, _ in mine["slices"] if n.startswith("ProfilerStep#")}
    for n in ("forward", "backward", "optimizer_step"):
        check(n in names and '"%s"' % n in text, "interned event name %r in protoc output" % n)
    check(zone_names <= names, "every zone name is interned (%s)" % sorted(zone_names - names))
    check("user_annotation" in cats, "interned category user_annotation")
    check(step_names and step_names <= inline,
          "inline step names ProfilerStep#N (%s)" % sorted(step_names - inline))
    want_threads = set(mine["threads"].values())
    check("main" in threads, "thread track 'main' in protoc output")
    check(want_threads and threads == want_threads,
          "thread names: protoc %s == pbdecode %s" % (sorted(threads), sorted(want_threads)))
    print("perfetto: %d packets, %d bytes, names %s, threads %s" %
          (len(pkts), len(data), sorted(names), sorted(threads)))


# ---- TensorBoard ---------------------------------------------------------------

def tfrecord_payloads(path):
    """Splits the TFRecord frames here, checking both masked CRC-32C."""
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos < len(data):
        if pos + 12 > len(data):
            check(False, "%s: truncated frame header at %d" % (path, pos))
            break
        head = data[pos:pos + 8]
        (n,) = struct.unpack("<Q", head)
        (lcrc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        check(lcrc == pbdecode.masked(pbdecode.crc32c(head)), "length crc at %d" % pos)
        body = data[pos + 12:pos + 12 + n]
        tail = data[pos + 12 + n:pos + 16 + n]
        if len(body) != n or len(tail) != 4:
            check(False, "%s: truncated record at %d" % (path, pos))
            break
        (dcrc,) = struct.unpack("<I", tail)
        check(dcrc == pbdecode.masked(pbdecode.crc32c(body)), "data crc at %d" % pos)
        out.append(body)
        pos += 16 + n
    return out


def check_tensorboard(protoc, run):
    (tb,) = glob.glob(os.path.join(run, "events.out.tfevents.*"))
    rows = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
    recs = tfrecord_payloads(tb)
    check(len(recs) == len(rows) + 1, "TB records == 1 + JSONL rows (%d, %d)" %
          (len(recs), len(rows)))
    evs = []
    for i, body in enumerate(recs):
        ok, text = decode_raw(protoc, body, "TB record %d" % i)
        check(ok, "protoc --decode_raw accepts TB record %d" % i)
        evs.append(parse_text(text) if ok else [])
    if not evs:
        return
    check(get(evs[0], 3) == ['"brain.Event:2"'], "first Event: file_version brain.Event:2 (field 3)")
    check(not get(evs[0], 5), "first Event has no summary")
    now = time.time()
    steps = []
    for i, (ev, row) in enumerate(zip(evs[1:], rows), 1):
        wt = get(ev, 1)
        check(len(wt) == 1 and abs(fixed(wt[0], "d") - now) < 3600,
              "TB record %d: wall_time (field 1) is a recent double" % i)
        st = get(ev, 2)
        steps.append(int(st[0]) if st else 0)
        (summary,) = get(ev, 5) or [[]]
        vals = {}
        for v in get(summary, 1):
            tag, sv = unquote(get(v, 1)[0]), get(v, 2)
            vals[tag] = fixed(sv[0], "f") if sv else None
        check("profiling/step_time" in vals, "TB record %d: profiling/step_time tag" % i)
        check(set(vals) == {k for k in row if k.startswith(("profiling/", "counter/"))},
              "TB record %d: tags == JSONL keys" % i)
        check(all(v is not None and math.isclose(v, row[k], rel_tol=1e-6, abs_tol=1e-30)
                  for k, v in vals.items() if k in row),
              "TB record %d: simple_values (float) == JSONL" % i)
        check(steps[-1] == row["step"], "TB record %d: step == JSONL step" % i)
    check(len(steps) > 1 and all(a < b for a, b in zip(steps, steps[1:])),
          "TB steps (field 2) increase: %s" % steps)
    print("tensorboard: %d records, steps %s" % (len(recs), steps))


def main():
    protoc = shutil.which("protoc")
    if not protoc:
        msg = ("protoc not found: install the Debian package protobuf-compiler "
               "(scripts/install-deps.sh does)")
        if os.environ.get("TP_ALLOW_MISSING_PROTOC") == "1":
            print("SKIP: %s (TP_ALLOW_MISSING_PROTOC=1)" % msg)
            return 77
        print("FAIL: " + msg + "; set TP_ALLOW_MISSING_PROTOC=1 to skip")
        return 1
    exe = os.path.join(os.environ.get("TP_EXAMPLES_DIR", ""), "train_mlp")
    if not os.access(exe, os.X_OK):
        print("SKIP: %s not built" % exe)
        return 77
    env = dict(os.environ, TRAINPROF_PERFETTO_COMPRESS="0")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([exe, "--max_steps", "20", "--quiet", "--profiling.log_dir", d,
                        "--profiling.trace_format", "both",
                        "--profiling.metrics", "jsonl,csv,tensorboard,console",
                        "--profiling.log_every", "1", "--profiling.wait", "2",
                        "--profiling.warmup", "1", "--profiling.active", "5",
                        "--profiling.repeat", "1"],
                       check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (run,) = glob.glob(os.path.join(d, "*_*"))
        traces = sorted(glob.glob(os.path.join(run, "profiler_traces", "*.perfetto-trace")))
        check(len(traces) == 1, "one Perfetto trace window (%d)" % len(traces))
        for t in traces:
            check_perfetto(protoc, t)
        check_tensorboard(protoc, run)
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
