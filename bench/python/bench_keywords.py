"""Keyword calls beside positional ones, side by side in one run:
prof.step(samples=8) vs prof.step(8), counter(name=, value=) vs
counter(n, v), start_timer(name=)/end_timer(name=, token=) vs positional,
zone(name=) vs zone(n); step with the default configuration (a memory
sample at each step end); and CPython's own int.from_bytes(b, "little") vs
int.from_bytes(b, byteorder="little") (an Argument Clinic builtin): what a
keyword costs the interpreter itself; and the same calls on methods that
do nothing (the bench-only C module kwcall, declared METH_FASTCALL |
METH_KEYWORDS as trainprof's are): noop.step(8) vs noop.step(samples=8) is
the interpreter's keyword call alone, with no argument matching inside.

    cmake --build build --target bench_python_keywords   # builds kwcall too
    PYTHONPATH=build/python:build/bench/python \
        python bench/python/bench_keywords.py [--n 200000] [--rounds 9]

Each case runs N calls in a loop; the cases alternate within each round
and the best of --rounds is reported, less the best empty loop, with the
keyword/positional ratio (target: within 5 %).
"""
import argparse
import sys
import tempfile
import time

import trainprof

try:
    import kwcall  # build/bench/python (cmake --build build --target bench_python_kwcall)
except ImportError:
    sys.exit("bench_keywords.py: the module kwcall is missing: cmake --build build --target "
             "bench_python_kwcall, then PYTHONPATH=build/python:build/bench/python")


def noop_cases(noop):
    def step_pos(n):
        for _ in range(n):
            noop.step(8)

    def step_kw(n):
        for _ in range(n):
            noop.step(samples=8)

    def counter_pos(n):
        for _ in range(n):
            noop.counter("loss", 0.5)

    def counter_kw(n):
        for _ in range(n):
            noop.counter(name="loss", value=0.5)

    return [("no-op step", step_pos, step_kw), ("no-op counter", counter_pos, counter_kw)]


def cases(p, p_default):
    def step_default_pos(n):
        for _ in range(n):
            p_default.step(8)

    def step_default_kw(n):
        for _ in range(n):
            p_default.step(samples=8)

    frombytes, data = int.from_bytes, b"\x01\x02"

    def clinic_pos(n):
        for _ in range(n):
            frombytes(data, "little")

    def clinic_kw(n):
        for _ in range(n):
            frombytes(data, byteorder="little")

    def step_pos(n):
        for _ in range(n):
            p.step(8)

    def step_kw(n):
        for _ in range(n):
            p.step(samples=8)

    def counter_pos(n):
        for _ in range(n):
            p.counter("loss", 0.5)

    def counter_kw(n):
        for _ in range(n):
            p.counter(name="loss", value=0.5)

    def timer_pos(n):
        for _ in range(n):
            p.end_timer("t", p.start_timer("t"))

    def timer_kw(n):
        for _ in range(n):
            p.end_timer(name="t", token=p.start_timer(name="t"))

    def zone_pos(n):
        for _ in range(n):
            with p.zone("z"):
                pass

    def zone_kw(n):
        for _ in range(n):
            with p.zone(name="z"):
                pass

    return [("step", step_pos, step_kw), ("counter", counter_pos, counter_kw),
            ("start_timer/end_timer", timer_pos, timer_kw), ("zone by name", zone_pos, zone_kw),
            ("step, default config", step_default_pos, step_default_kw),
            ("CPython int.from_bytes", clinic_pos, clinic_kw)]


def empty(n):
    for _ in range(n):
        pass


def timed(fn, n):
    t0 = time.perf_counter_ns()
    fn(n)
    return time.perf_counter_ns() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        p = trainprof.Profiler(log_dir=tmp, trace=False, memory=False, metrics="none",
                               html_report=False, handle_signals=False)
        # the defaults (a memory sample at every step end), without trace windows
        p_default = trainprof.Profiler(log_dir=tmp, trace=False, metrics="none",
                                       html_report=False, handle_signals=False)
        table = cases(p, p_default) + noop_cases(kwcall.Noop())
        best, base = {}, float("inf")
        for rnd in range(args.rounds):
            base = min(base, timed(empty, args.n) / args.n)
            for name, pos, kw in table:
                pair = [("positional", pos), ("keyword", kw)]
                for label, fn in (pair if rnd % 2 == 0 else pair[::-1]):
                    ns = timed(fn, args.n) / args.n
                    key = (name, label)
                    best[key] = min(best.get(key, ns), ns)
        best = {key: max(ns - base, 0) for key, ns in best.items()}  # the fastest empty loop
        p.close()
        p_default.close()
    print(f"best of {args.rounds} rounds of {args.n:,} calls (ns per call, empty loop subtracted)")
    print(f"{'call':<24} {'positional':>11} {'keyword':>9} {'+ns':>6} {'keyword/positional':>19}")
    for name, _pos, _kw in table:
        a, b = best[(name, "positional")], best[(name, "keyword")]
        ratio = f"{b / a:19.3f}" if a > 0 else f"{'-':>19}"  # a no-op can round to 0
        print(f"{name:<24} {a:11.1f} {b:9.1f} {b - a:6.1f} {ratio}")
    extra = {name: best[(name, "keyword")] - best[(name, "positional")] for name, _p, _k in table}
    print("a keyword's cost, ours beside the interpreter's alone (a no-op METH_FASTCALL | "
          "METH_KEYWORDS method, same keywords):")
    for ours, noop in (("step", "no-op step"), ("counter", "no-op counter")):
        print(f"  {ours}: +{extra[ours]:.1f} ns, no-op: +{extra[noop]:.1f} ns, "
              f"trainprof's own share: {extra[ours] - extra[noop]:+.1f} ns")


if __name__ == "__main__":
    sys.exit(main())
