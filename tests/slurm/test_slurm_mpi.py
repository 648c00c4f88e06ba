#!/usr/bin/env python3
"""The MPI example as a SLURM batch job of 4 tasks, rank 2 slowed by 60 ms a
step, launched both ways a cluster user would: mpirun inside the allocation
(jobs/mpi_mpirun.sbatch) and srun --mpi=pmix (jobs/mpi_srun.sbatch). Each
job gives one job directory named by the SLURM job id (SLURM_JOB_ID.STEP),
four rank directories whose summaries carry the rank, the world size and the
job id, and `trainprof analyze` names rank 2 with a lead within 20 % of the
injected delay. Exit 77 (skipped) where the cluster cannot run."""
import glob
import json
import os
import sys

from slurm_common import analyze_json, check, check_straggler, run_job, run_test

SLOW_RANK, SLOW_MS, STEPS = 2, 60, 20


def example_args(log_dir):
    return ["--max_steps", STEPS, "--log_every", 5, "--slow_rank", SLOW_RANK, "--slow_ms", SLOW_MS,
            "--profiling.log_dir", log_dir, "--profiling.wait", 0, "--profiling.warmup", 0,
            "--profiling.active", STEPS, "--profiling.memory", "false", "--profiling.metrics", "none"]


def check_job(env, tmp, script, launcher):
    log_dir = os.path.join(tmp, script.split(".")[0])
    job, out = run_job(env, tmp, script, example_args(log_dir))
    if job is None:
        return
    # the ranks agree on the job directory from SLURM's environment alone:
    # the job id and the step that runs them (mpirun's daemons or srun's tasks)
    jobs = glob.glob(os.path.join(log_dir, "*_job-*"))
    want = f"_job-{job}.0"
    if not check(len(jobs) == 1 and jobs[0].endswith(want), f"{script}: one job directory *{want}: {jobs}"):
        return
    d = jobs[0]
    ranks = sorted(x for x in os.listdir(d) if x.startswith("rank"))
    check(ranks == [f"rank{r}" for r in range(4)], f"{script}: four rank directories: {ranks}")
    info = json.load(open(os.path.join(d, "job.json")))
    check(info["job_id"] == f"{job}.0" and info["world_size"] == 4 and info["launcher"] == launcher,
          f"{script}: job.json {info}")
    for r in range(4):
        s = json.load(open(os.path.join(d, f"rank{r}", "training_summary.json")))
        check((s.get("rank"), s.get("world_size"), s.get("job_id"), s.get("launcher")) ==
              (r, 4, f"{job}.0", launcher), f"{script}: rank {r} summary says "
              f"{(s.get('rank'), s.get('world_size'), s.get('job_id'), s.get('launcher'))}")
    losses = {line.split()[-1] for line in out.splitlines() if f"step   {STEPS - 1} eval_loss" in line}
    check(len(losses) == 1, f"{script}: the ranks' last losses differ or are missing: {losses}")
    a = analyze_json(d)
    check(len(a["per_rank"]) == 4 and all(row["steps"] == STEPS for row in a["per_rank"]),
          f"{script}: per-rank rows {[(row.get('rank'), row.get('steps')) for row in a['per_rank']]}")
    check_straggler(a, SLOW_RANK, SLOW_MS, script)


def main(env, tmp):
    check_job(env, tmp, "mpi_mpirun.sbatch", "openmpi")
    check_job(env, tmp, "mpi_srun.sbatch", "slurm")


if __name__ == "__main__":
    sys.exit(run_test(main))
