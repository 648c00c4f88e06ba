"""bench_lightning.py - what each Lightning profiler costs a Trainer.fit.

A small MLP trained with Lightning on in-memory synthetic data for --steps
steps, once per round with each profiler: none, SimpleProfiler,
AdvancedProfiler, PyTorchProfiler and trainprof's TrainprofProfiler (defaults:
timing, memory sampling every step, one trace window; console output off).
The variants are interleaved (order rotated every round) so that the load
of a shared machine hits them alike. A callback present in every variant
times the training loop (on_train_start .. on_train_end) and each step.

    python bench/python/bench_lightning.py [--rounds 7] [--steps 300] [--width 256]

Then, since a shared machine's noise is larger than 0.5 %, the profilers' own
work is measured apart: the `with profiler.profile(action):` of one step's actions (the
actions Lightning times per step, taken from a real fit), minimum over
repeats, as a share of the median step without profiler.

Prints a Markdown table, one row per profiler: median loop wall and CPU
time, median step time, and the medians over rounds of (time / time without
profiler in the same round) - 1 for the median step (the verdict: a
step-by-step cost, the one-off costs of the first steps and of trace windows
left out), the loop's wall and its CPU time. Target for
TrainprofProfiler: <= 0.5 % on the median step.
"""
import argparse
import logging
import os
import shutil
import statistics
import tempfile
import time
import warnings

import lightning.pytorch as L
import torch
from lightning.pytorch.profilers import AdvancedProfiler, PyTorchProfiler, SimpleProfiler
from torch.utils.data import DataLoader, TensorDataset

from trainprof.lightning import TrainprofProfiler


