#!/usr/bin/env python3
"""Preemption: `scancel --signal=TERM` of a running Python training job
(jobs/python.sbatch: examples/python/train_cnn.py with torch_ops, as an srun
step) leaves a complete run directory: training_summary.json,
operations.json and report.html written, and the torch operators merged into
the trace (no .torch_ops_* left over). Needs the Python package's SIGTERM
handling (issue 22). Exit 77 (skipped) where the cluster cannot run, or
without torch or the trainprof package."""
import glob
import gzip
import json
import os
import subprocess
import sys
import time

from slurm_common import SRC, check, job_output, job_states, run_test, sbatch, wait_job

RUNNING_STEP = 100  # SIGTERM once the log shows this step (the first torch window is behind)


def wait_for_step(env, tmp, job, timeout=150):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if f"step {RUNNING_STEP:5d}" in job_output(tmp, job):
            return True
        if set(job_states(env, job).values()) - {"PENDING", "RUNNING", "CONFIGURING"}:
            break
        time.sleep(0.25)
    return check(False, f"job {job} never reached step {RUNNING_STEP}: {job_states(env, job)} "
                        f"{job_output(tmp, job)[-2000:]}")


def check_run_dir(log_dir):
    runs = [os.path.dirname(p) for p in glob.glob(os.path.join(log_dir, "**", "config.json"), recursive=True)]
    if not check(len(runs) == 1, f"one run directory under {log_dir}: {runs}"):
        return
    run = runs[0]
    print(f"run directory {run}: {sorted(os.listdir(run))}")
    for name in ("training_summary.json", "operations.json"):
        try:
            json.load(open(os.path.join(run, name)))
        except (OSError, ValueError) as e:
            check(False, f"{name} after SIGTERM: {e}")
    summary = json.load(open(os.path.join(run, "training_summary.json"))) if os.path.exists(
        os.path.join(run, "training_summary.json")) else {}
    steps = summary.get("total_steps", 0)
    check(isinstance(steps, int) and steps >= RUNNING_STEP, f"summary counts {steps} steps: {summary}")
    html = os.path.join(run, "report.html")
    check(os.path.exists(html) and os.path.getsize(html) > 1000, "report.html after SIGTERM")
    left = glob.glob(os.path.join(run, "**", ".torch_ops_*"), recursive=True)
    check(not left, f"torch windows not merged: {left}")
    traces = glob.glob(os.path.join(run, "profiler_traces", "*.pt.trace.json*"))
    # any of them: a slow step on a loaded machine adds a capture's window,
    # which holds torch's operators only when the schedule's profiler was idle
    texts = [(gzip.open if t.endswith(".gz") else open)(t, "rt", errors="replace").read()
             for t in traces]
    check(any('"aten::' in t and '"forward"' in t for t in texts),
          f"a trace with trainprof zones and torch operators merged: {traces}")


def main(env, tmp):
    log_dir = os.path.join(tmp, "runs")
    job = sbatch(env, tmp, "python.sbatch", [
        os.path.join(SRC, "examples", "python", "train_cnn.py"), "--max_steps", 3000, "--num_workers", 2,
        "--profiling.torch_ops", "true", "--profiling.log_dir", log_dir])
    if job is None or not wait_for_step(env, tmp, job):
        return
    subprocess.run(["scancel", "--signal=TERM", job], env=env, check=True)
    states = wait_job(env, job, 90)
    out = job_output(tmp, job)
    print(f"job {job} after SIGTERM: {states}\n{out[-1500:]}")
    check("trained 3000 steps" not in out, "the job ended on its own before the SIGTERM")
    check("Traceback" not in out, f"a Python traceback: {out[out.find('Traceback'):][:3000]}")
    check_run_dir(log_dir)


if __name__ == "__main__":
    sys.exit(run_test(main, needs=("torch", "trainprof")))
