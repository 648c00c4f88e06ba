"""Configuration from Python: keyword overrides (Python values), Config,
from_args (every spelling the C layer knows), from_yaml, from_mapping (dict
and a real OmegaConf DictConfig) and ConfigError's attributes."""
import pytest

from trainprof import _core


def test_overrides_with_python_values_and_either_spelling(tmp_path):
    p = _core.Profiler(log_dir=tmp_path, wait=2, **{"profiling.active": 4}, trace=False,
                       metrics=["jsonl", "csv"], name="run1")
    assert p.config_get("wait") == "2" and p.config_get("profiling.active") == "4"
    assert p.config_get("trace") == "false"
    assert p.config_get("metrics") == "jsonl,csv"
    assert p.config_get("no_such_key") is None
    assert p.run_dir.startswith(str(tmp_path))
    p.close()


def test_unknown_key_error_names_key_and_suggestion(tmp_path):
    with pytest.raises(_core.ConfigError) as e:
        _core.Profiler(log_dir=str(tmp_path), wiat=1)
    assert isinstance(e.value, ValueError)
    assert "unknown key `profiling.wiat`" in str(e.value)
    assert e.value.key == "profiling.wiat" and e.value.suggestion == "wait"
    assert e.value.file is None and e.value.line is None


def test_bad_value_and_bad_type(tmp_path):
    with pytest.raises(_core.ConfigError) as e:
        _core.Profiler(log_dir=str(tmp_path), unit="epochs")
    assert e.value.key == "profiling.unit" and e.value.suggestion == "epoch"
    with pytest.raises(TypeError):
        _core.Profiler(log_dir=str(tmp_path), wait=object())


def test_yaml_error_carries_file_and_line(tmp_path):
    cfg = tmp_path / "train.yaml"
    cfg.write_text("model:\n  depth: 4\nprofiling:\n  log_dir: %s\n  wramup: 2\n" % tmp_path)
    with pytest.raises(_core.ConfigError) as e:
        _core.Profiler.from_yaml(str(cfg))
    assert e.value.file == str(cfg) and e.value.line == 5
    assert e.value.suggestion == "warmup" and str(cfg) in str(e.value)


def test_from_yaml_reads_the_profiling_section(tmp_path):
    cfg = tmp_path / "train.yaml"
    cfg.write_text("model:\n  depth: 4\nprofiling:\n  log_dir: %s\n  wait: 3\n" % tmp_path)
    p = _core.Profiler.from_yaml(cfg)  # a path object works too
    assert p.config_get("wait") == "3"
    p.close()
    q = _core.Profiler(str(cfg))  # Profiler(config=<yaml path>)
    assert q.config_get("wait") == "3"
    q.close()


ARGS = ["--lr", "0.1", "--profiling.wait", "1", "--enable_profiling", "True",
        "--enable_timing_profiling", "True", "--enable_memory_profiling", "True",
        "--profile_steps", "7", "profiling.warmup=2", "--epochs", "3", "data.csv"]


def test_from_args_consumes_every_spelling(tmp_path):
    p, rest = _core.Profiler.from_args(ARGS + ["--profiling.log_dir", str(tmp_path)])
    assert rest == ["--lr", "0.1", "--epochs", "3", "data.csv"]
    assert p.enabled
    assert p.config_get("wait") == "1" and p.config_get("warmup") == "2"
    assert p.config_get("active") == "7" and p.config_get("memory") == "true"
    p.close()


def test_from_args_disabled_gives_a_no_op_profiler(tmp_path):
    p, rest = _core.Profiler.from_args(["--enable_profiling", "False", "x"])
    assert rest == ["x"] and not p.enabled and p.run_dir is None
    with p.zone("a"):
        pass
    p.close()


def test_from_args_bad_flag(tmp_path):
    with pytest.raises(_core.ConfigError) as e:
        _core.Profiler.from_args(["--profiling.wiat", "1"])
    assert e.value.suggestion == "wait"
    with pytest.raises(TypeError):
        _core.Profiler.from_args(["--lr", 3])


def test_from_mapping_dict_and_nested_section(tmp_path):
    p = _core.Profiler.from_mapping({"model": {"depth": 3},
                                     "profiling": {"log_dir": str(tmp_path), "active": 2}})
    assert p.config_get("active") == "2"
    p.close()
    q = _core.Profiler.from_mapping({"log_dir": str(tmp_path), "profiling.wait": 0})
    assert q.config_get("wait") == "0"
    q.close()
    with pytest.raises(TypeError):
        _core.Profiler.from_mapping(["not", "a", "mapping"])


def test_from_mapping_omegaconf_dictconfig(tmp_path):
    omegaconf = pytest.importorskip("omegaconf")
    cfg = omegaconf.OmegaConf.create({
        "trainer": {"max_epochs": 2},
        "profiling": {"log_dir": str(tmp_path), "wait": 2, "trace": False,
                      "metrics": ["jsonl", "console"]}})
    p = _core.Profiler.from_mapping(cfg)
    assert p.config_get("wait") == "2" and p.config_get("trace") == "false"
    assert p.config_get("metrics") == "jsonl,console"
    p.close()
    r = _core.Profiler(cfg.profiling, name="viaconfig")  # config=<DictConfig>
    assert r.config_get("name") == "viaconfig"
    r.close()


def test_config_object(tmp_path):
    c = _core.Config()
    c.set("log_dir", str(tmp_path))
    c.update({"wait": 5})
    assert c.get("wait") == "5" and "wait" in c.describe() and "profiling.wait" in c.to_json()
    p = _core.Profiler(c, active=2)
    assert p.config is c and p.config_get("active") == "2"
    p.close()
