"""Cost of one zone (begin + end) from Python, trainprof beside the peers a
training script would use instead, measured side by side in one run.

    python bench/python/bench_zone.py --lib build/libtrainprof.so [--n 200000]
    python bench/python/bench_zone.py --rss 10000000   # RSS before/after N zones

Each item runs N begin+end pairs in a loop; the empty loop's time is
subtracted; the best of --rounds interleaved rounds is reported (the machine
is shared: the minimum is the least disturbed). Ratios are against two
time.perf_counter_ns() calls and against a plain-Python dict timer (the
foundational-SSM guide's start_timer/end_timer style).
"""
import argparse
import collections
import ctypes
import os
import sys
import tempfile
import time

import trainprof
from trainprof import _core


class DictTimer:
    """The plain-Python timer style: a dict of lists of durations."""

    def __init__(self):
        self.timings = collections.defaultdict(list)

    def start_timer(self, name):
        return time.perf_counter()

    def end_timer(self, name, start):
        self.timings[name].append(time.perf_counter() - start)


def loop_empty(n):
    for _ in range(n):
        pass


def loop_perf_counter(n):
    pc = time.perf_counter_ns
    for _ in range(n):
        pc()
        pc()


def make_dict_timer():
    tm = DictTimer()

    def run(n):
        for _ in range(n):
            t = tm.start_timer("forward")
            tm.end_timer("forward", t)
        tm.timings.clear()
    return run


def make_lightning():
    from lightning.pytorch.profilers import SimpleProfiler
    prof = SimpleProfiler()

    def run(n):
        for _ in range(n):
            with prof.profile("forward"):
                pass
        prof.recorded_durations.clear()
    return run


def make_record_function(on):
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    def run(n):
        if on:
            with profile(activities=[ProfilerActivity.CPU]):
                for _ in range(n):
                    with record_function("forward"):
                        pass
        else:
            for _ in range(n):
                with record_function("forward"):
                    pass
    del torch
    return run


def make_viztracer():
    from viztracer import VizTracer
    tracer = VizTracer(verbose=0, tracer_entries=2_000_000)

    def run(n):
        tracer.start()
        for _ in range(n):
            with tracer.log_event("forward"):
                pass
        tracer.stop()
        tracer.clear()
    return run


def make_ctypes(lib_path, log_dir):
    lib = ctypes.CDLL(lib_path)
    lib.tp_config_new.restype = ctypes.c_void_p
    lib.tp_config_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p]
    lib.tp_session_open.restype = ctypes.c_void_p
    lib.tp_session_open.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.tp_session_close.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.tp_config_free.argtypes = [ctypes.c_void_p]
    lib.tp_zone_begin_dyn.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.tp_zone_begin_dyn.restype = None
    lib.tp_zone_end.argtypes = [ctypes.c_void_p]
    lib.tp_zone_end.restype = None
    cfg = lib.tp_config_new()
    for k, v in (("log_dir", log_dir), ("metrics", "none"), ("name", "ctypes")):
        lib.tp_config_set(cfg, k.encode(), v.encode(), None)
    s = lib.tp_session_open(cfg, None)
    lib.tp_config_free(cfg)
    begin, end = lib.tp_zone_begin_dyn, lib.tp_zone_end

    def run(n):
        for _ in range(n):
            begin(s, b"forward")
            end(s)
    run.close = lambda: lib.tp_session_close(s, None)
    return run


def make_trainprof(prof, style):
    fwd = prof.zone("forward")

    def reused(n):
        for _ in range(n):
            with fwd:
                pass

    def by_name(n):
        z = prof.zone
        for _ in range(n):
            with z("forward"):
                pass

    def timers(n):
        start, end = prof.start_timer, prof.end_timer
        for _ in range(n):
            t = start("forward")
            end("forward", t)
    run = {"reused": reused, "by_name": by_name, "timers": timers}[style]
    # untimed: summary() drains the buffers, so every round records into a
    # drained pool (a full pool drops events, and a dropped event is cheaper)
    run.after = prof.summary
    return run


