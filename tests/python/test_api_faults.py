"""Faults from Python: exceptions inside zones and decorated functions,
KeyboardInterrupt mid-step, a profiler garbage-collected without close(),
profile_data_loader with DataLoader worker processes."""
import textwrap

import pytest

import trainprof
from tp_pyhelpers import load, only_run_dir, operations, run_python, traces


def test_exception_inside_a_zone_propagates_and_ends_the_zone(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False)
    fwd = p.zone("forward")
    for i in range(4):
        with pytest.raises(ZeroDivisionError):
            with fwd:
                with p.zone("inner"):
                    1 / 0
        p.step()
    p.close()
    run_dir = only_run_dir(tmp_path)
    ops = operations(run_dir)
    assert ops["forward"]["count"] == 4 and ops["inner"]["count"] == 4
    assert load(f"{run_dir}/training_summary.json")["unbalanced_zones"] == 0


def test_exception_inside_a_zone_decorated_function(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False)

    @p.zone("step_fn")
    def step_fn(fail):
        """kept"""
        if fail:
            raise KeyError("boom")
        return "ok"

    assert step_fn.__doc__ == "kept" and step_fn.__name__ == "step_fn"
    assert step_fn(False) == "ok"
    with pytest.raises(KeyError):
        step_fn(True)
    p.step()
    p.close()
    assert operations(only_run_dir(tmp_path))["step_fn"]["count"] == 2


def test_keyboard_interrupt_mid_step_keeps_what_was_recorded(tmp_path):
    code = textwrap.dedent(f"""
        import trainprof
        p = trainprof.Profiler(log_dir={str(tmp_path)!r}, wait=0, warmup=0, active=100)
        fwd = p.zone("forward")
        for step in range(100):
            with fwd:
                if step == 7:
                    raise KeyboardInterrupt   # Ctrl-C inside a zone, mid-step
            p.step(1)
    """)
    res = run_python(code, check=False)
    assert res.returncode != 0 and "KeyboardInterrupt" in res.stderr
    run_dir = only_run_dir(tmp_path)   # closed at interpreter exit
    summ = load(f"{run_dir}/training_summary.json")
    assert summ["total_steps"] >= 7
    assert operations(run_dir)["forward"]["count"] == 8   # the interrupted zone ended too
    assert len(load(f"{run_dir}/timing_profile.json")) >= 7
    (trace,) = traces(run_dir)
    doc = load(trace)  # a complete JSON document
    assert sum(1 for e in doc["traceEvents"] if e.get("name") == "forward") == 8


def test_profiler_garbage_collected_without_close(tmp_path):
    code = textwrap.dedent(f"""
        import gc, os, trainprof
        def train():
            p = trainprof.Profiler(log_dir={str(tmp_path)!r}, trace=False)
            for _ in range(5):
                with p.zone("forward"):
                    pass
                p.step(2)
            return p.run_dir
        run_dir = train()
        gc.collect()
        # written when the last reference went, not only at exit
        assert os.path.exists(os.path.join(run_dir, "training_summary.json")), os.listdir(run_dir)
        print("OK")
    """)
    res = run_python(code)
    assert "OK" in res.stdout
    run_dir = only_run_dir(tmp_path)
    assert load(f"{run_dir}/training_summary.json")["total_steps"] == 5
    assert operations(run_dir)["forward"]["count"] == 5


def test_close_twice_and_use_after_close(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False)
    p.step()
    p.close()
    p.close()  # never twice: the second is a no-op
    with pytest.raises(Exception) as info:
        with p.zone("late"):
            pass
    assert "closed" in str(info.value)


def test_profile_data_loader_with_worker_processes(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.arange(200, dtype=torch.float32).reshape(100, 2))
    loader = DataLoader(data, batch_size=10, num_workers=2)
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False)
    seen = 0
    for epoch in range(2):
        wrapped = trainprof.profile_data_loader(loader, profiler=p)
        assert len(wrapped) == 10
        for (batch,) in wrapped:
            seen += batch.shape[0]
            p.step(batch.shape[0])
    p.close()
    assert seen == 200
    ops = operations(only_run_dir(tmp_path))
    assert ops["data_batch_production"]["count"] == 20  # one per batch, not per StopIteration
    assert ops["data_batch_production"]["total_time"] > 0


def test_profile_data_loader_over_an_unsized_iterable(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False)
    got = list(trainprof.profile_data_loader((i for i in range(5)), name="wait", profiler=p))
    p.step()
    p.close()
    assert got == [0, 1, 2, 3, 4]
    assert operations(only_run_dir(tmp_path))["wait"]["count"] == 6  # the 6th wait found the end


def test_wrong_types_raise_clear_errors(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False)
    try:
        with pytest.raises(TypeError):
            p.zone(42)
        with pytest.raises(TypeError):
            p.counter("x", "abc")
        with pytest.raises(TypeError):
            trainprof.profile_operation(42)
    finally:
        p.close()
