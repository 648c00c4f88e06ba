"""bench_lightning_pair.py - TrainprofProfiler's whole Trainer.fit beside
SimpleProfiler's, in one run: many rounds, alternating order.

    python bench/python/bench_lightning_pair.py [--rounds 15] [--steps 300]

Each round fits the MLP of bench_lightning.py with no profiler,
SimpleProfiler and TrainprofProfiler (its defaults: timing, a memory sample
every step, one trace window, report.html; console output off), in an order
that alternates round by round. Each fit is timed whole (Trainer.fit: setup,
the loop, teardown, the profiler's files) by wall clock and by the main
thread's CPU time (time.thread_time: what the training thread spent, which
other processes on a shared machine do not inflate; trainprof's collector
and sampler threads are not in it, SimpleProfiler has none). Reported: the
median over rounds of (fit with the profiler / fit without, same round) - 1,
and the least disturbed fit's thread CPU (minimum over rounds) of each.
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

VARIANTS = ["none", "SimpleProfiler", "TrainprofProfiler"]


def make(name, tmp):
    if name == "SimpleProfiler":
        return SimpleProfiler(dirpath=os.path.join(tmp, "simple"), filename="simple")
    if name == "TrainprofProfiler":
        return TrainprofProfiler(log_dir=os.path.join(tmp, "tp"), metrics="none")
    return None


def fit(name, args, loader, tmp):
    trainer = L.Trainer(max_steps=args.steps, max_epochs=-1, profiler=make(name, tmp),
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, accelerator="cpu", devices=1,
                        default_root_dir=tmp)
    torch.manual_seed(0)
    model = MLP(args.width)
    w0, c0 = time.perf_counter(), time.thread_time()
    trainer.fit(model, loader)
    return time.perf_counter() - w0, time.thread_time() - c0


def main():
    args, loader = parse_and_prepare(__doc__, rounds=15)
    tmp = tempfile.mkdtemp(prefix="bench_lightning_pair_")
    wall = {v: [] for v in VARIANTS}
    cpu = {v: [] for v in VARIANTS}
    try:
        for name in VARIANTS:  # warm-up: imports, first allocations, first files
            fit(name, args, loader, tmp)
        for r in range(args.rounds):
            order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
            for name in order:
                w, c = fit(name, args, loader, tmp)
                wall[name].append(w)
                cpu[name].append(c)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"Trainer.fit whole, {args.steps} steps of an MLP 64-{args.width}-{args.width}-10, batch "
          f"{args.batch_size}, torch threads 1, {args.rounds} rounds, order alternating")
    print(f"| {'profiler':<18} | {'fit wall (s)':>12} | {'thread CPU (s)':>14} | "
          f"{'wall overhead':>13} | {'thread CPU overhead':>19} | {'best thread CPU (s)':>19} | "
          f"{'best vs none':>12} |")
    print(f"|{'-' * 20}|{'-' * 13}:|{'-' * 15}:|{'-' * 14}:|{'-' * 20}:|{'-' * 20}:|{'-' * 13}:|")
    for name in VARIANTS:
        dw = statistics.median(w / n - 1 for w, n in zip(wall[name], wall["none"]))
        dc = statistics.median(c / n - 1 for c, n in zip(cpu[name], cpu["none"]))
        best = min(cpu[name]) / min(cpu["none"]) - 1  # the least disturbed fit of each
        print(f"| {name:<18} | {statistics.median(wall[name]):>12.3f} | "
              f"{statistics.median(cpu[name]):>14.3f} | {100 * dw:>+12.2f}% | {100 * dc:>+18.2f}% | "
              f"{min(cpu[name]):>19.3f} | {100 * best:>+11.2f}% |")


if __name__ == "__main__":
    main()
