"""Cost of merging N torch.profiler windows into trainprof's traces at close.

    python bench/python/bench_merge.py [--windows 100] [--rounds 5]

A run with --windows one-step trace windows (torch_ops, wait=0, warmup=0,
active=1, repeat=0) of a small MLP is recorded once, its torch window traces
kept aside. Then, on fresh copies of that run directory, alternating round
by round:

- "one pass": read every trainprof trace and every torch trace once and
  write every trainprof trace once (json), nothing else: the floor;
- "merge_windows": what close() does now (trainprof.torch.merge_windows);
- "per window (before)": what close() did before: for each window, look
  for its trainprof trace by parsing the traces in order, merge it, then
  run `trainprof analyze` on it (with --no-analyze, without that).

Reported: the median seconds of each and the ratios to "one pass".
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import trainprof
import trainprof.torch as tpt


def record(root, windows):
    """A run directory with `windows` windows, and its torch traces kept."""
    stash = os.path.join(root, "stash")
    os.makedirs(stash)
    kept = []

    def keep(run_dir, pending):
        for first, path in pending:
            dst = os.path.join(stash, f"window_{first}.json")
            shutil.copy(path, dst)
            kept.append((first, dst))
        return [], []

    real = tpt.merge_windows
    tpt.merge_windows = keep
    try:
        prof = trainprof.Profiler(log_dir=os.path.join(root, "runs"), torch_ops=True, wait=0,
                                  warmup=0, active=1, repeat=0, metrics="none",
                                  html_report=False, memory=False)
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10))
        fwd = prof.zone("forward")
        for _ in range(windows):
            with fwd:
                model(torch.randn(32, 64)).sum().backward()
            prof.step(32)
        run_dir = prof.run_dir
        prof.close()
    finally:
        tpt.merge_windows = real
    return run_dir, kept


def fresh_copy(run_dir, kept, into):
    if os.path.exists(into):
        shutil.rmtree(into)
    shutil.copytree(run_dir, into)
    tdir = os.path.join(into, ".torch")
    os.makedirs(tdir)
    pending = []
    for first, path in kept:
        dst = os.path.join(tdir, os.path.basename(path))
        shutil.copy(path, dst)
        pending.append((first, dst))
    return pending


def traces_of(run_dir):
    folder = os.path.join(run_dir, "profiler_traces")
    return [os.path.join(folder, n) for n in sorted(os.listdir(folder))
            if n.endswith(".pt.trace.json")]


def one_pass(run_dir, pending):
    for path in traces_of(run_dir):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(doc, f, separators=(",", ":"))
        os.replace(path + ".tmp", path)
    for _first, path in pending:
        with open(path, encoding="utf-8") as f:
            json.load(f)


def merge_now(run_dir, pending):
    tpt.merge_windows(run_dir, pending)


def per_window_before(run_dir, pending, analyze=True):
    cli = trainprof.cli_path()
    for first, path in pending:
        target = None
        for trace in traces_of(run_dir):  # the old _window_trace: parse each until found
            with open(trace, encoding="utf-8") as f:
                meta = json.load(f).get("trainprof", {})
            if meta.get("first_step", -1) <= first <= meta.get("last_step", -1):
                target = trace
                break
        tpt.merge_torch_trace(target, path)
        os.remove(path)
        if analyze and cli:
            subprocess.run([cli, "analyze", target], capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--windows", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-analyze", action="store_true",
                    help="leave out the per-window `trainprof analyze` of the old close")
    args = ap.parse_args()
    torch.set_num_threads(1)
    root = tempfile.mkdtemp(prefix="bench_merge_")
    try:
        run_dir, kept = record(root, args.windows)
        n_traces = len(traces_of(run_dir))
        print(f"{args.windows} windows: {n_traces} trainprof traces, {len(kept)} torch traces "
              f"({sum(os.path.getsize(p) for _f, p in kept) / 1e6:.1f} MB of torch JSON)")
        cases = [("one pass (floor)", one_pass), ("merge_windows (now)", merge_now),
                 ("per window (before)",
                  lambda r, p: per_window_before(r, p, analyze=not args.no_analyze))]
        times = {name: [] for name, _fn in cases}
        work = os.path.join(root, "work")
        for rnd in range(args.rounds):
            order = cases if rnd % 2 == 0 else cases[::-1]
            for name, fn in order:
                pending = fresh_copy(run_dir, kept, work)
                t0 = time.perf_counter()
                fn(work, pending)
                times[name].append(time.perf_counter() - t0)
        floor = statistics.median(times[cases[0][0]])
        print(f"{'case':<24} {'median s':>9} {'x one pass':>11}   (rounds: {args.rounds})")
        for name, _fn in cases:
            med = statistics.median(times[name])
            print(f"{name:<24} {med:9.3f} {med / floor:11.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
