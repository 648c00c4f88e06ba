"""Multi-rank benchmarks (never tests).

  python3 bench_dist.py --bin build/trainprof [--dir /tmp] [--ranks 64,256,1024]
  python3 bench_dist.py --overhead --mpi-example build/examples/mpi/train_mlp_mpi

Scale: generates a synthetic job of max(--ranks) ranks (trainprof traces,
--steps steps each, rank --slow-rank doing --slow-ms more compute per step,
the others waiting for it in all_reduce), then for each rank count runs the
map (`trainprof analyze -j CORES --summaries DIR JOB`) and the reduce
(`trainprof combine --json DIR`), reporting wall time and peak RSS of each,
and checks the reduce names the slowed rank with the injected lead.

Overhead: the MPI example on --np ranks, profiled (default schedule plus the
clock sync) and not, interleaved --repeat times; compares the median step
time each run reports (the program's own clock). Ratios within one run are
what to compare: the machine is shared and noisy.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time


def run_measured(cmd, stdout=subprocess.DEVNULL):
    """Wall seconds, peak RSS (MB) and the output of a child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    out = p.stdout.read() if stdout == subprocess.PIPE else b""
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"{' '.join(cmd)} failed ({status}): {err.decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024.0, out


def write_rank(job, rank, world, steps, slow_rank, slow_ms, rng):
    """One rank's trace: steps of forward/backward compute and an all_reduce
    that ends when the slowest rank arrives (the job is synchronous)."""
    d = os.path.join(job, f"rank{rank}", "profiler_traces")
    os.makedirs(d)
    events, t = [], 1000.0  # us
    for k in range(steps):
        mine = 5000 + rng.uniform(0, 1000) + (slow_ms * 1000 if rank == slow_rank else 0)
        slowest = 6000 + slow_ms * 1000  # everyone leaves the all_reduce after the straggler arrives
        transfer = 800.0
        start = t
        events.append({"ph": "X", "name": "forward", "pid": 1, "tid": 1, "ts": t, "dur": mine * 0.4})
        events.append({"ph": "X", "name": "backward", "pid": 1, "tid": 1, "ts": t + mine * 0.4, "dur": mine * 0.6})
        ar_start = t + mine
        ar_end = start + slowest + transfer
        events.append({"ph": "X", "name": "all_reduce", "pid": 1, "tid": 1, "ts": ar_start, "dur": ar_end - ar_start})
        events.append({"ph": "C", "name": "all_reduce.bytes", "pid": 1, "tid": 1, "ts": ar_end, "args": {"value": 27688}})
        end = ar_end + 50
        events.append({"ph": "X", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": start, "dur": end - start,
                       "cat": "user_annotation"})
        t = end + 10
    meta = {"rank": rank, "host": f"node{rank // 8}", "base_time_ns": 1_800_000_000_000_000_000,
            "job_id": "synthetic", "world_size": world, "clock_offset_ns": 0, "clock_error_ns": 2000}
    with open(os.path.join(d, f"node_rank{rank}.pt.trace.json"), "w") as f:
        json.dump({"traceEvents": events, "trainprof": meta}, f)


def scale(args):
    counts = [int(x) for x in args.ranks.split(",")]
    top = max(counts)
    root = os.path.join(args.dir, "tp_bench_dist")
    shutil.rmtree(root, ignore_errors=True)
    full = os.path.join(root, f"job{top}")
    rng = random.Random(1)
    t0 = time.perf_counter()
    for r in range(top):
        write_rank(full, r, top, args.steps, args.slow_rank, args.slow_ms, rng)
    print(f"generated {top} ranks x {args.steps} steps in {time.perf_counter() - t0:.1f} s")
    cores = os.cpu_count() or 1
    print(f"{'ranks':>6} {'map s':>8} {'map RSS MB':>11} {'reduce s':>9} {'reduce RSS MB':>14} {'summary KB':>11}  straggler")
    for n in counts:
        job = full if n == top else os.path.join(root, f"job{n}")
        if n != top:  # the first n ranks (world size still says `top`: missing ranks are reported)
            os.makedirs(job)
            for r in range(n):
                os.symlink(os.path.join(full, f"rank{r}"), os.path.join(job, f"rank{r}"))
        sums = os.path.join(root, f"summaries{n}")
        os.makedirs(sums)
        map_s, map_rss, _ = run_measured([args.bin, "analyze", "-j", str(cores), "--summaries", sums, "--json", job])
        red_s, red_rss, out = run_measured([args.bin, "combine", "--json", sums], stdout=subprocess.PIPE)
        res = json.loads(out)
        st = res["straggler"]
        kb = statistics.mean(os.path.getsize(os.path.join(sums, f)) for f in os.listdir(sums)) / 1024
        ok = st["rank"] == args.slow_rank and abs(st["lead_p50_ns"] / 1e6 - args.slow_ms) < 0.2 * args.slow_ms \
            if n > args.slow_rank else True
        print(f"{n:>6} {map_s:>8.2f} {map_rss:>11.1f} {red_s:>9.3f} {red_rss:>14.1f} {kb:>11.1f}  "
              f"rank {st['rank']} in {st['share']:.0%} of steps, lead {st['lead_p50_ns'] / 1e6:.1f} ms"
              f"{'' if ok else '  <-- WRONG'}")
    shutil.rmtree(root, ignore_errors=True)


def overhead(args):
    env = dict(os.environ)
    base = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(args.np), args.mpi_example,
            "--max_steps", str(args.steps), "--log_every", "100000"]
    logs = os.path.join(args.dir, "tp_bench_dist_overhead")
    shutil.rmtree(logs, ignore_errors=True)
    runs = {"off": [], "on": []}
    for i in range(args.repeat):
        for mode in ("off", "on"):  # interleaved: drift hits both alike
            flags = ["--profiling.enabled", "false"] if mode == "off" else \
                ["--profiling.log_dir", logs, "--profiling.metrics", "none", "--profiling.memory", "false"]
            out = subprocess.run(base + flags, capture_output=True, text=True, env=env, timeout=600).stdout
            med = [float(l.split()[-1]) for l in out.splitlines() if "median_step_ms" in l]
            runs[mode].append(statistics.median(med))
    off, on = statistics.median(runs["off"]), statistics.median(runs["on"])
    print(f"{args.np} ranks, {args.steps} steps, {args.repeat} interleaved runs each")
    print(f"median step: unprofiled {off:.4f} ms, profiled {on:.4f} ms, ratio {on / off:.4f}")
    print("per-run medians off:", " ".join(f"{x:.4f}" for x in runs["off"]))
    print("per-run medians on: ", " ".join(f"{x:.4f}" for x in runs["on"]))
    shutil.rmtree(logs, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/trainprof")
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--ranks", default="64,256,1024")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--slow-rank", type=int, default=37)
    ap.add_argument("--slow-ms", type=float, default=30.0)
    ap.add_argument("--overhead", action="store_true")
    ap.add_argument("--mpi-example", default="build/examples/mpi/train_mlp_mpi")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if args.overhead:
        args.steps = args.steps if args.steps != 40 else 400
        overhead(args)
    else:
        scale(args)


if __name__ == "__main__":
    main()
