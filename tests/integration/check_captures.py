#!/usr/bin/env python3
"""The flight recorder with real processes (issue 34, docs/CAPTURES.md):
flight_loop (a C loop on the public API) with one slow step, SIGUSR1 to a
running loop and to `trainprof run` (which forwards it), `trainprof capture
RUN_DIR`, a hang, captures_max and capture off. Every file is read with
Python's json module; captures.json is parsed at every poll while the job
writes it (valid at every moment).

usage: check_captures.py FLIGHT_LOOP TRAINPROF"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

LOOP, CLI = sys.argv[1], sys.argv[2]
FAILS = []
BASE = ["--profiling.metrics", "none", "--profiling.html_report", "false",
        "--profiling.trace", "false"]


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg, file=sys.stderr)
    return cond


def index(run_dir):
    with open(os.path.join(run_dir, "captures.json"), encoding="utf-8") as f:
        return json.load(f)


def check_capture_files(run_dir, entry, what):
    """Every file of an entry exists and parses; the trace holds the steps."""
    files = entry["files"]
    check(any(f.endswith(".pt.trace.json") for f in files), f"{what}: no trace in {files}")
    for rel in files:
        path = os.path.join(run_dir, rel)
        if not check(os.path.isfile(path), f"{what}: missing {path}"):
            continue
        if rel.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            if rel.endswith(".pt.trace.json"):
                steps = {e["name"] for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")}
                check(f"ProfilerStep#{entry['last_step']}" in steps or entry["reason"] != "slow_step",
                      f"{what}: step {entry['last_step']} not in the trace: {sorted(steps)}")
                check(doc["trainprof"]["first_step"] == entry["first_step"], f"{what}: {doc['trainprof']}")
            if rel.endswith(".steps.json"):
                rows = [r["step"] for r in doc]
                check(rows == list(range(entry["first_step"], entry["first_step"] + len(rows))),
                      f"{what}: step rows {rows}")
    return files


class Loop:
    def __init__(self, log_dir, *args):
        self.p = subprocess.Popen([LOOP, "--profiling.log_dir", log_dir, *BASE, *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        check(line.startswith("run_dir "), f"first line {line!r}")
        self.run_dir = line.split(" ", 1)[1].strip()
        self.last = -1

    def wait_step(self, k):
        while self.last < k:
            line = self.p.stdout.readline()
            if not line:
                return False
            if line.startswith("step "):
                self.last = int(line.split()[1])
        return True

    def end(self):
        self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=60)
        check(self.p.returncode == 0, f"loop exited {self.p.returncode}: {err[-2000:]}")
        return err


def wait_entries(run_dir, n, timeout=15):
    """Polls captures.json (parsed every time) until it lists n entries."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        doc = index(run_dir)  # raises (fails the test) if ever not valid JSON
        if len(doc["captures"]) >= n:
            return doc
        time.sleep(0.02)
    return index(run_dir)


