"""Helpers of tests/python/test_core_*.py (the _core extension's tests):
a profiler in a temporary log_dir and its run directory read back with json."""
import glob
import gzip
import json
import os
import subprocess
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def every_json(run_dir):
    """Parses every JSON file of a run directory; returns {relative path: data}."""
    out = {}
    for path in glob.glob(os.path.join(run_dir, "**", "*.json*"), recursive=True):
        if path.endswith((".json", ".json.gz")):
            out[os.path.relpath(path, run_dir)] = load(path)
    return out


def trace_events(run_dir):
    events = []
    for path in sorted(glob.glob(os.path.join(run_dir, "profiler_traces", "*.json*"))):
        data = load(path)
        events += data["traceEvents"] if isinstance(data, dict) else data
    return events


def ops(run_dir):
    return {o["name"]: o for o in load(os.path.join(run_dir, "operations.json"))}


def python(code, timeout=120, env=None):
    """Runs code in a fresh interpreter; returns (returncode, stdout, stderr)."""
    full = dict(os.environ, **(env or {}))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=timeout, env=full)
    return r.returncode, r.stdout, r.stderr
