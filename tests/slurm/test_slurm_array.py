#!/usr/bin/env python3
"""The cross-rank analysis as map and reduce on SLURM: a 4-rank MPI job
(srun --mpi=pmix, rank 1 slowed), then the map as an `sbatch --array=0-3`
(jobs/map.sbatch: one `trainprof analyze --summary` per rank directory) and
the reduce as `trainprof combine` over the summaries. Its result equals
`trainprof analyze -j 2` on the job directory, byte for byte, as text and as
JSON, and names the slowed rank. Exit 77 (skipped) where the cluster cannot run."""
import glob
import json
import os
import sys

from slurm_common import check, run_job, run_test, tp

SLOW_RANK, SLOW_MS, STEPS = 1, 40, 12


def main(env, tmp):
    log_dir = os.path.join(tmp, "runs")
    job, _ = run_job(env, tmp, "mpi_srun.sbatch", [
        "--max_steps", STEPS, "--slow_rank", SLOW_RANK, "--slow_ms", SLOW_MS, "--profiling.log_dir",
        log_dir, "--profiling.wait", 0, "--profiling.warmup", 0, "--profiling.active", STEPS,
        "--profiling.memory", "false", "--profiling.metrics", "none"])
    jobs = glob.glob(os.path.join(log_dir, "*_job-*"))
    if job is None or not check(len(jobs) == 1, f"one job directory: {jobs}"):
        return
    job_dir, sums = jobs[0], os.path.join(tmp, "sums")
    os.makedirs(sums)
    run_job(env, tmp, "map.sbatch", [job_dir, sums], options=["--array=0-3"])
    files = sorted(os.listdir(sums))
    check(files == [f"rank{r}.json" for r in range(4)], f"the map wrote {files}")
    for f in files:
        s = json.load(open(os.path.join(sums, f)))
        check(f == f"rank{s.get('rank')}.json", f"{f} summarizes rank {s.get('rank')}")
    for fmt in ([], ["--json"]):
        code, reduced, err = tp("combine", *fmt, sums)
        check(code == 0, f"trainprof combine {' '.join(fmt)} exited {code}: {err}")
        code, whole, err = tp("analyze", "-j", "2", *fmt, job_dir)
        check(code == 0, f"trainprof analyze -j 2 {' '.join(fmt)} exited {code}: {err}")
        check(reduced == whole and reduced.strip(),
              f"combine {' '.join(fmt)} differs from analyze -j:\n{reduced}\n---\n{whole}")
        if fmt:
            try:  # the slowed rank named (its magnitude is slurm_mpi's check)
                st = json.loads(reduced).get("straggler") or {}
                check(st.get("rank") == SLOW_RANK, f"combine's straggler {st}, rank {SLOW_RANK} slowed")
            except ValueError as e:
                check(False, f"combine --json: not JSON ({e})")
        else:
            print(reduced)


if __name__ == "__main__":
    sys.exit(run_test(main))