def slow_step(tmp):
    for attempt in range(3):
        log_dir = os.path.join(tmp, f"try{attempt}")
        p = subprocess.run([LOOP, "--profiling.log_dir", log_dir, *BASE, "--steps", "40", "--step_ms", "10",
                            "--slow", "30", "--profiling.capture_slow_step", "5"],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"slow: exit {p.returncode} {p.stderr[-1500:]}")
        run_dir = glob.glob(os.path.join(log_dir, "*"))[0]
        doc = index(run_dir)
        # A step the load made slow (rightly captured) arms a capture window,
        # and a step inside one is not checked: when that window covered
        # step 30, the run says nothing about it: made again.
        masked = [c for c in doc["captures"] if c["reason"] == "slow_step" and 20 <= c["step"] < 30]
        if not masked or any(c["step"] == 30 for c in doc["captures"]):
            break
        print(f"note: run {attempt + 1}: step 30 inside the window of {[c['step'] for c in masked]}: again")
    check(doc["pid"] > 0 and doc["capture_steps"] == 10, f"slow: header {doc}")
    slow = [c for c in doc["captures"] if c["reason"] == "slow_step"]
    hit = [c for c in slow if c["step"] == 30]
    if not check(len(hit) == 1, f"slow: no slow_step capture of step 30: {doc['captures']}"):
        return
    c = hit[0]
    check(c["first_step"] == 21 and c["last_step"] == 30, f"slow: range {c}")
    files = check_capture_files(run_dir, c, "slow")
    steps = json.load(open(os.path.join(run_dir, [f for f in files if f.endswith(".steps.json")][0])))
    longest = max(steps, key=lambda r: r["total_batch_time"])
    check(longest["step"] == 30 and "slow_part_time" in longest, f"slow: longest row {longest}")
    trace = json.load(open(os.path.join(run_dir, [f for f in files if f.endswith(".pt.trace.json")][0])))
    names = {e["name"] for e in trace["traceEvents"]}
    check({"slow_part", "forward", "backward", "loss"} <= names, f"slow: trace names {names}")
    summary = json.load(open(os.path.join(run_dir, "training_summary.json")))
    check(summary["captures"] == doc["captures"], f"slow: summary {summary.get('captures')}")
    r = subprocess.run([CLI, "report", os.path.join(run_dir, c["files"][0])], capture_output=True, text=True)
    check(r.returncode == 0 and "slow_part" in r.stdout, f"slow: report {r.returncode} {r.stderr}")


def sigusr1(tmp):
    loop = Loop(tmp, "--steps", "0", "--step_ms", "3", "--profiling.capture_slow_step", "0")
    loop.wait_step(20)
    loop.p.send_signal(signal.SIGUSR1)
    doc = wait_entries(loop.run_dir, 1)
    check(len(doc["captures"]) == 1 and doc["captures"][0]["reason"] == "signal", f"sigusr1: {doc}")
    at = loop.last
    check(loop.wait_step(at + 20), "sigusr1: the loop stopped after the signal")
    loop.end()
    if doc["captures"]:
        check_capture_files(loop.run_dir, doc["captures"][0], "sigusr1")


def cli_capture(tmp):
    loop = Loop(tmp, "--steps", "0", "--step_ms", "3", "--profiling.capture_slow_step", "0")
    loop.wait_step(10)
    r = subprocess.run([CLI, "capture", loop.run_dir], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"cli: exit {r.returncode}: {r.stderr}")
    line = r.stdout.strip().split(": ", 1)
    entry = json.loads(line[1]) if len(line) == 2 else {}
    check(entry.get("reason") == "signal", f"cli: printed {r.stdout!r}")
    check(loop.wait_step(loop.last + 10), "cli: the loop stopped")
    # the job directory spelling: the parent holding the run directory
    r2 = subprocess.run([CLI, "capture", "--timeout", "20", os.path.dirname(loop.run_dir)],
                        capture_output=True, text=True, timeout=60)
    check(r2.returncode == 0 and '"index":2' in r2.stdout, f"cli dir: {r2.returncode} {r2.stdout} {r2.stderr}")
    loop.end()
    doc = index(loop.run_dir)
    check([c["index"] for c in doc["captures"]] == [1, 2], f"cli: entries {doc['captures']}")
    ended = subprocess.run([CLI, "capture", loop.run_dir], capture_output=True, text=True)
    check(ended.returncode == 1 and "has ended" in ended.stderr, f"cli ended: {ended.returncode} {ended.stderr}")
    bad = subprocess.run([CLI, "capture", tmp + "/nope"], capture_output=True, text=True)
    check(bad.returncode == 2 and "nope" in bad.stderr, f"cli bad: {bad.returncode} {bad.stderr}")


