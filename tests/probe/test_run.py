"""`trainprof run`: outputs checked with Python's json, exit statuses,
signals, missing commands, fake GPUs. argv[1]: the fake libnvidia-ml.so.1."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

BIN = os.environ["TRAINPROF_BIN"]
FAKE_NVML = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(args, env=None, **kw):
    e = dict(os.environ, TRAINPROF_NVML_LIB="/nonexistent/libnvidia-ml.so.1")
    e.update(env or {})
    return subprocess.run([BIN, "run"] + args, env=e, capture_output=True, text=True,
                          timeout=60, **kw)


def outputs(d):
    rows = json.load(open(os.path.join(d, "memory_profile.json")))
    trace = json.load(open(os.path.join(d, "trace.json")))
    summ = json.load(open(os.path.join(d, "run_summary.json")))
    return rows, trace, summ


CHILD = """
import os, subprocess, sys, time
a = bytearray(200 * 1024 * 1024)          # zero-filled: touched
p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.8)"])
t = time.time()
while time.time() - t < 0.8:
    pass                                  # busy: CPU shows up
p.wait()
with open(os.environ["TP_CHILD_CPU"], "w") as f:
    f.write(repr(time.process_time()))    # the CPU it really got (machine load varies)
sys.exit(3)
"""


def test_normal(tmp):
    d = os.path.join(tmp, "normal")
    cpu_file = os.path.join(tmp, "child_cpu")
    os.environ["TP_CHILD_CPU"] = cpu_file
    t0 = time.monotonic()
    r = run(["--interval", "50ms", "-o", d, "--", sys.executable, "-c", CHILD])
    wall = time.monotonic() - t0
    check(r.returncode == 3, "exit status passed through: %d %s" % (r.returncode, r.stderr))
    rows, trace, summ = outputs(d)
    check(len(rows) >= 8, "rows: %d" % len(rows))
    for k in ("step", "batch_idx", "cpu_memory_percent", "rss_bytes", "time_s", "processes"):
        check(all(k in x for x in rows), "field %s in every row" % k)
    check(not any("gpu_memory_allocated_gb" in x for x in rows), "no GPU fields without GPU")
    check(max(x["rss_bytes"] for x in rows) >= 200 << 20, "tree RSS sees 200 MB")
    check(max(x["processes"] for x in rows) >= 2, "grandchild counted in the tree")
    check(summ["peak_rss_bytes"] >= 200 << 20, "summary peak RSS")
    # On a loaded machine the busy loop gets what the scheduler gives it:
    # compare with the CPU the child measured itself, not a fixed figure.
    child_pct = 100.0 * float(open(cpu_file).read()) / wall
    check(summ["average_cpu_percent"] > 0.3 * child_pct,
          "summary CPU %.1f vs child's own %.1f" % (summ["average_cpu_percent"], child_pct))
    check(summ["exit_status"] == 3, "summary exit status")
    ev = trace["traceEvents"]
    check(ev and all(e["ph"] == "C" for e in ev), "counter events")
    check(any(e["name"] == "RSS (MB)" for e in ev), "RSS track")
    check("no GPU monitoring" in r.stderr, "one info line without GPU")
    check(("peak memory" in r.stderr or "peak RSS" in r.stderr) and "average CPU" in r.stderr, "printed summary")


def test_fake_gpu(tmp):
    d = os.path.join(tmp, "gpu")
    r = run(["--interval", "20ms", "-o", d, "--", "sleep", "0.3"],
            env={"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_USED": str(3 << 30)})
    check(r.returncode == 0, "gpu run status %d %s" % (r.returncode, r.stderr))
    rows, trace, summ = outputs(d)
    check(rows and all(abs(x["gpu_memory_reserved_gb"] - 3.0) < 1e-9 for x in rows),
          "gpu_memory_reserved_gb from fake NVML")
    check(rows and rows[-1]["memory"]["cuda:1"]["bytes_limit"] == 80 << 30, "nested memory")
    check("peak_bytes_in_use" in rows[-1]["memory"]["cuda:0"], "peak_bytes_in_use")
    check(any(e["name"].startswith("GPU memory cuda:0") for e in trace["traceEvents"]), "GPU track")
    check("peak GPU memory" in r.stderr, "GPU in summary line")


def test_missing_command(tmp):
    r = run(["-o", os.path.join(tmp, "missing"), "--", "no-such-command-xyz", "a"])
    check(r.returncode == 127, "missing command -> 127, got %d" % r.returncode)
    check("cannot run 'no-such-command-xyz': No such file or directory" in r.stderr,
          "clear message: " + r.stderr)
    plain = os.path.join(tmp, "not-executable")
    open(plain, "w").write("data\n")
    r = run(["-o", os.path.join(tmp, "noexec"), "--", plain])
    check(r.returncode == 126, "not executable -> 126, got %d" % r.returncode)


def test_killed_by_signal(tmp):
    d = os.path.join(tmp, "killed")
    r = run(["--interval", "20ms", "-o", d, "--", sys.executable, "-c",
             "import os, signal, time; time.sleep(0.2); os.kill(os.getpid(), signal.SIGKILL)"])
    check(r.returncode == 128 + 9, "SIGKILL -> 137, got %d" % r.returncode)
    rows, _, summ = outputs(d)
    check(len(rows) >= 3 and summ["exit_status"] == 137, "rows kept when the child dies")


def test_forward_sigterm(tmp):
    d = os.path.join(tmp, "term")
    e = dict(os.environ, TRAINPROF_NVML_LIB="/nonexistent")
    p = subprocess.Popen([BIN, "run", "--interval", "20ms", "-o", d, "--", "sleep", "30"],
                         env=e, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    t0 = time.time()
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=10)
    check(rc == 128 + 15, "SIGTERM forwarded -> 143, got %d" % rc)
    check(time.time() - t0 < 2, "stops promptly")
    rows, _, _ = outputs(d)
    check(len(rows) >= 5, "rows written before the signal")


def test_inherited_signal_dispositions(tmp):
    """SIGCHLD ignored by whoever started trainprof (children then vanish
    without a status) must not make `run` wait forever; SIGHUP ignored
    (nohup) must stay ignored in the command."""
    e = dict(os.environ, TRAINPROF_NVML_LIB="/nonexistent")
    d = os.path.join(tmp, "sigchld")
    ign = lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    p = subprocess.Popen([BIN, "run", "--interval", "20ms", "-o", d, "--", "sh", "-c", "exit 5"],
                         env=e, stderr=subprocess.PIPE, text=True, preexec_fn=ign)
    try:
        rc = p.wait(timeout=10)
        check(rc == 5, "SIGCHLD ignored: exit status kept, got %d" % rc)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        check(False, "SIGCHLD ignored: trainprof run never returned")
    d = os.path.join(tmp, "nohup")
    hup = lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)
    p = subprocess.Popen([BIN, "run", "--interval", "20ms", "-o", d, "--", "sleep", "0.8"],
                         env=e, stderr=subprocess.PIPE, text=True, preexec_fn=hup)
    time.sleep(0.3)
    p.send_signal(signal.SIGHUP)
    rc = p.wait(timeout=10)
    check(rc == 0, "SIGHUP ignored (nohup) stays ignored in the command, got %d" % rc)


def test_usage(tmp):
    check(run(["--interval", "5ms", "--", "true"]).returncode == 2, "interval too short")
    deep = os.path.join(tmp, "/".join(["d" * 200] * 6))  # > 1023 bytes: was cut silently
    check(run(["-o", deep, "--", "true"]).returncode == 2, "too long -o refused")
    check(not os.path.exists(os.path.join(tmp, "d" * 200)), "nothing written for a cut -o")
    check(run(["-o", "", "--", "true"]).returncode == 2, "empty -o refused")
    check(run(["--interval", "abc", "--", "true"]).returncode == 2, "bad interval")
    check(run([]).returncode == 2, "no command")
    check(run(["--bogus", "x"]).returncode == 2, "unknown option")
    check(run(["--help"]).returncode == 0, "help")


FORKED = """
import os, sys, time
a = bytearray(200 * 1024 * 1024)          # touched, then shared copy-on-write by 3 forks
pids = []
for _ in range(3):
    p = os.fork()
    if p == 0:
        time.sleep(1.0)
        os._exit(0)
    pids.append(p)
