"""trainprof.jax with the real JAX (CPU): the foundational-SSM wrappers time
until outputs are ready; Artifex's JAXProfiler drives JAX's own trace for
batches start_step..end_step into the run directory; MemoryProfiler's
memory_profile.json is valid at every moment; the example's loss falls."""
import gzip
import glob
import json
import os
import subprocess
import sys
import time

import pytest

jax = pytest.importorskip("jax", reason="jax is not installed")
import jax.numpy as jnp  # noqa: E402

from fw_helpers import loss_first_last  # noqa: E402
from tp_pyhelpers import SOURCE_DIR, load, only_run_dir, traces  # noqa: E402

import trainprof  # noqa: E402
from trainprof.jax import (JAXProfiler, MemoryProfileConfig, MemoryProfiler,  # noqa: E402
                           ProfilingConfig, device_memory, profile_jax_loss_fn,
                           profile_make_step)


@pytest.fixture
def prof(tmp_path):
    with trainprof.Profiler(log_dir=str(tmp_path / "runs"), metrics="none", memory=False) as p:
        yield p


def test_wrappers_time_until_outputs_are_ready(prof):
    @jax.jit
    def heavy(x):
        for _ in range(6):
            x = jnp.tanh(x @ x)
        return x

    x = jnp.ones((600, 600)) / 600
    heavy(x).block_until_ready()  # compiled
    t0 = time.perf_counter()
    heavy(x).block_until_ready()
    blocked = time.perf_counter() - t0
    step = profile_make_step(heavy, profiler=prof)
    assert step.__name__ == "heavy"
    for _ in range(3):
        step(x)
    row = prof.summary()["make_step"]
    assert row["count"] == 3
    assert row["min"] >= 0.3 * blocked, (row, blocked)  # the device work, not the dispatch


def test_loss_wrapper_inside_grad_is_not_timed(prof):
    def loss_fn(w, x):
        return jnp.sum((x * w) ** 2)

    timed = profile_jax_loss_fn(loss_fn, "loss_fn", profiler=prof)
    grad = jax.grad(timed)(2.0, jnp.arange(3.0))  # traced: tracers, no timing
    assert float(grad) == pytest.approx(2 * 2.0 * (0 + 1 + 4))
    assert "loss_fn" not in prof.summary()
    assert float(timed(1.0, jnp.arange(3.0))) == pytest.approx(5.0)
    assert prof.summary()["loss_fn"]["count"] == 1


def test_wrapper_uses_the_global_profiler(tmp_path):
    old = trainprof.set_profiler(trainprof.TrainingProfiler(log_dir=str(tmp_path),
                                                            metrics="none", memory=False))
    try:
        f = profile_jax_loss_fn(lambda x: x + 1, "plus_one")
        f(jnp.ones(3))
        assert trainprof.get_profiler().get_summary()["plus_one"]["count"] == 1
    finally:
        trainprof.set_profiler(old).close()


class ArtifexStyleTrainer:
    """The loop of an Artifex-style trainer: callbacks called by hook name."""

    def __init__(self, callbacks):
        self.callbacks = callbacks

    def fit(self, batches, step_fn):
        for cb in self.callbacks:
            cb.on_train_begin(self)
        for batch in batches:
            for cb in self.callbacks:
                cb.on_batch_begin(self, batch)
            loss = step_fn(batch)
            for cb in self.callbacks:
                cb.on_batch_end(self, batch, {"loss": float(loss)})
        for cb in self.callbacks:
            cb.on_train_end(self)


def batches(n, size=4):
    return [(jnp.full((size, 3), float(i)), jnp.zeros(size)) for i in range(n)]