class MLP(L.LightningModule):
    def __init__(self, width):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.ReLU(),
                                       torch.nn.Linear(width, width), torch.nn.ReLU(),
                                       torch.nn.Linear(width, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class LoopTimer(L.Callback):
    """Times the training loop (wall and process CPU time, all threads) and
    each step; identical in every variant."""

    def __init__(self):
        self.loop = self.cpu = None
        self.steps = []
        self._t0 = self._cpu0 = self._step0 = None

    def on_train_start(self, trainer, pl_module):
        self._t0, self._cpu0 = time.perf_counter(), time.process_time()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._step0 = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.steps.append(time.perf_counter() - self._step0)

    def on_train_end(self, trainer, pl_module):
        self.loop = time.perf_counter() - self._t0
        self.cpu = time.process_time() - self._cpu0


def make_profiler(name, tmp):
    directory = os.path.join(tmp, name)
    if name == "none":
        return None
    if name == "SimpleProfiler":
        return SimpleProfiler(dirpath=directory, filename="simple")
    if name == "AdvancedProfiler":
        return AdvancedProfiler(dirpath=directory, filename="advanced")
    if name == "PyTorchProfiler":
        return PyTorchProfiler(dirpath=directory, filename="pytorch")
    return TrainprofProfiler(log_dir=directory, metrics="none")


def fit_once(name, args, loader, tmp):
    timer = LoopTimer()
    trainer = L.Trainer(max_steps=args.steps, max_epochs=-1, profiler=make_profiler(name, tmp),
                        callbacks=[timer], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu", devices=1, default_root_dir=tmp)
    torch.manual_seed(0)
    trainer.fit(MLP(args.width), loader)
    return timer.loop, timer.cpu, statistics.median(timer.steps[5:])


def actions_per_step(args, loader, tmp):
    """The actions Lightning times once per training step, in order of first
    start (from one SimpleProfiler fit)."""
    simple = SimpleProfiler()
    trainer = L.Trainer(max_steps=20, max_epochs=-1, profiler=simple, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, accelerator="cpu", devices=1,
                        default_root_dir=tmp)
    trainer.fit(MLP(args.width), loader)
    return [a for a, d in simple.recorded_durations.items() if len(d) == 20]


def emulated_step_cost(profiler, actions, steps=2000, repeats=5):
    """Seconds per step of the profiler's own work: `with
    profiler.profile(action):` for each action of a step, as Lightning calls
    it, no model. The minimum over repeats: the machine's load only adds."""
    profiler.setup(stage="fit")
    profile = profiler.profile
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            for action in actions:
                with profile(action):
                    pass
        best = min(best, (time.perf_counter() - t0) / steps)
    profiler.teardown(stage="fit")
    return best


def cost_table(args, loader, tmp, step_seconds):
    from lightning.pytorch.profilers import PassThroughProfiler
    actions = actions_per_step(args, loader, tmp)
    peers = [("PassThroughProfiler (none)", PassThroughProfiler()),
             ("SimpleProfiler", SimpleProfiler()),
             ("AdvancedProfiler", AdvancedProfiler()),
             ("TrainprofProfiler", TrainprofProfiler(log_dir=os.path.join(tmp, "emul"),
                                                     metrics="none"))]
    print(f"\nProfiler's own work per step: `with profiler.profile(action):` for the {len(actions)} "
          f"actions Lightning times per training step, no model; share of the median step without profiler "
          f"({1e3 * step_seconds:.3f} ms)")
    print(f"| {'profiler':<26} | {'per step (us)':>13} | {'per action (ns)':>15} | "
          f"{'share of step':>13} |")
    print(f"|{'-' * 28}|{'-' * 14}:|{'-' * 16}:|{'-' * 14}:|")
    for name, prof in peers:
        cost = emulated_step_cost(prof, actions)
        print(f"| {name:<26} | {1e6 * cost:>13.2f} | {1e9 * cost / len(actions):>15.0f} | "
              f"{100 * cost / step_seconds:>12.2f}% |")


VARIANTS = ["none", "SimpleProfiler", "AdvancedProfiler", "PyTorchProfiler", "TrainprofProfiler"]


def parse_and_prepare(doc, rounds):
    """The Lightning benchmarks' command line (--rounds --steps --width
    --batch_size), one torch thread, quiet loggers, and the synthetic data's
    loader: (args, loader)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch_size", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    for logger in ("lightning", "lightning.pytorch", "trainprof"):
        logging.getLogger(logger).setLevel(logging.ERROR)
    gen = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(args.batch_size * 50, 64, generator=gen),
                         torch.randint(0, 10, (args.batch_size * 50,), generator=gen))
    return args, DataLoader(data, batch_size=args.batch_size, shuffle=True)


def main():
    args, loader = parse_and_prepare(__doc__, rounds=7)
    tmp = tempfile.mkdtemp(prefix="bench_lightning_")
    loops, cpus, steps = ({v: [] for v in VARIANTS} for _ in range(3))
    ratios, cpu_ratios, step_ratios = ({v: [] for v in VARIANTS} for _ in range(3))
    try:
        fit_once("none", args, loader, tmp)  # warm-up: imports, first allocations
        for r in range(args.rounds):
            order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
            wall, cpu, step = {}, {}, {}
            for name in order:
                wall[name], cpu[name], step[name] = fit_once(name, args, loader, tmp)
                loops[name].append(wall[name])
                cpus[name].append(cpu[name])
                steps[name].append(step[name])
            for name in VARIANTS:
                step_ratios[name].append(step[name] / step["none"] - 1.0)
                ratios[name].append(wall[name] / wall["none"] - 1.0)
                cpu_ratios[name].append(cpu[name] / cpu["none"] - 1.0)
        report(args, loader, tmp, loops, cpus, steps, (step_ratios, ratios, cpu_ratios))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(args, loader, tmp, loops, cpus, steps, overheads):
    step_ratios, ratios, cpu_ratios = overheads
    print(f"Trainer.fit, {args.steps} steps of an MLP 64-{args.width}-{args.width}-10, "
          f"batch {args.batch_size}, torch threads 1, {args.rounds} rounds interleaved")
    print(f"| {'profiler':<18} | {'loop wall (s)':>13} | {'loop CPU (s)':>12} | "
          f"{'step (ms)':>9} | {'step overhead':>13} | {'wall overhead':>13} | "
          f"{'CPU overhead':>12} |")
    print(f"|{'-' * 20}|{'-' * 14}:|{'-' * 13}:|{'-' * 10}:|{'-' * 14}:|{'-' * 14}:|{'-' * 13}:|")
    for name in VARIANTS:
        print(f"| {name:<18} | {statistics.median(loops[name]):>13.3f} | "
              f"{statistics.median(cpus[name]):>12.3f} | "
              f"{1e3 * statistics.median(steps[name]):>9.3f} | "
              f"{100 * statistics.median(step_ratios[name]):>+12.2f}% | "
              f"{100 * statistics.median(ratios[name]):>+12.2f}% | "
              f"{100 * statistics.median(cpu_ratios[name]):>+11.2f}% |")
    cost_table(args, loader, tmp, statistics.median(steps["none"]))


if __name__ == "__main__":
    main()
