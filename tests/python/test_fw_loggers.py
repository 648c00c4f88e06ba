"""The loggers the reference guides name, for real: TrainingProfiler(log_to_wandb=True)
with wandb 0.31 offline (the keys read back from the run's own .wandb file),
trainprof's TensorBoard scalars read by TensorBoard's EventAccumulator, and a
torch.utils.tensorboard SummaryWriter registered with add_metrics_logger."""
import glob
import json
import os
import struct
import subprocess
import sys
import textwrap

import pytest

from tp_pyhelpers import jsonl, only_run_dir  # noqa: E402

import trainprof  # noqa: E402

BLOCK = 32768
HEADER = 7  # ":W&B", magic 0xBEE1, version


def wandb_records(path):
    """Records of a .wandb transaction log (LevelDB-style 32 KiB blocks of
    chunks: crc32, length, type FULL=1/FIRST=2/MIDDLE=3/LAST=4), parsed with
    wandb's own protobuf Record."""
    from wandb.proto import wandb_internal_pb2 as pb
    data = open(path, "rb").read()
    assert data[:4] == b":W&B", path
    pos, pending, out = HEADER, b"", []
    while pos + 7 <= len(data):
        if BLOCK - pos % BLOCK < 7:  # block trailer padding
            pos += BLOCK - pos % BLOCK
            continue
        _crc, length, kind = struct.unpack_from("<IHB", data, pos)
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 0 and length == 0:
            break
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(pending)
            out.append(rec)
    return out


WANDB_RUN = textwrap.dedent("""
    import wandb, trainprof
    run = wandb.init(project="trainprof-test", mode="offline")
    prof = trainprof.TrainingProfiler(log_to_wandb=True, log_dir={log_dir!r}, memory=False,
                                      metrics="none")
    for _ in range(4):
        token = prof.start_timer("forward")
        prof.end_timer("forward", token)
    metrics = prof.log_profiling_metrics(step=7)
    import json; print("METRICS", json.dumps(metrics))
    run.finish()
    prof.close()
""")


def test_training_profiler_logs_to_wandb_offline(tmp_path):
    pytest.importorskip("wandb", reason="wandb is not installed")
    env = dict(os.environ, WANDB_MODE="offline", WANDB_DIR=str(tmp_path), WANDB_SILENT="true",
               WANDB_DISABLE_GIT="true")
    res = subprocess.run([sys.executable, "-c", WANDB_RUN.format(log_dir=str(tmp_path / "runs"))],
                         capture_output=True, text=True, timeout=180, env=env, cwd=str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    sent = json.loads(res.stdout.split("METRICS ", 1)[1].splitlines()[0])
    assert sent["profiling/forward_count"] == 4
    files = glob.glob(str(tmp_path / "wandb" / "offline-run-*" / "*.wandb"))
    assert len(files) == 1, files
    history = [r.history for r in wandb_records(files[0]) if r.WhichOneof("record_type") == "history"]
    logged = {}
    for h in history:
        items = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in h.item}
        if "profiling/forward_count" in items:
            logged = items
    assert logged, history
    assert logged["_step"] == 7
    for key in ("profiling/forward_avg_time", "profiling/forward_total_time",
                "profiling/forward_count"):
        assert logged[key] == pytest.approx(sent[key], rel=1e-12), key
    assert logged["profiling/forward_total_time"] == pytest.approx(
        4 * logged["profiling/forward_avg_time"])


def test_no_wandb_run_means_no_call_and_no_error(tmp_path):
    code = ("import sys; sys.modules['wandb'] = None\n"  # import wandb -> ImportError
            "import trainprof\n"
            f"p = trainprof.TrainingProfiler(log_to_wandb=True, log_dir={str(tmp_path)!r},"
            " memory=False, metrics='none')\n"
            "p.end_timer('x', p.start_timer('x')); print(p.log_profiling_metrics(step=1)); p.close()")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "profiling/x_count" in res.stdout, res.stderr


def scalars(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_tensorboard_scalars_match_metrics_jsonl(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard is not installed")
    with trainprof.Profiler(log_dir=str(tmp_path), metrics="jsonl,tensorboard", log_every=2,
                            memory=False) as prof:
        fwd = prof.zone("forward")
        for i in range(7):
            with fwd:
                sum(range(1000 * (i + 1)))
            prof.counter("loss", 1.0 / (i + 1))
            prof.step(16)
    run_dir = only_run_dir(tmp_path)
    assert glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    tb = scalars(run_dir)
    rows = jsonl(run_dir)
    expected = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith(("profiling/", "counter/")):
                expected.setdefault(key, []).append((row["step"], value))
    assert "profiling/forward_avg_time" in expected
    assert "counter/loss" in expected and "counter/loss_mean" in expected  # issue 33
    assert set(tb) == set(expected), (sorted(tb), sorted(expected))
    for tag, points in expected.items():
        assert [s for s, _ in tb[tag]] == [s for s, _ in points], tag
        for (_, got), (_, want) in zip(tb[tag], points):
            assert got == pytest.approx(want, rel=1e-6), tag  # float32 in the event file


def test_summarywriter_registered_with_add_metrics_logger(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard is not installed")
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter(log_dir=str(tmp_path / "tb"))

    def to_tensorboard(metrics, step=None):
        for key, value in metrics.items():
            writer.add_scalar(key, value, global_step=step)

    trainprof.add_metrics_logger(to_tensorboard)
    try:
        with trainprof.TrainingProfiler(log_dir=str(tmp_path / "runs"), memory=False,
                                        metrics="none") as prof:
            for step in (10, 20):
                prof.end_timer("data", prof.start_timer("data"))
                sent = prof.log_profiling_metrics(step=step)
    finally:
        trainprof.remove_metrics_logger(to_tensorboard)
        writer.close()
    tb = scalars(str(tmp_path / "tb"))
    assert [s for s, _ in tb["profiling/data_count"]] == [10, 20]
    assert [v for _, v in tb["profiling/data_count"]] == [1.0, 2.0]
    assert tb["profiling/data_avg_time"][-1][1] == pytest.approx(sent["profiling/data_avg_time"],
                                                                 rel=1e-6)
