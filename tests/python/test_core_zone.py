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
