"""Configuration in each reference project's spelling, through the C layer:
argparse (RAVE flags), from_args, from_yaml (a training YAML with a
profiling: section), from_mapping (dict, real OmegaConf DictConfig), and
ConfigError naming key, file, line and suggestion."""
import argparse
import textwrap

import pytest
from omegaconf import OmegaConf

import trainprof
from tp_pyhelpers import load, only_run_dir

TRAINING_YAML = textwrap.dedent("""\
    # a training config of the usual shape: trainprof reads only profiling:
    model:
      name: resnet18
      layers: [2, 2, 2, 2]
      dropout: 0.1
    data:
      path: /data/imagenet
      batch_size: 256
      num_workers: 8
    optimizer: {name: adamw, lr: 0.001, weight_decay: 0.05}
    trainer:
      max_epochs: 90
      precision: bf16
    profiling:
      enabled: true
      log_dir: {log_dir}
      wait: 2
      warmup: 1
      active_steps: 4
      record_shapes: true
      metrics: [jsonl]
    logging:
      wandb: {project: x}
""")


def test_config_error_is_a_value_error():
    assert issubclass(trainprof.ConfigError, ValueError)


def test_overrides_with_and_without_prefix(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), wait=3, **{"profiling.active": 2}, trace=False)
    try:
        assert p.config_get("wait") == "3"
        assert p.config_get("profiling.active") == "2"
        assert p.config_get("trace") == "false"
    finally:
        p.close()


def test_from_args_consumes_every_spelling(tmp_path):
    argv = ["--lr", "0.1", "--profiling.wait", "1", "--enable_profiling", "True",
            "--enable_timing_profiling", "True", "--enable_memory_profiling", "True",
            "--profile_steps", "5", f"profiling.log_dir={tmp_path}", "profiling.enabled=true",
            "--epochs", "3"]
    p, rest = trainprof.Profiler.from_args(argv)
    try:
        assert rest == ["--lr", "0.1", "--epochs", "3"]
        assert p.config_get("wait") == "1"
        assert p.config_get("active") == "5" and p.config_get("repeat") == "1"
        assert p.config_get("timing") == "true" and p.config_get("memory") == "true"
        assert p.run_dir.startswith(str(tmp_path))
    finally:
        p.close()


def test_from_args_enable_profiling_false_turns_everything_off():
    p, rest = trainprof.Profiler.from_args(["--enable_profiling", "False", "x"])
    assert rest == ["x"]
    assert p.run_dir is None
    with p.zone("forward"):  # a no-op, not an error
        pass
    p.step()
    p.close()


def test_add_argparse_arguments_and_profiler_from_argparse(tmp_path):
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=32)
    trainprof.add_argparse_arguments(parser)
    args, unknown = parser.parse_known_args(
        ["--batch_size", "64", "--enable_profiling", "--enable_memory_profiling", "False",
         "--profile_steps", "7", "--profiling.log_dir", str(tmp_path), "--profiling.trace=false"])
    assert args.batch_size == 64
    assert args.enable_profiling is True and args.enable_memory_profiling is False
    assert args.enable_timing_profiling is None and args.profile_steps == 7
    p, rest = trainprof.profiler_from_argparse(args, unknown)
    try:
        assert rest == []
        assert isinstance(p, trainprof.TrainingProfiler)
        assert p.config_get("memory") == "false" and p.config_get("active") == "7"
        assert p.run_dir.startswith(str(tmp_path))
    finally:
        p.close()


def test_argparse_rejects_a_bad_boolean(capsys):
    parser = argparse.ArgumentParser()
    trainprof.add_argparse_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--enable_profiling", "maybe"])
    assert "is not a boolean" in capsys.readouterr().err


