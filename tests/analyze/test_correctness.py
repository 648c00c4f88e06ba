"""Analyzer correctness on real traces (issue 23), against independent parsers.

Runs the real `trainprof` binary (env TRAINPROF_BIN) on the fixtures in
argv[1] (tests/fixtures), on torch 2.13 traces written here, and on
$TP_FIXTURES when present. Python's json module and a nesting written here
from torch's own rules (torch/autograd/profiler_util.py) are the reference.
"""
import collections
import decimal
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

BIN = os.environ["TRAINPROF_BIN"]
FIX = sys.argv[1]
SHARED = os.environ.get("TP_FIXTURES", "")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, expect=0, stdin=None):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, stdin=stdin)
    check(p.returncode == expect, f"{args}: exit {p.returncode} != {expect}\n{p.stderr}")
    return p


def load(path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with (gzip.open if gz else open)(path, "rt") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


# ---- reference: torch's key_averages() over the trace's host spans ---------------

NOT_HOST = {"Kernel", "Memcpy", "Memset", "kernel", "gpu_memcpy", "gpu_memset",
            "gpu_user_annotation", "Trace"}


def ns(x):
    return int(decimal.Decimal(x) * 1000)


def op_name(n):
    return "ProfilerStep*" if re.fullmatch(r"ProfilerStep#\d+", n) else n


def host_table(evs):
    """{name: [calls, total_ns, self_ns]}: spans nested per thread as torch's
    _populate_cpu_children does (sorted by start, longer first; a child starts
    before its parent's end and ends at or before it), then _remove_dup_nodes
    (a span whose parent has its name and no other child is merged into it)."""
    threads = collections.defaultdict(list)
    for e in evs:
        if e.get("ph") != "X" or e.get("cat") in NOT_HOST or "ts" not in e:
            continue
        span = {"ts": ns(e["ts"]), "dur": max(ns(e.get("dur", 0)), 0),
                "name": op_name(e.get("name", "")), "parent": None, "kids": []}
        threads[(e.get("pid"), e.get("tid"))].append(span)
    ops = {}
    for spans in threads.values():
        spans.sort(key=lambda s: (s["ts"], -s["dur"]))
        stack = []
        for s in spans:
            while stack and (s["ts"] + s["dur"] > stack[-1]["ts"] + stack[-1]["dur"]
                             or s["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]):
                stack.pop()
            if stack:
                s["parent"] = stack[-1]
                stack[-1]["kids"].append(s)
            stack.append(s)
        alive = spans
        while True:
            gone = set()
            for s in alive:
                p = s["parent"]
                if p is not None and p["name"] == s["name"] and len(p["kids"]) == 1:
                    p["kids"] = s["kids"]
                    for k in s["kids"]:
                        k["parent"] = p
                    gone.add(id(s))
            if not gone:
                break
            alive = [s for s in alive if id(s) not in gone]
        for s in alive:
            o = ops.setdefault(s["name"], [0, 0, 0])
            o[0] += 1
            o[1] += s["dur"]
            o[2] += s["dur"] - sum(k["dur"] for k in s["kids"])
    return ops


def host_ops(report_json):
    return {o["name"]: o for t in report_json["tables"] if t["table"] == "host" for o in t["ops"]}


def compare_host(path, rep, what):
    want = host_table(load(path))
    got = host_ops(rep)
    check(set(got) == set(want), f"{what}: op names differ: {set(got) ^ set(want)}")
    bad = [n for n, (c, tot, sf) in want.items() if n in got and
           (got[n]["calls"] != c or abs(got[n]["total_us"] * 1000 - tot) > 1 or
            abs(got[n]["self_us"] * 1000 - sf) > 1)]
    check(not bad, f"{what}: {len(bad)} ops differ, e.g. " +
          "; ".join(f"{n}: {want[n]} vs {got[n]['calls']}, {got[n]['total_us']}, {got[n]['self_us']}"
                    for n in bad[:3]))


# ---- item 1: self time whatever the order events were written in -------------------

def test_self_time_parents_after_children():
    path = os.path.join(FIX, "kineto_resnet50_2021_host.json.gz")
    rep = json.loads(run("report", "--json", "--top", "0", path).stdout)
    compare_host(path, rep, "resnet50 2021")
    check(rep["late_events"] == 0, f"late_events {rep['late_events']} after the second pass")
    step = host_ops(rep)["ProfilerStep*"]
    check(abs(step["self_us"] - 248729.0) < 1, f"ProfilerStep* self {step['self_us']} us, want 248729")
    an = json.loads(run("analyze", "--json", "--top", "1", path).stdout)
    top = an["top_host_ops"][0]
    check(top["name"] == "ProfilerStep*" and abs(top["self_us"] - 248729.0) < 1,
          f"analyze top host op {top}")
    # stdin cannot be read twice: the approximation stays, and says so
    with open(path, "rb") as f:
        p = run("report", "--json", "-", stdin=f)
    check(json.loads(p.stdout)["late_events"] > 0, "stdin: late_events not counted")
    with open(path, "rb") as f:
        p = run("analyze", "-", stdin=f)
    check("out of order" in p.stdout, f"analyze from stdin: no out-of-order note:\n{p.stdout[:400]}")


def test_self_time_every_fixture():
    paths = [os.path.join(FIX, f) for f in sorted(os.listdir(FIX)) if ".json" in f and "key_averages" not in f]
    kin = os.path.join(SHARED, "kineto")
    if os.path.isdir(kin):
        paths += [os.path.join(kin, f) for f in sorted(os.listdir(kin))]
    for path in paths:
        rep = json.loads(run("report", "--json", "--top", "0", path).stdout)
        if "autograd" in path:
            continue
        compare_host(path, rep, os.path.basename(path))


# ---- item 6: counts as torch's key_averages() ----------------------------------------

NEST = r'''
import json, sys, torch
from torch.profiler import profile, ProfilerActivity, record_function
x = torch.ones(64)
with profile(activities=[ProfilerActivity.CPU]) as p:
    for _ in range(6):
        with record_function("outer_block"):
            with record_function("outer_block"):
                x.div_(2.0)
        with record_function("twice"):
            with record_function("twice"):
                x.add_(1.0)
            with record_function("twice"):
                x.add_(1.0)
p.export_chrome_trace(sys.argv[1])
json.dump([{"key": e.key, "count": e.count, "cpu_total_us": e.cpu_time_total,
            "self_cpu_us": e.self_cpu_time_total} for e in p.key_averages()], open(sys.argv[2], "w"))
'''


def test_counts_as_key_averages(tmp):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skip: no torch")
        return
    trace, ka_path = os.path.join(tmp, "nest.pt.trace.json"), os.path.join(tmp, "nest.ka.json")
    p = subprocess.run([sys.executable, "-c", NEST, trace, ka_path], capture_output=True, text=True)
    check(p.returncode == 0, f"torch script failed: {p.stderr[-800:]}")
    if p.returncode:
        return
    with open(ka_path) as f:
        ka = json.load(f)
    rep = json.loads(run("report", "--json", "--top", "0", trace).stdout)
    ops = host_ops(rep)
    for row in ka:
        op = ops.get(row["key"])
        check(op is not None, f"missing {row['key']}")
        if not op:
            continue
        check(op["calls"] == row["count"], f"{row['key']}: calls {op['calls']} vs torch {row['count']}")
        check(abs(op["total_us"] - row["cpu_total_us"]) <= 0.01,
              f"{row['key']}: total {op['total_us']} vs torch {row['cpu_total_us']}")
        check(abs(op["self_us"] - row["self_cpu_us"]) <= 0.01,
              f"{row['key']}: self {op['self_us']} vs torch {row['self_cpu_us']}")
    check(ops.get("outer_block", {}).get("calls") == 6, "outer_block nested in itself counts 6")
    check(ops.get("twice", {}).get("calls") == 18, "twice with two children counts 18")


# ---- item 3: every summary row is a statistic of its own column ------------------------

def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(pos)
    return v[lo] + (v[lo + 1] - v[lo]) * (pos - lo) if lo + 1 < len(v) else v[lo]


def test_gpu_util_summary():
    path = os.path.join(SHARED, "kineto", "trace_diff__control__control.json.gz")
    if not os.path.exists(path):  # 6 steps there, 2 here
        path = os.path.join(FIX, "trace_filter__sampled_rank-0.json.gz")
    res = json.loads(run("steps", "--json", path).stdout)
    utils = [s["gpu_util_pct"] for s in res["steps"]]
    check(len(utils) >= 2 and None not in utils, f"steps: utils {utils}")
    want = {"mean": sum(utils) / len(utils), "median": quantile(utils, 0.5), "p90": quantile(utils, 0.9)}
    for stat, w in want.items():
        got = res["summary"][stat]["gpu_util_pct"]
        check(abs(got - w) < 0.001, f"{stat} GPU util {got} vs {w:.3f} from the steps' own values")
    text = run("steps", path).stdout
    for stat, w in want.items():
        line = next((ln for ln in text.splitlines() if ln.startswith(stat + " ")), "")
        check(line.endswith(f"{w:.1f}%"), f"steps text {stat} row: {line!r}, want {w:.1f}%")
    check(want["p90"] >= want["median"], "p90 below median")


# ---- item 9: cut names keep an ellipsis ------------------------------------------------

def test_table_names_cut_with_ellipsis():
    path = os.path.join(FIX, "kineto_resnet50_2021_host.json.gz")
    names = {n for n in host_table(load(path))}
    long_name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    check(long_name in names, "fixture lacks the DataLoader span")
    for args, width in ((("analyze", path), 56), (("report", path, "--top", "0"), 48)):
        out = run(*args).stdout
        rows = [ln for ln in out.splitlines() if ln.lstrip().startswith("enumerate(DataLoader)")]
        check(len(rows) == 1, f"{args[0]}: DataLoader row {rows}")
        for ln in rows:
            field = ln.lstrip()[:width]
            check("\u2026" in field and field.startswith("enumerate(DataLoader)#_Single")
                  and field.rstrip().endswith("__next__"), f"{args[0]}: cut name {field!r}")
        for ln in out.splitlines():
            for n in names:  # a name shown whole, or cut with the ellipsis: never a bare prefix
                if len(n) > width and ln.lstrip().startswith(n[:width]) :
                    check(False, f"{args[0]}: name cut without an ellipsis: {ln[:80]!r}")


# ---- item 2: a GPU trace without steps gets its breakdown and GPU idle -----------------

GPU_CATS = {"Kernel", "Memcpy", "Memset", "kernel", "gpu_memcpy", "gpu_memset"}


def union_len(ivs):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(ivs):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0)


def test_gpu_trace_without_steps():
    path = os.path.join(FIX, "kineto_resnet50_autograd_api_slice.json.gz")
    evs = [e for e in load(path) if e.get("ph") == "X" and "ts" in e]
    lo = min(ns(e["ts"]) for e in evs)
    hi = max(ns(e["ts"]) + max(ns(e.get("dur", 0)), 0) for e in evs)
    gpu = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in evs if e.get("cat") in GPU_CATS and ns(e["dur"]) > 0]
    kernels = sum(1 for e in evs if e.get("cat") == "Kernel")
    check(kernels > 300, f"fixture has {kernels} kernels")
    idle = 100.0 * (1 - union_len(gpu) / (hi - lo))
    an = json.loads(run("analyze", "--json", path).stdout)
    check(an["steps"] == 0 and an["step_source"] == "none", f"steps {an['steps']}")
    check(an["gpu_idle_pct"] is not None and abs(an["gpu_idle_pct"] - idle) < 0.01,
          f"gpu_idle_pct {an['gpu_idle_pct']} vs {idle:.3f} over the whole span")
    parts = sum(p["mean_us"] for p in an["breakdown"].values())
    check(abs(parts - (hi - lo) / 1000) < 0.01, f"breakdown sums to {parts}, span {(hi - lo) / 1000}")
    check(abs(an["breakdown"]["kernel"]["mean_us"] * 1000 -
              union_len([(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in evs if e.get("cat") == "Kernel"])) < 2,
          "kernel part is not the kernels' union")
    text = run("analyze", path).stdout
    check("no steps found" in text and "GPU idle" in text and "Where the trace's time goes" in text,
          f"analyze text:\n{text[:600]}")
    st = json.loads(run("steps", "--json", path).stdout)
    check(st.get("whole") is not None and abs(st["whole"]["gpu_util_pct"] - (100 - idle)) < 0.01,
          f"steps whole row {st.get('whole')}")


# ---- item 4: negative durations are counted, warned about once, left out ---------------

def write_events(path, evs, extra=""):
    """Writes {"traceEvents": [...]} one event a line; returns each event's byte offset."""
    offs, pos = [], 0
    with open(path, "w") as f:
        head = '{"traceEvents": [\n'
        f.write(head)
        pos = len(head.encode())
        for i, e in enumerate(evs):
            text = json.dumps(e, default=str) + (",\n" if i + 1 < len(evs) else "\n")
            offs.append(pos)
            f.write(text)
            pos += len(text.encode())
        f.write("]" + extra + "}\n")
    return offs


def test_negative_durations(tmp):
    src = os.path.join(FIX, "trace_filter__sampled_rank-0.json.gz")
    with gzip.open(src, "rt") as f:
        evs = json.load(f)["traceEvents"]
    neg_kernels, neg_step, first = 0, None, None
    for i, e in enumerate(evs):
        if e.get("ph") == "X" and e.get("cat") == "kernel" and neg_kernels < 40:
            e["dur"] = -abs(e["dur"]) * 1000
            neg_kernels += 1
            first = i if first is None else first
        elif (e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
              and e.get("cat") == "user_annotation" and neg_step is None):
            e["dur"] = -e["dur"]
            neg_step = e["name"]
            first = i if first is None else min(first, i)
    path = os.path.join(tmp, "negative.json")
    offs = write_events(path, evs)
    n = neg_kernels + 1
    want = f"{n} event(s) with a negative duration (the first at byte {offs[first]})"
    for cmd in ("analyze", "steps", "report"):
        p = run(cmd, path)
        check(p.stderr.count("negative duration") == 1 and want in p.stderr,
              f"{cmd}: warning {p.stderr!r}, want one with {want!r}")
    st = json.loads(run("steps", "--json", path).stdout)
    good = [e for e in evs if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
            and e.get("cat") == "user_annotation" and e["dur"] >= 0]
    check(len(st["steps"]) == len(good) and all(s["dur_us"] > 0 for s in st["steps"]),
          f"steps {[s['dur_us'] for s in st['steps']]}: the negative step counted")
    rep = json.loads(run("report", "--json", "--top", "0", path).stdout)
    kern = sum(o["calls"] for t in rep["tables"] if t["table"] != "host" for o in t["ops"]
               if o["min_us"] <= 0 and o["max_us"] <= 0)
    want_kern = sum(1 for e in evs if e.get("ph") == "X" and e.get("cat") == "kernel" and e["dur"] == 0)
    check(kern == want_kern, f"{kern} zero-length kernel calls, want {want_kern} (negatives left out)")
    calls = sum(o["calls"] for t in rep["tables"] if t["table"] != "host" for o in t["ops"])
    want_calls = sum(1 for e in evs if e.get("ph") == "X" and e.get("cat") in GPU_CATS | {"kernel"}
                     and e["dur"] >= 0)
    check(calls == want_calls, f"GPU calls {calls}, want {want_calls}")


# ---- item 7: findings need evidence enough ---------------------------------------------

SLOW = r'''
import sys, time, torch
from torch.profiler import profile, ProfilerActivity, schedule
n = int(sys.argv[2])
x = torch.ones(64)
with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=0, active=n, repeat=1)) as p:
    for i in range(n + 1):
        x.add_(1.0)
        time.sleep(0.2 if i == 1 or (n >= 10 and i == 2) else 0.005)
        p.step()
p.export_chrome_trace(sys.argv[1])
'''


def test_findings_evidence(tmp):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skip: no torch")
        return
    for steps, want in ((3, False), (12, True)):
        trace = os.path.join(tmp, f"slow{steps}.pt.trace.json")
        p = subprocess.run([sys.executable, "-c", SLOW, trace, str(steps)], capture_output=True, text=True)
        check(p.returncode == 0, f"torch script failed: {p.stderr[-800:]}")
        if p.returncode:
            continue
        an = json.loads(run("analyze", "--json", trace).stdout)
        var = [f for f in an["findings"] if f["id"] == "step_variance"]
        for f in an["findings"]:
            check(f["share_pct"] <= 100.0, f"{steps} steps: {f['id']} claims {f['share_pct']}%")
        check(an["steps"] == steps, f"{an['steps']} steps traced, want {steps}")
        if not want:
            check(not var, f"{an['steps']} steps: a variance finding from too few steps: {var}")
        else:
            durs = [s["dur_us"] for s in json.loads(run("steps", "--json", trace).stdout)["steps"]]
            med = quantile(durs, 0.5)
            share = 100 * sum(max(0, d - med) for d in durs) / sum(durs)
            check(quantile(durs, 0.9) / med > 1.5, f"durations {durs}: not varied enough")
            check(len(var) == 1 and f"over {an['steps']} steps" in var[0]["evidence"]
                  and abs(var[0]["share_pct"] - share) < 0.01, f"variance finding {var}, want share {share:.3f}")
    for name in ("trace_filter__sampled_rank-0.json.gz", "kineto_resnet50_2021_host.json.gz"):
        an = json.loads(run("analyze", "--json", os.path.join(FIX, name)).stdout)
        for f in an["findings"]:
            check(0 <= f["share_pct"] <= 100.0, f"{name}: {f['id']} claims {f['share_pct']}%")


# ---- item 8: a run directory is a run; a non-trace is an error -------------------------

def test_run_directory_is_a_run(tmp):
    ex = os.path.join(os.environ.get("TP_EXAMPLES_DIR", ""), "train_mlp")
    if not os.path.exists(ex):
        print("skip: no examples/train_mlp")
        return
    work = os.path.join(tmp, "run8")
    os.makedirs(work)
    p = subprocess.run([ex, "--max_steps", "30"], cwd=work, capture_output=True, text=True)
    check(p.returncode == 0, f"train_mlp failed: {p.stderr[-500:]}")
    runs = os.path.join(work, "runs")
    run_dir = os.path.join(runs, sorted(os.listdir(runs))[0]) if os.path.isdir(runs) else ""
    traces_dir = os.path.join(run_dir, "profiler_traces")
    traces = sorted(os.path.join(traces_dir, f) for f in os.listdir(traces_dir)) if os.path.isdir(traces_dir) else []
    check(len(traces) >= 1, f"no traces in {run_dir}")
    if not traces:
        return
    for cmd in ("analyze", "steps", "report"):
        out = run(cmd, run_dir).stdout
        check("job (" not in out and "rank(s)" not in out, f"{cmd} RUN_DIR: a job view:\n{out[:300]}")
    check(json.loads(run("steps", "--json", run_dir).stdout) == json.loads(run("steps", "--json", traces[-1]).stdout),
          "steps RUN_DIR differs from steps of its trace")
    a = json.loads(run("analyze", "--json", run_dir).stdout)
    b = json.loads(run("analyze", "--json", traces[-1]).stdout)
    a.pop("file"), b.pop("file")
    check(a == b, "analyze RUN_DIR differs from analyze of its trace")
    check(json.loads(run("report", "--json", run_dir).stdout) == json.loads(run("report", "--json", *traces).stdout),
          "report RUN_DIR differs from report of its traces")
    empty = os.path.join(tmp, "emptyrun")
    os.makedirs(os.path.join(empty, "profiler_traces"))
    for cmd in ("analyze", "steps", "report"):
        p = run(cmd, empty, expect=2)
        check("without trace files" in p.stderr and "expected" in p.stderr, f"{cmd} EMPTY_RUN: {p.stderr!r}")
    not_trace = os.path.join(tmp, "config.json")
    with open(not_trace, "w") as f:
        json.dump({"profiling": {"enabled": True}}, f)
    for cmd in ("analyze", "steps", "report"):
        p = run(cmd, not_trace, expect=2)
        check("traceEvents" in p.stderr and "not a trace" in p.stderr, f"{cmd} on a non-trace: {p.stderr!r}")


# ---- item 5: one error for one file ------------------------------------------------------

def test_gzip_errors_and_big_step_numbers(tmp):
    src = os.path.join(SHARED, "kineto", "trace_diff__control__control.json.gz")  # 34 MB inflated
    if not os.path.exists(src):
        src = os.path.join(FIX, "trace_filter__sampled_rank-0.json.gz")
    with open(src, "rb") as f:
        data = bytearray(f.read())
    data[-8] ^= 0xFF  # the CRC32 of the only member
    bad = os.path.join(tmp, "crc.json.gz")
    with open(bad, "wb") as f:
        f.write(data)
    for cmd in ("analyze", "steps", "report"):
        seen = set()
        for j in ("1", "2", "4"):
            p = run(cmd, "-j", j, bad, expect=2)
            seen.add(p.stderr)
            check(f"byte {len(data) - 8}:" in p.stderr and "CRC mismatch" in p.stderr,
                  f"{cmd} -j {j}: {p.stderr!r}")
        check(len(seen) == 1, f"{cmd}: the error differs with -j: {seen}")
    header = os.path.join(tmp, "header_only.gz")
    with open(header, "wb") as f:
        f.write(gzip.compress(b"")[:10])
    p = run("analyze", header, expect=2)
    check("truncated gzip" in p.stderr, f"a 10-byte gzip: {p.stderr!r}")
    # ProfilerStep# with a 40-digit number is still a step
    with open(os.path.join(FIX, "mlp_adam.pt.trace.json")) as f:
        doc = json.load(f)
    n = 0
    for e in doc["traceEvents"] if isinstance(doc, dict) else doc:
        if str(e.get("name", "")).startswith("ProfilerStep#"):
            e["name"] = "ProfilerStep#" + "9" * 39 + str(n)
            n += 1
    big = os.path.join(tmp, "big_steps.json")
    with open(big, "w") as f:
        json.dump(doc, f)
    st = json.loads(run("steps", "--json", big).stdout)
    check(st["step_source"] == "ProfilerStep" and len(st["steps"]) == n == 4,
          f"40-digit step numbers: {st['step_source']}, {len(st['steps'])} steps of {n}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_self_time_parents_after_children()
        test_self_time_every_fixture()
        test_counts_as_key_averages(tmp)
        test_gpu_util_summary()
        test_gpu_trace_without_steps()
        test_negative_durations(tmp)
        test_findings_evidence(tmp)
        test_run_directory_is_a_run(tmp)
        test_gzip_errors_and_big_step_numbers(tmp)
        test_table_names_cut_with_ellipsis()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
