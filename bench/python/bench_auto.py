"""bench_auto.py - the always-on cost of profiling without code changes
(`python -m trainprof`, docs/RUN.md) beside the same unmodified script run
plainly, many rounds, alternating which goes first.

    PYTHONPATH=build/python python bench/python/bench_auto.py [--rounds 15]
        [--workload cnn,mlp] [--steps 300]

Workloads (unmodified loops: no trainprof in them):
  cnn  examples/python/train_cnn.py's model, data, DataLoader (2 workers),
       Adam and cosine schedule, its loop without the trainprof lines;
  mlp  a plain MLP loop (no DataLoader) sized for ~4 ms steps on one thread;
  tiny the phases of a real loop (DataLoader, forward, backward, optimizer
       step) on a 4-wide model: a step of ~100 us, so the difference is the
       cost per step in microseconds, readable beside any step time.
Each run is a fresh process: `python bench_auto.py --child W` beside
`python -m trainprof --profiling.metrics none bench_auto.py --child W` (the
defaults otherwise: steps, phases, memory every step, one trace window,
report.html at close). The child times every step after the first 20 by wall
clock and by the training thread's CPU time (time.thread_time: what other
processes on a shared machine do not inflate) and prints the medians.
Reported per workload: the median over rounds of (profiled median step /
plain median step, same round) - 1, for CPU and wall.

    PYTHONPATH=build/python python -m trainprof --profiling.metrics none \
        bench/python/bench_auto.py --child components [--rounds 21] [--steps 1000]

measures the hooks one by one in one process instead (each taken out and put
back, rounds alternating): less disturbed by other processes than pairs of
processes.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WARMUP = 20


def cnn_loop(steps):
    sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader
    from train_cnn import SmallCNN, SyntheticImages

    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = SyntheticImages(steps * 64 // 4 + 64, 0)
    loader = DataLoader(data, batch_size=64, shuffle=True, drop_last=True, num_workers=2,
                        persistent_workers=True)
    model = SmallCNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    step = 0
    while step < steps:
        for x, y in loader:
            yield
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss.item()
            step += 1
            if step == steps:
                break


def mlp_loop(steps):
    import torch
    from torch import nn
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
    for _ in range(steps):
        yield
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()


def tiny_loop(steps):
    """The same phases on a model so small that the step is ~100 us: the
    difference is the hooks' and the session's own cost per step, in us."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(torch.randn(steps * 2, 4), torch.randn(steps * 2, 1)),
                        batch_size=2)
    for x, y in loader:
        yield
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def child(workload, steps):
    loop = {"cnn": cnn_loop, "mlp": mlp_loop, "tiny": tiny_loop}[workload](steps)
    walls, cpus = [], []
    w0 = c0 = None
    for _ in loop:  # each yield is a step's start: the previous step ended
        w, c = time.perf_counter(), time.thread_time()
        if w0 is not None:
            walls.append(w - w0)
            cpus.append(c - c0)
        w0, c0 = w, c
    walls.append(time.perf_counter() - w0)
    cpus.append(time.thread_time() - c0)
    print(f"median_wall {statistics.median(walls[WARMUP:])!r} "
          f"median_cpu {statistics.median(cpus[WARMUP:])!r}", flush=True)


def components(rounds, steps):
    """In one process under python -m trainprof: the tiny loop with each
    hook taken out and put back (the wrappers keep the original as
    __wrapped__; torch's global optimizer hooks are a dict), rounds
    alternating; prints the median difference per step of each, in us of
    thread CPU, and of all of them together."""
    import torch
    import torch.optim.optimizer as topt
    import torch.utils.data.dataloader as tdl
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(2, 4)
    it = iter(DataLoader(TensorDataset(torch.randn(rounds * steps * 20 + 100, 4)), batch_size=2))

    def loop(n):
        t = time.thread_time()
        for _ in range(n):
            next(it)
            model(x).sum().backward()
            opt.step()
        return (time.thread_time() - t) / n * 1e6
    loop(3)  # the session opens; the top-level module is found
    hooked = {"forward": (nn.Sequential, "forward"), "data_loading": (tdl._BaseDataLoaderIter, "__next__"),
              "backward": (torch.autograd, "backward")}
    wrapped = {k: getattr(o, a) for k, (o, a) in hooked.items()}
    opt_hooks = (dict(topt._global_optimizer_pre_hooks), dict(topt._global_optimizer_post_hooks))
    assert all(hasattr(w, "__wrapped__") for w in wrapped.values()), "not under python -m trainprof"

    def put(names):
        for k, (o, a) in hooked.items():
            setattr(o, a, wrapped[k] if k in names else wrapped[k].__wrapped__)
        topt._global_optimizer_pre_hooks.clear()
        topt._global_optimizer_post_hooks.clear()
        if "optimizer" in names:
            topt._global_optimizer_pre_hooks.update(opt_hooks[0])
            topt._global_optimizer_post_hooks.update(opt_hooks[1])
    every = ("forward", "data_loading", "backward", "optimizer")
    for names in [every] + [(n,) for n in every]:
        diffs = []
        for r in range(rounds):
            got = {}
            for on in ((True, False) if r % 2 else (False, True)):
                put(names if on else ())
                got[on] = loop(steps)
            diffs.append(got[True] - got[False])
        q = statistics.quantiles(diffs, n=4)
        print(f"{'+'.join(names) if len(names) == 1 else 'all hooks'}: {statistics.median(diffs):+.2f} us "
              f"a step (quartiles {q[0]:+.2f}..{q[2]:+.2f}; plain step {got[False]:.1f} us)", flush=True)
    put(every)


def measure(workload, steps, profiled, tmp, flags=()):
    cmd = [sys.executable]
    if profiled:
        cmd += ["-m", "trainprof", "--profiling.metrics", "none",
                "--profiling.log_dir", os.path.join(tmp, "runs"), *flags]
    cmd += [os.path.abspath(__file__), "--child", workload, "--steps", str(steps)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=tmp).stdout
    words = out.split()
    return float(words[words.index("median_wall") + 1]), float(words[words.index("median_cpu") + 1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--workload", default="cnn,mlp")
    parser.add_argument("--flags", default="", help="more profiling flags, space separated")
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child == "components":
        return components(args.rounds, args.steps)
    if args.child:
        return child(args.child, args.steps)
    import tempfile
    tmp = tempfile.mkdtemp(prefix="bench_auto_")
    for workload in args.workload.split(","):
        d_wall, d_cpu, base = [], [], []
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            got = {p: measure(workload, args.steps, p, tmp, args.flags.split()) for p in order}
            d_wall.append(got[True][0] / got[False][0] - 1)
            d_cpu.append(got[True][1] / got[False][1] - 1)
            base.append(got[False])
        step_ms = statistics.median(b[0] for b in base) * 1e3
        d_us = statistics.median(d * b[1] for d, b in zip(d_cpu, base)) * 1e6
        print(f"{workload}: plain median step {step_ms:.3f} ms wall; automatic profiling "
              f"{d_us:+.1f} us CPU a step; "
              f"{statistics.median(d_cpu) * 100:+.2f} % CPU, {statistics.median(d_wall) * 100:+.2f} % "
              f"wall (median of {args.rounds} paired rounds; CPU quartiles "
              f"{statistics.quantiles(d_cpu, n=4)[0] * 100:+.2f}..{statistics.quantiles(d_cpu, n=4)[2] * 100:+.2f} %)",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
