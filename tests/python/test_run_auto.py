"""Profiling without code changes (docs/RUN.md): unmodified scripts
(tests/python/auto_scripts/, no trainprof in them) run under
`python -m trainprof`, `trainprof run` and torchrun; every output read back
with Python's json and checked against what the script itself counted."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import trainprof
from tp_pyhelpers import load, operations, schedule_traces

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "auto_scripts")
CLI = trainprof.cli_path()
BIN = os.path.dirname(sys.executable)


def script(name):
    return os.path.join(SCRIPTS, name)


def run(cmd, cwd, env=None, timeout=300):
    full = dict(os.environ)
    full["PATH"] = BIN + os.pathsep + full.get("PATH", "")  # torchrun of this venv
    full.pop("TRAINPROF_RUN_ARGS", None)
    full.update(env or {})
    return subprocess.run(cmd, cwd=str(cwd), capture_output=True, text=True, env=full,
                          timeout=timeout)


def py_m(args, cwd, **kw):
    return run([sys.executable, "-m", "trainprof", *args], cwd, **kw)


def tp_run(args, cwd, **kw):
    assert CLI, "the build tree's package has no bin/trainprof"
    return run([CLI, "run", "-o", "tree", *args], cwd, **kw)


def run_dirs(cwd, log_dir="runs"):
    """Every run directory written (a job directory's rank<r>/ included)."""
    out = []
    for d in sorted(glob.glob(os.path.join(str(cwd), log_dir, "*"))):
        ranks = sorted(glob.glob(os.path.join(d, "rank*")))
        out += ranks if ranks else [d]
    return out


def steps(run_dir):
    return load(os.path.join(run_dir, "timing_profile.json"))


def counted(stdout, word):
    m = re.search(rf"{word} (\d+)", stdout)
    assert m, stdout
    return int(m.group(1))


def check_torch_run(res, cwd, status):
    assert res.returncode == status, res.stderr
    assert "epoch 0 loss" in res.stdout and "epoch 1 loss" in res.stdout  # output untouched
    n = counted(res.stdout, "optimizer_steps")
    (run_dir,) = run_dirs(cwd)  # one: none from the 2 DataLoader workers
    rows = steps(run_dir)
    assert len(rows) == n == 24
    assert load(os.path.join(run_dir, "training_summary.json"))["total_steps"] == n
    assert [r["step"] for r in rows] == list(range(n))
    assert all(r["samples"] == 8 for r in rows[1:])
    ops = operations(run_dir)
    assert ops["optimizer_step"]["count"] == n
    assert ops["backward"]["count"] == n
    # forward: the top-level model only (not its Linear/ReLU, not the loss
    # module: no trainable parameter), once per step, plus the evaluation call
    assert n - 1 <= ops["forward"]["count"] <= n + 1
    # data_loading: one wait per batch, plus the end of each pass and iter()
    assert n - 1 <= ops["data_loading"]["count"] <= n + 2 * 2 + 1
    assert ops["checkpoint_save"]["count"] == 1
    assert ops["gc"]["count"] >= 2  # the script's gc.collect() after each epoch, at least
    assert not any(name.startswith(("Linear", "ReLU")) for name in ops)
    assert os.path.isfile(os.path.join(str(cwd), "model.pt"))
    return run_dir


def test_torch_python_m(tmp_path):
    res = py_m(["--profiling.metrics", "none", script("train_torch.py"), "2", "3"], tmp_path)
    check_torch_run(res, tmp_path, 3)


def test_torch_trainprof_run(tmp_path):
    res = tp_run(["--profiling.metrics", "none", "--", sys.executable, script("train_torch.py")],
                 tmp_path)
    run_dir = check_torch_run(res, tmp_path, 0)
    assert "profiling the Python processes" in res.stderr
    rows = load(os.path.join(str(tmp_path), "tree", "memory_profile.json"))  # the tree, as before
    assert rows and all("rss_bytes" in r for r in rows)
    assert load(os.path.join(run_dir, "memory_profile.json"))  # the session's memory rows


def test_flags_apply_like_every_spelling(tmp_path):
    res = py_m(["--profiling.name", "auto", "--profiling.log_dir=mine", "--profiling.metrics",
                "jsonl", "--profiling.trace", "false", script("train_torch.py"), "1"], tmp_path)
    assert res.returncode == 0, res.stderr
    (run_dir,) = run_dirs(tmp_path, "mine")
    assert os.path.basename(run_dir).startswith("auto_")
    assert not os.path.exists(os.path.join(run_dir, "profiler_traces"))
    cfg = load(os.path.join(run_dir, "config.json"))
    text = json.dumps(cfg)
    assert "flag --profiling.name" in text  # flag precedence, as on the command line
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        assert sum(1 for line in f if line.strip()) >= 1
    assert len(steps(run_dir)) == counted(res.stdout, "optimizer_steps") == 12


def test_torch_ops_when_asked(tmp_path):
    res = py_m(["--profiling.torch_ops", "true", "--profiling.metrics", "none",
                script("train_torch.py"), "1"], tmp_path)
    assert res.returncode == 0, res.stderr
    (run_dir,) = run_dirs(tmp_path)
    # the schedule's one window (a slow step on a loaded machine adds a
    # capture's window beside it: docs/CAPTURES.md)
    (trace,) = schedule_traces(run_dir)
    doc = load(trace)
    assert doc["trainprof"]["first_step"] == 2  # wait 1, warmup 1
    names = {e.get("name") for e in doc["traceEvents"]}
    assert {"forward", "backward", "optimizer_step", "data_loading"} <= names  # our zones
    assert any(str(n).startswith("aten::") for n in names)  # torch's operators, merged
    assert doc["trainprof"]["torch_ops"]["events"] > 0


def test_profiling_off_runs_the_script_only(tmp_path):
    res = py_m(["--profiling.enabled", "false", script("train_torch.py"), "1"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert counted(res.stdout, "optimizer_steps") == 12
    assert run_dirs(tmp_path) == [] and not os.path.exists(tmp_path / "runs")


def test_lightning(tmp_path):
    pytest.importorskip("lightning")
    res = py_m(["--profiling.metrics", "none", script("train_lightning.py")], tmp_path)
    assert res.returncode == 0, res.stderr
    batches, epochs = counted(res.stdout, "batches"), counted(res.stdout, "epochs")
    (run_dir,) = run_dirs(tmp_path)
    rows = steps(run_dir)
    assert len(rows) == batches == 12 and epochs == 2
    assert [r["epoch"] for r in rows] == [0] * 6 + [1] * 6
    ops = operations(run_dir)
    assert ops["run_training_epoch"]["count"] == 2
    assert any("backward" in k and v["count"] == 12 for k, v in ops.items())
    assert any("optimizer_step" in k and v["count"] == 12 for k, v in ops.items())
    assert any("train_dataloader_next" in k for k in ops)
    assert "optimizer_step" not in ops  # torch's hooks stood aside: no second count


def test_jax_trainprof_run(tmp_path):
    pytest.importorskip("jax")
    res = tp_run(["--profiling.metrics", "none", "--", sys.executable, script("train_jax.py")],
                 tmp_path)
    assert res.returncode == 0, res.stderr
    n = counted(res.stdout, "train_steps")
    (run_dir,) = run_dirs(tmp_path)
    assert len(steps(run_dir)) == n == 15
    ops = operations(run_dir)
    assert ops["jit(train_step)"]["count"] == n
    assert ops["jit(init)"]["count"] == 1 and ops["jit(eval_step)"]["count"] == 2
    assert ops["jit(scale)"]["count"] == 1
    assert ops["jax.compile"]["count"] >= 3  # init, train_step, eval_step


def test_jax_step_key_names_another(tmp_path):
    pytest.importorskip("jax")
    res = py_m(["--profiling.jax_step", "eval_step", "--profiling.metrics", "none",
                script("train_jax.py")], tmp_path)
    assert res.returncode == 0, res.stderr
    (run_dir,) = run_dirs(tmp_path)
    assert len(steps(run_dir)) == 2  # the two eval_step calls
    assert "train_step" in res.stderr and "jax_step" in res.stderr  # called more: said at exit


def check_ddp(res, cwd):
    assert res.returncode == 0, res.stderr
    per_rank = dict(map(int, m) for m in re.findall(r"rank (\d) optimizer_steps (\d+)", res.stdout))
    assert sorted(per_rank) == [0, 1]
    jobs = glob.glob(os.path.join(str(cwd), "runs", "*"))
    assert len(jobs) == 1 and "_job-" in jobs[0]  # one job directory, nothing from the launcher
    assert sorted(os.listdir(jobs[0])) == ["job.json", "rank0", "rank1"]
    assert load(os.path.join(jobs[0], "job.json"))["world_size"] == 2
    for rank, n in per_rank.items():
        run_dir = os.path.join(jobs[0], f"rank{rank}")
        assert len(steps(run_dir)) == n == 8
        ops = operations(run_dir)
        assert ops["optimizer_step"]["count"] == n and ops["backward"]["count"] == n
        assert n <= ops["forward"]["count"] <= n  # DDP's forward, once a step
        assert load(os.path.join(run_dir, "training_summary.json"))["rank"] == rank


def test_ddp_torchrun_under_trainprof_run(tmp_path):
    if not shutil.which("torchrun", path=BIN):
        pytest.skip("no torchrun")
    res = tp_run(["--profiling.metrics", "none", "--", "torchrun", "--nproc_per_node", "2",
                  script("train_ddp.py")], tmp_path)
    check_ddp(res, tmp_path)


def test_ddp_python_m_torch_distributed_run(tmp_path):
    res = py_m(["--profiling.metrics", "none", "-m", "torch.distributed.run", "--nproc_per_node",
                "2", script("train_ddp.py")], tmp_path)
    check_ddp(res, tmp_path)


# ---- the program's own behaviour is kept ---------------------------------------

RAISES = """
def inner():
    raise ValueError("boom from the script")
print("before", flush=True)
inner()
"""


@pytest.mark.parametrize("how", ["python_m", "run"])
def test_exception_traceback_and_status(tmp_path, how):
    path = tmp_path / "raises.py"
    path.write_text(RAISES)
    res = (py_m([str(path)], tmp_path) if how == "python_m"
           else tp_run(["--", sys.executable, str(path)], tmp_path))
    assert res.returncode == 1
    assert res.stdout == "before\n"
    assert "Traceback (most recent call last)" in res.stderr
    assert "ValueError: boom from the script" in res.stderr
    assert 'in inner' in res.stderr and "runpy" not in res.stderr  # the script's frames
    assert run_dirs(tmp_path) == []  # it never trained


def test_arguments_reach_the_script(tmp_path):
    path = tmp_path / "args.py"
    path.write_text("import sys\nprint(sys.argv)\nprint(__name__)\n")
    res = py_m(["--profiling.active", "2", str(path), "--profiling.wait", "7", "-x", "y"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [repr([str(path), "--profiling.wait", "7", "-x", "y"]),
                                       "__main__"]


def test_programs_own_profiler_wins(tmp_path):
    path = tmp_path / "own.py"
    path.write_text(
        "import torch, trainprof\n"
        "prof = trainprof.Profiler(log_dir='own', metrics='none')\n"
        "model = torch.nn.Linear(4, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for i in range(5):\n"
        "    model(torch.randn(2, 4)).sum().backward(); opt.step(); prof.step()\n"
        "prof.close()\n")
    res = py_m([str(path)], tmp_path)
    assert res.returncode == 0, res.stderr
    assert run_dirs(tmp_path) == []  # no automatic session
    (run_dir,) = run_dirs(tmp_path, "own")
    assert len(steps(run_dir)) == 5  # its own steps, not doubled by the optimizer hooks


def test_existing_sitecustomize_still_runs(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos.environ['FROM_SITE'] = 'yes'\n")
    path = tmp_path / "env.py"
    path.write_text("import os, sys\nprint(os.environ.get('FROM_SITE'))\n"
                    "print(any('_bootstrap' in p for p in sys.path))\n")
    pp = str(site) + os.pathsep + os.environ.get("PYTHONPATH", "")
    res = tp_run(["--", sys.executable, str(path)], tmp_path, env={"PYTHONPATH": pp})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["yes", "False"]


# ---- bad input --------------------------------------------------------------------

@pytest.mark.parametrize("how", ["python_m", "run"])
def test_unknown_key_names_it(tmp_path, how):
    args = ["--profiling.wiat", "3"]
    res = (py_m(args + [script("train_torch.py")], tmp_path) if how == "python_m"
           else tp_run(args + ["--", sys.executable, script("train_torch.py")], tmp_path))
    assert res.returncode == 2
    assert "profiling.wiat" in res.stderr and "wait" in res.stderr
    assert res.stdout == "" and run_dirs(tmp_path) == []


def test_missing_script_exits_2_naming_it(tmp_path):
    res = py_m(["--profiling.active", "2", "no_such_train.py"], tmp_path)
    assert res.returncode == 2
    assert "no_such_train.py" in res.stderr
    res = tp_run(["--", sys.executable, "no_such_train.py"], tmp_path)
    assert res.returncode == 2  # python's own answer, passed through
    assert "no_such_train.py" in res.stderr


def test_not_python_is_memory_only_said_once(tmp_path):
    res = tp_run(["--profiling.active", "2", "--", "sh", "-c", "echo hi; exit 4"], tmp_path)
    assert res.returncode == 4 and res.stdout == "hi\n"
    assert res.stderr.count("is not a Python program") == 1
    assert "--profiling flags are not used" in res.stderr
    assert run_dirs(tmp_path) == []
    assert load(os.path.join(str(tmp_path), "tree", "run_summary.json"))["exit_status"] == 4


def test_python_that_never_trains_leaves_nothing(tmp_path):
    res = tp_run(["--", sys.executable, "-c", "import torch; print(torch.ones(2).sum().item())"],
                 tmp_path)
    assert res.returncode == 0 and res.stdout == "2.0\n", res.stderr
    assert run_dirs(tmp_path) == []
