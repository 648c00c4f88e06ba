#!/usr/bin/env python3
"""Files users parse are complete and schema-stable (issue 12):
- metrics.jsonl / metrics.csv / the TensorBoard file end with a row for the
  last step even when it falls between two log_every rows;
- memory_profile.json rows keep gpu_memory_allocated_gb, gpu_memory_reserved_gb
  (0.0) and memory ({}) without a GPU; training_summary.json says so;
- timing_profile.json is a valid array holding every ended step after kill -9;
- on a full disk (a 4 MB tmpfs) the trace stops with a counted drop and the
  summaries are complete; profiling.max_trace_mb bounds one window's files.
Usage: check_outputs.py OUT_STEPS_BINARY [--on-tmpfs DIR] (the tmpfs part
re-runs this script in a private mount namespace: unshare -rm)."""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

OUT_STEPS = sys.argv[1]
EXAMPLES = os.environ.get("TP_EXAMPLES_DIR", "build/examples")
TRAIN_MLP = os.path.join(EXAMPLES, "train_mlp")
FAILS = []

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "exporters"))
import pbdecode  # noqa: E402


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def run_dir(log_dir):
    dirs = sorted(glob.glob(os.path.join(log_dir, "*")))
    check(len(dirs) == 1, f"one run dir expected in {log_dir}, got {dirs}")
    return dirs[-1] if dirs else log_dir


def load(path):
    with open(path) as f:
        return json.load(f)


def tb_steps(path):
    """Steps of the TensorBoard events that carry a summary (Event.step =
    field 2, Event.summary = field 5), read with the exporter tests'
    independent TFRecord/protobuf decoder (both CRCs checked)."""
    steps = []
    for body in pbdecode.tfrecords(path):
        m = pbdecode.msg(body)
        if 5 in m:
            steps.append(pbdecode.one(m, 2, 0))
    return steps


def check_final_metrics_row(tmp):
    for steps, want in ((20, [19]), (250, [99, 199, 249])):
        log_dir = os.path.join(tmp, f"metrics{steps}")
        p = subprocess.run([TRAIN_MLP, "--quiet", "--max_steps", str(steps),
                            "--profiling.log_dir", log_dir, "--profiling.log_every", "100",
                            "--profiling.metrics", "jsonl,tensorboard,csv"],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"train_mlp {steps} steps: {p.stderr[-1000:]}")
        d = run_dir(log_dir)
        rows = [json.loads(l) for l in open(os.path.join(d, "metrics.jsonl"))]
        check([r["step"] for r in rows] == want, f"metrics.jsonl steps {[r['step'] for r in rows]}, want {want}")
        lines = open(os.path.join(d, "metrics.csv")).read().splitlines()
        got = [int(l.split(",")[0]) for l in lines[1:]]
        check(got == want, f"metrics.csv steps {got}, want {want}")
        tb = glob.glob(os.path.join(d, "events.out.tfevents.*"))
        check(len(tb) == 1 and tb_steps(tb[0]) == want,
              f"tensorboard steps {tb_steps(tb[0]) if tb else None}, want {want}")


def check_memory_rows_without_gpu(tmp):
    log_dir = os.path.join(tmp, "memory")
    p = subprocess.run([TRAIN_MLP, "--quiet", "--max_steps", "5", "--profiling.log_dir", log_dir,
                        "--profiling.log_every", "0"], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"train_mlp memory: {p.stderr[-1000:]}")
    d = run_dir(log_dir)
    summary = load(os.path.join(d, "training_summary.json"))
    if summary.get("gpu_found"):
        print("a GPU was found: the no-GPU layout is not checked here")
        return
    check(summary.get("gpu_found") is False and "no GPU" in summary.get("gpu", ""),
          f"training_summary.json does not say no GPU was found: {summary.get('gpu_found')!r}")
    rows = load(os.path.join(d, "memory_profile.json"))
    check(len(rows) >= 5, f"memory_profile.json has {len(rows)} rows")
    for r in rows:
        for key in ("gpu_memory_allocated_gb", "gpu_memory_reserved_gb"):
            check(isinstance(r.get(key), float) and r[key] == 0.0, f"row {r.get('step')}: {key}={r.get(key)!r}")
        check(r.get("memory") == {}, f"row {r.get('step')}: memory={r.get('memory')!r}")


