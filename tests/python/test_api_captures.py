"""The flight recorder from Python (docs/CAPTURES.md): an exception that
escapes the script is a capture with its traceback (the process still dies
with its own error), a hang dump holds every thread's Python stack, SIGUSR1
captures and the job goes on, Profiler.capture() asks for one."""
import glob
import json
import os
import signal
import subprocess
import sys
import textwrap
import time


def run_script(tmp_path, code, *args, timeout=120):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script), str(tmp_path / "runs"), *args],
                          capture_output=True, text=True, timeout=timeout)


def the_run(tmp_path):
    dirs = glob.glob(str(tmp_path / "runs" / "trainprof_*"))
    assert len(dirs) == 1, dirs
    return dirs[0]


def entries(run_dir):
    with open(os.path.join(run_dir, "captures.json"), encoding="utf-8") as f:
        return json.load(f)["captures"]


def parse_files(run_dir, entry):
    for rel in entry["files"]:
        path = os.path.join(run_dir, rel)
        assert os.path.isfile(path), path
        if rel.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                json.load(f)


def test_exception_is_captured_and_the_program_still_fails(tmp_path):
    p = run_script(tmp_path, """
        import sys, time, trainprof
        prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none", html_report=False,
                                  capture_slow_step=0)
        for i in range(6):
            with prof.zone("work"):
                time.sleep(0.001)
            prof.step()
        def load_batch():
            raise RuntimeError("CUDA out of memory (simulated)")
        load_batch()
    """)
    assert p.returncode == 1, p.stderr
    assert "Traceback (most recent call last)" in p.stderr
    assert "RuntimeError: CUDA out of memory (simulated)" in p.stderr
    run_dir = the_run(tmp_path)
    (c,) = entries(run_dir)
    assert c["reason"] == "exception" and c["step"] == 6
    assert c["detail"].startswith("RuntimeError: CUDA out of memory (simulated)")
    assert "in load_batch" in c["detail"] and "Traceback" in c["detail"]
    parse_files(run_dir, c)
    with open(os.path.join(run_dir, "training_summary.json"), encoding="utf-8") as f:
        assert json.load(f)["captures"] == [c]


def test_exception_in_a_thread_is_captured(tmp_path):
    p = run_script(tmp_path, """
        import sys, threading, trainprof
        prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none", html_report=False,
                                  capture_slow_step=0)
        prof.step()
        def bad():
            raise ValueError("in the worker")
        t = threading.Thread(target=bad, name="worker-7")
        t.start(); t.join()
        prof.step()
        prof.close()
    """)
    assert p.returncode == 0, p.stderr
    assert "ValueError: in the worker" in p.stderr
    (c,) = entries(the_run(tmp_path))
    assert c["reason"] == "exception" and "(in thread worker-7)" in c["detail"]


def test_hang_dump_has_every_thread_python_stack(tmp_path):
    p = run_script(tmp_path, """
        import sys, threading, time, trainprof
        prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none", html_report=False, capture_slow_step=0,
                                  hang_timeout="2s")
        def heartbeat_loop():
            while True:
                time.sleep(0.05)
        threading.Thread(target=heartbeat_loop, name="heartbeat", daemon=True).start()
        def sleeping_in_the_step():
            time.sleep(4)
        for i in range(6):
            with prof.zone("forward"):
                if i == 4:
                    sleeping_in_the_step()
            prof.step()
        prof.close()
    """)
    assert p.returncode == 0, p.stderr
    run_dir = the_run(tmp_path)
    (c,) = entries(run_dir)
    assert c["reason"] == "hang" and c["step"] == 4
    parse_files(run_dir, c)
    (dump,) = [f for f in c["files"] if f.endswith(".hang.txt")]
    text = open(os.path.join(run_dir, dump), encoding="utf-8").read()
    assert "in sleeping_in_the_step" in text and "in heartbeat_loop" in text, text
    assert text.count("Thread 0x") >= 2, text
    assert "forward (open" in text and "clock_nanosleep" in text or "select" in text, text


def test_sigusr1_captures_and_the_job_goes_on(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys, time, trainprof
        prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none", html_report=False,
                                  capture_slow_step=0)
        print("ready", flush=True)
        for i in range(400):
            with prof.zone("work"):
                time.sleep(0.005)
            prof.step()
        print("steps", prof.steps, "captures", prof.captures, flush=True)
        prof.close()
    """))
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "runs")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "steps 400 captures" in out
    run_dir = the_run(tmp_path)
    got = entries(run_dir)
    assert [c["reason"] for c in got if c["reason"] == "signal"] == ["signal"], got
    parse_files(run_dir, [c for c in got if c["reason"] == "signal"][0])


def test_capture_method(tmp_path):
    p = run_script(tmp_path, """
        import sys, trainprof
        prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none", html_report=False,
                                  capture_slow_step=0)
        prof.step()
        assert prof.capture("before_eval", detail="asked by the script") is True
        try:
            prof.capture("Not Valid")
        except ValueError as e:
            print("refused", e)
        off = trainprof.Profiler(log_dir=sys.argv[1] + "_off", capture=False, metrics="none",
                                 html_report=False)
        print("off", off.capture())
        off.close()
        prof.close()
    """)
    assert p.returncode == 0, p.stderr
    assert "refused" in p.stdout and "off False" in p.stdout
    (c,) = entries(the_run(tmp_path))
    assert c["reason"] == "before_eval" and c["detail"] == "asked by the script"
