"""The timer style (foundational-SSM guide) over the C profiler: tokens,
get_summary, reset, profile_operation, log_profiling_metrics, metrics loggers,
W&B with and without wandb installed."""
import functools
import textwrap
import time

import pytest

import trainprof
from tp_pyhelpers import jsonl, load, only_run_dir, operations, run_python


@pytest.fixture
def prof(tmp_path):
    p = trainprof.TrainingProfiler(log_dir=str(tmp_path), trace=False, log_every=5,
                                   metrics="jsonl")
    yield p
    p.close()


def test_training_profiler_is_the_c_profiler(prof):
    assert isinstance(prof, trainprof.Profiler)
    # the timer methods are the C type's, not Python functions
    assert type(trainprof.Profiler.__dict__["start_timer"]).__name__ == "method_descriptor"
    assert "start_timer" not in trainprof.TrainingProfiler.__dict__


def test_timer_tokens_and_summary_fields(prof):
    for _ in range(4):
        tok = prof.start_timer("load")
        time.sleep(0.002)
        prof.end_timer("load", tok)
        prof.step(8)
    s = prof.get_summary()
    assert set(s) == {"load"}
    row = s["load"]
    assert row["count"] == 4
    assert row["total_time"] >= 4 * 0.002
    assert row["avg_time"] == pytest.approx(row["total_time"] / 4)
    for key in ("self_time", "min", "max", "p50", "p90", "p99"):
        assert key in row, key
    assert row["min"] <= row["p50"] <= row["p99"] <= row["max"] + 1e-12


def test_nested_timers_and_foreign_token(prof):
    outer = prof.start_timer("outer")
    inner = prof.start_timer("inner")
    prof.end_timer("inner", inner)
    prof.end_timer("outer", outer)
    with pytest.raises((ValueError, TypeError, RuntimeError)):
        prof.end_timer("outer", 12345)
    prof.step()
    assert prof.get_summary()["outer"]["count"] == 1


def test_reset_starts_the_view_afresh_but_not_the_files(prof, tmp_path):
    for _ in range(3):
        with prof.zone("fwd"):
            pass
        prof.step()
    prof.reset()
    assert prof.get_summary() == {}
    for _ in range(2):
        with prof.zone("fwd"):
            pass
        prof.step()
    s = prof.get_summary()
    assert s["fwd"]["count"] == 2
    assert s["fwd"]["avg_time"] == pytest.approx(s["fwd"]["total_time"] / 2)
    # the same keys as before the reset (issue 22: KeyError 'p99')
    assert set(s["fwd"]) == set(prof.summary()["fwd"])
    row = s["fwd"]
    assert row["min"] <= row["p50"] <= row["p90"] <= row["p99"] <= row["max"] + 1e-12
    prof.close()
    assert operations(only_run_dir(tmp_path))["fwd"]["count"] == 5


def test_profile_operation_keeps_wraps_and_propagates(prof):
    @trainprof.profile_operation("forward", profiler=prof)
    def forward(x):
        """doc kept"""
        if x < 0:
            raise ValueError("negative")
        return x * 2

    assert forward.__name__ == "forward" and forward.__doc__ == "doc kept"
    assert isinstance(forward, functools.partial) or hasattr(forward, "__wrapped__")
    assert forward(3) == 6
    with pytest.raises(ValueError, match="negative"):
        forward(-1)
    prof.step()
    assert prof.get_summary()["forward"]["count"] == 2  # the failing call's zone ended too


def test_profile_operation_uses_the_global_profiler_lazily(tmp_path):
    code = textwrap.dedent(f"""
        import trainprof
        @trainprof.profile_operation("decorated")
        def f():
            return 1
        assert trainprof._global is None, "decorating opened a profiler"
        for _ in range(3):
            f()
            trainprof.get_profiler().step()
        s = trainprof.get_profiler().get_summary()
        assert s["decorated"]["count"] == 3, s
        trainprof.get_profiler().close()
    """)
    run_python(code, env={"TRAINPROF_LOG_DIR": str(tmp_path), "TRAINPROF_TRACE": "false"})
    assert operations(only_run_dir(tmp_path))["decorated"]["count"] == 3