def test_from_yaml_reads_the_profiling_section(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text(TRAINING_YAML.replace("{log_dir}", str(tmp_path / "runs")))
    p = trainprof.Profiler.from_yaml(str(path))
    try:
        assert p.config_get("wait") == "2" and p.config_get("active") == "4"
        assert p.config_get("record_shapes") == "true" and p.config_get("metrics") == "jsonl"
        run_dir = p.run_dir
    finally:
        p.close()
    cfg = load(f"{run_dir}/config.json")
    assert f"{path}:" in str(cfg["profiling.active"]["source"])


def test_from_yaml_bad_key_names_file_line_and_suggestion(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text(TRAINING_YAML.replace("{log_dir}", str(tmp_path)).replace("  warmup: 1", "  wramup: 1"))
    with pytest.raises(trainprof.ConfigError) as info:
        trainprof.Profiler.from_yaml(str(path))
    e = info.value
    line = TRAINING_YAML.splitlines().index("  warmup: 1") + 1
    assert e.file == str(path) and e.line == line
    assert e.key == "profiling.wramup" or e.key == "wramup"
    assert e.suggestion == "warmup"
    assert f"{path}:{line}:" in str(e) and "did you mean `warmup`" in str(e)


def test_from_mapping_with_a_dict_and_a_dictconfig(tmp_path):
    p = trainprof.Profiler.from_mapping({"wait": 0, "active": 2, "log_dir": str(tmp_path),
                                         "trace": False})
    assert p.config_get("active") == "2"
    p.close()
    cfg = OmegaConf.create({"model": {"dim": 64},
                            "profiling": {"enabled": True, "wait_steps": 1, "warmup": 0,
                                          "active": 5, "log_dir": str(tmp_path / "omega"),
                                          "memory_interval_ms": "100ms", "metrics": ["jsonl", "console"]}})
    p = trainprof.Profiler.from_mapping(cfg.profiling)
    try:
        assert p.config_get("wait") == "1" and p.config_get("active") == "5"
        assert p.config_get("memory_interval_ms") == "100"
        assert p.config_get("metrics") == "jsonl,console"
        assert p.run_dir.startswith(str(tmp_path / "omega"))
    finally:
        p.close()


def test_from_mapping_takes_the_whole_config_with_a_profiling_section(tmp_path):
    cfg = OmegaConf.create({"trainer": {"epochs": 1},
                            "profiling": {"active": 3, "log_dir": str(tmp_path), "trace": False}})
    p = trainprof.Profiler.from_mapping(cfg)
    try:
        assert p.config_get("active") == "3"
    finally:
        p.close()


@pytest.mark.parametrize("make", [
    lambda d: trainprof.Profiler(wramup=1, log_dir=d),
    lambda d: trainprof.Profiler.from_mapping({"wramup": 1, "log_dir": d}),
    lambda d: trainprof.Profiler.from_args(["--profiling.wramup", "1"]),
])
def test_bad_key_in_every_entry_point(make, tmp_path):
    with pytest.raises(trainprof.ConfigError) as info:
        make(str(tmp_path))
    assert info.value.suggestion == "warmup"
    assert "wramup" in str(info.value)


def test_bad_values_and_types(tmp_path):
    with pytest.raises(trainprof.ConfigError, match="out of range"):
        trainprof.Profiler(active=0, log_dir=str(tmp_path))
    with pytest.raises(trainprof.ConfigError, match="epochs"):
        trainprof.Profiler(unit="epochs", log_dir=str(tmp_path))
    with pytest.raises((TypeError, trainprof.ConfigError)):
        trainprof.Profiler(wait=[1, 2], log_dir=str(tmp_path))


def test_torch_ops_key_is_known_and_off_by_default(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False)
    try:
        assert p.config_get("torch_ops") == "false"
    finally:
        p.close()
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False, torch_profiler=True)
    try:
        assert p.config_get("torch_ops") == "true"
    finally:
        p.close()
    with pytest.raises(trainprof.ConfigError):
        trainprof.Profiler(torch_ops="sometimes", log_dir=str(tmp_path))
