"""Decodes every file the synthetic run writes with independent decoders
(pbdecode.py) and compares them with what was fed (expected.jsonl)."""
import csv
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pbdecode  # noqa: E402

MONO_BASE = 5000000000
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def load_expected(d):
    slices, counters = [], []
    for line in open(os.path.join(d, "expected.jsonl")):
        e = json.loads(line)
        if e["k"] == "slice":
            slices.append(e)
        else:
            counters.append(e)
    return slices, counters


def check_perfetto(d, slices, counters):
    (path,) = glob.glob(os.path.join(d, "profiler_traces", "*.perfetto-trace"))
    tr = pbdecode.read_perfetto(path)
    got = sorted((t, n, ts - MONO_BASE, dur) for t, n, c, ts, dur in tr["slices"])
    want = sorted((e["tid"], e["name"], e["ts"], e["dur"]) for e in slices)
    check(got == want, "perfetto slices == fed slices (%d vs %d)" % (len(got), len(want)))
    check(all(c == "user_annotation" for _, _, c, _, _ in tr["slices"]), "categories")
    gc = sorted((n, ts - MONO_BASE, v) for n, ts, v in tr["counters"] if n == "loss")
    wc = sorted((e["name"], e["ts"], e["value"]) for e in counters)
    check(gc == wc, "perfetto counters == fed counters")
    mem = [c for c in tr["counters"] if c[0].startswith("[memory] cuda:0")]
    check(len(mem) == len(wc), "one [memory] counter per memory event")
    check(tr["threads"] == {4242: "main", 4343: "loader"}, "thread names %r" % tr["threads"])
    check(tr["primary"] == 3 and tr["clock"].get(3) == MONO_BASE, "MONOTONIC trace clock")
    check(tr["clock"].get(1) == 1700000000000000000, "REALTIME tied to the trace clock")
    check(any("3 events dropped" in n for _, n, _ in tr["instants"]), "drop marker")
    check(tr["stats"]["absolute_ts"] >= 1, "late slice written with an absolute timestamp")
    per_zone = tr["stats"]["bytes"] / len(want)
    print("perfetto: %d bytes, %d slices, %.2f bytes/slice, %d packets, %d chunks" % (
        tr["stats"]["bytes"], len(want), per_zone, tr["stats"]["packets"],
        tr["stats"]["compressed_chunks"]))
    return per_zone


def fold_expected(slices):
    """Folded self time per path, computed from the fed slices alone."""
    steps = {(e["tid"], e["step"]): e for e in slices if e["is_step"]}
    by_id = {}
    out = {}
    for e in slices:
        if e["is_step"]:
            continue
        by_id.setdefault((e["tid"], e["step"]), []).append(e)
    for (tid, step), zs in by_id.items():
        for z in zs:
            # enclosing zones: same thread, containing interval, lower depth
            chain = [p for p in slices if not p["is_step"] and p["tid"] == tid and
                     p["depth"] < z["depth"] and p["ts"] <= z["ts"] and
                     p["ts"] + p["dur"] >= z["ts"] + z["dur"]]
            chain.sort(key=lambda p: p["depth"])
            path = [p["name"] for p in chain] + [z["name"]]
            st = steps.get((tid, step))
            if st:
                path.insert(0, st["name"])
            key = ";".join(path)
            out[key] = out.get(key, 0) + z["self"]
    for (tid, step), st in steps.items():
        top = sum(z["dur"] for z in by_id.get((tid, step), []) if z["depth"] == 0)
        out[st["name"]] = out.get(st["name"], 0) + st["dur"] - top
    return {k: (v + 500) // 1000 for k, v in out.items() if (v + 500) // 1000 > 0}


def check_stacks(d, slices):
    (path,) = glob.glob(os.path.join(d, "profiler_traces", "*.stacks.txt"))
    got = {}
    lines = open(path).read().splitlines()
    check(lines == sorted(lines), "folded lines sorted")
    for line in lines:
        stack, _, count = line.rpartition(" ")
        check(stack and count.isdigit(), "folded line %r" % line)
        got[stack] = int(count)
    check(got == fold_expected(slices), "folded stacks == fold of fed slices")


def check_metrics(d, slices):
    rows = [json.loads(l) for l in open(os.path.join(d, "metrics.jsonl"))]
    nsteps = len([e for e in slices if e["is_step"]])
    check([r["step"] for r in rows] == list(range(nsteps)), "one JSONL record per step")
    by_step = {e["step"]: e for e in slices if e["is_step"]}
    for r in rows:
        check(abs(r["profiling/step_time"] - by_step[r["step"]]["dur"] * 1e-9) < 1e-15,
              "step_time of step %d" % r["step"])
        for k in ("profiling/samples_per_second", "profiling/forward_avg_time",
                  "profiling/forward_total_time", "profiling/forward_count"):
            check(k in r, "%s in JSONL" % k)
    check("profiling/cuda:0_memory_allocated_gb" in rows[1], "memory fields")
    with open(os.path.join(d, "metrics.csv"), newline="") as f:
        table = list(csv.reader(f))
    header, body = table[0], table[1:]
    check(len(body) == len(rows), "CSV rows == JSONL records")
    check(all(len(r) == len(header) for r in body), "CSV rows as wide as the header")
    for r, j in zip(body, rows):
        rec = dict(zip(header, r))
        for k, v in j.items():
            check(k in rec, "CSV column %s" % k)
            check(rec.get(k) not in (None, "") and float(rec[k]) == float(v),
                  "CSV %s step %s" % (k, j["step"]))
    return rows


def check_tensorboard(d, rows):
    (path,) = glob.glob(os.path.join(d, "events.out.tfevents.*"))
    events = [pbdecode.tb_event(b) for b in pbdecode.tfrecords(path)]
    check(events[0]["file_version"] == "brain.Event:2", "file_version first")
    steps = [e for e in events[1:]]
    check([e["step"] or 0 for e in steps] == [r["step"] for r in rows], "one Event per step")
    for e, r in zip(steps, rows):
        for k, v in r.items():
            if k.startswith("profiling/"):
                got = e["values"].get(k)
                check(got is not None and math.isclose(got, v, rel_tol=1e-6, abs_tol=1e-30),
                      "TB %s step %d: %r vs %r" % (k, r["step"], got, v))
        check(abs(e["wall_time"] - r["timestamp"]) < 1e-6, "wall_time")


def main():
    gen = sys.argv[1]
    for vec, want in ((b"123456789", 0xE3069283), (bytes(32), 0x8A9136AA)):
        check(pbdecode.crc32c(vec) == want, "python crc32c vector")
    with tempfile.TemporaryDirectory() as d:
        run = os.path.join(d, "run")
        subprocess.run([gen, run, "6", "8"], check=True)
        slices, counters = load_expected(run)
        check_perfetto(run, slices, counters)
        check_stacks(run, slices)
        rows = check_metrics(run, slices)
        check_tensorboard(run, rows)
        # a bigger run for the size target
        big = os.path.join(d, "big")
        subprocess.run([gen, big, "200", "200"], check=True, stdout=subprocess.DEVNULL)
        bs, bc = load_expected(big)
        per_zone = check_perfetto(big, bs, bc)
        check(per_zone <= 16, "<= 16 bytes per zone (%.2f)" % per_zone)
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
