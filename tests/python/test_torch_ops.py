"""trainprof.torch with the real torch (CPU): memory rows without a GPU, and
torch.profiler inside trainprof's trace windows (profiling.torch_ops), merged
onto trainprof's timeline; never running outside the windows."""
import glob
import os

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

import trainprof  # noqa: E402
import trainprof.torch as tpt  # noqa: E402
from tp_pyhelpers import load, only_run_dir, operations, schedule_traces, traces  # noqa: E402


def test_cuda_memory_on_cpu_only_torch_is_empty():
    assert not torch.cuda.is_available()
    assert tpt.cuda_memory() == {}


def test_memory_rows_say_there_is_no_gpu(tmp_path):
    p = tpt.profile(log_dir=str(tmp_path), trace=False)
    for _ in range(3):
        torch.randn(64, 64) @ torch.randn(64, 64)
        p.step()
    p.close()
    rows = load(os.path.join(only_run_dir(tmp_path), "memory_profile.json"))
    assert len(rows) >= 3
    for r in rows:
        assert r["rss_bytes"] > 0
        assert not r.get("memory"), r  # no device rows without a GPU
        assert not r.get("gpu_memory_allocated_gb")


def _train(prof, steps, seen_enabled):
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fwd, bwd = prof.zone("forward"), prof.zone("backward")
    for step in range(steps):
        seen_enabled.append(torch.autograd.profiler._is_profiler_enabled)
        x = torch.randn(16, 32)
        with fwd:
            loss = model(x).square().mean()
        with bwd:
            opt.zero_grad()
            loss.backward()
        opt.step()
        prof.step(16)


def _window_steps(skip_first, wait, warmup, active, repeat, steps):
    out = []
    for k in range(steps):
        if k < skip_first:
            continue
        cycle, pos = divmod(k - skip_first, wait + warmup + active)
        if repeat and cycle >= repeat:
            continue
        if pos >= wait + warmup:
            out.append(k)
    return out


def test_torch_ops_in_windows_only(tmp_path, capsys):
    sched = dict(skip_first=1, wait=2, warmup=1, active=2, repeat=2)
    p = trainprof.Profiler(log_dir=str(tmp_path), torch_ops=True, **sched)
    enabled = []
    _train(p, 16, enabled)
    p.close()
    # torch.profiler records in the active steps of trainprof's windows only
    # (in warmup steps it is prepared, not enabled)
    recording = [k for k, on in enumerate(enabled) if on]
    active = _window_steps(steps=16, **sched)
    assert active == [4, 5, 9, 10]
    assert recording == active
    run_dir = only_run_dir(tmp_path)
    files = schedule_traces(run_dir)
    assert len(files) == 2
    assert not glob.glob(os.path.join(run_dir, ".torch_ops_*"))  # merged, then removed
    for path in files:
        doc = load(path)
        meta = doc["trainprof"]
        assert meta["torch_ops"]["events"] > 0 and meta["torch_ops"]["alignment"] == "sync instant"
        ev = doc["traceEvents"]
        steps = [e for e in ev if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
        assert len(steps) == 2  # trainprof's own, torch's duplicates dropped
        window = [int(e["name"].split("#")[1]) for e in steps]
        assert window in ([4, 5], [9, 10])
        lo = min(e["ts"] for e in steps)
        hi = max(e["ts"] + e["dur"] for e in steps)
        aten = [e for e in ev if e.get("ph") == "X" and e["name"].startswith("aten::")]
        assert aten, "torch operators in the window trace"
        assert {"aten::addmm", "aten::mm"} & {e["name"] for e in aten}
        slack = 5 + meta["torch_ops"]["sync_half_width_us"]  # the alignment's uncertainty
        for e in aten:  # torch's operators lie inside the window's steps ...
            assert lo - slack <= e["ts"] and e["ts"] + e["dur"] <= hi + slack, e
        # ... and under trainprof's zones, on the same thread track
        fwd = [e for e in ev if e.get("ph") == "X" and e["name"] == "forward"]
        linear = [e for e in aten if e["name"] == "aten::linear"]
        assert linear
        for e in linear:
            assert any(f["tid"] == e["tid"] and f["ts"] - slack <= e["ts"] and
                       e["ts"] + e["dur"] <= f["ts"] + f["dur"] + slack for f in fwd), e
    out = capsys.readouterr().out
    assert "trainprof analyze" not in out  # one run summary, not one analysis per window
    assert out.count("trainprof.torch: torch operators of 2 window(s) merged into") == 1
    # report.html was written again from the merged traces
    with open(os.path.join(run_dir, "report.html"), encoding="utf-8") as f:
        page = f.read()
    fresh = os.path.join(str(tmp_path), "fresh.html")
    trainprof._core.report_html(run_dir, fresh)
    with open(fresh, encoding="utf-8") as f:
        assert page == f.read()
    assert operations(run_dir)["forward"]["count"] == 16


def test_torch_ops_off_leaves_torch_profiler_alone(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), wait=0, warmup=0, active=2)
    enabled = []
    _train(p, 4, enabled)
    p.close()
    assert not any(enabled)
    (path,) = schedule_traces(only_run_dir(tmp_path))
    doc = load(path)
    assert "torch_ops" not in doc["trainprof"]
    assert not any(e.get("name", "").startswith("aten::") for e in doc["traceEvents"])