def test_jax_profiler_traces_batches_start_to_end_into_the_run_dir(tmp_path):
    cfg = ProfilingConfig(log_dir=str(tmp_path), start_step=3, end_step=5)
    jp = JAXProfiler(cfg, metrics="none", memory=False)
    step_fn = jax.jit(lambda b: jnp.sum(b[0] ** 2))
    ArtifexStyleTrainer([jp]).fit(batches(9), step_fn)
    run_dir = only_run_dir(tmp_path)
    assert jp.run_dir == run_dir and jp.profiler.closed
    summary = load(os.path.join(run_dir, "training_summary.json"))
    assert summary["total_steps"] == 9 and summary["total_samples"] == 36
    assert len(traces(run_dir)) == 1  # trainprof's own trace of the same window
    perfetto = glob.glob(os.path.join(run_dir, "jax_trace", "plugins", "profile", "*",
                                      "perfetto_trace.json.gz"))
    assert len(perfetto) == 1
    with gzip.open(perfetto[0], "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    steps = sorted(int(e["args"]["step_num"]) for e in events if e.get("name") == "train")
    assert steps == [3, 4, 5]  # beginning of batch start_step .. end of batch end_step


def test_jax_profiler_as_context_manager_with_a_given_profiler(prof):
    with JAXProfiler(ProfilingConfig(start_step=0, end_step=0), profiler=prof) as jp:
        for batch in batches(3):
            jp.on_batch_begin(None, batch)
            jp.on_batch_end(None, batch, {})
    assert not prof.closed and prof.steps == 3
    assert glob.glob(os.path.join(prof.run_dir, "jax_trace", "plugins", "profile", "*",
                                  "perfetto_trace.json.gz"))


def test_end_before_start_is_refused():
    with pytest.raises(ValueError, match="end_step"):
        JAXProfiler(ProfilingConfig(start_step=5, end_step=2))


def test_memory_profiler_rows_valid_at_every_moment(tmp_path):
    mp = MemoryProfiler(MemoryProfileConfig(log_dir=str(tmp_path / "mem"),
                                            profile_every_n_steps=2))
    mp.on_train_begin(None)
    assert load(mp.path) == []
    for i, batch in enumerate(batches(5)):
        mp.on_batch_begin(None, batch)
        mp.on_batch_end(None, batch, {})
        rows = load(mp.path)  # readable after every batch, before train end
        assert [r["step"] for r in rows] == list(range(0, i + 1, 2))
    mp.on_train_end(None)
    row = load(mp.path)[-1]
    assert row["memory"] == {} and row["devices_without_stats"] == ["cpu:0"]  # CPU: no stats


def test_device_memory_row_shape_for_a_device_with_stats():
    class Gpu:  # memory_stats() as a GPU backend answers it
        platform, id = "cuda", 0

        def memory_stats(self):
            return {"bytes_in_use": 1024, "peak_bytes_in_use": 4096, "largest_alloc_size": 8}

    stats, without = device_memory([Gpu()] + jax.local_devices())
    assert stats == {"cuda:0": {"bytes_in_use": 1024, "peak_bytes_in_use": 4096}}
    assert without == ["cpu:0"]


def test_memory_profiler_feeds_the_trainprof_provider(prof):
    mp = MemoryProfiler(MemoryProfileConfig(log_dir=os.path.join(prof.run_dir, "mem")),
                        profiler=prof)
    with mp:
        mp.on_batch_end(None, None, {})
    prof.step()
    assert load(mp.path)[0]["step"] == 0


def test_example_loss_falls_and_writes_everything(tmp_path):
    res = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "examples", "python",
                                                       "train_jax.py"),
                          "--steps", "120", "--log_dir", str(tmp_path), "--memory_every", "20",
                          "--start_step", "5", "--end_step", "7"],
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    first, last = loss_first_last(res.stdout)
    assert last < 0.6 * first, res.stdout
    run_dir = [d for d in glob.glob(str(tmp_path / "trainprof_*"))][0]
    ops = {o["name"]: o for o in load(os.path.join(run_dir, "operations.json"))}
    assert ops["make_step"]["count"] == 120
    assert glob.glob(os.path.join(run_dir, "jax_trace", "plugins", "profile", "*",
                                  "perfetto_trace.json.gz"))
    rows = load(str(tmp_path / "memory" / "memory_profile.json"))
    assert [r["step"] for r in rows] == [0, 20, 40, 60, 80, 100]


def test_make_step_calls_are_the_steps_when_the_program_marks_none(tmp_path):
    """Issue 33: profile_make_step x 20 left 0 rows; with profile_data_loader
    in the same loop, still one step per iteration."""
    import os
    from tp_pyhelpers import load
    with trainprof.Profiler(log_dir=str(tmp_path), metrics="none", memory=False) as p:
        step = profile_make_step(jax.jit(lambda x: x * 2.0), profiler=p)
        x = jnp.ones(4)
        for _ in range(20):
            x = step(x)
        assert p.steps == 20
        for batch in trainprof.profile_data_loader([jnp.ones(4)] * 5, profiler=p):
            step(batch)
        assert p.steps == 25
    timing = load(os.path.join(p.run_dir, "timing_profile.json"))
    assert len(timing) == 25 and all(r["operations"]["make_step"]["count"] == 1 for r in timing)


def test_make_step_under_jax_profiler_is_not_an_extra_step(tmp_path):
    with trainprof.Profiler(log_dir=str(tmp_path), metrics="none", memory=False) as p:
        step = profile_make_step(jax.jit(lambda b: jnp.sum(b[0])), profiler=p)
        ArtifexStyleTrainer([JAXProfiler(ProfilingConfig(str(tmp_path / "jax"), 100, 101),
                                         profiler=p)]).fit(batches(6), step)
        assert p.steps == 6