def check_timing_after_kill(tmp):
    log_dir = os.path.join(tmp, "kill")
    p = subprocess.Popen([OUT_STEPS, "--steps", "100000000", "--zones", "20", "--step_us", "300",
                          "--profiling.log_dir", log_dir, "--profiling.log_every", "0",
                          "--profiling.metrics", "none", "--profiling.trace", "false"],
                         stdout=subprocess.PIPE, text=True)
    last = -1
    for line in p.stdout:
        last = int(line.split()[1])
        if last >= 200:
            break
    time.sleep(0.1)  # a few collector passes (<= 20 ms each); steps go on meanwhile
    p.send_signal(signal.SIGKILL)
    p.wait()
    d = run_dir(log_dir)
    try:
        rows = load(os.path.join(d, "timing_profile.json"))
    except (OSError, ValueError) as e:
        check(False, f"timing_profile.json after kill -9: {e}")
        return
    steps = [r["step"] for r in rows]
    check(steps == list(range(len(steps))), "timing_profile.json steps are not 0, 1, 2, ...")
    check(len(steps) > last, f"timing_profile.json holds {len(steps)} steps, step {last} had ended 100 ms before kill -9")


def on_tmpfs(mnt):
    """Inside the private mount namespace: a 4 MB tmpfs filled by the trace."""
    for budget in ("0", "1"):
        log_dir = os.path.join(mnt, "budget" + budget)
        p = subprocess.run([OUT_STEPS, "--steps", "200", "--zones", "4000",
                            "--profiling.log_dir", log_dir, "--profiling.log_every", "0",
                            "--profiling.metrics", "jsonl", "--profiling.memory", "false",
                            "--profiling.wait", "0", "--profiling.warmup", "0",
                            "--profiling.active", "1000"] +
                           (["--profiling.max_trace_mb", budget] if budget != "0" else []),
                           capture_output=True, text=True, timeout=240)
        check(p.returncode == 0, f"max_trace_mb={budget}: out_steps exited {p.returncode}: {p.stderr[-1500:]}")
        if "report.html not written" in p.stderr:  # the page did not fit: say how to make it later
            check("trainprof report --html" in p.stderr, f"max_trace_mb={budget}: {p.stderr[-800:]}")
        d = run_dir(log_dir)
        try:
            summary = load(os.path.join(d, "training_summary.json"))
            ops = load(os.path.join(d, "operations.json"))
            timing = load(os.path.join(d, "timing_profile.json"))
        except (OSError, ValueError) as e:
            check(False, f"max_trace_mb={budget}: a summary is missing or cut: {e}")
            continue
        check(summary["total_steps"] == 200, f"max_trace_mb={budget}: total_steps {summary['total_steps']}")
        check(summary["trace_events_dropped"] > 0, f"max_trace_mb={budget}: no trace drop counted")
        check({o["name"] for o in ops} >= {"forward", "backward"}, f"max_trace_mb={budget}: operations {ops}")
        check([r["step"] for r in timing] == list(range(200)), f"max_trace_mb={budget}: timing rows {len(timing)}")
        check(not os.path.exists(os.path.join(d, ".trainprof_reserve")), "the reserve file is left behind")
        traces = glob.glob(os.path.join(d, "profiler_traces", "*.pt.trace.json"))
        check(len(traces) == 1, f"max_trace_mb={budget}: traces {traces}")
        for t in traces:
            try:
                load(t)
            except ValueError as e:
                check(False, f"max_trace_mb={budget}: trace not valid JSON: {e}")
            if budget == "1":
                check(os.path.getsize(t) < 2 << 20, f"trace of {os.path.getsize(t)} bytes with max_trace_mb=1")
        shutil.rmtree(log_dir, ignore_errors=True)


def check_full_disk():
    mnt = tempfile.mkdtemp(prefix="tp_tmpfs_")
    script = (f"mount -t tmpfs -o size=4m tmpfs {mnt} && "
              f"{sys.executable} {os.path.abspath(__file__)} {OUT_STEPS} --on-tmpfs {mnt}")
    for cmd in (["unshare", "-rm", "sh", "-c", script], ["unshare", "-m", "sh", "-c", script]):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=280)
        except FileNotFoundError:
            break
        if "mount" in p.stderr and p.returncode != 0 and "FAIL" not in p.stderr:
            continue  # this way of mounting is not permitted here: try the next
        print(p.stdout, end="")
        print(p.stderr, end="", file=sys.stderr)
        check(p.returncode == 0, "checks on the full tmpfs failed")
        os.rmdir(mnt)
        return
    os.rmdir(mnt)
    print("SKIP full-disk check: cannot mount a tmpfs (neither unshare -rm nor unshare -m)")


def main():
    if len(sys.argv) > 3 and sys.argv[2] == "--on-tmpfs":
        on_tmpfs(sys.argv[3])
    else:
        tmp = tempfile.mkdtemp(prefix="tp_outputs_")
        try:
            check_final_metrics_row(tmp)
            check_memory_rows_without_gpu(tmp)
            check_timing_after_kill(tmp)
            check_full_disk()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print(f"{len(FAILS)} checks failed", file=sys.stderr)
        sys.exit(1)
    print("all output checks passed")


if __name__ == "__main__":
    main()