def hang(tmp):
    p = subprocess.run([LOOP, "--profiling.log_dir", tmp, *BASE, "--steps", "12", "--step_ms", "2",
                        "--stall", "8", "--stall_s", "3", "--profiling.hang_timeout", "1s",
                        "--profiling.capture_slow_step", "0"],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"hang: exit {p.returncode} {p.stderr[-1500:]}")
    run_dir = glob.glob(os.path.join(tmp, "*"))[0]
    doc = index(run_dir)
    hangs = [c for c in doc["captures"] if c["reason"] == "hang"]
    if not check(len(hangs) == 1, f"hang: {doc['captures']}"):
        return
    c = hangs[0]
    check(c["step"] == 8, f"hang: step {c}")
    files = check_capture_files(run_dir, c, "hang")
    dump = [f for f in files if f.endswith(".hang.txt")]
    if check(len(dump) == 1, f"hang: no dump in {files}"):
        text = open(os.path.join(run_dir, dump[0]), encoding="utf-8").read()
        check("stuck_here" in text and "step 8 in progress" in text, f"hang: dump {text[:800]}")
        check("flight_loop" in text and "trainprof-coll" in text, f"hang: threads {text[:1500]}")
    trace = json.load(open(os.path.join(run_dir, [f for f in files if f.endswith(".pt.trace.json")][0])))
    open_zones = [e for e in trace["traceEvents"] if e.get("args", {}).get("unterminated")]
    check({"stuck_here", "ProfilerStep#8"} <= {e["name"] for e in open_zones}, f"hang: open {open_zones}")


def captures_max(tmp):
    loop = Loop(tmp, "--steps", "0", "--step_ms", "3", "--profiling.captures_max", "2",
                "--profiling.capture_slow_step", "0")
    loop.wait_step(5)
    for k in range(4):
        loop.p.send_signal(signal.SIGUSR1)
        wait_entries(loop.run_dir, min(k + 1, 2), timeout=5)
        loop.wait_step(loop.last + 3)
    err = loop.end()
    doc = index(loop.run_dir)
    check(len(doc["captures"]) == 2, f"max: {len(doc['captures'])} captures")
    check("captures_max (2) reached" in err, f"max: stderr {err[-800:]}")
    summary = json.load(open(os.path.join(loop.run_dir, "training_summary.json")))
    check(len(summary["captures"]) == 2, f"max: summary {summary['captures']}")


def run_forwards(tmp):
    """SIGUSR1 to `trainprof run` reaches the program it runs."""
    p = subprocess.Popen([CLI, "run", "-o", os.path.join(tmp, "mon"), "--", LOOP, "--profiling.log_dir", tmp,
                          *BASE, "--steps", "0", "--step_ms", "3", "--profiling.capture_slow_step", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    check(line.startswith("run_dir "), f"run: first line {line!r}")
    run_dir = line.split(" ", 1)[1].strip()
    while not p.stdout.readline().startswith("step 10"):
        pass
    p.send_signal(signal.SIGUSR1)
    doc = wait_entries(run_dir, 1)
    check([c["reason"] for c in doc["captures"]] == ["signal"], f"run: {doc['captures']}")
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=60)
    check(p.returncode == 0, f"run: trainprof run exited {p.returncode}")


def capture_off(tmp):
    p = subprocess.run([LOOP, "--profiling.log_dir", tmp, *BASE, "--steps", "5", "--profiling.capture", "false"],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"off: {p.stderr}")
    run_dir = glob.glob(os.path.join(tmp, "*"))[0]
    check(not os.path.exists(os.path.join(run_dir, "captures.json")), "off: captures.json written")
    summary = json.load(open(os.path.join(run_dir, "training_summary.json")))
    check("captures" not in summary, "off: captures in the summary")


def main():
    tmp = tempfile.mkdtemp(prefix="tp_captures_")
    try:
        for case in (slow_step, sigusr1, cli_capture, hang, captures_max, run_forwards, capture_off):
            print("case", case.__name__, flush=True)
            d = os.path.join(tmp, case.__name__)
            os.makedirs(d)
            case(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
