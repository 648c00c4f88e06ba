"""Writes real torch 2.13 CPU profiler traces for the report page's tests.

    python gen_torch_traces.py OUT_DIR

OUT_DIR/full.pt.trace.json      record_shapes, profile_memory, with_stack, with_modules
                                on a small CNN trained with Adam, schedule wait=1 warmup=1 active=3
OUT_DIR/full.key_averages.json  torch's own tables for the same window:
    {"by_name": [...], "by_shape": [...], "by_stack": [...]}; each row has key, input_shapes,
    stack, count, self_cpu_us, cpu_total_us, self_cpu_memory_bytes, cpu_memory_bytes
Deterministic in structure (seeded); timings are real.
"""
import json
import os
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule


class Block(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.conv(x))


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(Block(1, 8), nn.MaxPool2d(2), Block(8, 16), nn.MaxPool2d(2))
        self.head = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def rows(averages):
    out = []
    for e in averages:
        out.append({
            "key": e.key,
            "input_shapes": str(e.input_shapes) if e.input_shapes else "",
            "stack": list(e.stack or []),
            "count": e.count,
            "self_cpu_us": e.self_cpu_time_total,
            "cpu_total_us": e.cpu_time_total,
            "self_cpu_memory_bytes": e.self_cpu_memory_usage,
            "cpu_memory_bytes": e.cpu_memory_usage,
        })
    return out


def main(out_dir, steps=5):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = TinyCNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def ready(p):
        p.export_chrome_trace(os.path.join(out_dir, "full.pt.trace.json"))
        tables = {
            "by_name": rows(p.key_averages()),
            "by_shape": rows(p.key_averages(group_by_input_shape=True)),
            "by_stack": rows(p.key_averages(group_by_stack_n=5)),
        }
        with open(os.path.join(out_dir, "full.key_averages.json"), "w") as f:
            json.dump(tables, f, indent=1)

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=ready, record_shapes=True, profile_memory=True, with_stack=True,
                 with_modules=True) as p:
        for _ in range(steps):
            with record_function("data_batch_production"):
                x = torch.randn(32, 1, 28, 28)
                y = torch.randint(0, 10, (32,))
            with record_function("forward"):
                loss = nn.functional.cross_entropy(model(x), y)
            with record_function("backward"):
                opt.zero_grad()
                loss.backward()
            with record_function("optimizer_step"):
                opt.step()
            p.step()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_torch_traces.py OUT_DIR")
    main(sys.argv[1])
