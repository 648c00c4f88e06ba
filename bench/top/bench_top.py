"""`trainprof top` benchmarks (issue 30; never tests). Figures in docs/TOP.md.

  python3 bench_top.py --bin build/trainprof --loop build/tests/top/live_loop [--ranks 1024]
                       [--reps 15] [--rounds 6] [--step-ms 4] [--steps 750] [--only read|loop]

Read: a synthetic job directory of --ranks live ranks (job.json, rank<r>/live.json
as the library writes them, heartbeats fresh, ranks on 128 other hosts), then
  - `trainprof top --json JOB`: wall time per answer (median of --reps), target <= 200 ms;
  - `trainprof top --once --rows 50 JOB` (one redraw of the terminal view: read
    every rank, order them, draw the frame): CPU time per frame, target <= 100 ms.
Loop: live_loop with a fixed amount of compute per step (--work calibrated to
--step-ms), live state off and on in alternating rounds of --steps steps; the
median step time each round (the program's own clock), then the median over
rounds of each; target: on - off <= 0.1 % of the step. Also the training
thread's own CPU time per step (not moved by other processes taking the
cores) and the whole process's CPU per step (the collector's extra work). The machine is shared
and noisy: compare the two columns of one run, not runs of different days.
"""
import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def make_job(root, ranks):
    job = os.path.join(root, "bench_2026-01-01_job-bench")
    os.makedirs(job)
    now_wall, now_mono = time.time_ns(), time.monotonic_ns()
    with open(os.path.join(job, "job.json"), "w") as f:
        json.dump({"job_id": "bench", "world_size": ranks}, f)
    for r in range(ranks):
        d = os.path.join(job, f"rank{r}")
        os.makedirs(d)
        med = 0.1 + (0.02 if r == ranks // 3 else 0) + (r % 17) * 1e-4
        times = [med + (i % 5) * 1e-3 for i in range(32)]
        state = {
            "format": "trainprof-live", "version": 1, "pid": 100000 + r, "host": f"node{r // 8:03d}",
            "rank": r, "world_size": ranks, "job_id": "bench", "run_dir": d, "closed": False,
            "heartbeat_wall_ns": now_wall, "heartbeat_mono_ns": now_mono,
            "start_wall_ns": now_wall - 600 * 10**9, "start_mono_ns": now_mono - 600 * 10**9,
            "steps": 6000 - (3 if r == ranks // 3 else 0), "last_step_s": times[-1],
            "mean_step_s": med, "last_step_end_wall_ns": now_wall - 50 * 10**6,
            "last_step_end_mono_ns": now_mono - 50 * 10**6, "step_times_s": times, "window_steps": 32,
            "median_step_s": med, "samples_per_s": 64 / med, "data_share": 0.04,
            "top": [{"name": n, "share": s} for n, s in
                    (("forward", 0.41), ("backward", 0.38), ("optimizer.step", 0.08),
                     ("all_reduce", 0.05), ("data_wait", 0.04), ("zero_grad", 0.02),
                     ("to_device", 0.01), ("log", 0.005))],
            "rss_bytes": 12 << 30, "gpu_bytes": 60 << 30}
        with open(os.path.join(d, "live.json"), "w") as f:
            json.dump(state, f, separators=(",", ":"))
            f.write("\n")
    return job


def bench_read(args):
    root = tempfile.mkdtemp(prefix="tp_bench_top_")
    try:
        job = make_job(root, args.ranks)
        walls, cpus = [], []
        for _ in range(args.reps):
            c0, t0 = children_cpu(), time.perf_counter()
            p = subprocess.run([args.bin, "top", "--json", job], capture_output=True, text=True)
            walls.append(time.perf_counter() - t0)
            cpus.append(children_cpu() - c0)
            if p.returncode != 0:
                sys.exit(f"top --json failed: {p.stderr}")
        doc = json.loads(p.stdout)
        assert len(doc["runs"]) == args.ranks, len(doc["runs"])
        frame_cpu, frame_wall = [], []
        for _ in range(args.reps):
            c0, t0 = children_cpu(), time.perf_counter()
            p = subprocess.run([args.bin, "top", "--once", "--rows", "50", job], capture_output=True,
                               text=True)
            frame_wall.append(time.perf_counter() - t0)
            frame_cpu.append(children_cpu() - c0)
        lines = p.stdout.count("\n")
        jw, jc = statistics.median(walls), statistics.median(cpus)
        fw, fc = statistics.median(frame_wall), statistics.median(frame_cpu)
        print(f"ranks: {args.ranks} (straggler named: rank {doc['straggler']})")
        print(f"top --json            wall {jw * 1e3:7.1f} ms  cpu {jc * 1e3:7.1f} ms   "
              f"target 200 ms wall: {jw / 0.2:.2f}x of it")
        print(f"terminal frame (50 l) wall {fw * 1e3:7.1f} ms  cpu {fc * 1e3:7.1f} ms   "
              f"target 100 ms cpu: {fc / 0.1:.2f}x of it ({lines} lines)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def loop_median(args, live, work):
    log_dir = tempfile.mkdtemp(prefix="tp_bench_loop_")
    try:
        cmd = [args.loop, "--profiling.log_dir", log_dir, "--profiling.trace", "false",
               "--profiling.log_every", "0", "--profiling.metrics", "none", "--profiling.html_report",
               "false", "--profiling.live", "true" if live else "false", "--steps", str(args.steps),
               "--work", str(work), "--times"]
        c0 = children_cpu()
        p = subprocess.run(cmd, capture_output=True, text=True)
        cpu = children_cpu() - c0
        if p.returncode != 0:
            sys.exit(f"live_loop failed: {p.stderr}")
        rows = [line.split() for line in p.stdout.split("times\n", 1)[1].splitlines()]
        rows = rows[args.steps // 10:]  # the first tenth warms up
        loop_median.cpu_per_step = cpu / args.steps
        loop_median.thread_cpu = statistics.median(int(r[1]) for r in rows) / 1e9
        return statistics.median(int(r[0]) for r in rows) / 1e9
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)


def bench_loop(args):
    probe = 2_000_000
    loop_median(argparse.Namespace(**{**vars(args), "steps": 60}), False, probe)
    per_iter = loop_median.thread_cpu / probe  # CPU time: not stretched by other processes
    work = int(args.step_ms / 1e3 / per_iter)
    off, on, cpu_off, cpu_on, th_off, th_on = [], [], [], [], [], []
    for i in range(args.rounds):
        for live in ((False, True) if i % 2 == 0 else (True, False)):
            (on if live else off).append(loop_median(args, live, work))
            (cpu_on if live else cpu_off).append(loop_median.cpu_per_step)
            (th_on if live else th_off).append(loop_median.thread_cpu)
    m_off, m_on = statistics.median(off), statistics.median(on)
    c_off, c_on = statistics.median(cpu_off), statistics.median(cpu_on)
    t_off, t_on = statistics.median(th_off), statistics.median(th_on)
    d = m_on - m_off
    print(f"loop: --work {work} (~{args.step_ms} ms a step), {args.rounds} rounds of {args.steps} steps each way")
    print(f"  live off  median step {m_off * 1e3:.4f} ms   rounds {' '.join(f'{x * 1e3:.4f}' for x in off)}")
    print(f"  live on   median step {m_on * 1e3:.4f} ms   rounds {' '.join(f'{x * 1e3:.4f}' for x in on)}")
    print(f"  on - off  {d * 1e6:+.2f} us = {d / m_off * 100:+.3f} % of the step (target <= 0.1 %; "
          f"round-to-round spread off {(max(off) - min(off)) / m_off * 100:.3f} %)")
    print(f"  training thread's CPU per step (median): off {t_off * 1e3:.4f} ms, on {t_on * 1e3:.4f} ms, "
          f"on - off {(t_on - t_off) * 1e6:+.2f} us = {(t_on - t_off) / t_off * 100:+.3f} %")
    print(f"  process CPU per step (all threads, start and close included): off {c_off * 1e6:.1f} us, "
          f"on {c_on * 1e6:.1f} us, on - off {(c_on - c_off) * 1e6:+.1f} us")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--loop", required=True)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--step-ms", type=float, default=4.0)
    ap.add_argument("--steps", type=int, default=750)
    ap.add_argument("--only", choices=("read", "loop"))
    args = ap.parse_args()
    print(f"host {socket.gethostname()}, {os.cpu_count()} cpus")
    if args.only != "loop":
        bench_read(args)
    if args.only != "read":
        bench_loop(args)


if __name__ == "__main__":
    main()