for p in pids:
    os.waitpid(p, 0)
"""


def test_forked_workers_counted_once(tmp):
    """Forked workers (DataLoader's) share the parent's pages: the summed RSS
    counts 200 MB four times, the peak memory reported (PSS) about once."""
    d = os.path.join(tmp, "forked")
    p = run(["--interval", "50ms", "-o", d, "--", sys.executable, "-c", FORKED])
    check(p.returncode == 0, f"forked: exit {p.returncode}: {p.stderr[-300:]}")
    _, _, summ = outputs(d)
    mb = 1024 * 1024
    if summ.get("peak_memory_measure") != "pss":
        print("  (no smaps_rollup here: PSS not checked)")
        return
    check(summ["peak_rss_bytes"] > 600 * mb, f"forked: RSS summed {summ['peak_rss_bytes'] / mb:.0f} MB")
    check(200 * mb <= summ["peak_pss_bytes"] < 400 * mb, f"forked: PSS {summ['peak_pss_bytes'] / mb:.0f} MB")
    check("PSS: shared pages counted once" in p.stderr, f"forked: the summary line says which: {p.stderr[-300:]}")


with tempfile.TemporaryDirectory() as tmp:
    test_normal(tmp)
    test_forked_workers_counted_once(tmp)
    test_fake_gpu(tmp)
    test_missing_command(tmp)
    test_killed_by_signal(tmp)
    test_forward_sigterm(tmp)
    test_inherited_signal_dispositions(tmp)
    test_usage(tmp)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
