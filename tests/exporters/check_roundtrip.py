"""Round trip through the real library: runs examples/train_mlp with every
exporter on, then checks, for each trace window, that the Perfetto file
decodes (pbdecode.py, independent of the C code) to the same slices and
counters as the Chrome JSON of the same window, that the stacks file folds
those slices, and that the metrics files agree with each other.
Skips (77) when the example is not built."""
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pbdecode  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def chrome(path):
    d = json.load(open(path))
    meta = d["trainprof"]
    os_tid = {}
    for e in d["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            os_tid[e["tid"]] = e["args"].get("os_tid", e["tid"])
    ns = lambda us: int(round(us * 1000))  # noqa: E731
    slices = sorted((os_tid.get(e["tid"], e["tid"]), e["name"], ns(e["ts"]), ns(e["dur"]))
                    for e in d["traceEvents"] if e.get("ph") == "X")
    counters = sorted((e["name"], ns(e["ts"]), float(e["args"]["value"]))
                      for e in d["traceEvents"] if e.get("ph") == "C")
    args = sorted((os_tid.get(e["tid"], e["tid"]), e["name"], ns(e["ts"]),
                   json.dumps({k: v for k, v in e["args"].items() if k != "unterminated"},
                              sort_keys=True))
                  for e in d["traceEvents"]
                  if e.get("ph") == "X" and "Input Dims" in e.get("args", {}))
    return meta, slices, counters, args, os.path.getsize(path)


def near(a, b):
    """Same slice list, timestamps within 1 ns (Chrome JSON keeps 1 ns)."""
    if len(a) != len(b):
        return False
    return all(x[:2] == y[:2] and all(abs(p - q) <= 1 for p, q in zip(x[2:], y[2:]))
               for x, y in zip(a, b))


def check_window(stem):
    meta, cs, cc, cargs, csize = chrome(stem + ".pt.trace.json")
    tr = pbdecode.read_perfetto(stem + ".perfetto-trace")
    base = meta["monotonic_base_ns"]
    ps = sorted((t, n, ts - base, dur) for t, n, c, ts, dur in tr["slices"])
    pc = sorted((n, ts - base, v) for n, ts, v in tr["counters"] if not n.startswith("[memory]"))
    check(near(ps, cs), "%s: perfetto slices == chrome slices (%d vs %d)" % (stem, len(ps), len(cs)))
    check(len(pc) == len(cc) and all(
        a[0] == b[0] and abs(a[1] - b[1]) <= 1 and math.isclose(a[2], b[2], rel_tol=1e-12)
        for a, b in zip(pc, cc)), "%s: perfetto counters == chrome counters" % stem)
    check(tr["clock"].get(3) == base, "perfetto clock snapshot carries the monotonic base")
    pargs = sorted((t, n, ts - base, json.dumps(json.loads(a), sort_keys=True))
                   for t, n, ts, a in tr["args"])
    check(near([x[:3] for x in pargs], [y[:3] for y in cargs]) and
          all(x[3] == y[3] for x, y in zip(pargs, cargs)),
          "%s: perfetto args annotations == chrome args (%d vs %d)" % (stem, len(pargs), len(cargs)))
    folded = {}
    for line in open(stem + ".stacks.txt"):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        folded[stack] = folded.get(stack, 0) + int(n)
    zones_us = sum(d for t, n, ts, d in cs if not n.startswith("ProfilerStep#")) / 1000
    steps_us = sum(d for t, n, ts, d in cs if n.startswith("ProfilerStep#")) / 1000
    total = sum(folded.values())
    check(total <= steps_us + zones_us + len(folded), "stacks total bounded by traced time")
    check(any(k.startswith("ProfilerStep#") and k.count(";") >= 1 for k in folded),
          "stacks nest zones under their step")
    return len(cs), os.path.getsize(stem + ".perfetto-trace"), csize


def check_metrics(run):
    rows = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
    check(len(rows) > 0 and all("profiling/step_time" in r for r in rows), "JSONL rows")
    (tb,) = glob.glob(os.path.join(run, "events.out.tfevents.*"))
    evs = [pbdecode.tb_event(b) for b in pbdecode.tfrecords(tb)]
    check(evs[0]["file_version"] == "brain.Event:2", "TB file_version")
    check(len(evs) - 1 == len(rows), "TB events == JSONL rows")
    for e, r in zip(evs[1:], rows):
        check((e["step"] or 0) == r["step"], "TB step")
        check(math.isclose(e["values"]["profiling/step_time"], r["profiling/step_time"],
                           rel_tol=1e-6), "TB step_time")
    with open(os.path.join(run, "metrics.csv")) as f:
        lines = f.read().splitlines()
    check(len(lines) == len(rows) + 1, "CSV rows")


def check_args(live):
    """record_shapes: zone args reach Perfetto as "args" debug annotations."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([live, "--steps", "12", "--profiling.log_dir", d,
                        "--profiling.trace_format", "both", "--profiling.record_shapes", "true",
                        "--profiling.with_stack", "true",
                        "--profiling.metrics", "none", "--profiling.wait", "1",
                        "--profiling.warmup", "1", "--profiling.active", "6"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (stem,) = [p[:-len(".pt.trace.json")] for p in
                   glob.glob(os.path.join(d, "*_*", "profiler_traces", "*.pt.trace.json"))]
        nargs = len(pbdecode.read_perfetto(stem + ".perfetto-trace")["args"])
        check(nargs == 12, "12 zones with args in the window (%d)" % nargs)
        check_window(stem)


def main():
    if len(sys.argv) > 1 and os.access(sys.argv[1], os.X_OK):
        check_args(sys.argv.pop(1))
    exe = os.path.join(os.environ.get("TP_EXAMPLES_DIR", ""), "train_mlp")
    if not os.access(exe, os.X_OK):
        print("SKIP: %s not built" % exe)
        return 77
    steps = sys.argv[1] if len(sys.argv) > 1 else "60"
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([exe, "--max_steps", steps, "--quiet", "--profiling.log_dir", d,
                        "--profiling.trace_format", "both", "--profiling.with_stack", "true",
                        "--profiling.metrics", "jsonl,csv,tensorboard",
                        "--profiling.log_every", "1", "--profiling.wait", "2",
                        "--profiling.warmup", "1", "--profiling.active", "5",
                        "--profiling.repeat", "2"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (run,) = glob.glob(os.path.join(d, "*_*"))
        stems = sorted(p[:-len(".pt.trace.json")]
                       for p in glob.glob(os.path.join(run, "profiler_traces", "*.pt.trace.json")))
        check(len(stems) == 2, "two trace windows")
        tot = [0, 0, 0]
        for s in stems:
            for i, v in enumerate(check_window(s)):
                tot[i] += v
        check_metrics(run)
        if tot[0]:
            print("slices %d: perfetto %d B (%.1f B/slice), chrome json %d B (%.1f B/slice), "
                  "ratio %.1fx" % (tot[0], tot[1], tot[1] / tot[0], tot[2], tot[2] / tot[0],
                                   tot[2] / max(tot[1], 1)))
            check(tot[2] >= 4 * tot[1], "perfetto >= 4x smaller than chrome json")
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
