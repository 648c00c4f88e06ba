"""trainprof.lightning against the real Lightning 2.6 (both namespaces):
TrainprofProfiler records every action as a zone and a step per training
batch, prints the SimpleProfiler table plus P50/P99, writes the run
directory, one per DDP process; TrainprofCallback makes steps with samples
and backward/optimizer_step zones."""
import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch", reason="torch is not installed")
pytest.importorskip("lightning", reason="lightning is not installed")
from fw_helpers import quiet_trainer, tiny_loader, tiny_module  # noqa: E402
from tp_pyhelpers import load, only_run_dir, operations  # noqa: E402

import trainprof.lightning as tpl  # noqa: E402

STEPS = 16  # 2 epochs x 8 batches


def fit(namespace, root, **trainer_kw):
    trainer = quiet_trainer(namespace, root, **trainer_kw)
    trainer.fit(tiny_module(namespace)(), tiny_loader())
    return trainer


@pytest.mark.parametrize("namespace", ["lightning.pytorch", "pytorch_lightning"])
def test_profiler_records_lightning_actions_steps_and_table(namespace, tmp_path, caplog):
    if namespace == "pytorch_lightning":
        pytest.importorskip("pytorch_lightning", reason="pytorch_lightning is not installed")
    prof_cls, _ = tpl.classes_for(namespace)
    base = __import__(namespace + ".profilers", fromlist=["Profiler"]).Profiler
    prof = prof_cls(log_dir=str(tmp_path), metrics="jsonl", memory=False)
    assert isinstance(prof, base)
    with caplog.at_level(logging.INFO):
        fit(namespace, tmp_path / "root", profiler=prof)
    run_dir = only_run_dir(tmp_path)
    assert prof.run_dir == run_dir
    ops = operations(run_dir)
    for action in ("run_training_epoch", "run_training_batch",
                   "[Strategy]SingleDeviceStrategy.training_step",
                   "[Strategy]SingleDeviceStrategy.backward",
                   "[_TrainingEpochLoop].train_dataloader_next",
                   "[LightningModule]Tiny.optimizer_step"):
        assert action in ops, (action, sorted(ops))
    assert ops["run_training_batch"]["count"] == STEPS
    assert ops["run_training_epoch"]["count"] == 2
    summary = load(os.path.join(run_dir, "training_summary.json"))
    assert summary["total_steps"] == STEPS
    assert summary["unbalanced_zones"] == 0
    # nested: the batch's self time excludes the training step inside it
    batch = ops["run_training_batch"]
    assert batch["self_time"] < 0.5 * batch["total_time"]
    table = prof.summary()
    for col in ("Action", "Mean duration (s)", "Num calls", "Total time (s)", "Percentage %",
                "P50 (s)", "P99 (s)"):
        assert col in table
    row = next(line for line in table.splitlines() if "|  run_training_batch" in line)
    assert f"|  {STEPS} " in row
    assert "Profiler Report (trainprof)" in caplog.text  # printed by Lightning's describe()


