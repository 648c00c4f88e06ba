"""trainprof._core.Profiler: lifecycle, recording calls, summary(), outputs,
closing (explicit, context manager, exit, garbage collection) and misuse."""
import gc
import glob
import os
import textwrap

import pytest

from trainprof import _core
from core_helpers import every_json, ops, python


def open_profiler(tmp_path, **kw):
    kw.setdefault("metrics", "jsonl")
    return _core.Profiler(log_dir=str(tmp_path), **kw)


def test_records_zones_steps_counters_marks_and_writes_valid_json(tmp_path):
    p = open_profiler(tmp_path, wait=0, warmup=0, active=2)
    assert p.enabled and not p.closed and os.path.isdir(p.run_dir)
    fwd = p.zone("forward")
    for i in range(6):
        with fwd:
            with p.zone("inner"):
                pass
        p.counter("loss", 1.0 / (i + 1))
        p.counter("lr", 3)
        p.mark("checkpoint")
        p.step(32)
    assert p.steps == 6
    p.close()
    files = every_json(p.run_dir)
    for name in ("timing_profile.json", "operations.json", "training_summary.json",
                 "memory_profile.json"):
        assert name in files, sorted(files)
    table = ops(p.run_dir)
    assert table["forward"]["count"] == 6 and table["inner"]["count"] == 6
    events = [e for f, d in files.items() if f.startswith("profiler_traces")
              for e in (d["traceEvents"] if isinstance(d, dict) else d)]
    names = {e.get("name") for e in events}
    assert {"forward", "inner", "loss", "checkpoint"} <= names


def test_summary_fields_in_seconds_live_and_after_close(tmp_path):
    p = open_profiler(tmp_path)
    fwd = p.zone("forward")
    for _ in range(10):
        with fwd:
            sum(range(2000))
    live = p.summary()
    row = live["forward"]
    assert set(row) == {"count", "total_time", "avg_time", "self_time", "min", "max",
                        "p50", "p90", "p99"}
    assert row["count"] == 10
    assert 0 < row["min"] <= row["p50"] <= row["p90"] <= row["p99"] <= row["max"] < 1.0
    assert row["total_time"] == pytest.approx(row["avg_time"] * 10, rel=1e-6)
    p.close()
    assert p.summary()["forward"]["count"] == 10
    assert p.summary() is not p.summary()  # a copy each time


def test_close_is_idempotent_and_closed_use_raises(tmp_path):
    p = open_profiler(tmp_path)
    fwd = p.zone("forward")
    p.close()
    p.close()
    assert p.closed
    with pytest.raises(_core.ProfilerClosedError):
        p.zone("x")
    with pytest.raises(RuntimeError):  # ProfilerClosedError is a RuntimeError
        with fwd:
            pass
    for call in (lambda: p.step(), lambda: p.counter("c", 1), lambda: p.mark("m"),
                 lambda: p.start_timer("t"), lambda: p.end_timer("t", 1)):
        with pytest.raises(_core.ProfilerClosedError):
            call()


def test_context_manager_closes(tmp_path):
    with open_profiler(tmp_path) as p:
        with p.zone("a"):
            pass
    assert p.closed
    assert ops(p.run_dir)["a"]["count"] == 1


def test_wrong_types_raise_type_error(tmp_path):
    p = open_profiler(tmp_path)
    with pytest.raises(TypeError):
        p.zone(42)
    with pytest.raises(TypeError):
        p.counter("x", "abc")
    with pytest.raises(TypeError):
        p.counter(1, 2.0)
    with pytest.raises(TypeError):
        p.mark(None)
    with pytest.raises(TypeError):
        p.step("32")
    with pytest.raises(ValueError):
        p.step(-1)
    with pytest.raises(TypeError):
        p.set_memory_provider(3)
    p.close()


def test_disabled_profiler_is_a_cheap_no_op(tmp_path):
    p = _core.Profiler(enabled=False, log_dir=str(tmp_path))
    assert not p.enabled and p.run_dir is None
    with p.zone("a"):
        pass
    p.counter("c", 1.0)
    p.end_timer("t", p.start_timer("t"))
    p.step(4)
    assert p.summary() == {}
    p.close()
    assert os.listdir(tmp_path) == []


def test_garbage_collected_without_close_writes_everything(tmp_path):
    p = open_profiler(tmp_path)
    with p.zone("kept"):
        pass
    p.step()
    run_dir = p.run_dir
    with pytest.warns(ResourceWarning):
        del p
        gc.collect()
    assert ops(run_dir)["kept"]["count"] == 1
    every_json(run_dir)


def test_interpreter_exit_closes_once(tmp_path):
    code = textwrap.dedent(f"""
        from trainprof import _core
        p = _core.Profiler(log_dir={str(tmp_path)!r}, metrics="console")
        with p.zone("at_exit"):
            pass
        p.step()
        keep = [p]  # never closed, never collected before exit
    """)
    rc, out, err = python(code)
    assert rc == 0, err
    assert (out + err).count("at_exit") == 1  # the console table, printed once
    run_dir = glob.glob(os.path.join(str(tmp_path), "*"))[0]
    assert ops(run_dir)["at_exit"]["count"] == 1
    every_json(run_dir)


def test_keyboard_interrupt_mid_step_loses_nothing(tmp_path):
    code = textwrap.dedent(f"""
        import os, signal
        from trainprof import _core
        p = _core.Profiler(log_dir={str(tmp_path)!r})
        try:
            for i in range(100):
                with p.zone("forward"):
                    if i == 5:
                        os.kill(os.getpid(), signal.SIGINT)
                p.step()
        except KeyboardInterrupt:
            print("interrupted")
        p.close()
    """)
    rc, out, err = python(code)
    assert rc == 0 and "interrupted" in out, err
    run_dir = glob.glob(os.path.join(str(tmp_path), "*"))[0]
    assert ops(run_dir)["forward"]["count"] == 6
    every_json(run_dir)


def test_stats_and_hooks(tmp_path):
    seen = []
    _core._set_open_hook(lambda prof: seen.append(("open", prof.run_dir)))
    try:
        p = open_profiler(tmp_path)
    finally:
        _core._set_open_hook(None)
    p._set_step_hook(lambda: seen.append("step"))
    p._add_close_hook(lambda: seen.append(("closed", os.path.exists(
        os.path.join(p.run_dir, "training_summary.json")))))
    p.step()
    p.step()
    assert p.stats()["steps"] == 2
    p.close()
    assert seen == [("open", p.run_dir), "step", "step", ("closed", True)]


def test_subclass_keeps_its_own_keywords(tmp_path):
    class Mine(_core.Profiler):
        def __init__(self, extra=0, config=None, **kw):
            self.extra = extra
            super().__init__(config, **kw)

    m = Mine(extra=5, log_dir=str(tmp_path))
    assert m.extra == 5 and m.enabled
    prof, rest = Mine.from_args(["--profiling.log_dir", str(tmp_path), "--lr", "3"])
    assert isinstance(prof, Mine) and rest == ["--lr", "3"]
    m.close()
    prof.close()
