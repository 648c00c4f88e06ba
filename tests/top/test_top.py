"""`trainprof top --json/--once` on real profiled processes (issue 30).

live_loop (argv[1]) is a loop with a known step time (data_wait 10 %,
forward 50 %, backward 40 %). Checked with Python's json module while the
processes run: the step advancing, the median near the loop's, `stalled`
during a stall, `ended` after (closed, or the process gone), the straggler
of a job of 4 ranks with one slow rank named and on top; a run with
profiling.live false (nothing written, shown from its summaries); bad
paths (exit 2). No timing assertions beyond the state logic.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TP = os.environ["TRAINPROF_BIN"]
LOOP = sys.argv[1]
FAILURES = []
RUN_KEYS = {"dir", "rank", "pid", "state", "ended_reason", "step", "last_step_s", "median_step_s",
            "samples_per_s", "since_step_s", "data_share", "top", "in_zone", "in_zone_s", "rss_bytes",
            "gpu_bytes", "host"}
LAUNCHER_VARS = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK",
                 "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMIX_NAMESPACE",
                 "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
                 "SLURM_JOB_ID", "SLURM_STEP_ID"]
QUIET = ["--profiling.trace", "false", "--profiling.log_every", "0", "--profiling.html_report", "false",
         "--profiling.metrics", "none"]


def check(cond, msg):
    if not cond:
        FAILURES.append(msg)
        print("FAIL:", msg, flush=True)
    return cond


def base_env():
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS and not k.startswith("TRAINPROF_")}
    env["TRAINPROF_BIN"] = TP
    return env


def top(*args, expect=0):
    p = subprocess.run([TP, "top", *args], capture_output=True, text=True, timeout=120)
    check(p.returncode == expect, f"top {args}: exit {p.returncode} (expected {expect}): {p.stderr[-800:]}")
    return p


def top_json(path):
    p = top("--json", path)
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        check(False, f"top --json {path}: not JSON ({e}): {p.stdout[:500]}")
        return {"runs": [], "straggler": None}
    check(set(doc) == {"runs", "straggler"}, f"top-level keys {sorted(doc)}")
    for r in doc["runs"]:
        check(set(r) == RUN_KEYS, f"run keys {sorted(r)}")
        check(r["state"] in ("running", "stalled", "ended", "unknown"), f"state {r['state']}")
        for z in r["top"]:
            check(set(z) == {"name", "share"} and 0 <= z["share"] <= 1.0001, f"zone {z}")
    return doc


def wait_for(what, pred, timeout=90, every=0.2):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = pred()
        if last:
            return last
        time.sleep(every)
    check(False, f"timed out waiting for {what}")
    return None


def start(log_dir, *args, env=None):
    p = subprocess.Popen([LOOP, "--profiling.log_dir", log_dir, *QUIET, *args], stdout=subprocess.PIPE,
                         text=True, env=env or base_env())
    line = p.stdout.readline().strip()
    check(line.startswith("dir "), f"live_loop said {line!r}")
    return p, line[4:]


def only_run(path):
    doc = top_json(path)
    return doc["runs"][0] if len(doc["runs"]) == 1 else None


def finish(p):
    p.stdout.read()
    rc = p.wait(timeout=120)
    check(rc == 0, f"live_loop exited {rc}")


def one_loop_with_a_stall(tmp):
    log_dir = os.path.join(tmp, "one")
    p, run = start(log_dir, "--steps", "420", "--step_ms", "20", "--stall_at", "120", "--stall_s", "8")
    r = wait_for("running with 20 steps", lambda: (lambda r: r if r and r["state"] == "running"
                                                  and r["step"] >= 20 else None)(only_run(run)))
    if r:
        s1 = r["step"]
        check(r["pid"] == p.pid and r["rank"] is None, f"pid/rank {r['pid']} {r['rank']}")
        check(0.018 <= r["median_step_s"] <= 0.06, f"median {r['median_step_s']} for a 20 ms loop")
        names = {z["name"] for z in r["top"]}
        check({"forward", "backward", "data_wait"} <= names, f"top zones {names}")
        check(r["top"][0]["name"] == "forward", f"largest zone {r['top'][0]}")
        check(0.03 <= r["data_share"] <= 0.3, f"data_share {r['data_share']} (data_wait is 10 %)")
        check(r["samples_per_s"] and r["samples_per_s"] > 0, f"samples/s {r['samples_per_s']}")
        check(r["rss_bytes"] and r["rss_bytes"] > 0, f"rss {r['rss_bytes']}")
        wait_for("the step advancing", lambda: (only_run(run) or {"step": 0})["step"] > s1)
    r = wait_for("stalled during the stall", lambda: (lambda r: r if r and r["state"] == "stalled"
                                                      else None)(only_run(run)))
    if r:
        check(r["step"] >= 100 and r["step"] <= 120, f"stalled at step {r['step']}")
        check(r["since_step_s"] >= 2, f"stalled after {r['since_step_s']} s")
        check(r["in_zone"] == "backward > all_reduce" and r["in_zone_s"] >= 1,
              f"where it waits: {r['in_zone']} for {r['in_zone_s']} s")
        frame = top("--once", run).stdout
        check("stalled" in frame and "in all_reduce" in frame and "now in: backward > all_reduce" in frame,
              f"--once during the stall:\n{frame}")
    wait_for("running after the stall", lambda: (lambda r: r if r and r["state"] == "running"
                                                 and r["step"] > 120 else None)(only_run(run)))
    finish(p)
    r = only_run(run)
    if check(r is not None, "the run after it ended"):
        check(r["state"] == "ended" and r["ended_reason"] == "closed", f"after the end: {r}")
        check(r["step"] == 420, f"final step {r['step']}")
    parent = top_json(log_dir)  # the parent: nothing going, the newest run
    check(len(parent["runs"]) == 1 and parent["runs"][0]["dir"].endswith(os.path.basename(run)),
          f"parent of the run: {parent}")
    frame = top("--once", log_dir).stdout
    check("ended" in frame and "forward" in frame, f"--once of the ended run:\n{frame}")


def process_gone(tmp):
    log_dir = os.path.join(tmp, "gone")
    p, run = start(log_dir, "--steps", "0", "--step_ms", "10")
    wait_for("running", lambda: (lambda r: r if r and r["state"] == "running" and r["step"] > 5
                                 else None)(only_run(run)))
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    p.stdout.close()
    r = only_run(run)
    if check(r is not None, "the killed run"):
        check(r["state"] == "ended" and r["ended_reason"] == "process gone", f"killed run: {r}")
    frame = top("--once", run).stdout
    check("ended:gone" in frame and "process gone" in frame, f"--once of the killed run:\n{frame}")


def live_off(tmp):
    log_dir = os.path.join(tmp, "off")
    p, run = start(log_dir, "--steps", "30", "--step_ms", "5", "--profiling.live", "false")
    finish(p)
    check(not os.path.exists(os.path.join(run, "live.json")), "live.json with profiling.live false")
    check(not [f for f in os.listdir(run) if "live" in f], f"live files: {os.listdir(run)}")
    r = only_run(run)
    if check(r is not None, "the run without live state"):
        check(r["state"] == "ended" and "no live state" in r["ended_reason"], f"old-style run: {r}")
        check(r["step"] == 30 and r["median_step_s"] > 0, f"from the summaries: {r}")
        check("forward" in {z["name"] for z in r["top"]}, f"zones from operations.json: {r['top']}")


def job_of_four(tmp):
    log_dir = os.path.join(tmp, "job")
    procs, dirs = [], []
    for rank in range(4):
        env = base_env()
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="4")
        slow = rank == 3
        p, run = start(log_dir, "--profiling.job_id", "topjob", "--steps", "250" if slow else "1000",
                       "--step_ms", "40" if slow else "10", env=env)
        procs.append(p)
        dirs.append(run)
    job_dir = os.path.dirname(dirs[0])
    check(all(os.path.dirname(d) == job_dir for d in dirs), f"one job directory: {dirs}")
    check(os.path.exists(os.path.join(job_dir, "job.json")), "job.json")

    def named():
        doc = top_json(job_dir)
        going = [r for r in doc["runs"] if r["state"] == "running"]
        return doc if len(going) == 4 and doc["straggler"] == 3 and min(r["step"] for r in going) >= 20 else None
    doc = wait_for("4 running ranks with rank 3 the straggler", named)
    if doc:
        check(doc["runs"][0]["rank"] == 3, f"the straggler on top: {[r['rank'] for r in doc['runs']]}")
        check(sorted(r["rank"] for r in doc["runs"]) == [0, 1, 2, 3], "ranks 0-3")
        frame = top("--once", job_dir).stdout
        check("straggler: rank 3" in frame, f"--once of the job:\n{frame}")
        parent = top_json(log_dir)
        check(len(parent["runs"]) == 4 and parent["straggler"] == 3, f"the job from its parent: {parent}")
    for p in procs:
        finish(p)
    doc = top_json(job_dir)
    check(all(r["state"] == "ended" and r["ended_reason"] == "closed" for r in doc["runs"]),
          f"after the job: {[(r['rank'], r['state'], r['ended_reason']) for r in doc['runs']]}")
    check(doc["straggler"] == 3, f"straggler after the end (slowest median): {doc['straggler']}")


PY_LOOP = """
import sys, time, trainprof
prof = trainprof.Profiler(log_dir=sys.argv[1], trace=False, log_every=0, metrics="none", html_report=False)
print("dir", prof.run_dir if hasattr(prof, "run_dir") else "-", flush=True)
def loader(n):  # 2 ms to produce each batch
    for i in range(n):
        time.sleep(0.002)
        yield i
