"""SIGTERM and SIGINT end a run cleanly (trainprof._signals): the run's
files are written, then the program's previous handler or the default
action follows (the exit status still says "terminated"); a second signal
ends the process at once; forked children and handle_signals=false leave
the run alone."""
import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from core_helpers import every_json, load, ops

FILES = ("training_summary.json", "operations.json", "timing_profile.json", "report.html")


def start(code, tmp_path, *args):
    """Starts code in a fresh interpreter (tmp_path as argv[1]) and waits for
    its `ready` line."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.strip() == "ready", (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def run_dir_of(tmp_path):
    dirs = glob.glob(os.path.join(str(tmp_path), "trainprof_*"))
    assert len(dirs) == 1, dirs
    return dirs[0]


LOOP = """
    import signal, sys, time
    import trainprof
    prof = trainprof.Profiler(log_dir=sys.argv[1], wait=0, warmup=0, active=2, repeat=0,
                              metrics="none" {extra})
    fwd = prof.zone("forward")
    {setup}
    print("ready", flush=True)
    while True:
        with fwd:
            time.sleep(0.002)
        prof.step(8)
"""


def loop(extra="", setup=""):
    return LOOP.format(extra=extra, setup=setup)


def test_sigterm_writes_every_file_then_terminates(tmp_path):
    proc = start(loop(), tmp_path)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, out, err)
    run_dir = run_dir_of(tmp_path)
    for name in FILES:
        assert os.path.exists(os.path.join(run_dir, name)), (name, err)
    every_json(run_dir)
    summary = load(os.path.join(run_dir, "training_summary.json"))
    assert summary["total_steps"] >= 5 and summary["unbalanced_zones"] <= 1
    assert ops(run_dir)["forward"]["count"] >= 5


def test_sigint_closes_then_raises_keyboard_interrupt(tmp_path):
    proc = start(loop(), tmp_path)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGINT, (proc.returncode, err)  # uncaught KeyboardInterrupt
    assert "KeyboardInterrupt" in err
    run_dir = run_dir_of(tmp_path)
    for name in FILES:
        assert os.path.exists(os.path.join(run_dir, name)), name


def test_ctrl_c_traceback_ends_in_the_programs_code(tmp_path):
    """Issue 33: it ended in trainprof/_signals.py, as if trainprof crashed."""
    proc = start(loop(), tmp_path)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    frames = [ln.strip() for ln in err.splitlines() if ln.strip().startswith("File ")]
    assert frames and "prog.py" in frames[-1], err
    assert "_signals.py" not in err and "trainprof" not in frames[-1], err
    assert err.rstrip().endswith("KeyboardInterrupt"), err


def test_the_programs_own_handler_runs_after_the_close(tmp_path):
    setup = """
    def mine(signum, frame):
        print("mine", signum, prof.closed, flush=True)
        sys.exit(7)
    signal.signal(signal.SIGTERM, mine)
    prof2 = trainprof.Profiler(log_dir=sys.argv[1] + "/second", metrics="none")
    """
    proc = start(loop(setup=setup), tmp_path)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 7, (out, err)
    assert f"mine {int(signal.SIGTERM)} True" in out
    for name in FILES:
        assert os.path.exists(os.path.join(run_dir_of(tmp_path / "second"), name)), name


def test_handle_signals_false_leaves_the_default(tmp_path):
    proc = start(loop(extra=", handle_signals=False"), tmp_path)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    run_dir = run_dir_of(tmp_path)
    assert not os.path.exists(os.path.join(run_dir, "training_summary.json"))


SLOW_CLOSE = """
    def slow():
        print("closing", flush=True)
        time.sleep(60)
    prof._add_close_hook(slow)
    """


def test_a_second_signal_exits_at_once(tmp_path):
    from trainprof._signals import REPEAT_GRACE_S
    proc = start(loop(setup=SLOW_CLOSE), tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline().strip() == "closing"
    time.sleep(REPEAT_GRACE_S + 0.5)  # not the first one forwarded again
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM and time.monotonic() - t0 < 10
    # the C session had closed before the hook: its files are there
    assert os.path.exists(os.path.join(run_dir_of(tmp_path), "training_summary.json"))


def test_another_signal_during_the_close_exits_at_once(tmp_path):
    proc = start(loop(setup=SLOW_CLOSE), tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline().strip() == "closing"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)  # Ctrl-C while a SIGTERM close waits
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGINT and time.monotonic() - t0 < 10


def test_the_same_signal_again_at_once_is_the_same_request(tmp_path):
    """SLURM and `kill -- -PGID` signal every process of a job, torchrun's
    agent among them, which sends the signal again to its workers: that
    repeat does not cut the close short."""
    setup = """
    def slow():
        print("closing", flush=True)
        time.sleep(1.0)
        print("hook done", flush=True)
    prof._add_close_hook(slow)
    """
    proc = start(loop(setup=setup), tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline().strip() == "closing"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, (out, err)
    assert "hook done" in out


def test_a_signal_during_close_lets_the_close_finish(tmp_path):
    code = """
    import sys, time
    import trainprof
    prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none")
    def slow():
        print("closing", flush=True)
        time.sleep(1.0)
        print("hook done", flush=True)
    prof._add_close_hook(slow)
    print("ready", flush=True)
    prof.close()
    print("after close", flush=True)
    """
    proc = start(code, tmp_path)
    assert proc.stdout.readline().strip() == "closing"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, (out, err)
    assert "hook done" in out and "after close" not in out


def test_a_signal_inside_a_held_section_waits_for_its_end(tmp_path):
    """trainprof.torch holds signals while torch.profiler moves between
    windows: a close nested there would stop torch's profiler inside its
    own stop (a crash after SIGINT)."""
    setup = """
    from trainprof import _signals
    prof._add_close_hook(lambda: print("closed", flush=True))
    with _signals.held():
        print("held", flush=True)
        time.sleep(1.0)
        print("section done", flush=True)
    """
    code = loop(setup=setup).replace('print("ready", flush=True)', "")
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, (out, err)
    assert out.split() == ["section", "done", "closed"], (out, err)


def test_ctrl_c_inside_a_step_hook_reaches_the_program(tmp_path):
    """trainprof.torch's step hook runs inside step(): a SIGINT handled
    there closes the run (freeing the hook while it runs), then its
    KeyboardInterrupt comes out of step(), not printed and dropped."""
    code = """
    import os, signal, sys, time
    import trainprof
    prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none")
    class Windows:
        def step(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)  # the handler runs here
    prof._set_step_hook(Windows().step)
    try:
        prof.step()
    except KeyboardInterrupt:
        print("interrupted", prof.closed, flush=True)
        raise
    print("went on", flush=True)
    """
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    res = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == -signal.SIGINT, (res.stdout, res.stderr)
    assert res.stdout.split() == ["interrupted", "True"], (res.stdout, res.stderr)
    for name in FILES:
        assert os.path.exists(os.path.join(run_dir_of(tmp_path), name)), name


def test_a_forked_child_does_not_close_the_parents_run(tmp_path):
    code = """
    import os, signal, sys
    import trainprof
    prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none")
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGTERM)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("child", os.WIFSIGNALED(status) and os.WTERMSIG(status), prof.closed, flush=True)
    with prof.zone("after"):
        pass
    prof.close()
    """
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    res = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert f"child {int(signal.SIGTERM)} False" in res.stdout
    assert ops(run_dir_of(tmp_path))["after"]["count"] == 1


def test_a_profiler_opened_off_the_main_thread_installs_nothing(tmp_path):
    code = """
    import signal, sys, threading
    import trainprof
    def open_it():
        trainprof.Profiler(log_dir=sys.argv[1], metrics="none").close()
    t = threading.Thread(target=open_it); t.start(); t.join()
    print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
    """
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    res = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert res.stdout.strip() == "True", res.stderr


def test_the_cnn_example_with_torch_ops_survives_sigterm(tmp_path):
    pytest.importorskip("torch")
    from tp_pyhelpers import SOURCE_DIR
    example = os.path.join(SOURCE_DIR, "examples", "python", "train_cnn.py")
    proc = subprocess.Popen(
        [sys.executable, example, "--max_steps", "100000", "--num_workers", "2",
         "--batch_size", "16", "--profiling.torch_ops", "true", "--profiling.wait", "1",
         "--profiling.warmup", "1", "--profiling.active", "2", "--profiling.repeat", "0",
         f"--profiling.log_dir={tmp_path}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        traces = glob.glob(os.path.join(str(tmp_path), "trainprof_*", "profiler_traces", "*.json"))
        if len(traces) >= 3:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, out[-2000:], err[-2000:])
    run_dir = run_dir_of(tmp_path)
    for name in FILES:
        assert os.path.exists(os.path.join(run_dir, name)), name
    assert not glob.glob(os.path.join(run_dir, ".torch_ops_*")), os.listdir(run_dir)
    merged = [t for t in glob.glob(os.path.join(run_dir, "profiler_traces", "*.json"))
              if "torch_ops" in load(t).get("trainprof", {})]
    assert len(merged) >= 2
    # report.html was written again after the merge: it is the page of the merged run
    # (so the torch operators show wherever the page shows the traces' operators)
    import trainprof
    fresh = os.path.join(str(tmp_path), "fresh.html")
    trainprof._core.report_html(run_dir, fresh)
    with open(os.path.join(run_dir, "report.html"), encoding="utf-8") as a, \
            open(fresh, encoding="utf-8") as b:
        page = a.read()
        assert page == b.read()
    assert "trainprof analyze" not in out


def test_a_program_that_goes_on_after_the_signal_records_nothing_and_does_not_fail(tmp_path):
    """A handler that asks the loop to stop at the end of the step (Lightning's,
    a checkpointing script's): the loop's zones, timers and steps after the
    close are no-ops, not ProfilerClosedError."""
    code = """
    import signal, sys, time
    import trainprof
    stop = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    prof = trainprof.TrainingProfiler(log_dir=sys.argv[1], metrics="none")
    fwd = prof.zone("forward")
    print("ready", flush=True)
    while not stop:
        with fwd:
            time.sleep(0.002)
        prof.step(8)
    for _ in range(3):  # the rest of the step, a last checkpoint ...
        with fwd, prof.zone("save"):
            t = prof.start_timer("io")
            prof.end_timer("io", t)
        prof.counter("loss", 1.0)
        prof.step(8)
    print("finished", prof.closed, flush=True)
    """
    proc = start(code, tmp_path)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, (out, err)
    assert "finished True" in out
    run_dir = run_dir_of(tmp_path)
    assert "save" not in ops(run_dir)  # recorded nothing after the close
    for name in FILES:
        assert os.path.exists(os.path.join(run_dir, name)), name
