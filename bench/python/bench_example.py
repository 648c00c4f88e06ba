"""bench_example.py - what profiling costs the example's training step
(examples/python/train_cnn.py's CNN, real torch, CPU), measured side by side
in one process, variants interleaved round by round so machine noise hits
them alike.

1. always on: median step with trainprof's always-on timing and memory
   (zones data_batch_production, forward, backward, optimizer_step, two
   counters, step; a memory sample every step; no trace windows) vs the same
   loop unprofiled. Target: <= 0.5 % slower.
2. in a trace window: median step with torch operator detail through
   trainprof (profiling.torch_ops, every step active) vs torch.profiler
   alone on the same schedule. Target: <= 1 % slower.

    python bench/python/bench_example.py [--rounds 30] [--steps 20] [--batch_size 64]

Prints, per comparison and per clock (wall; the training thread's CPU time,
which other processes on a shared machine do not inflate), both medians and
the median of the paired differences; the verdict is on the paired CPU time. The training
program's own cost is unchanged by the profiler's files: the runs go to a
temporary directory, removed at the end.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
import torch.profiler

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
import train_cnn  # noqa: E402  (the example's model and data)

import trainprof  # noqa: E402
import trainprof.torch  # noqa: E402,F401


class Loop:
    """The example's step on fixed in-memory batches (no loader noise)."""

    def __init__(self, batch_size, nbatches):
        torch.manual_seed(0)
        data = train_cnn.SyntheticImages(batch_size * nbatches, seed=0)
        xs, ys = zip(*(data[i] for i in range(len(data))))
        x, y = torch.stack(xs), torch.tensor(ys)
        self.batches = list(zip(x.split(batch_size), y.split(batch_size)))
        self.model = train_cnn.SmallCNN()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=3e-3)

    def plain(self, steps, times, after=None):
        """after(): called inside the timed step (torch.profiler's step())."""
        for i in range(steps):
            t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            x, y = self.batches[i % len(self.batches)]
            loss = F.cross_entropy(self.model(x), y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            loss.item()
            if after is not None:
                after()
            times.append((time.perf_counter_ns() - t0, time.thread_time_ns() - c0))

    def profiled(self, prof, steps, times):
        data, fwd = prof.zone("data_batch_production"), prof.zone("forward")
        bwd, opt_zone = prof.zone("backward"), prof.zone("optimizer_step")
        for i in range(steps):
            t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            with data:
                x, y = self.batches[i % len(self.batches)]
            with fwd:
                loss = F.cross_entropy(self.model(x), y)
            with bwd:
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
            with opt_zone:
                self.opt.step()
            prof.counter("loss", loss.item())
            prof.counter("lr", 3e-3)
            prof.step(len(y))
            times.append((time.perf_counter_ns() - t0, time.thread_time_ns() - c0))


def always_on(loop, args, log_dir):
    """Step by step alternation (plain, profiled / profiled, plain), so both
    variants see the same machine load; returns both lists of step times."""
    plain, profiled = [], []
    prof = trainprof.Profiler(log_dir=log_dir, trace=False, memory=True, memory_every_n_steps=1,
                              metrics="none", log_every=0)
    loop.plain(args.steps, [])  # warm both paths up
    loop.profiled(prof, args.steps, [])
    for i in range(args.rounds * args.steps):
        if i % 2:
            loop.plain(1, plain)
            loop.profiled(prof, 1, profiled)
        else:
            loop.profiled(prof, 1, profiled)
            loop.plain(1, plain)
    prof.close()
    return plain, profiled


def calls_only(log_dir, n=200000):
    """The profiler calls of one profiled step (4 zones, 2 counters, step
    with its memory sample) with no training around them: ns per step."""
    prof = trainprof.Profiler(log_dir=log_dir, trace=False, memory=True, memory_every_n_steps=1,
                              metrics="none", log_every=0)
    a, b, c, d = (prof.zone(z) for z in ("data_batch_production", "forward", "backward",
                                         "optimizer_step"))
    best = None
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(n // 5):
            with a:
                pass
            with b:
                pass
            with c:
                pass
            with d:
                pass
            prof.counter("loss", 1.0)
            prof.counter("lr", 3e-3)
            prof.step(64)
        per = (time.perf_counter_ns() - t0) / (n // 5)
        best = per if best is None else min(best, per)
    prof.close()
    return best


def window(loop, args, log_dir):
    """Each round opens a window of args.steps active steps in both ways (in
    alternating order); only the active steps are timed (not the exports and
    merges at close)."""
    alone, ours = [], []
    for r in range(args.rounds + 1):  # round 0 warms up
        if r % 2:
            a = _torch_alone_window(loop, args)
            o = _trainprof_window(loop, args, log_dir)
        else:
            o = _trainprof_window(loop, args, log_dir)
            a = _torch_alone_window(loop, args)
        if r > 0:
            alone += a
            ours += o
    return alone, ours


def _torch_alone_window(loop, args):
    t = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=torch.profiler.schedule(wait=0, warmup=1, active=args.steps),
                                on_trace_ready=lambda p: None) as tp:
        loop.plain(1, [], tp.step)
        loop.plain(args.steps, t, tp.step)
    return t


def _trainprof_window(loop, args, log_dir):
    t = []
    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            prof = trainprof.Profiler(log_dir=log_dir, torch_ops=True, wait=0, warmup=1,
                                      active=args.steps, repeat=1, metrics="none", log_every=0)
            loop.profiled(prof, 1, [])
            loop.profiled(prof, args.steps, t)
            prof.close()
        finally:
            sys.stdout = stdout
    return t


def window_calls_only(log_dir, n=400):
    """Inside a recording window, with no training around them: the
    training thread's CPU time of trainprof's calls of one step (4 zones, 2
    counters, step() driving torch.profiler) and of torch.profiler's own
    step() alone; medians in ns."""
    prof = trainprof.Profiler(log_dir=log_dir, torch_ops=True, wait=0, warmup=0, active=n + 1,
                              metrics="none", log_every=0)
    zones = [prof.zone(z) for z in ("data_batch_production", "forward", "backward", "optimizer_step")]
    ours = []
    for _ in range(n):
        c0 = time.thread_time_ns()
        for z in zones:
            with z:
                pass
        prof.counter("loss", 1.0)
        prof.counter("lr", 3e-3)
        prof.step(64)
        ours.append(time.thread_time_ns() - c0)
    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            prof.close()
        finally:
            sys.stdout = stdout
    alone = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=torch.profiler.schedule(wait=0, warmup=0, active=n + 1),
                                on_trace_ready=lambda p: None) as tp:
        for _ in range(n):
            c0 = time.thread_time_ns()
            tp.step()
            alone.append(time.thread_time_ns() - c0)
    return statistics.median(ours), statistics.median(alone)


def report(label, base_name, base, name, other, target):
    """Per clock (wall, and the training thread's CPU time, which a shared
    machine's other processes do not inflate): both medians, and the median
    of the paired differences (step i of one variant against step i of the
    other, run back to back). The verdict is on the paired CPU time."""
    out = {}
    for clock, idx in (("wall", 0), ("thread CPU", 1)):
        b = [t[idx] for t in base]
        o = [t[idx] for t in other]
        mb, mo = statistics.median(b), statistics.median(o)
        out[clock] = statistics.median(x - y for y, x in zip(b, o)) / mb
        print(f"{label} [{clock}]: median step {base_name} {mb / 1e3:.1f} us, {name} "
              f"{mo / 1e3:.1f} us ({(mo / mb - 1) * 100:+.2f} %); median paired difference "
              f"{out[clock] * 100:+.2f} %", flush=True)
    verdict = "ok" if out["thread CPU"] <= target else "over target"
    print(f"{label}: {out['thread CPU'] * 100:+.2f} % (target <= {target * 100:.1f} %: {verdict}); "
          f"{len(base)} + {len(other)} steps", flush=True)
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    log_dir = tempfile.mkdtemp(prefix="trainprof_bench_")
    try:
        loop = Loop(args.batch_size, 16)
        print(f"trainprof {trainprof.__version__}, torch {torch.__version__}, {args.threads} torch "
              f"thread(s), batch {args.batch_size}, {args.rounds} rounds of {args.steps} steps")
        plain, profiled = always_on(loop, args, log_dir)
        report("always-on timing+memory", "unprofiled", plain, "trainprof", profiled, 0.005)
        cost = calls_only(log_dir)
        step_ns = statistics.median(t[0] for t in plain)
        print(f"  the profiler calls of one step alone (4 zones, 2 counters, step + memory "
              f"sample): {cost / 1e3:.2f} us = {cost / step_ns * 100:.3f} % of the unprofiled "
              f"median step", flush=True)
        alone, ours = window(loop, args, log_dir)
        report("trace window with torch ops", "torch.profiler alone", alone,
               "trainprof torch_ops", ours, 0.01)
        calls, torch_step = window_calls_only(log_dir)
        step_cpu = statistics.median(t[1] for t in alone)
        print(f"  in a window, the calls of one step alone: trainprof (4 zones, 2 counters, step "
              f"driving torch.profiler) {calls / 1e3:.1f} us of thread CPU vs torch.profiler's "
              f"step() {torch_step / 1e3:.1f} us: +{(calls - torch_step) / step_cpu * 100:.3f} % "
              f"of the step", flush=True)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
