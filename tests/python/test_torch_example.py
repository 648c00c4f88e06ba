"""examples/python/train_cnn.py end to end with the real torch: the loss
falls, every flag spelling is accepted, the run directory is the C
example's and every file parses with json."""
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")
from tp_pyhelpers import SOURCE_DIR, load, only_run_dir, operations, traces  # noqa: E402

EXAMPLE = os.path.join(SOURCE_DIR, "examples", "python", "train_cnn.py")


def run_example(*args, timeout=300):
    res = subprocess.run([sys.executable, EXAMPLE, *args], capture_output=True, text=True,
                         timeout=timeout)
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    return res.stdout


def test_example_trains_and_writes_the_run_directory(tmp_path):
    steps, batch = 160, 32
    out = run_example("--max_steps", str(steps), "--batch_size", str(batch), "--num_workers", "2",
                      "--enable_profiling", "True", "--enable_timing_profiling", "True",
                      "--enable_memory_profiling", "True", "--profile_steps", "3",
                      "--profiling.wait", "1", "profiling.warmup=1",
                      f"--profiling.log_dir={tmp_path}", "--profiling.metrics", "jsonl,console")
    m = re.search(r"loss (\d+\.\d+) -> (\d+\.\d+) \(smoothed\)", out)
    assert m, out
    first, last = float(m.group(1)), float(m.group(2))
    assert first > 2.0 and last < 0.6 * first, (first, last)  # the loss visibly falls
    assert "--- Profiling Metrics (Step 99) ---" in out  # metrics.jsonl's step of the 100th
    run_dir = only_run_dir(tmp_path)
    for name in ("timing_profile.json", "memory_profile.json", "training_summary.json",
                 "operations.json", "config.json"):
        assert os.path.exists(os.path.join(run_dir, name)), name
    timing = load(os.path.join(run_dir, "timing_profile.json"))
    assert len(timing) == steps and [r["step"] for r in timing] == list(range(steps))
    assert all(abs(r["samples_per_second"] * r["total_batch_time"] - batch) < 1e-6 * batch
               for r in timing)
    memory = load(os.path.join(run_dir, "memory_profile.json"))
    assert memory and all(r["rss_bytes"] > 0 for r in memory)
    summary = load(os.path.join(run_dir, "training_summary.json"))
    assert summary["total_steps"] == steps and summary["unbalanced_zones"] == 0
    ops = operations(run_dir)
    for name in ("data_batch_production", "forward", "backward", "optimizer_step"):
        assert ops[name]["count"] == steps, name
    assert ops["evaluate"]["count"] == 1
    (trace,) = traces(run_dir)
    doc = load(trace)
    counters = {e["name"] for e in doc["traceEvents"] if e.get("ph") == "C"}
    assert {"loss", "lr"} <= counters
    step_events = [e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert len(step_events) == 3  # --profile_steps 3
    cfg = load(os.path.join(run_dir, "config.json"))
    assert cfg["profiling.active"]["value"] in (3, "3")


def test_example_profiling_off_writes_nothing(tmp_path):
    out = run_example("--max_steps", "20", "--num_workers", "0", "--enable_profiling", "False",
                      "--profiling.log_dir", str(tmp_path), "--quiet")
    assert "trained 20 steps" in out
    assert os.listdir(tmp_path) == []


def test_example_rejects_unknown_flags(tmp_path):
    res = subprocess.run([sys.executable, EXAMPLE, "--max_steps", "2", "--bogus", "1",
                          "--profiling.log_dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "unrecognized arguments: --bogus 1" in res.stderr
    res = subprocess.run([sys.executable, EXAMPLE, "--max_steps", "2", "--profiling.wramup", "1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "did you mean `warmup`" in res.stderr
