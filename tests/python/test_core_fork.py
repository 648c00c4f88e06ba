"""Fork children (os.fork, DataLoader workers) that inherit a profiler:
their recording is a no-op, their exit closes nothing of the parent's, and
the parent's files stay whole."""
import os
import sys

import pytest

from trainprof import _core
from core_helpers import every_json, ops


def test_forked_child_leaves_the_parent_files_alone(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path), wait=0, warmup=0, active=2)
    with p.zone("before_fork"):
        pass
    pid = os.fork()
    if pid == 0:  # child: records, closes and exits through atexit
        code = 0
        try:
            for _ in range(100):
                with p.zone("child"):
                    pass
                p.step()
            p.summary()
            p.close()
            sys.stdout.flush()
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    for _ in range(3):
        with p.zone("parent"):
            pass
        p.step()
    p.close()
    table = ops(p.run_dir)
    assert "child" not in table
    assert table["parent"]["count"] == 3 and table["before_fork"]["count"] == 1
    every_json(p.run_dir)


def test_forked_child_exiting_normally_runs_atexit_harmlessly(tmp_path):
    p = _core.Profiler(log_dir=str(tmp_path))
    pid = os.fork()
    if pid == 0:
        with p.zone("child"):
            pass
        _core._close_all()  # what atexit does in a child that exits normally
        os._exit(0)
    os.waitpid(pid, 0)
    with p.zone("parent"):
        pass
    p.close()
    assert set(ops(p.run_dir)) == {"parent"}


def test_a_forked_child_runs_none_of_the_parents_hooks(tmp_path):
    """The hooks (trainprof.torch's torch windows, their merge, the report
    rewrite) write into the parent's run: a child stepping or closing (its
    own close(), atexit, garbage collection) must not run them."""
    p = _core.Profiler(log_dir=str(tmp_path), metrics="none")
    marker = tmp_path / "hook_ran_in"
    p._set_step_hook(lambda: marker.open("a").write(f"step {os.getpid()}\n"))
    p._add_close_hook(lambda: marker.open("a").write(f"close {os.getpid()}\n"))
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            p.step()
            p.close()
            _core._close_all()
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert not marker.exists()  # the child ran none
    p.step()
    p.close()
    assert marker.read_text().split("\n") == [f"step {os.getpid()}", f"close {os.getpid()}", ""]


def test_dataloader_workers_import_and_use_trainprof(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, Dataset

    prof = _core.Profiler(log_dir=str(tmp_path))

    class Squares(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            import trainprof  # noqa: F401  (workers import the package)
            with prof.zone("worker_item"):
                return torch.tensor([float(i * i)])

    loader = DataLoader(Squares(), batch_size=8, num_workers=2,
                        multiprocessing_context="fork")
    total = 0.0
    for batch in loader:
        with prof.zone("train_step"):
            total += float(batch.sum())
        prof.step(len(batch))
    prof.close()
    assert total == sum(i * i for i in range(64))
    table = ops(prof.run_dir)
    assert table["train_step"]["count"] == 8 and "worker_item" not in table
    every_json(prof.run_dir)
