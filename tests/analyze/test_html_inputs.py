"""Every page-building path of the real `trainprof` binary on every real trace
we have, in every build (the sanitizer builds too, where the browser tests
that compare numbers do not run): `report --html` on each trace, on a run
directory layout, on several rank traces named together, and `diff --html`
on the Kineto pair. Each must exit 0, write one page whose data block is one
JSON value, and print nothing a sanitizer prints.

argv[1]: tests/fixtures. Optional: $TP_FIXTURES (../shared/fixtures) and a
torch 2.13 trace written here by tests/fixtures_gen when torch imports.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

BIN = os.environ["TRAINPROF_BIN"]
FIX = sys.argv[1]
SHARED = os.environ.get("TP_FIXTURES", "")
SRC = os.environ.get("TP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SANITIZER = re.compile(r"runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer")
DATA = re.compile(r'<script id="trainprof-data" type="application/json">(.*?)</script>', re.S)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def page(args, out):
    p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=600)
    label = " ".join(os.path.basename(a) for a in args)
    check(not SANITIZER.search(p.stderr), f"{label}: sanitizer report: {p.stderr[-3000:]}")
    if not check(p.returncode == 0, f"{label}: exit {p.returncode}: {p.stderr[-1500:]}"):
        return None
    with open(out, encoding="utf-8") as f:
        m = DATA.search(f.read())
    if not check(m is not None, f"{label}: no data block in the page"):
        return None
    try:
        data = json.loads(m.group(1))
    except ValueError as e:
        check(False, f"{label}: the data block is not JSON: {e}")
        return None
    check(isinstance(data.get("meta"), dict), f"{label}: no meta in the page data")
    return data


def torch_trace(tmp):
    gen = os.path.join(SRC, "tests", "fixtures_gen", "gen_torch_traces.py")
    try:
        subprocess.run([sys.executable, gen, tmp], check=True, capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        print("note: no torch here; the torch 2.13 trace is not tried")
        return []
    return [os.path.join(tmp, "full.pt.trace.json")]


def run_dir_findings(tmp):
    """Issue 31: a run directory's data-loading finding is of the whole run
    (timing_profile.json), not of its 3 traced warm-up steps; advice fits a
    C program (no PyTorch DataLoader); the page says which steps the trace's
    findings come from."""
    run = os.path.join(tmp, "run_c")
    os.makedirs(os.path.join(run, "profiler_traces"))
    with open(os.path.join(run, "operations.json"), "w") as f:
        json.dump([{"name": "data_wait", "count": 100, "total_time": 1.5, "self_time": 1.5, "top_level": True},
                   {"name": "forward", "count": 100, "total_time": 5.0, "self_time": 5.0, "top_level": True}], f)
    with open(os.path.join(run, "timing_profile.json"), "w") as f:  # 100 steps of 100 ms, 15 ms waiting for data
        json.dump([{"step": i, "total_batch_time": 0.1, "samples_per_second": 640.0,
                    "operations": {"data_wait": {"time": 0.015}, "forward": {"time": 0.05}}} for i in range(100)], f)
    evs = []
    for i in range(3):  # the traced steps: warm-up, half of each waiting for data
        t = 1000 + i * 1000
        evs += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "ts": t, "dur": 1000, "pid": 1, "tid": 1},
                {"ph": "X", "name": "data_wait", "ts": t, "dur": 500, "pid": 1, "tid": 1}]
    with open(os.path.join(run, "profiler_traces", "trace.json"), "w") as f:
        json.dump({"traceEvents": evs}, f)
    out = os.path.join(tmp, "run_c.html")
    data = page(["report", "--html", out, run], out)
    if data is None:
        return
    ov = data["overview"]
    dl = [f for f in ov["findings"] if f["id"] == "data_loading"]
    if check(len(dl) == 1, f"run dir: data_loading findings {ov['findings']}"):
        check(abs(dl[0]["share_pct"] - 15.0) < 0.01 and dl[0]["severity"] == "medium",
              f"run dir: data loading {dl[0]['share_pct']}% {dl[0]['severity']}, want the whole run's 15.0% medium")
        check("whole run, 100 steps" in dl[0]["evidence"] and "50.0%" in dl[0]["evidence"], f"evidence: {dl[0]['evidence']}")
        check("DataLoader" not in dl[0]["suggestion"], f"PyTorch advice for a C program: {dl[0]['suggestion']}")
    check(ov.get("findings_steps") == [0, 2, 3], f"findings_steps {ov.get('findings_steps')}")


def gpus_marked(tmp):
    """Issue 31: the GPUs table marks the devices each rank's kernels ran on
    (args.device, else the GPU event's pid), from the trace itself."""
    import gzip
    paths = [os.path.join(FIX, "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz")]
    if SHARED:
        paths.append(os.path.join(SHARED, "kineto", "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"))
    for path in filter(os.path.exists, paths):
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        used = {(e.get("args") or {}).get("device", e.get("pid")) for e in doc["traceEvents"]
                if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("dur", 0) > 0}
        rank = (doc.get("distributedInfo") or {}).get("rank", 0)
        out = os.path.join(tmp, "gpus.html")
        data = page(["report", "--html", out, path], out)
        if data is None:
            continue
        got = {g["id"]: g["ranks"] for g in data["overview"]["gpus"]}
        want = {p.get("id", i): ([rank] if p.get("id", i) in used else []) for i, p in enumerate(doc["deviceProperties"])}
        check(got == want, f"{os.path.basename(path)}: GPUs marked {got}, want {want}")


def main():
    traces = sorted(glob.glob(os.path.join(FIX, "*.json*")))
    traces = [t for t in traces if not t.endswith(".key_averages.json")]
    if SHARED and os.path.isdir(os.path.join(SHARED, "kineto")):
        traces += sorted(glob.glob(os.path.join(SHARED, "kineto", "*.json.gz")))
    with tempfile.TemporaryDirectory(prefix="tp_html_inputs_") as tmp:
        traces += torch_trace(tmp)
        # edge shapes: device events with no host span at all, one host span alone
        edges = {"gpu_only.json": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                                     "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 3}}],
                 "host_only.json": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                                      "ts": 1, "dur": 5}]}
        for name, events in edges.items():
            with open(os.path.join(tmp, name), "w") as f:
                json.dump({"traceEvents": events}, f)
            traces.append(os.path.join(tmp, name))
        out = os.path.join(tmp, "page.html")
        for t in traces:
            data = page(["report", "--html", out, t], out)
            if data is not None:
                views = [k for k, v in data.items() if k != "meta" and v is not None]
                check(views, f"{os.path.basename(t)}: no view has data")
        ranks = sorted(glob.glob(os.path.join(FIX, "trace_filter__sampled_rank-*.json.gz")))
        if len(ranks) >= 2:
            data = page(["report", "--html", out] + ranks, out)
            check(data is not None and data.get("distributed") is not None,
                  "two rank traces named together: no Distributed view")
        if SHARED:
            pair = [os.path.join(SHARED, "kineto", f"trace_diff__{n}__{n}.json.gz") for n in ("control", "test")]
            if all(os.path.exists(p) for p in pair):
                data = page(["diff", "--html", out] + pair, out)
                check(data is not None and data.get("diff") is not None, "diff --html: no Diff view")
        run_dir_findings(tmp)
        gpus_marked(tmp)
        print(f"{len(traces)} traces tried")
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    print("all page inputs passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
