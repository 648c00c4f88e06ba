"""set_memory_provider: device rows in memory_profile.json, and providers
that raise or return junk (reported once on stderr, switched off)."""
import glob
import os
import textwrap

import pytest

from trainprof import _core
from core_helpers import load, python

GIB = 1 << 30


def test_provider_rows_reach_memory_profile(tmp_path):
    calls = []

    def provider():
        calls.append(1)
        return {"cuda:0": {"bytes_in_use": GIB, "peak_bytes_in_use": 2 * GIB,
                           "reserved_bytes": 3 * GIB}}

    p = _core.Profiler(log_dir=str(tmp_path), memory_interval="5ms")
    p.set_memory_provider(provider)
    for _ in range(4):
        with p.zone("a"):
            pass
        p.step()
    p.close()
    assert calls
    rows = load(os.path.join(p.run_dir, "memory_profile.json"))
    dev = [r for r in rows if "cuda:0" in r.get("memory", {})]
    assert dev, rows[:2]
    assert dev[0]["memory"]["cuda:0"]["bytes_in_use"] == GIB
    assert dev[0]["gpu_memory_allocated_gb"] == pytest.approx(1)


def test_empty_provider_is_valid(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path), memory_interval="5ms")
    p.set_memory_provider(lambda: {})
    p.step()
    p.close()
    load(os.path.join(p.run_dir, "memory_profile.json"))


@pytest.mark.parametrize("body", [
    "raise RuntimeError('provider broke')",
    "return [1, 2]",
    "return {'cuda:0': {'bytes_in_use': 'lots'}}",
    "return {'cuda:0': {'peak_bytes_in_use': 1}}",
    "return {42: {'bytes_in_use': 1}}",
])
def test_failing_provider_is_reported_once_and_switched_off(tmp_path, body):
    code = textwrap.dedent(f"""
        import time
        from trainprof import _core
        calls = []
        def provider():
            calls.append(1)
            {body}
        p = _core.Profiler(log_dir={str(tmp_path)!r}, memory_interval="2ms")
        p.set_memory_provider(provider)
        for i in range(20):
            with p.zone("a"):
                time.sleep(0.002)
            p.step()
        p.close()
        print("calls", len(calls))
    """)
    rc, out, err = python(code)
    assert rc == 0, err
    assert err.count("memory provider failed") == 1, err
    assert "calls 1" in out
    run_dir = glob.glob(os.path.join(str(tmp_path), "*"))[0]
    load(os.path.join(run_dir, "memory_profile.json"))
    assert load(os.path.join(run_dir, "operations.json"))
