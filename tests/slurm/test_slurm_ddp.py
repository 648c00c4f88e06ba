#!/usr/bin/env python3
"""torchrun inside a SLURM allocation (jobs/torchrun.sbatch, rendezvous id =
the SLURM job id): 2 gloo ranks of examples/python/train_ddp.py, rank 1
slowed by 60 ms a step. One job directory named by the SLURM job id with
both rank directories (ranks from torchrun, which wins over SLURM's
variables), the same losses on both ranks, and the straggler found with a
lead within 20 % of the delay. Exit 77 (skipped) where the cluster cannot
run, or without torch or the trainprof package."""
import glob
import json
import os
import re
import sys

from slurm_common import SRC, analyze_json, check, check_straggler, run_job, run_test

SLOW_RANK, SLOW_MS, STEPS = 1, 60, 12


def main(env, tmp):
    log_dir = os.path.join(tmp, "runs")
    job, out = run_job(env, tmp, "torchrun.sbatch", [
        os.path.join(SRC, "examples", "python", "train_ddp.py"), "--max_steps", STEPS, "--log_every", 4,
        "--slow_rank", SLOW_RANK, "--slow_ms", SLOW_MS, "--profiling.log_dir", log_dir,
        "--profiling.wait", 0, "--profiling.warmup", 0, "--profiling.active", STEPS,
        "--profiling.memory", "false", "--profiling.metrics", "none"], timeout=280)
    jobs = glob.glob(os.path.join(log_dir, "*_job-*"))
    if job is None or not check(len(jobs) == 1 and jobs[0].endswith(f"_job-{job}"),
                                f"one job directory *_job-{job}: {jobs}"):
        return
    d = jobs[0]
    ranks = sorted(x for x in os.listdir(d) if x.startswith("rank"))
    check(ranks == ["rank0", "rank1"], f"rank directories: {ranks}")
    info = json.load(open(os.path.join(d, "job.json")))
    check((info["job_id"], info["launcher"], info["world_size"]) == (job, "torchrun", 2), f"job.json {info}")
    losses = {}
    for rank, step, loss in re.findall(r"rank (\d) step +(\d+) eval_loss ([\d.]+)", out):
        losses.setdefault(int(step), set()).add(loss)
    check(len(losses) >= 3 and all(len(v) == 1 for v in losses.values()), f"losses differ: {losses}")
    a = analyze_json(d)
    check(len(a["per_rank"]) == 2, f"per-rank rows: {a['per_rank']}")
    check_straggler(a, SLOW_RANK, SLOW_MS, "torchrun")


if __name__ == "__main__":
    sys.exit(run_test(main, needs=("torch", "trainprof.distributed")))
