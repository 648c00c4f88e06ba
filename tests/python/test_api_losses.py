"""Issue 32, item 6: the recorder says what it lost. Names with a NUL are
refused, samples saturate, steps whose records were dropped are counted in
the summary and warned about once, and a run directory removed during the
run is a failed close, never "results in ..."."""
import textwrap

import pytest

import trainprof
from tp_pyhelpers import load, only_run_dir, run_python


def test_nul_in_a_name_is_refused(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False, metrics="none")
    for call in (lambda: p.zone("a\0b"), lambda: p.zone("\0"), lambda: p.start_timer("t\0"),
                 lambda: p.mark("m\0x"), lambda: p.counter("c\0y", 1.0)):
        with pytest.raises(ValueError, match="NUL"):
            call()
    with p.zone("a"):  # the names that are fine still record
        pass
    p.step()
    p.close()
    ops = load(f"{only_run_dir(tmp_path)}/operations.json")
    assert [o["name"] for o in ops] == ["a"]


def test_total_samples_saturates(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), trace=False, metrics="none")
    for _ in range(3):
        p.step(samples=2**64 - 1)
    p.close()
    assert load(f"{only_run_dir(tmp_path)}/training_summary.json")["total_samples"] == 2**64 - 1


def test_dropped_steps_are_counted_and_warned(tmp_path):
    """32 threads calling step() into a 1 MB buffer: every step() is either
    in total_steps or in dropped_steps, and a drop is said on stderr with
    metrics="none"."""
    res = run_python(textwrap.dedent(f"""
        import threading, trainprof
        p = trainprof.Profiler(log_dir={str(tmp_path)!r}, trace=False, metrics="none", max_buffer_mb=1)
        def work():
            for _ in range(20000):
                p.step()
        ts = [threading.Thread(target=work) for _ in range(32)]
        for t in ts: t.start()
        for t in ts: t.join()
        print("steps", p.steps)
        p.close()
    """))
    called = int(res.stdout.split("steps")[1].split()[0])
    summary = load(f"{only_run_dir(tmp_path)}/training_summary.json")
    assert summary["total_steps"] + summary["dropped_steps"] == called == 32 * 20000
    if summary["dropped_events"]:
        assert res.stderr.count("event(s) dropped") == 1, res.stderr
        assert f"{summary['dropped_steps']} of {called} step(s)" in res.stderr, res.stderr


def test_run_dir_removed_during_the_run(tmp_path):
    """The run directory deleted mid-run: close() fails, nothing says
    "results in", and the warning names the directory."""
    res = run_python(textwrap.dedent(f"""
        import shutil, trainprof
        p = trainprof.Profiler(log_dir={str(tmp_path)!r}, metrics="console")
        for i in range(6):
            with p.zone("work"):
                pass
            p.step()
            if i == 2:
                shutil.rmtree(p.run_dir)
        try:
            p.close()
            print("CLOSE OK")
        except Exception as e:
            print("CLOSE FAILED", e)
    """), check=False)
    out = res.stdout + res.stderr
    assert "CLOSE FAILED" in res.stdout, out
    assert "results in" not in out, out
    assert "removed during the run" in out, out
