"""examples/python/lightning_hydra with the real Hydra, OmegaConf and
Lightning: `train.py profiling.enabled=true profiling.active_steps=5` trains
and writes the run directory under Hydra's output directory (or
profiling.output_dir); Profiler.from_mapping takes the composed DictConfig;
a misspelled key names the key and the suggestion."""
import glob
import os
import subprocess
import sys

import pytest

pytest.importorskip("hydra", reason="hydra-core is not installed")
pytest.importorskip("lightning", reason="lightning is not installed")
from fw_helpers import loss_first_last  # noqa: E402
from tp_pyhelpers import SOURCE_DIR, load, traces  # noqa: E402

import trainprof  # noqa: E402

APP = os.path.join(SOURCE_DIR, "examples", "python", "lightning_hydra")
FAST = ["data.num_samples=256", "trainer.max_epochs=2"]  # 16 steps


def run_app(tmp_path, *overrides):
    hydra_dir = tmp_path / "hydra_out"
    res = subprocess.run([sys.executable, os.path.join(APP, "train.py"), *FAST, *overrides,
                          f"hydra.run.dir={hydra_dir}"],
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    return res, hydra_dir


def compose(*overrides):
    from hydra import compose as hydra_compose, initialize_config_dir
    with initialize_config_dir(config_dir=os.path.join(APP, "configs"), version_base=None):
        return hydra_compose(config_name="config", overrides=list(overrides))


def test_guide_command_profiles_into_hydras_output_dir(tmp_path):
    res, hydra_dir = run_app(tmp_path, "profiling.enabled=true", "profiling.active_steps=5")
    assert res.returncode == 0, res.stdout + res.stderr
    runs = glob.glob(str(hydra_dir / "trainprof_*"))
    assert len(runs) == 1, (os.listdir(hydra_dir), res.stdout)
    summary = load(os.path.join(runs[0], "training_summary.json"))
    assert summary["total_steps"] == 16
    config = load(os.path.join(runs[0], "config.json"))
    assert config["profiling.active"] == {"value": 5, "source": "set active_steps"}
    assert config["profiling.wait"]["value"] == 1
    assert len(traces(runs[0])) == 1
    first, last = loss_first_last(res.stdout)
    assert last < first  # the CNN learns
    assert "Profiler Report (trainprof)" in res.stderr + res.stdout


def test_output_dir_wins_and_disabled_writes_nothing(tmp_path):
    out = tmp_path / "prof"
    res, hydra_dir = run_app(tmp_path, "profiling.enabled=true", f"profiling.output_dir={out}")
    assert res.returncode == 0, res.stderr
    assert len(glob.glob(str(out / "trainprof_*"))) == 1
    assert not glob.glob(str(hydra_dir / "trainprof_*"))
    (tmp_path / "off").mkdir()
    res, hydra_dir = run_app(tmp_path / "off")
    assert res.returncode == 0, res.stderr
    assert not glob.glob(str(hydra_dir / "trainprof_*"))


def test_from_mapping_takes_the_composed_dictconfig(tmp_path):
    from omegaconf import DictConfig
    cfg = compose("profiling.enabled=true", "profiling.active_steps=4",
                  "profiling.repeat_cycles=2", f"profiling.output_dir={tmp_path}")
    assert isinstance(cfg.profiling, DictConfig)
    prof = trainprof.Profiler.from_mapping(cfg.profiling)
    try:
        assert prof.config_get("active") == "4" and prof.config_get("repeat") == "2"
        assert os.path.dirname(prof.run_dir) == str(tmp_path)
    finally:
        prof.close()
    every = compose("profiling.enabled=true", "profiling.schedule_every_n_steps=50",
                    "profiling.wait_steps=null", "profiling.repeat_cycles=null",
                    f"profiling.output_dir={tmp_path}")
    cfg2 = trainprof.Config()
    cfg2.update(every.profiling)
    assert cfg2.get("repeat") == "0"  # one window every 50 steps, until the end


def test_misspelled_key_names_key_and_suggestion(tmp_path):
    cfg = compose("profiling.enabled=true", "+profiling.wiat_steps=2")
    with pytest.raises(trainprof.ConfigError) as err:
        trainprof.Profiler.from_mapping(cfg.profiling)
    assert err.value.key == "profiling.wiat_steps"
    assert err.value.suggestion == "wait_steps"
    res, _ = run_app(tmp_path, "profiling.enabled=true", "+profiling.actve_steps=5")
    assert res.returncode != 0
    assert "actve_steps" in res.stderr and "did you mean `active_steps`" in res.stderr, res.stderr