def test_torch_ops_with_gzip_traces(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), torch_ops=True, wait=0, warmup=0, active=2,
                           gzip=True)
    _train(p, 3, [])
    p.close()
    (path,) = schedule_traces(only_run_dir(tmp_path))
    assert path.endswith(".gz")
    assert any(e.get("name", "").startswith("aten::") for e in load(path)["traceEvents"])


def test_torch_ops_window_cut_short_by_close(tmp_path):
    p = trainprof.Profiler(log_dir=str(tmp_path), torch_ops=True, wait=1, warmup=0, active=10)
    _train(p, 4, [])  # steps 1..3 of a 10-step window, then close
    p.close()
    (path,) = schedule_traces(only_run_dir(tmp_path))
    doc = load(path)
    assert doc["trainprof"]["torch_ops"]["events"] > 0
    assert any(e.get("name", "").startswith("aten::") for e in doc["traceEvents"])


def test_torch_ops_with_perfetto_traces_keeps_torchs_trace_beside(tmp_path, capsys):
    p = trainprof.Profiler(log_dir=str(tmp_path), torch_ops=True, wait=0, warmup=0, active=2,
                           trace_format="perfetto")
    _train(p, 3, [])
    p.close()
    run_dir = only_run_dir(tmp_path)
    (kept,) = glob.glob(os.path.join(run_dir, "profiler_traces", "torch_window_0.pt.trace.json"))
    assert any(e.get("name", "").startswith("aten::") for e in load(kept)["traceEvents"])
    assert len(glob.glob(os.path.join(run_dir, "profiler_traces", "*.perfetto-trace"))) == 1
    assert "torch's trace kept as" in capsys.readouterr().err


def test_torch_ops_close_is_quiet_with_metrics_none(tmp_path, capsys):
    p = trainprof.Profiler(log_dir=str(tmp_path), torch_ops=True, wait=0, warmup=0, active=1,
                           repeat=0, metrics="none")
    _train(p, 6, [])
    p.close()
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    run_dir = only_run_dir(tmp_path)
    windows = sorted(load(t)["trainprof"]["first_step"] for t in schedule_traces(run_dir)
                     if "torch_ops" in load(t)["trainprof"])
    assert windows[:6] == list(range(6))  # back-to-back one-step windows, each its own
    assert not glob.glob(os.path.join(run_dir, ".torch_ops_*"))


def test_kineto_progress_lines_are_silenced_other_stderr_kept(tmp_path):
    """Issue 33: Kineto printed 2 `USDT: ... profiler_start/stop` lines per
    window from C++; what else reaches fd 2 meanwhile still shows."""
    from tp_pyhelpers import run_python
    res = run_python("import os, sys, torch, trainprof, trainprof.torch\n"
                     f"p = trainprof.Profiler(log_dir={str(tmp_path)!r}, torch_ops=True, wait=0,"
                     " warmup=0, active=1, repeat=0, metrics='none')\n"
                     "for i in range(4):\n"
                     "    torch.ones(3) + 1\n"
                     "    p.step()\n"
                     "os.write(2, b'the program\\'s own line\\n')\n"
                     "p.close()\n")
    assert "USDT:" not in res.stderr and "STAGE:" not in res.stderr, res.stderr
    assert "the program's own line" in res.stderr
    assert len(traces(only_run_dir(tmp_path))) >= 4  # the windows were recorded


def test_quiet_kineto_writes_back_all_but_kinetos_lines(capfd):
    with tpt._quiet_kineto():
        os.write(2, b"USDT:2026 1:1 X.cpp:52] profiler_start\nwarning: kept\nSTAGE:x Completed\n")
    assert capfd.readouterr().err == "warning: kept\n"
