#!/usr/bin/env python3
"""Run examples/train_mlp with schedules and check every output file with
Python's json module: fields and types, steps increasing, X events properly
nested per thread, trace windows exactly where the schedule says, top-level
operation time <= step time, counts equal what the loop did, and a trace cut
short by kill -9 keeps a readable prefix."""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

EXAMPLES = os.environ.get("TP_EXAMPLES_DIR", "build/examples")
EXE = os.path.join(EXAMPLES, "train_mlp")
FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def run(args, log_dir, timeout=240):
    cmd = [EXE, "--quiet", "--profiling.log_dir", log_dir, "--profiling.log_every", "0"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    check(p.returncode == 0, f"{cmd} exited {p.returncode}: {p.stderr[-2000:]}")
    dirs = sorted(glob.glob(os.path.join(log_dir, "*")))
    check(len(dirs) == 1, f"one run dir expected, got {dirs}")
    return p.stdout, dirs[-1]


def load(path):
    with open(path) as f:
        return json.load(f)


def torch_active(k, skip, wait, warmup, active, repeat):
    """(cycle) when unit k is recorded by torch.profiler.schedule, else None."""
    if k < skip:
        return None
    j = k - skip
    n = wait + warmup + active
    if repeat > 0 and j // n >= repeat:
        return None
    return j // n if j % n >= wait + warmup else None


def expected_windows(steps, sched, per_epoch=None):
    wins = {}
    for s in range(steps):
        k = s // per_epoch if per_epoch else s
        c = torch_active(k, *sched)
        if c is not None:
            wins.setdefault(c, []).append(s)
    return [wins[c] for c in sorted(wins)]


def check_nesting(events, where):
    by_tid = {}
    for e in events:
        if e.get("ph") == "X":
            by_tid.setdefault(e["tid"], []).append(e)
    for tid, evs in by_tid.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            b, end = e["ts"], e["ts"] + e["dur"]
            while stack and b >= stack[-1] - 1e-3:
                stack.pop()
            if stack:
                check(end <= stack[-1] + 1e-3, f"{where}: {e['name']} crosses its parent on tid {tid}")
            stack.append(end)


def check_trace(path, want_steps, sched_name):
    raw = open(path, "rb").read()
    d = json.loads(raw)
    ev = d["traceEvents"]
    check(isinstance(ev, list) and ev, f"{path}: traceEvents")
    meta = d.get("trainprof", {})
    for k, t in [("version", str), ("host", str), ("pid", int), ("rank", int),
                 ("base_time_ns", int), ("monotonic_base_ns", int), ("dropped_events", int)]:
        check(isinstance(meta.get(k), t), f"{path}: trainprof.{k} missing or not {t.__name__}")
    check(isinstance(d.get("baseTimeNanoseconds"), int), f"{path}: baseTimeNanoseconds")
    names = {e["name"] for e in ev if e.get("ph") == "M"}
    check("process_name" in names and "thread_name" in names, f"{path}: process/thread names")
    steps = sorted(int(e["name"].split("#")[1]) for e in ev
                   if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    check(steps == want_steps, f"{sched_name} {path}: steps {steps} != schedule {want_steps}")
    for e in ev:
        if e.get("ph") == "X":
            check(e["dur"] >= 0 and isinstance(e["ts"], (int, float)), f"{path}: bad X {e}")
    zones = [e for e in ev if e.get("ph") == "X" and not e["name"].startswith("ProfilerStep#")]
    for op in ("forward", "backward", "optimizer_step", "data_wait"):
        n = sum(1 for e in zones if e["name"] == op)
        check(n == len(want_steps), f"{path}: {n} {op} zones for {len(want_steps)} steps")
    counters = {e["name"] for e in ev if e.get("ph") == "C"}
    check({"loss", "learning_rate"} <= counters, f"{path}: counters {counters}")
    check_nesting(ev, path)
    steps_x = [e for e in ev if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    main_tid = steps_x[0]["tid"] if steps_x else None
    for s in steps_x:  # step thread zones lie inside their step
        inside = [z for z in zones if z["tid"] == main_tid and s["ts"] - 1e-3 <= z["ts"] <= s["ts"] + s["dur"]]
        check(sum(z["dur"] for z in inside) <= s["dur"] + 1e-3, f"{path}: zones exceed {s['name']}")
    return len(raw) / max(1, len(zones) + len(steps_x))


def check_seed(run_dir, steps, batch):
    tp = load(os.path.join(run_dir, "timing_profile.json"))
    check(isinstance(tp, list) and len(tp) == steps, f"timing_profile rows {len(tp)} != {steps}")
    prev = -1
    for r in tp:
        for k, t in [("step", int), ("batch_idx", int), ("total_batch_time", float),
                     ("samples_per_second", float)]:
            check(isinstance(r.get(k), t), f"timing_profile: {k} not {t.__name__}: {r}")
        check(r["step"] == prev + 1, "timing_profile: steps not consecutive")
        prev = r["step"]
        ns_times = [r["total_batch_time"]] + [v["time"] for v in r["operations"].values()] + \
            [v for k, v in r.items() if k.endswith("_time") and k != "total_batch_time"]
        for t in ns_times:  # nanoseconds in seconds: the double nearest n / 1e9, written short
            check(t == round(t * 1e9) / 1e9, f"step {r['step']}: {t!r} s is not a nanosecond count / 1e9")
        top = sum(v["time"] for v in r["operations"].values())
        check(top <= r["total_batch_time"] * 1.0001 + 1e-9, f"step {r['step']}: ops {top} > step")
        check(abs(r["samples_per_second"] - batch / r["total_batch_time"]) < 1e-6 * r["samples_per_second"] + 1e-6,
              "samples_per_second")
    summ = load(os.path.join(run_dir, "training_summary.json"))
    for k, t in [("total_training_time_seconds", float), ("total_steps", int),
                 ("average_time_per_step", float), ("steps_per_second", float),
                 ("training_start_time", str), ("training_end_time", str),
                 ("dropped_events", int), ("unbalanced_zones", int), ("io_errors", int)]:
        check(isinstance(summ.get(k), t), f"training_summary: {k} not {t.__name__}")
    check(summ["total_steps"] == steps, "total_steps")
    check(summ["unbalanced_zones"] == 0 and summ["dropped_events"] == 0, "no drops / unbalanced")
    ops = {o["name"]: o for o in load(os.path.join(run_dir, "operations.json"))}
    for op in ("forward", "backward", "optimizer_step", "data_wait", "data_batch_production"):
        check(op in ops and ops[op]["count"] == steps, f"operations.json: {op} count")
    for o in ops.values():
        check(o["min_time"] <= o["p50_time"] <= o["p90_time"] <= o["p99_time"] <= o["max_time"] + 1e-12,
              f"operations.json: {o['name']} percentiles out of order")
        check(o["self_time"] <= o["total_time"] + 1e-12, f"{o['name']} self > total")
        for k in ("total_time", "self_time", "min_time", "max_time"):
            check(o[k] == round(o[k] * 1e9) / 1e9, f"operations.json: {o['name']} {k} {o[k]!r} is not ns / 1e9")
    return summ


def scenario_schedule(tmp):
    steps, batch = 40, 32
    sched = (2, 1, 1, 3, 2)  # skip_first, wait, warmup, active, repeat
    out, run_dir = run(["--max_steps", str(steps), "--batch", str(batch),
                        "--profiling.skip_first", "2", "--profiling.wait", "1",
                        "--profiling.warmup", "1", "--profiling.active", "3",
                        "--profiling.repeat", "2"], tmp)
    check("loss: first" in out, "example prints the loss")
    first = float(out.split("loss: first")[1].split()[0])
    last = float(out.split("last smoothed")[1].split()[0])
    check(last < first, f"loss does not fall: {first} -> {last}")
    summ = check_seed(run_dir, steps, batch)
    traces = sorted(glob.glob(os.path.join(run_dir, "profiler_traces", "*.pt.trace.json")),
                    key=lambda p: load(p)["trainprof"]["window"])
    want = expected_windows(steps, sched)
    check(len(traces) == len(want), f"{len(traces)} traces, schedule says {len(want)}")
    check(summ["trace_files"] == len(want), "trace_files in summary")
    per_zone = [check_trace(p, w, "step schedule") for p, w in zip(traces, want)]
    print(f"schedule: {len(traces)} windows {want}; bytes per event on disk {max(per_zone):.1f}")


def scenario_epoch(tmp):
    steps, per_epoch = 30, 5
    sched = (0, 1, 0, 1, 2)
    _, run_dir = run(["--max_steps", str(steps), "--epoch_steps", str(per_epoch),
                      "--profiling.unit", "epoch", "--profiling.wait", "1", "--profiling.warmup", "0",
                      "--profiling.active", "1", "--profiling.repeat", "2"], tmp)
    traces = sorted(glob.glob(os.path.join(run_dir, "profiler_traces", "*.pt.trace.json")),
                    key=lambda p: load(p)["trainprof"]["window"])
    want = expected_windows(steps, sched, per_epoch)
    check(len(traces) == len(want), f"epoch unit: {len(traces)} traces, want {len(want)}")
    for p, w in zip(traces, want):
        check_trace(p, w, "epoch schedule")
    print(f"epoch unit: windows {want}")


def scenario_kill9(tmp):
    cmd = [EXE, "--quiet", "--max_steps", "100000000", "--profiling.log_dir", tmp,
           "--profiling.active", "1000000", "--profiling.log_every", "0"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pattern = os.path.join(tmp, "*", "profiler_traces", "*.pt.trace.json")
    deadline = time.time() + 30
    while time.time() < deadline and not glob.glob(pattern):
        time.sleep(0.1)
    time.sleep(1.5)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    traces = glob.glob(os.path.join(tmp, "*", "profiler_traces", "*.pt.trace.json"))
    check(len(traces) == 1, "kill -9: one trace file")
    if not traces:
        return
    text = open(traces[0]).read()
    lines = text.split("\n")
    check(lines[0] == '{"traceEvents":[', "kill -9: traceEvents first")
    good = [l.rstrip(",") for l in lines[1:] if l.endswith("}") or l.endswith("},")]
    events = json.loads("[" + ",".join(good) + "]")
    n_steps = sum(1 for e in events if e["name"].startswith("ProfilerStep#"))
    check(n_steps > 10, f"kill -9: only {n_steps} steps readable")
    print(f"kill -9: {len(events)} events, {n_steps} steps readable from the prefix")

def scenario_usage(tmp):
    """--help: usage and exit 0; unknown or bad flags: a clear error, exit 2;
    a profiled run ends with the "trainprof: results in <dir>" line."""
    p = subprocess.run([EXE, "--help"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"--help exited {p.returncode}")
    check("--max_steps" in p.stdout and "docs/CONFIG.md" in p.stdout,
          f"--help: usage text incomplete: {p.stdout!r}")
    for bad, what in ((["--bogus"], "unknown option '--bogus'"),
                      (["--max_steps", "ten"], "--max_steps needs a whole number"),
                      (["--batch", "0"], "--batch must be")):
        p = subprocess.run([EXE] + bad, capture_output=True, text=True, timeout=60)
        check(p.returncode == 2, f"{bad}: exit {p.returncode}, expected 2")
        check(what in p.stderr, f"{bad}: stderr {p.stderr!r} lacks {what!r}")
    out, run_dir = run(["--max_steps=3"], tmp)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    check(last == "trainprof: results in " + run_dir,
          f"last line {last!r} is not 'trainprof: results in {run_dir}'")


def main():
    if not os.path.exists(EXE):
        print("train_mlp not built:", EXE)
        return 1
    for sc in (scenario_usage, scenario_schedule, scenario_epoch, scenario_kill9):
        with tempfile.TemporaryDirectory(prefix="tp_integ_") as tmp:
            sc(tmp)
    print("FAILED" if FAILS else "OK", len(FAILS), "failures")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
