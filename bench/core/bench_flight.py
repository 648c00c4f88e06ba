#!/usr/bin/env python3
"""The flight recorder's always-on cost, side by side (issue 34).

1. callgrind (instruction counts: no noise): bench_steps under
   `valgrind --tool=callgrind` with the ring off and on
   (TP_BENCH_CAPTURE=false|true; slow-step captures off so only the ring
   is measured), instructions per zone on the recording thread and in the
   collector, aggregate-only and trace-window sessions, as
   tests/core/check_instructions.py counts them.
2. wall time: ROUNDS alternating fresh processes of bench_steps (off, on),
   the zone's ns on the recording thread and the median step ratio.

usage: bench_flight.py BENCH_STEPS [VALGRIND] [ROUNDS=6]
Then build/bench/core/bench_flight for ring memory, a capture's cost on the
training thread and the hang dump's latency."""
import os
import re
import statistics
import subprocess
import sys
import tempfile

LINE = re.compile(r"callgrind (\w+): instructions per zone ([\d.]+) .*collector per zone ([\d.]+)")


def callgrind(valgrind, bench, capture):
    env = dict(os.environ, TP_BENCH_CAPTURE=capture)
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([valgrind, "--tool=callgrind", "--separate-threads=yes", bench, "1", "10",
                              "20000"], cwd=d, capture_output=True, text=True, env=env, timeout=900)
    return {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in map(LINE.match, out.stdout.splitlines()) if m}


def wall(bench, capture):
    env = dict(os.environ, TP_BENCH_CAPTURE=capture)
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([bench, "1", "20", "20000"], cwd=d, capture_output=True, text=True,
                             env=env, timeout=600).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) > 6 and f[0] == "1" and f[1] in ("aggregate", "trace"):
            rows[f[1]] = (float(f[3]), float(f[4]), float(f[5]))  # zone ns, zone / 2 reads, step ratio
    return rows


def main():
    bench = os.path.abspath(sys.argv[1])
    valgrind = sys.argv[2] if len(sys.argv) > 2 else "valgrind"
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    cg = {c: callgrind(valgrind, bench, c) for c in ("false", "true")} if valgrind != "-" else {}
    print("callgrind, instructions per zone (bench_steps 1 10 20000):")
    for case in ("aggregate", "trace") if cg else ():
        (w0, c0), (w1, c1) = cg["false"].get(case, (0, 0)), cg["true"].get(case, (0, 0))
        print(f"  {case:9s} recording thread {w0:.1f} -> {w1:.1f}; collector {c0:.1f} -> {c1:.1f} "
              f"(+{c1 - c0:.1f} per zone with the ring)")
    got = {"false": {"aggregate": [], "trace": []}, "true": {"aggregate": [], "trace": []}}
    for _ in range(rounds):
        for c in ("false", "true"):
            for case, v in wall(bench, c).items():
                got[c][case].append(v)
    print(f"wall time, {rounds} alternating rounds, medians on the recording thread: zone ns, "
          f"zone / two TSC reads in the same process, median step ratio:")
    for case in ("aggregate", "trace"):
        off, on = got["false"][case], got["true"][case]
        m = [(statistics.median(v[i] for v in off), statistics.median(v[i] for v in on)) for i in range(3)]
        print(f"  {case:9s} zone {m[0][0]:.2f} -> {m[0][1]:.2f} ns ({m[0][1] / m[0][0]:.3f}x); "
              f"ratio {m[1][0]:.2f} -> {m[1][1]:.2f}; step ratio {m[2][0]:.2f} -> {m[2][1]:.2f}")
        print("    rounds off:", [round(v[0], 1) for v in off], "on:", [round(v[0], 1) for v in on])


if __name__ == "__main__":
    main()