def epochs_and_batches(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    timing = [(r["epoch"], r["batch_idx"]) for r in load(os.path.join(run_dir, "timing_profile.json"))]
    assert [(r["epoch"], r["batch_idx"]) for r in rows] == timing
    return timing


@pytest.mark.parametrize("how", ["profiler", "callback"])
def test_two_epochs_have_their_epoch_and_batch_idx(how, tmp_path):
    """Issue 33: epoch was 0 in every row and batch_idx never restarted."""
    kw = dict(log_dir=str(tmp_path), metrics="jsonl", log_every=1, memory=False)
    if how == "profiler":
        fit("lightning.pytorch", tmp_path / "root", profiler=tpl.TrainprofProfiler(**kw))
    else:
        fit("lightning.pytorch", tmp_path / "root", callbacks=[tpl.TrainprofCallback(**kw)])
    want = [(e, b) for e in range(2) for b in range(STEPS // 2)]
    assert epochs_and_batches(only_run_dir(tmp_path)) == want


def test_a_fit_with_the_profiler_prints_one_table(tmp_path, capfd, caplog):
    """Issue 33: Lightning's table (describe) and trainprof's console table."""
    with caplog.at_level(logging.INFO):
        fit("lightning.pytorch", tmp_path / "root", max_epochs=1,
            profiler=tpl.TrainprofProfiler(log_dir=str(tmp_path / "runs"), memory=False))
    out = capfd.readouterr().out + caplog.text
    assert out.count("Profiler Report (trainprof)") == 1, out
    assert "=== trainprof:" not in out and "Calls        Total" not in out, out
    # named explicitly, the console table is the user's choice
    capfd.readouterr()
    fit("lightning.pytorch", tmp_path / "root2", max_epochs=1,
        profiler=tpl.TrainprofProfiler(log_dir=str(tmp_path / "runs2"), memory=False, metrics="console"))
    assert "=== trainprof:" in capfd.readouterr().out


def test_profiler_defaults_to_the_trainers_log_dir(tmp_path):
    prof = tpl.TrainprofProfiler(metrics="none", memory=False)
    fit("lightning.pytorch", tmp_path, profiler=prof, max_epochs=1)
    assert os.path.dirname(prof.run_dir) == str(tmp_path)
    assert os.path.exists(os.path.join(prof.run_dir, "operations.json"))


def test_profiler_handles_manual_optimization(tmp_path):
    prof = tpl.TrainprofProfiler(log_dir=str(tmp_path), metrics="none", memory=False)
    trainer = quiet_trainer("lightning.pytorch", tmp_path / "root", max_epochs=1, profiler=prof)
    trainer.fit(tiny_module(manual=True)(), tiny_loader())
    summary = load(os.path.join(prof.run_dir, "training_summary.json"))
    assert summary["total_steps"] == 8 and summary["unbalanced_zones"] == 0
    assert "optimizer_step" in operations(prof.run_dir)


def test_profiler_string_is_not_registrable():
    """Lightning maps profiler strings through a closed dict: documented."""
    from lightning.pytorch.utilities.exceptions import MisconfigurationException
    import lightning.pytorch as pl
    with pytest.raises(MisconfigurationException):
        pl.Trainer(profiler="trainprof", logger=False)


def test_callback_steps_samples_and_zones(tmp_path):
    cb = tpl.TrainprofCallback(log_dir=str(tmp_path), metrics="none", memory=False)
    fit("lightning.pytorch", tmp_path / "root", callbacks=[cb], profiler="simple")
    run_dir = only_run_dir(tmp_path)
    summary = load(os.path.join(run_dir, "training_summary.json"))
    assert summary["total_steps"] == STEPS
    assert summary["total_samples"] == 64 * 2
    ops = operations(run_dir)
    assert ops["backward"]["count"] == STEPS
    assert ops["optimizer_step"]["count"] == STEPS
    assert summary["unbalanced_zones"] == 0


def test_callback_records_into_a_given_profiler(tmp_path):
    import trainprof
    with trainprof.Profiler(log_dir=str(tmp_path), metrics="none", memory=False) as prof:
        fit("lightning.pytorch", tmp_path / "root", max_epochs=1,
            callbacks=[tpl.TrainprofCallback(prof)])
        assert not prof.closed  # the callback leaves a given profiler open
        assert prof.summary()["backward"]["count"] == 8


DDP_SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {helpers!r})
    from fw_helpers import quiet_trainer, tiny_loader, tiny_module
    from trainprof.lightning import TrainprofProfiler
    prof = TrainprofProfiler(log_dir={log_dir!r}, metrics="none", memory=False)
    trainer = quiet_trainer("lightning.pytorch", {root!r}, strategy="ddp", devices=2,
                            max_epochs=1, profiler=prof)
    trainer.fit(tiny_module()(), tiny_loader())
    with open(os.path.join({log_dir!r}, f"rank{{trainer.global_rank}}.txt"), "w") as f:
        f.write(prof.run_dir)  # one file per process: their stdout interleaves
""")


def test_ddp_two_processes_write_two_complete_run_dirs(tmp_path):
    script = tmp_path / "ddp_fit.py"
    log_dir = tmp_path / "runs"
    script.write_text(DDP_SCRIPT.format(helpers=os.path.dirname(__file__), log_dir=str(log_dir),
                                        root=str(tmp_path / "root")))
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=240, env=env, cwd=str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    run_dirs = [open(log_dir / f"rank{r}.txt", encoding="utf-8").read() for r in (0, 1)]
    assert run_dirs[0] != run_dirs[1], run_dirs
    # one job, one name: the ranks' directories sit in one job directory
    assert os.path.dirname(run_dirs[0]) == os.path.dirname(run_dirs[1]), run_dirs
    assert [os.path.basename(d) for d in run_dirs] == ["rank0", "rank1"], run_dirs
    assert len([d for d in os.listdir(log_dir)
                if d.startswith("trainprof_")]) == 1
    ranks = set()
    for run_dir in run_dirs:
        summary = load(os.path.join(run_dir, "training_summary.json"))
        assert summary["total_steps"] == 4  # 64 samples / 8 per batch / 2 ranks
        assert summary["unbalanced_zones"] == 0
        ranks.add(summary["rank"])
        assert "run_training_batch" in operations(run_dir)
        json.load(open(os.path.join(run_dir, "config.json"), encoding="utf-8"))
    assert ranks == {0, 1}


def test_disabled_profiler_and_callback_write_nothing(tmp_path):
    prof = tpl.TrainprofProfiler(enabled=False, log_dir=str(tmp_path / "runs"))
    cb = tpl.TrainprofCallback(enabled=False, log_dir=str(tmp_path / "runs"))
    fit("lightning.pytorch", tmp_path / "root", profiler=prof, callbacks=[cb], max_epochs=1)
    assert prof.run_dir is None and prof.summary() == ""
    assert not (tmp_path / "runs").exists() or not os.listdir(tmp_path / "runs")


def test_bad_key_raises_at_construction():
    import trainprof
    with pytest.raises(trainprof.ConfigError) as err:
        tpl.TrainprofProfiler(wiat=2)
    assert err.value.suggestion == "wait"


def test_profile_after_teardown_records_nothing_and_does_not_fail(tmp_path):
    prof = tpl.TrainprofProfiler(log_dir=str(tmp_path), metrics="none", memory=False)
    prof.setup(stage="fit")
    for _ in range(2):  # the second call takes the cached-zone path
        with prof.profile("[Callback]X.on_fit_start"):
            pass
    prof.teardown(stage="fit")
    with prof.profile("[Callback]X.on_fit_start"):  # Lightning may still call it
        pass
    assert operations(prof.run_dir)["[Callback]X.on_fit_start"]["count"] == 2
    assert "|  [Callback]X.on_fit_start" in prof.summary()


def test_profiler_steps_carry_the_batch_size(tmp_path):
    prof = tpl.TrainprofProfiler(log_dir=str(tmp_path), metrics="none", memory=False)
    fit("lightning.pytorch", tmp_path / "root", profiler=prof)
    summary = load(os.path.join(prof.run_dir, "training_summary.json"))
    assert summary["total_samples"] == 64 * 2  # 2 epochs of 64 samples, batch 8
    rows = load(os.path.join(prof.run_dir, "timing_profile.json"))
    assert all(r["samples_per_second"] > 0 for r in rows)


def _table_calls(table):
    """{action: calls} of a Lightning profiler table (SimpleProfiler's or ours)."""
    out = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3 and cells[3].isdigit() and cells[1] not in ("Total", "Action"):
            out[cells[1]] = int(cells[3])
    return out


def test_profiler_sees_every_action_simpleprofiler_sees(tmp_path):
    from lightning.pytorch.profilers import SimpleProfiler
    simple = SimpleProfiler()
    fit("lightning.pytorch", tmp_path / "a", profiler=simple, max_epochs=1)
    ours = tpl.TrainprofProfiler(log_dir=str(tmp_path), metrics="none", memory=False)
    fit("lightning.pytorch", tmp_path / "b", profiler=ours, max_epochs=1)
    theirs, mine = _table_calls(simple.summary()), _table_calls(ours.summary())
    assert "[LightningModule]Tiny.configure_callbacks" in mine
    assert mine == theirs


def test_console_table_keeps_long_action_names_apart(tmp_path, capfd):
    import trainprof
    p = trainprof.Profiler(log_dir=str(tmp_path), memory=False, trace=False)
    for name in ("[LightningModule]Tiny.optimizer_step", "[LightningModule]Tiny.optimizer_zero_grad"):
        with p.zone(name):
            pass
    p.step()
    p.close()
    out = capfd.readouterr().out
    assert "[LightningModule]Tiny.optimizer_step " in out
    assert "[LightningModule]Tiny.optimizer_zero_grad " in out
