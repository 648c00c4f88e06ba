#!/usr/bin/env python3
"""A hang on one rank of a SLURM job (issue 34), profiled with no code
change: jobs/trainprof_run_hang.sbatch runs tests/python/auto_scripts/ddp_hang.py
in 2 tasks under `srun trainprof run --profiling.hang_timeout 3s`; rank 1
stalls 12 s before its all_reduce at step 3 while rank 0 waits inside it.
Checked: the job still completes; each rank's captures.json lists a hang
capture at step 3 whose .hang.txt holds the Python stacks (rank 0 inside
all_reduce, rank 1 in stall_before_all_reduce); `trainprof ranks JOB_DIR`
names rank 1 as the rank that did not arrive, in text and --json. Exit 77
(skipped) where the cluster cannot run, or without torch or the package."""
import glob
import json
import os
import sys

from slurm_common import SRC, check, run_job, run_test, tp


def main(env, tmp):
    log_dir = os.path.join(tmp, "runs")
    env = dict(env, TRAINPROF_LOG_DIR=log_dir, TRAINPROF_METRICS="none")
    job, out = run_job(env, tmp, "trainprof_run_hang.sbatch", [
        os.path.join(SRC, "tests", "python", "auto_scripts", "ddp_hang.py"), 12], timeout=280)
    if job is None:
        return
    check(out.count("done") == 2, f"both ranks finish after the stall: {out[-1500:]}")
    jobs = glob.glob(os.path.join(log_dir, "*_job-*"))
    if not check(len(jobs) == 1, f"one job directory: {jobs}"):
        return
    for rank, where in ((0, "in all_reduce"), (1, "in stall_before_all_reduce")):
        d = os.path.join(jobs[0], f"rank{rank}")
        caps = json.load(open(os.path.join(d, "captures.json")))["captures"]
        hangs = [c for c in caps if c["reason"] == "hang"]
        check(len(hangs) == 1 and hangs[0]["step"] == 3, f"rank {rank}: one hang capture at step 3: {caps}")
        dumps = [f for c in hangs for f in c["files"] if f.endswith(".hang.txt")]
        text = open(os.path.join(d, dumps[0])).read() if dumps else ""
        check(where in text, f"rank {rank}'s dump shows it {where}: {text[-1500:]}")
    code, text, err = tp("ranks", jobs[0])
    check(code == 0 and "did not arrive: rank 1 " in text, f"ranks names rank 1: {code} {text[-1500:]} {err[-500:]}")
    code, js, err = tp("ranks", "--json", jobs[0])
    hang = json.loads(js).get("hang") if code == 0 else None
    check(hang is not None and hang["late"] == [1], f"ranks --json: late {hang}")


if __name__ == "__main__":
    sys.exit(run_test(main, needs=("torch", "trainprof")))
