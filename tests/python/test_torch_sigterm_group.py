"""SIGTERM sent to a whole training job, as SLURM (`scancel --signal=TERM`),
`kill -TERM -- -PGID` and torchrun's agent send it: the DataLoader workers
die of it too, while the main process closes the run. The run directory is
complete all the same (summary, operations, report.html with torch's
operators, torch windows merged) and the exit status says "terminated"."""
import glob
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")
from tp_pyhelpers import SOURCE_DIR, load, only_run_dir  # noqa: E402


def start_cnn(log_dir, launcher=()):
    """The CNN example with 2 DataLoader workers and torch_ops (under
    launcher), in a session (a process group) of its own; returns once its
    first torch window is written (the run's .torch_ops_* folder holds a
    window trace)."""
    example = os.path.join(SOURCE_DIR, "examples", "python", "train_cnn.py")
    proc = subprocess.Popen(
        [sys.executable, *launcher, example, "--max_steps", "100000", "--num_workers", "2",
         "--batch_size", "16", "--quiet", "--profiling.torch_ops", "true",
         "--profiling.wait", "1", "--profiling.warmup", "1", "--profiling.active", "2",
         "--profiling.repeat", "0", f"--profiling.log_dir={log_dir}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 180
    pattern = os.path.join(str(log_dir), "trainprof_*", "**", ".torch_ops_*", "window_*.json")
    while time.monotonic() < deadline and proc.poll() is None and not glob.glob(pattern,
                                                                                recursive=True):
        time.sleep(0.1)
    if not glob.glob(pattern, recursive=True):
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"no torch window within 180 s (exit {proc.returncode}): {err[-3000:]}")
    time.sleep(0.3)  # a few steps more, inside the next window
    return proc


def finish(proc):
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"still running 120 s after SIGTERM: {err[-3000:]}")
    return out, err, alive_in_group(proc.pid)


def alive_in_group(pgid, wait_s=10):
    """The processes of group pgid still running (zombies waiting for a
    reaper do not count), after up to wait_s for them to end."""
    deadline = time.monotonic() + wait_s
    while True:
        alive = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append(int(entry))
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def check_complete(log_dir, proc, out, err, signum=signal.SIGTERM, run_dir=None):
    if signum:
        assert proc.returncode == -signum, (proc.returncode, out[-2000:], err[-3000:])
    assert "is killed by signal" not in err and "exited unexpectedly" not in err, err[-3000:]
    run_dir = run_dir or only_run_dir(log_dir)  # the workers opened no run of their own
    summary = load(os.path.join(run_dir, "training_summary.json"))
    assert summary["total_steps"] >= 4, summary
    names = {o["name"] for o in load(os.path.join(run_dir, "operations.json"))}
    assert {"forward", "backward", "data_batch_production"} <= names, names
    assert not glob.glob(os.path.join(run_dir, ".torch_ops_*")), os.listdir(run_dir)
    assert not glob.glob(os.path.join(run_dir, "profiler_traces", "torch_window_*"))
    merged = []
    for path in glob.glob(os.path.join(run_dir, "profiler_traces", "*.pt.trace.json*")):
        doc = load(path)
        if "torch_ops" in doc.get("trainprof", {}):
            merged.append(sum(1 for e in doc["traceEvents"]
                              if str(e.get("name", "")).startswith("aten::")))
    # every window merged; the one the signal cut may have no operator yet
    assert len(merged) >= 2 and max(merged) > 0, (merged, err[-3000:])
    with open(os.path.join(run_dir, "report.html"), encoding="utf-8") as f:
        assert "aten::" in f.read()  # the page of the merged run


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_process_group_leaves_a_complete_run(tmp_path, signum):
    """SIGINT: Ctrl-C in a terminal signals the whole foreground group; the
    KeyboardInterrupt then unwinds a loop whose workers are gone."""
    proc = start_cnn(tmp_path)
    os.killpg(proc.pid, signum)  # the main process and its 2 workers
    out, err, alive = finish(proc)
    check_complete(tmp_path, proc, out, err, signum)
    assert not alive  # no worker outlived the job


def test_the_signal_forwarded_again_by_a_launcher_does_not_cut_the_close(tmp_path):
    """torchrun's agent gets the scheduler's SIGTERM too and sends it again to
    each worker process a few ms later (then waits 30 s before SIGKILL)."""
    proc = start_cnn(tmp_path)
    os.killpg(proc.pid, signal.SIGTERM)
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGTERM)
    out, err, alive = finish(proc)
    check_complete(tmp_path, proc, out, err)
    assert not alive  # no worker outlived the job


def test_torchrun_signalled_with_its_worker_leaves_a_complete_run(tmp_path):
    """torchrun starts its worker in a session of its own; SLURM signals
    every process of the step: the agent, which forwards SIGTERM to the
    worker (then SIGKILL after 30 s), and the worker with its DataLoader
    workers."""
    proc = start_cnn(tmp_path, ("-m", "torch.distributed.run", "--standalone",
                                "--nproc_per_node", "1"))
    groups = {os.getpgid(int(p)) for p in os.listdir("/proc") if p.isdigit()
              and _parent(int(p)) == proc.pid}
    for pgid in {proc.pid} | groups:
        os.killpg(pgid, signal.SIGTERM)
    out, err, alive = finish(proc)
    rank_dirs = glob.glob(os.path.join(str(tmp_path), "trainprof_*", "rank0"))
    assert len(rank_dirs) == 1, os.listdir(str(tmp_path))
    check_complete(tmp_path, proc, out, err, signum=None, run_dir=rank_dirs[0])
    assert not any(alive_in_group(g) for g in groups)


def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


CHILD_SIGNAL_AT_WINDOW_START = r'''
import os, signal, sys
import torch
import torch.profiler as tprof
import trainprof

real_step = tprof.profile.step
count = [0]


def step(self):  # a SIGTERM that arrives while torch's profiler moves to the next window
    real_step(self)
    count[0] += 1
    if count[0] == 3:
        os.kill(os.getpid(), signal.SIGTERM)


tprof.profile.step = step
p = trainprof.Profiler(log_dir=sys.argv[1], torch_ops=True, wait=0, warmup=0, active=1, repeat=0,
                       metrics="none")
for _ in range(50):
    torch.randn(32, 32) @ torch.randn(32, 32)
    p.step()
print("not stopped by the signal")
'''


def test_a_signal_as_a_window_begins_keeps_every_window(tmp_path):
    """The close a SIGTERM starts (deferred to the end of the window change)
    stops torch's profiler: the window it exports then must not take the
    name, and the file, of the window exported just before."""
    proc = subprocess.run([sys.executable, "-c", CHILD_SIGNAL_AT_WINDOW_START, str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    run_dir = only_run_dir(tmp_path)
    assert not glob.glob(os.path.join(run_dir, ".torch_ops_*")), os.listdir(run_dir)
    merged = [p for p in glob.glob(os.path.join(run_dir, "profiler_traces", "*.pt.trace.json"))
              if load(p)["trainprof"].get("torch_ops", {}).get("events", 0) > 0]
    assert len(merged) >= 3, sorted(os.listdir(os.path.join(run_dir, "profiler_traces")))