for batch in trainprof.profile_data_loader(loader(int(sys.argv[2])), profiler=prof):
    with prof.zone("forward"):
        time.sleep(0.008)
    prof.step(16)
prof.close()
"""


def python_package(tmp):
    """The Python package writes live.json with no code change (data loading
    through profile_data_loader counts as data loading)."""
    build = os.environ.get("TP_BUILD_DIR", "")
    env = base_env()
    env["PYTHONPATH"] = os.path.join(build, "python")
    probe = subprocess.run([sys.executable, "-c", "import trainprof"], env=env, capture_output=True)
    if os.environ.get("TP_SANITIZE") or probe.returncode != 0:
        print("   (the Python package is not built here or this is a sanitizer build: skipped)")
        return
    log_dir = os.path.join(tmp, "py")
    p = subprocess.Popen([sys.executable, "-c", PY_LOOP, log_dir, "600"], stdout=subprocess.PIPE,
                         text=True, env=env)
    p.stdout.readline()

    def seen():
        doc = top_json(log_dir) if os.path.isdir(log_dir) and os.listdir(log_dir) else {"runs": []}
        runs = [r for r in doc["runs"] if r["state"] == "running" and r["step"] >= 20]
        return runs[0] if runs else None
    r = wait_for("the Python loop running", seen)
    if r:
        check(r["pid"] == p.pid, f"pid {r['pid']} (python {p.pid})")
        check("forward" in {z["name"] for z in r["top"]}, f"zones {r['top']}")
        check(r["data_share"] > 0.05, f"data_share {r['data_share']} (profile_data_loader)")
        check(0.009 <= r["median_step_s"] <= 0.05, f"median {r['median_step_s']}")
    p.stdout.read()
    check(p.wait(timeout=120) == 0, "the Python loop's exit status")


def thousand_ranks(tmp):
    """1,024 ranks fit one screen: the worst first, then one line for the rest."""
    job = os.path.join(tmp, "big", "x_2026-01-01_job-big")
    now_wall = time.time_ns()
    for r in range(1024):
        d = os.path.join(job, f"rank{r}")
        os.makedirs(d)
        med = 40.0 if r == 700 else 20.0  # long steps: not stalled however slow this machine is
        with open(os.path.join(d, "live.json"), "w") as f:
            json.dump({"format": "trainprof-live", "version": 1, "pid": 10 + r, "host": "elsewhere",
                       "rank": r, "job_id": "big", "closed": False, "heartbeat_wall_ns": now_wall,
                       "start_wall_ns": now_wall - 10**11, "steps": 500 if r != 700 else 250,
                       "last_step_end_wall_ns": now_wall, "median_step_s": med, "last_step_s": med,
                       "step_times_s": [med] * 32, "top": [{"name": "forward", "share": 0.5}]}, f)
    doc = top_json(job)
    check(len(doc["runs"]) == 1024 and doc["straggler"] == 700 and doc["runs"][0]["rank"] == 700,
          f"1,024 ranks: {len(doc['runs'])} runs, straggler {doc['straggler']}")
    check(all(r["state"] == "running" for r in doc["runs"]),
          f"another host's fresh ranks run: {[(r['rank'], r['state']) for r in doc['runs'] if r['state'] != 'running']}")
    frame = top("--once", "--rows", "40", job).stdout
    lines = frame.splitlines()
    check(len(lines) <= 40, f"{len(lines)} lines for --rows 40")
    check(any(l.startswith(">  700 running") and "straggler" in l for l in lines), f"the straggler row:\n{frame}")
    more = [l for l in lines if "more: " in l]
    check(len(more) == 1 and "running" in more[0], f"the summary line: {more}")


def bad_input(tmp):
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    p = top("--json", empty, expect=2)
    check("no runs in" in p.stderr, f"empty directory: {p.stderr}")
    p = top("--once", os.path.join(tmp, "missing"), expect=2)
    check("missing" in p.stderr, f"missing path: {p.stderr}")
    p = top("--interval", "0", empty, expect=2)
    check("--interval" in p.stderr, p.stderr)
    p = top("--bogus", expect=2)
    check("unknown option --bogus" in p.stderr, p.stderr)
    p = top("--help")
    check("--json" in p.stdout and "--once" in p.stdout, p.stdout)
    bad = os.path.join(tmp, "bad_run")
    os.makedirs(bad)
    with open(os.path.join(bad, "live.json"), "w") as f:
        f.write('{"format": "trainprof-live", "steps": 3,}')
    r = only_run(bad)
    if check(r is not None, "the run with a damaged live.json"):
        check(r["state"] == "unknown" and "byte offset" in r["ended_reason"], f"damaged: {r}")
    esc = os.path.join(tmp, "esc_run")  # a zone named with an escape sequence
    os.makedirs(esc)
    with open(os.path.join(esc, "live.json"), "w") as f:
        json.dump({"format": "trainprof-live", "version": 1, "pid": 1, "host": "elsewhere", "rank": -1,
                   "closed": True, "steps": 3, "median_step_s": 0.01, "step_times_s": [0.01] * 3,
                   "top": [{"name": "\x1b[2Jevil\x07", "share": 0.5}]}, f)
    frame = top("--once", esc).stdout
    check("\x1b" not in frame and "\x07" not in frame and "?[2Jevil?" in frame,
          f"control characters from a state file reach the terminal: {frame!r}")
    check(only_run(esc)["top"][0]["name"] == "\x1b[2Jevil\x07", "the name itself in --json")


def main():
    tmp = tempfile.mkdtemp(prefix="tp_top_")
    try:
        for test in (bad_input, thousand_ranks, live_off, process_gone, python_package,
                     one_loop_with_a_stall, job_of_four):
            print("--", test.__name__, flush=True)
            test(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
