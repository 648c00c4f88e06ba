"""With profiling.torch_ops on, a slow_step capture is followed by a trace
window of the next capture_steps steps that also holds torch's operators
(issue 34, docs/CAPTURES.md): the C layer opens the window, trainprof.torch
runs a torch.profiler of its own for those steps and merges it at close.
The collector finds the slow step and writes the capture asynchronously (it
wakes every 20 ms), so Python's window starts a step or two into the C
window: steps of ~20 ms and a 5-step window leave that room on a loaded
machine."""
import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")


def test_slow_step_window_has_torch_operators(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys, time, torch, trainprof
        prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none", html_report=False,
                                  torch_ops=True, capture_steps=5, capture_slow_step=4,
                                  memory=False)
        model = torch.nn.Linear(64, 64)
        x = torch.randn(32, 64)
        for i in range(30):
            with prof.zone("forward"):
                model(x).sum().backward()
                time.sleep(0.02)
                if i == 15:
                    time.sleep(0.5)
            prof.step()
        prof.close()
    """))
    p = subprocess.run([sys.executable, str(script), str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    (run_dir,) = glob.glob(str(tmp_path / "runs" / "trainprof_*"))
    with open(os.path.join(run_dir, "captures.json"), encoding="utf-8") as f:
        caps = json.load(f)["captures"]
    slow = [c for c in caps if c["reason"] == "slow_step" and c["step"] == 15]
    assert slow, caps
    windows = {}
    for path in glob.glob(os.path.join(run_dir, "profiler_traces", "*.pt.trace.json")):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        windows[doc["trainprof"]["first_step"]] = doc
    assert 16 in windows, sorted(windows)
    doc = windows[16]
    assert doc["trainprof"]["last_step"] == 20
    assert doc["trainprof"]["capture"] == slow[0]["index"]  # which capture it follows
    assert "capture" not in windows[2]["trainprof"]  # the schedule's window (wait 1, warmup 1)
    assert doc["trainprof"].get("torch_ops", {}).get("events", 0) > 0, doc["trainprof"]
    names = {e.get("name", "") for e in doc["traceEvents"]}
    assert any(n.startswith("aten::") for n in names), sorted(names)[:40]
