"""A million zones from Python (reused, by name, timers) leave RSS flat:
no reference leaks in the extension (bench/python/bench_zone.py --rss runs
ten million)."""
import gc

from trainprof import _core


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_a_million_zones_leave_rss_flat(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path), max_buffer_mb=2, metrics="none")
    fwd = p.zone("forward")

    def burst(n):
        for i in range(n):
            with fwd:
                pass
            with p.zone("by_name"):
                pass
            p.end_timer("timer", p.start_timer("timer"))
            if i % 100_000 == 99_999:
                p.step()

    burst(200_000)
    gc.collect()
    before = rss_kib()
    burst(1_000_000)
    gc.collect()
    after = rss_kib()
    p.close()
    assert after - before < 4096, f"RSS grew by {after - before} KiB"
