"""Helpers shared by tests/python/test_api_*.py and test_torch_*.py: run
directories read back with Python's json, child Python processes."""
import glob
import gzip
import json
import os
import subprocess
import sys

SOURCE_DIR = os.environ.get("TP_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def only_run_dir(log_dir):
    dirs = [d for d in glob.glob(os.path.join(str(log_dir), "*")) if os.path.isdir(d)]
    assert len(dirs) == 1, f"expected one run directory in {log_dir}: {dirs}"
    return dirs[0]


def traces(run_dir):
    return sorted(glob.glob(os.path.join(run_dir, "profiler_traces", "*.pt.trace.json*")))


def schedule_traces(run_dir):
    """The schedule's windows only: with torch_ops, a slow step (a loaded
    machine makes one) adds a capture's window, whose metadata says
    "capture" (docs/CAPTURES.md)."""
    return [p for p in traces(run_dir) if "capture" not in load(p)["trainprof"]]


def operations(run_dir):
    return {o["name"]: o for o in load(os.path.join(run_dir, "operations.json"))}


def jsonl(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run_python(code, env=None, timeout=240, check=True, args=()):
    """Runs code in a fresh interpreter (same PYTHONPATH); returns the
    CompletedProcess with text stdout/stderr."""
    full = dict(os.environ)
    full.update(env or {})
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=full, timeout=timeout)
    if check:
        assert res.returncode == 0, f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    return res