def timed(fn, n):
    t0 = time.perf_counter_ns()
    fn(n)
    return time.perf_counter_ns() - t0


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_check(prof, n):
    """Zones only (a step every 100,000 zones): the C layer keeps a few
    hundred bytes per step for timing_profile.json, which is not a leak."""
    fwd = prof.zone("forward")
    step = prof.step
    for i in range(1_000_000):  # warm: buffers, caches, interned names
        with fwd:
            pass
        if i % 100_000 == 99_999:
            step()
    before = rss_bytes()
    for i in range(n):
        with fwd:
            pass
        with prof.zone("forward"):
            pass
        prof.end_timer("timer", prof.start_timer("timer"))
        if i % 100_000 == 99_999:
            step()
    after = rss_bytes()
    print(f"RSS after 1M warm-up zones: {before / 2**20:.1f} MiB; after {n:,} more zones, "
          f"by-name zones and timers: {after / 2**20:.1f} MiB "
          f"(delta {(after - before) / 2**20:+.1f} MiB)")
    return after - before


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="zones per item and round")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--lib", help="libtrainprof.so for the ctypes item (skipped without it)")
    ap.add_argument("--rss", type=int, default=0, help="only the RSS check, with this many zones")
    ap.add_argument("--skip", default="", help="comma-separated item names to leave out")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        # a small buffer pool: RSS growth beyond it would be a leak
        prof = trainprof.Profiler(log_dir=d, metrics="none", name="bench",
                                  max_buffer_mb=2 if a.rss else 64)
        if a.rss:
            delta = rss_check(prof, a.rss)
            prof.close()
            return 0 if delta < 16 * 2**20 else 1
        items = [("two perf_counter_ns()", loop_perf_counter, 1),
                 ("dict timer start/end (plain Python)", make_dict_timer(), 1),
                 ("lightning SimpleProfiler.profile()", make_lightning, 1),
                 ("torch record_function, profiler off", lambda: make_record_function(False), 1),
                 ("torch record_function, profiler on", lambda: make_record_function(True), 10),
                 ("viztracer log_event (tracing)", make_viztracer, 2),
                 ("ctypes tp_zone_begin_dyn/tp_zone_end", lambda: make_ctypes(a.lib, d), 1),
                 ("trainprof `with fwd:` (reused zone)", make_trainprof(prof, "reused"), 1),
                 ("trainprof `with prof.zone(name):`", make_trainprof(prof, "by_name"), 1),
                 ("trainprof start_timer/end_timer", make_trainprof(prof, "timers"), 1)]
        skip = set(filter(None, a.skip.split(",")))
        runs = []
        for name, make, div in items:
            if name.split()[0] in skip or (name.startswith("ctypes") and not a.lib):
                continue
            try:
                fn = make if name.startswith(("two", "dict", "trainprof")) else make()
            except Exception as e:  # a peer not installed: said, not fatal
                print(f"{name}: skipped ({e.__class__.__name__}: {e})")
                continue
            runs.append((name, fn, max(a.n // div, 1000)))
        best = {name: float("inf") for name, _, _ in runs}
        for _ in range(a.rounds):
            for name, fn, n in runs:
                empty = timed(loop_empty, n)
                best[name] = min(best[name], max(timed(fn, n) - empty, 0) / n)
                if hasattr(fn, "after"):
                    fn.after()
        for name, fn, _ in runs:
            if hasattr(fn, "close"):
                fn.close()
        dropped = prof.stats()["events_dropped"]
        prof.close()
    pc = best.get("two perf_counter_ns()")
    dt = best.get("dict timer start/end (plain Python)")
    print(f"python {sys.version.split()[0]}, trainprof {trainprof.__version__}, "
          f"n={a.n}, best of {a.rounds} rounds, trainprof events dropped: {dropped}")
    print(f"{'per zone (begin + end)':44s} {'ns':>9s} {'x 2 pc_ns':>10s} {'x dict':>8s}")
    for name, _, _ in runs:
        v = best[name]
        print(f"{name:44s} {v:9.1f} {v / pc:10.2f} {v / dt:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
