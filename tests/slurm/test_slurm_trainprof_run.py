#!/usr/bin/env python3
"""`srun trainprof run -- python train.py` in an sbatch script
(jobs/trainprof_run.sbatch, 2 tasks): the unmodified script of
tests/python/auto_scripts/train_torch.py profiled in each task with no code
change. One job directory named by the job's step, rank0/ and rank1/ (ranks
from SLURM_PROCID), each with as many step rows as the script counted
optimizer steps, and nothing from the DataLoader workers. Exit 77 (skipped)
where the cluster cannot run, or without torch or the trainprof package."""
import glob
import json
import os
import re
import sys

from slurm_common import SRC, check, run_job, run_test


def main(env, tmp):
    log_dir = os.path.join(tmp, "runs")
    env = dict(env, TRAINPROF_LOG_DIR=log_dir, TRAINPROF_METRICS="none")  # jobs inherit it
    job, out = run_job(env, tmp, "trainprof_run.sbatch", [
        os.path.join(SRC, "tests", "python", "auto_scripts", "train_torch.py"), 1], timeout=280)
    if job is None:
        return
    counts = [int(n) for n in re.findall(r"optimizer_steps (\d+)", out)]
    check(counts == [12, 12], f"each task counts 12 optimizer steps: {out[-2000:]}")
    jobs = glob.glob(os.path.join(log_dir, "*_job-*"))
    if not check(len(jobs) == 1 and re.search(rf"_job-{job}\.\d+$", jobs[0]),
                 f"one job directory *_job-{job}.<step>: {jobs}"):
        return
    ranks = sorted(x for x in os.listdir(jobs[0]) if x.startswith("rank"))
    check(ranks == ["rank0", "rank1"], f"rank directories: {ranks}")
    info = json.load(open(os.path.join(jobs[0], "job.json")))
    check((info["launcher"], info["world_size"]) == ("slurm", 2), f"job.json {info}")
    for r in ranks:
        rows = json.load(open(os.path.join(jobs[0], r, "timing_profile.json")))
        ops = {o["name"]: o["count"] for o in json.load(open(os.path.join(jobs[0], r, "operations.json")))}
        check(len(rows) == 12 and ops.get("optimizer_step") == 12 and ops.get("backward") == 12,
              f"{r}: {len(rows)} step rows, operations {ops}")


if __name__ == "__main__":
    sys.exit(run_test(main, needs=("torch", "trainprof")))
