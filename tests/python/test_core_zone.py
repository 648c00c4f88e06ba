"""trainprof._core.Zone: reused, by name, nested, as a decorator (functions
and methods), exceptions, and zones from several Python threads."""
import functools
import threading

import pytest

from trainprof import _core
from core_helpers import every_json, ops, trace_events


def test_zone_objects_are_cached_per_name(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path))
    assert p.zone("forward") is p.zone("forward")
    assert p.zone("forward").name == "forward"
    p.close()


def test_reused_and_recursive_zone(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path))
    fwd = p.zone("forward")
    for _ in range(3):
        with fwd:
            with fwd:  # reentrant: the C layer keeps the nesting
                pass
    p.close()
    assert ops(p.run_dir)["forward"]["count"] == 6
    assert every_json(p.run_dir)["training_summary.json"]["unbalanced_zones"] == 0


def test_decorator_keeps_metadata_and_binds_as_a_method(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path))

    @p.zone("fn")
    def fn(a, b=2):
        """doc of fn"""
        return a + b

    class Model:
        @p.zone("method")
        def forward(self, x):
            return x * 2

        @staticmethod
        @p.zone("static")
        def helper(x):
            return -x

    assert fn(1) == 3 and fn(1, b=5) == 6
    assert fn.__name__ == "fn" and fn.__doc__ == "doc of fn" and fn.__wrapped__(1) == 3
    assert functools.WRAPPER_ASSIGNMENTS
    assert Model().forward(4) == 8 and Model.helper(3) == -3
    assert Model.forward.__qualname__.endswith("Model.forward")
    p.close()
    table = ops(p.run_dir)
    assert table["fn"]["count"] == 2 and table["method"]["count"] == 1
    assert table["static"]["count"] == 1


def test_exceptions_propagate_and_the_zone_still_ends(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path))

    @p.zone("deco")
    def boom():
        raise KeyError("x")

    for _ in range(3):
        with pytest.raises(ZeroDivisionError):
            with p.zone("outer"):
                1 / 0
        with pytest.raises(KeyError):
            boom()
    p.close()
    table = ops(p.run_dir)
    assert table["outer"]["count"] == 3 and table["deco"]["count"] == 3
    assert every_json(p.run_dir)["training_summary.json"]["unbalanced_zones"] == 0


def test_decorating_a_non_callable_is_a_type_error(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path))
    with pytest.raises(TypeError):
        p.zone("x")(42)
    p.close()


def test_eight_threads_get_their_own_named_tracks(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path), wait=0, warmup=0, active=1)
    barrier = threading.Barrier(8)

    def work():
        barrier.wait()
        z = p.zone("work")
        for _ in range(2000):
            with z:
                with p.zone("inner"):
                    pass
        p.end_timer("t", p.start_timer("t"))

    threads = [threading.Thread(target=work, name=f"worker-{i}") for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    p.step()
    p.close()
    table = ops(p.run_dir)
    assert table["work"]["count"] == 16000 and table["inner"]["count"] == 16000
    assert table["t"]["count"] == 8
    summary = every_json(p.run_dir)["training_summary.json"]
    assert summary["unbalanced_zones"] == 0
    events = trace_events(p.run_dir)
    named = {e["args"]["name"]: e["tid"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for i in range(8):
        assert f"worker-{i}" in named, sorted(named)
    tids = {named[f"worker-{i}"] for i in range(8)}
    assert len(tids) == 8
    work_tids = {e["tid"] for e in events if e.get("name") == "work"}
    assert work_tids == tids


def test_zones_ended_out_of_order_keep_their_own_intervals(tmp_path, capfd):
    """A entered, B entered, A exited, B exited (manual __enter__/__exit__,
    async code): each zone ends its own interval; the overlap is counted in
    unbalanced_zones and warned about once, naming the zones."""
    import json
    import time as _time
    p = _core.Profiler(log_dir=str(tmp_path), wait=0, warmup=0, active=1, metrics="none")
    a, b = p.zone("A"), p.zone("B")
    a.__enter__()
    _time.sleep(0.02)
    b.__enter__()
    _time.sleep(0.02)
    a.__exit__(None, None, None)   # A: 40 ms, B so far 20 ms
    _time.sleep(0.02)
    b.__exit__(None, None, None)   # B: 40 ms
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)   # a second overlap: counted, not warned again
    b.__exit__(None, None, None)
    p.step()
    p.close()
    with open(f"{p.run_dir}/operations.json", encoding="utf-8") as f:
        table = {o["name"]: o for o in json.load(f)}
    assert 0.039 <= table["A"]["max_time"] < 0.060, table["A"]
    assert 0.039 <= table["B"]["max_time"] < 0.060, table["B"]
    with open(f"{p.run_dir}/training_summary.json", encoding="utf-8") as f:
        assert json.load(f)["unbalanced_zones"] == 2
    err = capfd.readouterr().err
    assert err.count("zone 'A' ended before 'B'") == 1, err
    # the trace has both, each with its own interval
    events = [e for e in every_json(p.run_dir)[next(k for k in every_json(p.run_dir)
                                                   if k.startswith("profiler_traces"))]["traceEvents"]
              if e.get("ph") == "X" and e["name"] in ("A", "B")]
    first_a = min((e for e in events if e["name"] == "A"), key=lambda e: e["ts"])
    first_b = min((e for e in events if e["name"] == "B"), key=lambda e: e["ts"])
    assert first_a["ts"] < first_b["ts"] < first_a["ts"] + first_a["dur"] < first_b["ts"] + first_b["dur"]


def test_exit_of_a_zone_that_is_not_open_ends_nothing_else(tmp_path):
    import json
    p = _core.Profiler(log_dir=str(tmp_path), metrics="none")
    a, b = p.zone("A"), p.zone("B")
    a.__enter__()
    b.__exit__(None, None, None)   # B was never entered: A stays open
    a.__exit__(None, None, None)
    p.step()
    p.close()
    with open(f"{p.run_dir}/operations.json", encoding="utf-8") as f:
        table = {o["name"]: o for o in json.load(f)}
    assert table["A"]["count"] == 1 and "B" not in table
    with open(f"{p.run_dir}/training_summary.json", encoding="utf-8") as f:
        assert json.load(f)["unbalanced_zones"] == 1
