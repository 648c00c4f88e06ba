"""Every trace generation: steps, their source and the data-loading finding.

Synthetic traces come from gen_generations.py (one per generation); real
ones are written here by the venv's torch (torch.profiler, CPU) and jax
(jax.profiler.trace with create_perfetto_trace=True) when they import.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_generations  # noqa: E402

BIN = os.environ["TRAINPROF_BIN"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def analyze(path):
    p = subprocess.run([BIN, "analyze", "--json", path], capture_output=True, text=True)
    check(p.returncode == 0, f"analyze {path}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout) if p.returncode == 0 else None


def test_synthetic(tmp):
    for path, exp in gen_generations.write_all(tmp).items():
        name = os.path.basename(path)
        d = analyze(path)
        if not d:
            continue
        check(d["steps"] == exp["steps"], f"{name}: {d['steps']} steps, want {exp['steps']}")
        check(d["step_source"] == exp["source"], f"{name}: step source {d['step_source']}, want {exp['source']}")
        if "name" in exp:
            check(d["step_name"] == exp["name"], f"{name}: step name {d['step_name']!r}")
        check(d["has_gpu"] == exp["gpu"], f"{name}: has_gpu {d['has_gpu']}")
        ids = [f["id"] for f in d["findings"]]
        check("data_loading" in ids, f"{name}: no data_loading finding in {ids}")
        dl = d["breakdown"]["data_loading"]["pct"]
        check(abs(dl - 20.0) < 0.5, f"{name}: data loading {dl}% of the step, want 20%")
        if exp["gpu"]:
            check(d["breakdown"]["kernel"]["pct"] > 40, f"{name}: kernel share {d['breakdown']['kernel']['pct']}")
        if exp["gpu"] and "jax" not in name:  # XLA names copies without pinned/pageable
            check("pageable_memcpy" in ids, f"{name}: no pageable_memcpy finding in {ids}")
        if name.startswith("kineto_current"):  # the one generation with est. achieved occupancy
            occ = [f for f in d["findings"] if f["id"] == "low_occupancy"]
            check(occ and abs(occ[0]["share_pct"] - 56.0) < 0.5, f"{name}: low_occupancy {occ}")
        text = subprocess.run([BIN, "analyze", path], capture_output=True, text=True).stdout
        if exp["source"] == "annotation":
            check("no ProfilerStep#N in this trace" in text and exp["name"] in text,
                  f"{name}: text does not say where the steps come from:\n{text[:400]}")


def real_torch_trace(tmp):
    code = f"""
import torch, torch.profiler as tpp
from torch.utils.data import DataLoader, TensorDataset
m = torch.nn.Linear(64, 64); opt = torch.optim.SGD(m.parameters(), lr=0.1)
dl = DataLoader(TensorDataset(torch.randn(512, 64)), batch_size=32)
with tpp.profile(schedule=tpp.schedule(wait=1, warmup=1, active=3),
                 on_trace_ready=tpp.tensorboard_trace_handler({tmp!r})) as p:
    for i, (x,) in enumerate(dl):
        if i == 5: break
        m(x).sum().backward(); opt.step(); opt.zero_grad(); p.step()
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print("SKIP real torch trace:", r.stderr[-300:])
        return None
    return (glob.glob(os.path.join(tmp, "*.pt.trace.json")) or [None])[0]


def real_jax_trace(tmp):
    code = f"""
import jax, jax.numpy as jnp
f = jax.jit(lambda x: (x @ x).sum())
x = jnp.ones((64, 64))
with jax.profiler.trace({tmp!r}, create_perfetto_trace=True):
    for i in range(3):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            f(x).block_until_ready()
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print("SKIP real jax trace:", r.stderr[-300:])
        return None
    return (glob.glob(os.path.join(tmp, "**", "perfetto_trace.json.gz"), recursive=True) or [None])[0]


def test_real(tmp):
    t = real_torch_trace(os.path.join(tmp, "torch"))
    if t:
        d = analyze(t)
        check(d and d["steps"] == 3 and d["step_source"] == "ProfilerStep", f"torch trace: {d and d['steps']} steps")
    j = real_jax_trace(os.path.join(tmp, "jax"))
    if j:
        d = analyze(j)
        check(d and d["steps"] == 3 and d["step_source"] == "step_num" and d["step_name"] == "train",
              f"jax trace: {d and (d['steps'], d['step_source'], d['step_name'])}")


def test_diff_names_moved_findings(tmp):
    """B is A with the DataLoader wait cut from 2 ms to 0.1 ms per step."""
    doc, _ = gen_generations.kineto_current()
    a = os.path.join(tmp, "a.json")
    b = os.path.join(tmp, "b.json")
    json.dump(doc, open(a, "w"))
    for e in doc["traceEvents"]:
        if e.get("name") == gen_generations.LOADER:
            e["dur"] = 100
    json.dump(doc, open(b, "w"))
    p = subprocess.run([BIN, "diff", "--json", a, b], capture_output=True, text=True)
    check(p.returncode == 0, f"diff: {p.stderr}")
    moves = {m["id"]: m for m in json.loads(p.stdout)["findings_moved"]}
    dl = moves.get("data_loading")
    check(dl and dl["verdict"] == "gone" and abs(dl["share_a_pct"] - 20) < 0.5,
          f"data_loading not reported gone: {moves}")
    text = subprocess.run([BIN, "diff", a, b], capture_output=True, text=True).stdout
    check("Findings that moved" in text and "data_loading" in text and "gone" in text, "diff text lacks moved findings")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        test_synthetic(os.path.join(tmp, "synthetic"))
        test_diff_names_moved_findings(tmp)
        test_real(tmp)
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
