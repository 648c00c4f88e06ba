#!/usr/bin/env python3
"""Run examples/python/train_ddp.py with torchrun, 4 ranks, gloo on loopback,
rank 1 slowed down, and check: one job directory with four rank directories,
clocks synced over dist.barrier, identical losses on every rank and
identical to DDP without the trainprof
hook (the hook changes no result), every rank's all-reduce bytes per step
equal to the model's gradient size, and the straggler found with the
injected magnitude (within 20 %). Exit 77 (skipped) without torch or the
trainprof package."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ.get("TRAINPROF_BIN", "build/trainprof")
SRC = os.environ.get("TP_SOURCE_DIR", ".")
EXAMPLE = os.path.join(SRC, "examples", "python", "train_ddp.py")
SLOW_RANK, SLOW_MS, STEPS = 1, 60, 12
FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def torchrun(log_dir, extra=()):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "4", EXAMPLE,
           "--max_steps", str(STEPS), "--log_every", "4", "--slow_rank", str(SLOW_RANK), "--slow_ms", str(SLOW_MS),
           "--profiling.log_dir", log_dir, "--profiling.wait", "0", "--profiling.warmup", "0",
           "--profiling.active", str(STEPS), "--profiling.memory", "false", "--profiling.metrics", "none", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=500)
    check(p.returncode == 0, f"torchrun exited {p.returncode}: {p.stderr[-3000:]}")
    return p.stdout


def losses(stdout):
    out = {}
    for rank, step, loss in re.findall(r"rank (\d) step +(\d+) eval_loss ([\d.]+)", stdout):
        out.setdefault(int(step), {})[int(rank)] = loss
    return out


def main():
    try:
        import torch  # noqa: F401
        import trainprof.distributed  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {e}")
        return 77
    tmp = tempfile.mkdtemp(prefix="tp_ddp_")
    try:
        out = torchrun(os.path.join(tmp, "runs"))
        jobs = glob.glob(os.path.join(tmp, "runs", "*_job-*"))
        check(len(jobs) == 1, f"one job directory: {jobs}")
        job = jobs[0]
        check(sorted(d for d in os.listdir(job) if d.startswith("rank")) == [f"rank{r}" for r in range(4)],
              f"rank directories: {os.listdir(job)}")
        for r in range(4):  # prof.sync over dist.barrier: one host, so 0 must lie inside the bound
            clock = json.load(open(os.path.join(job, f"rank{r}", "clock.json")))
            check(clock["offset_ns"] == 0 and clock["method"] == "same_host", f"rank {r} clock {clock}")
            check(abs(clock["barrier_offset_ns"]) <= clock["barrier_error_ns"] + 1, f"rank {r} clock {clock}")
            print(f"rank {r}: barrier estimate {clock['barrier_offset_ns']} ns, "
                  f"bound {clock['barrier_error_ns']} ns")
        info = json.load(open(os.path.join(job, "job.json")))
        check(info["launcher"] == "torchrun" and info["world_size"] == 4, f"job.json: {info}")
        got = losses(out)
        check(len(got) >= 3 and all(len(set(v.values())) == 1 and len(v) == 4 for v in got.values()),
              f"losses differ across ranks: {got}")
        plain = losses(torchrun(os.path.join(tmp, "plain"), ["--plain_ddp", "--profiling.enabled", "false"]))
        check(plain == got, f"the hook changed results: {got} vs plain DDP {plain}")
        grad = {int(r): int(b) for r, b in re.findall(r"rank (\d) gradient_bytes (\d+)", out)}
        a = json.loads(subprocess.run([BIN, "analyze", "--json", job], capture_output=True, text=True).stdout)
        for row in a["per_rank"]:
            check(row["bytes_per_step"] == grad.get(row["rank"]), f"rank {row['rank']} bytes {row['bytes_per_step']} vs {grad}")
        st = a["straggler"]
        lead = st["lead_p50_ns"] / 1e6
        check(st["rank"] == SLOW_RANK and st["persistent"], f"straggler: {st}")
        check(abs(lead - SLOW_MS) <= 0.2 * SLOW_MS, f"lead {lead:.1f} ms vs {SLOW_MS} ms injected")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print(f"{len(FAILS)} failure(s)", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
