"""start_timer/end_timer: complete zones (any order, overlapping), and the
tokens that are refused (another profiler's, ended twice, not a token)."""
import time

import pytest

from trainprof import _core
from core_helpers import ops, trace_events


def test_overlapping_timers_in_any_order(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path), wait=0, warmup=0, active=1)
    a = p.start_timer("a")
    time.sleep(0.01)
    b = p.start_timer("b")
    time.sleep(0.01)
    p.end_timer("a", a)  # a ends before b: not nested
    time.sleep(0.01)
    p.end_timer("b", b)
    p.step()
    live = p.summary()
    p.close()
    assert 0.015 < live["a"]["total_time"] < 1 and 0.015 < live["b"]["total_time"] < 1
    assert live["a"]["self_time"] == pytest.approx(live["a"]["total_time"])
    table = ops(p.run_dir)
    assert table["a"]["count"] == 1 and table["b"]["count"] == 1
    slices = {e["name"]: e for e in trace_events(p.run_dir) if e.get("ph") == "X"}
    assert slices["a"]["ts"] < slices["b"]["ts"] < slices["a"]["ts"] + slices["a"]["dur"]


def test_timer_inside_a_zone_keeps_the_zone_self_time(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path))
    with p.zone("outer"):
        t = p.start_timer("t")
        time.sleep(0.01)
        p.end_timer("t", t)
    s = p.summary()
    p.close()
    assert s["outer"]["self_time"] == pytest.approx(s["outer"]["total_time"])


def test_refused_tokens(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path))
    q = _core.Profiler(log_dir=str(tmp_path))
    t = p.start_timer("x")
    with pytest.raises(ValueError, match="not made by this profiler"):
        q.end_timer("x", t)
    p.end_timer("x", t)
    with pytest.raises(ValueError, match="already ended"):
        p.end_timer("x", t)
    with pytest.raises(ValueError):
        p.end_timer("x", -5)
    with pytest.raises(TypeError):
        p.end_timer("x", "token")
    with pytest.raises(TypeError):
        p.start_timer(3)
    with pytest.raises(TypeError):
        p.end_timer(3, p.start_timer("y"))
    p.close()
    q.close()
    assert p.summary()["x"]["count"] == 1


def test_more_open_timers_than_slots(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path))
    tokens = [p.start_timer("many") for _ in range(_core.TIMER_SLOTS + 10)]
    with pytest.raises(ValueError):
        p.end_timer("many", tokens[0])  # overwritten by token TIMER_SLOTS
    for t in tokens[10:]:
        p.end_timer("many", t)
    assert p.summary()["many"]["count"] == _core.TIMER_SLOTS
    p.close()
