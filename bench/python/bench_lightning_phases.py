"""bench_lightning_phases.py - the one-off work of TrainprofProfiler and
SimpleProfiler in a Trainer.fit: the main thread's CPU time (and wall) in
the profiler's setup(), describe() (the summary table; it calls teardown()),
teardown() (trainprof's close: files, report.html) and summary().

    python bench/python/bench_lightning_phases.py [--rounds 9] [--steps 300]

Each round fits the MLP of bench_lightning.py once with each profiler
(TrainprofProfiler with its defaults, console output off), the same as
bench_lightning_pair.py; the first round is a warm-up. Printed per phase:
the median over rounds of the time spent in it in one fit, and the minimum.
"""
import os
import shutil
import statistics
import tempfile
import time

import lightning.pytorch as L
import torch
from lightning.pytorch.profilers import SimpleProfiler

from bench_lightning import MLP, parse_and_prepare  # same model, data and flags
from trainprof.lightning import TrainprofProfiler

PHASES = ("setup", "summary", "describe", "teardown")
spent = {}  # (profiler, phase) -> [(cpu, wall) of this fit]


def timed(cls, method, label):
    original = getattr(cls, method)

    def wrapper(self, *args, **kwargs):
        c0, w0 = time.thread_time(), time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent.setdefault((label, method), []).append(
                (time.thread_time() - c0, time.perf_counter() - w0))
    setattr(cls, method, wrapper)


def main():
    args, loader = parse_and_prepare(__doc__, rounds=9)
    for cls, label in ((SimpleProfiler, "SimpleProfiler"), (TrainprofProfiler, "TrainprofProfiler")):
        for method in PHASES:
            timed(cls, method, label)
    tmp = tempfile.mkdtemp(prefix="bench_lightning_phases_")
    per_fit = {}  # (profiler, phase) -> [(cpu, wall) summed over one fit]
    try:
        for r in range(args.rounds + 1):
            for label in ("SimpleProfiler", "TrainprofProfiler"):
                spent.clear()
                prof = (SimpleProfiler(dirpath=os.path.join(tmp, "simple"), filename="simple")
                        if label == "SimpleProfiler"
                        else TrainprofProfiler(log_dir=os.path.join(tmp, "tp"), metrics="none"))
                trainer = L.Trainer(max_steps=args.steps, max_epochs=-1, profiler=prof, logger=False,
                                    enable_checkpointing=False, enable_progress_bar=False,
                                    enable_model_summary=False, accelerator="cpu", devices=1,
                                    default_root_dir=tmp)
                torch.manual_seed(0)
                trainer.fit(MLP(args.width), loader)
                if r == 0:
                    continue  # warm-up
                for (name, phase), calls in spent.items():
                    per_fit.setdefault((name, phase), []).append(
                        (sum(c for c, _ in calls), sum(w for _, w in calls)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"one-off work in Trainer.fit, {args.steps} steps, {args.rounds} rounds "
          "(describe includes summary and teardown)")
    print("| profiler | phase | thread CPU (ms), median | min | wall (ms), median |")
    print("|---|---|---:|---:|---:|")
    for (name, phase), fits in sorted(per_fit.items()):
        cpu = [c for c, _ in fits]
        print(f"| {name} | {phase} | {1e3 * statistics.median(cpu):.3f} | {1e3 * min(cpu):.3f} | "
              f"{1e3 * statistics.median(w for _, w in fits):.3f} |")


if __name__ == "__main__":
    main()
