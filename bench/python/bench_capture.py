#!/usr/bin/env python3
"""The flight recorder's always-on cost on a PyTorch MLP loop (issue 34).

Paired rounds in fresh processes, alternating profiling.capture false / true
(slow-step captures off: the ring alone; everything else at its defaults:
zones forward/backward/optimizer, a step per iteration), one torch thread,
steps of ~4 ms. Per round: the median step's wall time and the process CPU
time per step (the collector thread included). Prints the medians over the
rounds and the paired ratio. usage: bench_capture.py [rounds=15] [steps=300]"""
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import os, sys, time, resource
import torch
torch.set_num_threads(1)
import trainprof
capture, steps, log_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
model = torch.nn.Sequential(*[m for _ in range(3) for m in (torch.nn.Linear(512, 512), torch.nn.ReLU())])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 512)
prof = trainprof.Profiler(log_dir=log_dir, capture=capture, capture_slow_step=0, metrics="none",
                          html_report=False, trace=False)
fwd, bwd, stp = prof.zone("forward"), prof.zone("backward"), prof.zone("optimizer")
times = []
for i in range(steps):
    t0 = time.perf_counter()
    with fwd:
        loss = model(x).square().mean()
    with bwd:
        opt.zero_grad()
        loss.backward()
    with stp:
        opt.step()
    prof.step(64)
    times.append(time.perf_counter() - t0)
    if i == 49:
        c0 = time.process_time()
c1 = time.process_time()
prof.close()
times = sorted(times[50:])
print(times[len(times) // 2], (c1 - c0) / (steps - 50))
"""


def one(capture, steps, d):
    out = subprocess.run([sys.executable, "-c", CHILD, capture, str(steps), d], capture_output=True,
                         text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=600)
    wall, cpu = map(float, out.stdout.split())
    return wall, cpu


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    res = {"false": [], "true": []}
    with tempfile.TemporaryDirectory() as d:
        for r in range(rounds):
            for c in (("false", "true") if r % 2 == 0 else ("true", "false")):
                res[c].append(one(c, steps, d))
    for i, what in ((0, "median step wall"), (1, "process CPU per step")):
        off = statistics.median(v[i] for v in res["false"])
        on = statistics.median(v[i] for v in res["true"])
        paired = statistics.median(b[i] / a[i] for a, b in zip(res["false"], res["true"]))
        print(f"{what}: capture off {off * 1e3:.3f} ms, on {on * 1e3:.3f} ms; "
              f"paired ratio median {paired:.4f} ({(paired - 1) * 100:+.2f} %)")


if __name__ == "__main__":
    main()
