"""`-j N` gives the output of `-j 1`, byte for byte: report, steps, analyze,
diff, slice, fix and HTML on every trace in $TP_FIXTURES, on a synthetic
trace written to trip a boundary finder ("},{" and escaped quotes inside
names, arrays of objects inside args, non-object elements), on cut-short
and corrupted copies of it (same exit status and error message with its
byte offset), and `report` over several files (same table, warnings in
file order, the first bad file reported).
"""
import glob
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile

BIN = os.environ["TRAINPROF_BIN"]
FIXTURES = os.environ.get("TP_FIXTURES", "")
failures = []


def run(args):
    p = subprocess.run([BIN, *args], capture_output=True)
    return p.returncode, p.stdout, p.stderr


def same(args, label, jobs=(2, 4)):
    """Runs args with -j 1 and each of jobs; every output must match."""
    ref = run([args[0], "-j", "1", *args[1:]])
    if b"unknown" in ref[2] or b"usage" in ref[2]:
        failures.append(f"{label}: {ref[2][:200]!r}")
    for j in jobs:
        got = run([args[0], "-j", str(j), *args[1:]])
        if got != ref:
            failures.append(f"{label}: -j {j} differs from -j 1")
            print(f"FAIL {label} -j {j}: rc {got[0]} vs {ref[0]}\n  {got[2][:300]!r}\n  {ref[2][:300]!r}")
    return ref


NAMES = ["aten::mm", "},{", '"},{"', "x\\", "[{\"name\":", "ProfilerStep#3", "enumerate(DataLoader)#_next_"]


def synthetic(path, n_events, seed):
    rnd = random.Random(seed)
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}]
    t = 0.0
    for step in range(n_events // 40):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}",
                       "pid": 1, "tid": 1, "ts": t, "dur": 400.0})
        for k in range(39):
            r = rnd.random()
            ev = {"ph": "X", "cat": rnd.choice(["cpu_op", "kernel", "cuda_runtime"]),
                  "name": rnd.choice(NAMES) + str(k % 7), "pid": 1 if r < 0.7 else 0,
                  "tid": 1 if r < 0.5 else "stream 7", "ts": t + k * 10.0, "dur": 9.5}
            if k % 9 == 0:
                ev["args"] = {"list": [{"a": "},{"}, {"b": [1, {"c": "]"}]}], "device": 0}
            events.append(ev)
        t += 410.0
    text = json.dumps(events, indent=1 if seed % 2 else None)
    # non-object elements the reader counts and skips
    text = text.replace('{"ph": "M"', '7, "s", [{"x": 1}, {"y": 2}], {"ph": "M"', 1)
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": ' + text + ', "displayTimeUnit": "ms", '
                '"baseTimeNanoseconds": 1700000000000000000}')
    return path


def main():
    tmp = tempfile.mkdtemp(prefix="tp_jobs_")
    traces = sorted(glob.glob(os.path.join(FIXTURES, "**", "*.json*"), recursive=True))
    traces = [t for t in traces if "key_averages" not in t]
    slow = bool(os.environ.get("TP_SANITIZE"))  # sanitizer builds: the smaller traces only
    if slow:
        traces = [t for t in traces if os.path.getsize(t) < 200_000]
    syn = [synthetic(os.path.join(tmp, f"syn{s}.json"), 2500 if slow else 40000, s) for s in (1, 2)]
    with open(syn[0], "rb") as f, gzip.open(syn[0] + ".gz", "wb") as g:
        g.write(f.read())
    traces += syn + [syn[0] + ".gz"]
    for t in traces:
        name = os.path.basename(t)
        for cmd in (["report", "--json"], ["report"], ["steps", "--json"], ["analyze", "--json"]):
            same([*cmd, t], f"{cmd[0]} {name}")
    same(["diff", "--json", syn[0], syn[1]], "diff synthetic")
    same(["slice", syn[1], "--steps", "3-9", "-o", "-"], "slice synthetic")
    html = {}
    for j in ("1", "3"):
        out = os.path.join(tmp, f"r{j}.html")
        rc = subprocess.run([BIN, "report", "-j", j, "--html", out, syn[0]]).returncode
        html[j] = (rc, open(out, "rb").read() if rc == 0 else b"")
    if html["1"] != html["3"] or html["1"][0] != 0:
        failures.append("report --html -j 3 differs from -j 1")
        print("FAIL", failures[-1], html["1"][0], html["3"][0])

    # cut short and corrupted: the same exit status, message and byte offset
    data = open(syn[0], "rb").read()
    rnd = random.Random(5)
    for i in range(8):
        at = rnd.randrange(100, len(data) - 100)
        bad = data[:at] if i % 2 == 0 else data[:at] + rnd.choice([b"}", b"\"", b",,", b"x", b"\xff"]) + data[at + 1:]
        path = os.path.join(tmp, f"bad{i}.json")
        with open(path, "wb") as f:
            f.write(bad)
        for cmd in (["report"], ["steps"], ["analyze"], ["fix", "--json"]):
            rc, _, err = same([*cmd, path], f"{cmd[0]} corrupted #{i} at {at}")
            if i % 2 == 1 and cmd[0] == "report" and rc == 0:
                print(f"note: corruption #{i} at {at} left a valid trace")

    # several files at once
    cut = os.path.join(tmp, "cut.json")
    with open(cut, "wb") as f:
        f.write(data[: len(data) // 2])
    files = traces[:6] + [cut] + syn
    for args in (["report", *files], ["report", "--json", "--steps", "2-5", *files],
                 ["report", "--cat", "kernel,cpu_op", *files]):
        same(args, f"report of {len(files)} files", jobs=(2, 3, 8))
    garbage = os.path.join(tmp, "garbage.json")
    with open(garbage, "wb") as f:
        f.write(b'[{"ph":"X"} oops')
    rc, _, err = same(["report", syn[0], cut, garbage, os.path.join(tmp, "missing.json"), syn[1]],
                      "report with a bad file", jobs=(2, 5))
    if rc != 2 or b"garbage.json: byte 12" not in err or err.count(b"truncated") != 1:
        failures.append(f"report with a bad file: rc {rc}, stderr {err!r}")
        print("FAIL", failures[-1])

    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print(f"ok: {len(traces)} traces, -j 1 and -j N identical")


main()