def test_log_profiling_metrics_prints_and_sends(prof, tmp_path, capsys):
    got = []
    logger = lambda metrics, step=None: got.append((step, metrics))  # noqa: E731
    trainprof.add_metrics_logger(logger)
    try:
        for _ in range(10):
            with prof.zone("forward"):
                time.sleep(0.001)
            prof.step(4)
        sent = prof.log_profiling_metrics()
    finally:
        trainprof.remove_metrics_logger(logger)
    out = capsys.readouterr().out
    assert "--- Profiling Metrics (Step 9) ---" in out  # the 10th step: metrics.jsonl's step 9
    line = [ln for ln in out.splitlines() if ln.startswith("forward: ")][0]
    assert line.startswith("forward: avg=") and ", total=" in line and line.endswith(", count=10")
    avg = line.split("avg=")[1].split(",")[0]  # the table's units
    assert avg.endswith(" ms") and float(avg[:-3]) >= 1.0, line
    assert got == [(9, sent)]
    assert set(sent) == {"profiling/forward_avg_time", "profiling/forward_total_time",
                         "profiling/forward_count"}
    assert sent["profiling/forward_count"] == 10
    prof.close()
    # the C layer wrote the same keys to metrics.jsonl every log_every (5) steps
    lines = jsonl(only_run_dir(tmp_path))
    assert [r["step"] for r in lines] == [4, 9]
    assert lines[-1]["profiling/forward_count"] == 10
    assert lines[-1]["profiling/forward_total_time"] == pytest.approx(
        sent["profiling/forward_total_time"], rel=1e-6)


def test_module_level_log_profiling_metrics_with_explicit_step(prof, capsys):
    with prof.zone("x"):
        pass
    prof.step()
    trainprof.log_profiling_metrics(step=7, profiler=prof)
    assert "--- Profiling Metrics (Step 7) ---" in capsys.readouterr().out


def test_add_metrics_logger_rejects_non_callables():
    with pytest.raises(TypeError):
        trainprof.add_metrics_logger(42)


def test_log_to_wandb_without_wandb_installed(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        sys.modules["wandb"] = None          # import wandb -> ImportError
        import trainprof
        p = trainprof.TrainingProfiler(log_to_wandb=True, log_every=1, log_dir={str(tmp_path)!r}, trace=False)
        with p.zone("op"):
            pass
        p.step()
        m = p.log_profiling_metrics()
        assert m["profiling/op_count"] == 1
        p.close()
    """)
    res = run_python(code)
    assert "--- Profiling Metrics (Step 0) ---" in res.stdout
    # log_to_wandb also turns on the JSONL metrics of the C layer
    assert jsonl(only_run_dir(tmp_path))[-1]["profiling/op_count"] == 1


def test_log_to_wandb_with_a_real_offline_run(tmp_path):
    code = textwrap.dedent(f"""
        import json, wandb, trainprof
        run = wandb.init(project="trainprof-test", dir={str(tmp_path)!r}, mode="offline")
        p = trainprof.TrainingProfiler(log_to_wandb=True, log_dir={str(tmp_path / "runs")!r}, trace=False)
        for step in range(3):
            with p.zone("forward"):
                pass
            p.step()
            p.log_profiling_metrics(step=step)
        p.close()
        run.log({{}}, step=2, commit=True)   # commits the last row (W&B holds a step's row open)
        summary = dict(run.summary)
        run.finish()
        print("SUMMARY" + json.dumps({{k: v for k, v in summary.items() if k.startswith("profiling/")}}))
    """)
    res = run_python(code, env={"WANDB_MODE": "offline", "WANDB_SILENT": "true"})
    summary = [ln for ln in res.stdout.splitlines() if ln.startswith("SUMMARY")][0]
    import json
    got = json.loads(summary[len("SUMMARY"):])
    assert got["profiling/forward_count"] == 3
    assert got["profiling/forward_total_time"] > 0
    assert got["profiling/forward_avg_time"] == pytest.approx(got["profiling/forward_total_time"] / 3)


def test_log_to_wandb_without_an_active_run_does_nothing(prof, tmp_path):
    p = trainprof.TrainingProfiler(log_to_wandb=True, log_dir=str(tmp_path / "b"), trace=False)
    with p.zone("op"):
        pass
    p.step()
    assert p.log_profiling_metrics()["profiling/op_count"] == 1
    p.close()


def test_summary_files_hold_the_timers(tmp_path):
    p = trainprof.TrainingProfiler(log_dir=str(tmp_path), trace=False)
    for _ in range(3):
        tok = p.start_timer("data")
        p.end_timer("data", tok)
        p.step(2)
    p.close()
    run_dir = only_run_dir(tmp_path)
    assert operations(run_dir)["data"]["count"] == 3
    assert load(f"{run_dir}/training_summary.json")["total_steps"] == 3
