"""CLI checks of the analyzer subcommands against independent parsers.

Runs the real `trainprof` binary (env TRAINPROF_BIN) on the fixtures in
argv[1] (copies in tests/fixtures) and, when present, the bigger Kineto
traces in $TP_FIXTURES/kineto. Python's json module is the reference.
"""
import decimal
import gzip
import json
import os
import subprocess
import sys
import tempfile

BIN = os.environ["TRAINPROF_BIN"]
FIX = sys.argv[1]
SHARED = os.path.join(os.environ.get("TP_FIXTURES", ""), "kineto")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, expect=0):
    p = subprocess.run([BIN, *args], capture_output=True, text=True)
    check(p.returncode == expect, f"{args}: exit {p.returncode} != {expect}\n{p.stderr}")
    return p


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def events(doc):
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def test_report_matches_key_averages():
    trace = os.path.join(FIX, "mlp_adam.pt.trace.json")
    ka = load(os.path.join(FIX, "mlp_adam.key_averages.json"))
    rep = json.loads(run("report", "--json", trace).stdout)
    ops = {o["name"]: o for t in rep["tables"] for o in t["ops"]}
    check(len(ops) == len(ka), f"op count {len(ops)} vs {len(ka)}")
    for row in ka:
        op = ops.get(row["name"])
        check(op is not None, f"missing op {row['name']}")
        if not op:
            continue
        check(op["calls"] == row["count"], f"{row['name']} calls {op['calls']} vs {row['count']}")
        check(op["total_us"] == row["cpu_time_total_us"], f"{row['name']} total {op['total_us']} vs {row['cpu_time_total_us']}")
        want = row["self_cpu_time_total_us"]
        check(abs(op["self_us"] - want) <= max(2.0, 0.02 * want), f"{row['name']} self {op['self_us']} vs {want}")


def kineto_files():
    out = [os.path.join(FIX, f) for f in sorted(os.listdir(FIX)) if f.endswith(".json.gz")]
    if os.path.isdir(SHARED):
        out += [os.path.join(SHARED, f) for f in sorted(os.listdir(SHARED))]
    return out


RUNTIME_CATS = ("cuda_runtime", "cuda_driver", "Runtime")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")


def plugin_steps(evs, host):
    """The TensorBoard plugin's steps (kineto tb_plugin event_parser.py,
    _find_device_steps and _update_steps_duration), written from its text:
    host is {num: (start, end)} in µs. Returns ({num: (start, end)}, steps dropped, whether the rule applied)."""
    order = sorted(host, key=lambda n: host[n][0])
    steps = [list(host[n]) for n in order]
    rts, devs = {}, []
    for e in evs:
        a = e.get("args") or {}
        if e.get("ph") != "X" or "correlation" not in a or e.get("dur", 0) < 0:
            continue
        s, t = e["ts"], e["ts"] + e.get("dur", 0)
        if e.get("cat") in RUNTIME_CATS:
            rts[a["correlation"]] = (s, t)
        elif e.get("cat") in DEVICE_CATS:
            devs.append((a["correlation"], s, t))
    span = [[None, None, 0] for _ in steps]  # first start, last end, count
    matched = []
    for corr, s, t in devs:
        rt, hit = rts.get(corr), None
        if rt:
            for i, (a, b) in enumerate(steps):
                if a <= rt[0] and rt[1] <= b:
                    hit = i
                    break
        matched.append(hit is not None)
        if hit is None:
            continue
        sp = span[hit]
        sp[0] = s if sp[0] is None else min(sp[0], s)
        sp[1] = t if sp[1] is None else max(sp[1], t)
        sp[2] += 1
    if not any(matched):
        return {n: host[n] for n in order}, 0, False
    prev = steps[0][0]
    if span[0][2]:
        for (corr, s, t), m in zip(devs, matched):
            if not m and t < span[0][0]:
                prev = max(prev, t)
    for i, (a, b) in enumerate(steps):
        start = max(prev, a)
        end = max(b, span[i][1]) if span[i][2] else b
        end = max(end, start)
        steps[i] = [start, end]
        prev = end
    keep = len(steps)
    if len(steps) > 1:
        last = max(i for i in range(len(steps)) if span[i][2])
        keep = last + 1
        if last > 0 and span[last - 1][2] * 0.8 > span[last][2]:
            keep = last
    return {order[i]: tuple(steps[i]) for i in range(keep)}, len(steps) - keep, True


def test_steps_match_profiler_step_spans():
    """Steps are the ProfilerStep#N spans, extended on a GPU trace as the
    TensorBoard plugin does (host-only traces keep the host spans)."""
    for path in kineto_files() + [os.path.join(FIX, "mlp_adam.pt.trace.json")]:
        res = json.loads(run("steps", "--json", path).stdout, parse_float=decimal.Decimal)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:  # exact: a float of µs since the epoch loses the ns
            evs = events(json.load(f, parse_float=decimal.Decimal))
        host = {}
        for e in evs:
            n = str(e.get("name", ""))
            if e.get("ph") == "X" and n.startswith("ProfilerStep#") and e.get("cat") in (None, "user_annotation", "Operator", "cpu_op"):
                host.setdefault(int(n.split("#")[1]), (e["ts"], e["ts"] + e["dur"]))
        spans, dropped, applied = plugin_steps(evs, host)
        check(res["step_rule"] == ("device" if applied else "host"), f"{path}: rule {res['step_rule']}")
        check(res["steps_left_out"] == dropped, f"{path}: left out {res['steps_left_out']} vs {dropped}")
        got = {s["step"]: s for s in res["steps"]}
        check(set(got) == set(spans), f"{path}: steps {sorted(got)} vs {sorted(spans)}")
        for num, (a, b) in spans.items():
            s = got.get(num)
            if not s:
                continue
            check(abs(s["dur_us"] - (b - a)) < 0.0015, f"{path} step {num}: {s['dur_us']} vs {b - a}")
            check(abs(s["start_us"] - a) < 0.0015, f"{path} step {num}: start {s['start_us']} vs {a}")
            parts = sum(s[k] for k in s if k.endswith("_us") and k not in ("dur_us", "start_us"))
            check(abs(parts - s["dur_us"]) < 0.0015, f"{path} step {num}: parts {parts} vs {s['dur_us']}")


def test_report_counts_on_kineto():
    """Device-side calls are the X events; host calls follow torch's merging
    of same-name nesting (test_correctness checks those against a reference)."""
    host_cats = (None, "cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver",
                 "Operator", "Runtime")
    for path in kineto_files():
        rep = json.loads(run("report", "--json", "--no-group-steps", path).stdout)
        want = {}
        for e in events(load(path)):
            if e.get("ph") == "X" and e.get("cat") not in ("gpu_user_annotation", "Trace") + host_cats:
                want[e["name"]] = want.get(e["name"], 0) + 1
        got = {}
        for t in rep["tables"]:
            if t["table"] == "host":
                continue
            for o in t["ops"]:
                got[o["name"]] = got.get(o["name"], 0) + o["calls"]
        check(got == want, f"{path}: report calls differ from json ({len(got)} vs {len(want)} names)")


def test_analyze_findings():
    """analyze = report + steps in one pass; findings pinned on the fixtures."""
    cases = [(os.path.join(FIX, "mlp_adam.pt.trace.json"), ["optimizer"]),
             (os.path.join(FIX, "trace_filter__sampled_rank-0.json.gz"), ["launch_bound", "optimizer", "communication"])]
    control = os.path.join(SHARED, "trace_diff__control__control.json.gz")
    if os.path.exists(control):
        cases.append((control, ["low_occupancy", "communication", "synchronization"]))
    for path, ids in cases:
        d = json.loads(run("analyze", "--json", path).stdout)
        st = json.loads(run("steps", "--json", path).stdout)
        got = [f["id"] for f in d["findings"]]
        check(got == ids, f"{path}: findings {got} vs {ids}")
        shares = [f["share_pct"] for f in d["findings"]]
        check(shares == sorted(shares, reverse=True), f"{path}: findings not ranked")
        check(d["steps"] == st["count"], f"{path}: analyze steps {d['steps']} vs {st['count']}")
        check(abs(d["step_mean_us"] - st["summary"]["mean"]["dur_us"]) < 0.0015, f"{path}: mean step")
        pct = sum(v["pct"] for v in d["breakdown"].values())
        check(abs(pct - 100) < 0.1, f"{path}: breakdown sums to {pct}%")
        for f in d["findings"]:
            check(f["evidence"] and f["suggestion"] and f["severity"] in ("low", "medium", "high"), f"{path}: {f}")
    d = json.loads(run("analyze", "--json", cases[0][0]).stdout)
    opt = d["findings"][0]
    check(abs(opt["share_pct"] - 100 * 1718 / 8936) < 0.01, f"optimizer share {opt['share_pct']}")
    check("torch.optim" in opt["suggestion"], f"a PyTorch trace gets PyTorch advice: {opt['suggestion']}")
    check(d["gpu_idle_pct"] is None and d["top_host_ops"][0]["name"] == "aten::addmm", "mlp_adam top op / no GPU")
    d = json.loads(run("analyze", "--json", cases[1][0]).stdout)
    check(abs(d["gpu_idle_pct"] - 55.5) < 0.1, f"rank-0 GPU idle {d['gpu_idle_pct']}")


def test_begin_end_and_async(tmp):
    """The torch CPU trace rewritten as B/E pairs gives the same steps; b/e async pairs are counted."""
    src = os.path.join(FIX, "mlp_adam.pt.trace.json")
    evs = []
    for e in events(load(src)):
        if e.get("ph") != "X" or not e.get("dur"):
            continue  # zero-length spans have no unambiguous B/E order
        b = {k: v for k, v in e.items() if k != "dur"}
        b["ph"] = "B"
        evs.append((e["ts"], -e["dur"], 0, b))
        evs.append((e["ts"] + e["dur"], 0, 1, {"ph": "E", "ts": e["ts"] + e["dur"], "pid": e["pid"], "tid": e["tid"]}))
    # ends before begins at equal times, inner ends first (shortest begin last)
    evs.sort(key=lambda x: (x[0], -x[2], x[1]))
    be = os.path.join(tmp, "be.json")
    with open(be, "w") as f:
        json.dump({"traceEvents": [x[3] for x in evs]}, f)
    a = json.loads(run("steps", "--json", src).stdout)["steps"]
    b = json.loads(run("steps", "--json", be).stdout)["steps"]
    check([s["step"] for s in a] == [s["step"] for s in b], "B/E steps differ")
    check(all(abs(x["dur_us"] - y["dur_us"]) < 0.0015 for x, y in zip(a, b)), "B/E step durations differ")
    asy = os.path.join(tmp, "async.json")
    with open(asy, "w") as f:
        json.dump([{"ph": "b", "cat": "io", "name": "load", "id": "0x1", "ts": 0, "pid": 1, "tid": 1},
                   {"ph": "b", "cat": "io", "name": "load", "id": "0x2", "ts": 5, "pid": 1, "tid": 2},
                   {"ph": "e", "cat": "io", "name": "load", "id": "0x1", "ts": 10, "pid": 1, "tid": 3},
                   {"ph": "e", "cat": "io", "name": "load", "id": "0x2", "ts": 35, "pid": 1, "tid": 1},
                   {"ph": "e", "cat": "io", "name": "load", "id": "0x9", "ts": 40, "pid": 1, "tid": 1}], f)
    r = json.loads(run("report", "--json", asy).stdout)
    t = [t for t in r["tables"] if t["table"] == "async"]
    check(len(t) == 1 and t[0]["ops"][0]["calls"] == 2 and t[0]["ops"][0]["total_us"] == 40.0, f"async table {t}")
    check(r["async_pairs"] == 2 and r["async_unmatched"] == 1, f"async counts {r['async_pairs']} {r['async_unmatched']}")


def test_diff_gate():
    a = os.path.join(FIX, "trace_filter__sampled_rank-0.json.gz")
    b = os.path.join(FIX, "trace_filter__sampled_rank-1.json.gz")
    d = json.loads(run("diff", "--json", a, b).stdout)
    check(d["metric"] == "mean step time", "diff metric")
    run("diff", a, a, "--fail-if-slower", "0")
    slower = d["change_pct"] > 0
    run("diff", a, b, "--fail-if-slower", "0", expect=1 if slower else 0)
    run("diff", b, a, "--fail-if-slower", "0", expect=0 if slower else 1)
    # an empty baseline (no steps, no host time) cannot pass the gate
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.json")
        with open(empty, "w") as f:
            json.dump({"traceEvents": []}, f)
        p = run("diff", empty, a, "--fail-if-slower", "5", expect=2)
        check("not a usable baseline" in p.stderr, f"empty baseline message: {p.stderr}")


def test_slice_merge_fix(tmp):
    src = os.path.join(FIX, "trace_filter__sampled_rank-0.json.gz")
    out = os.path.join(tmp, "slice.json")
    run("slice", src, "--steps", "552", "-o", out)
    evs = events(load(out))
    check(any(e.get("name") == "ProfilerStep#552" for e in evs), "slice keeps the step")
    check(not any(e.get("name") == "ProfilerStep#551" for e in evs), "slice drops other steps")
    out2 = os.path.join(tmp, "kern.json.gz")
    run("slice", src, "--cat", "kernel", "--min-dur", "50us", "-o", out2)
    for e in events(load(out2)):
        check(e["ph"] == "M" or (e.get("cat") == "kernel" and e["dur"] >= 50), f"slice filter kept {e.get('name')}")

    merged = os.path.join(tmp, "merged.json")
    run("merge", src, os.path.join(FIX, "trace_filter__sampled_rank-1.json.gz"), "-o", merged)
    evs = events(load(merged))
    pids = {e["pid"] for e in evs}
    check(pids == {0, 1}, f"merge pids {pids}")
    names = [e["args"]["name"] for e in evs if e.get("name") == "process_name"]
    check(names == ["rank 0", "rank 1"], f"merge names {names}")

    text = gzip.open(src, "rt").read()
    cut = os.path.join(tmp, "cut.json")
    with open(cut, "w") as f:
        f.write(text[: len(text) // 2])
    run("fix", cut, expect=1)
    fixed = os.path.join(tmp, "fixed.json")
    run("fix", cut, "-o", fixed)
    n_fixed = len(events(load(fixed)))
    p = run("report", "--json", cut)
    check("truncated" in p.stderr, "report warns about truncation")
    check(json.loads(p.stdout)["events"] == n_fixed, "report reads what fix keeps")
    run("fix", fixed)


def test_slice_merge_every_fixture_reads_back(tmp):
    """slice and merge outputs are valid JSON (Python) that trainprof re-reads."""
    files = kineto_files() + [os.path.join(FIX, "mlp_adam.pt.trace.json")]
    for i, path in enumerate(files):
        n_in = len(events(load(path)))
        for ext in (".json", ".json.gz"):
            out = os.path.join(tmp, f"all_slice{i}{ext}")
            run("slice", path, "--min-dur", "0us", "-o", out)
            doc = load(out)
            rep = json.loads(run("report", "--json", out).stdout)
            check(rep["events"] == len(events(doc)), f"slice {path}: re-read {rep['events']} vs {len(events(doc))}")
        out = os.path.join(tmp, f"all_time{i}.json")
        run("slice", path, "--time", "0-1000000s", "-o", out)
        check(len(events(load(out))) <= n_in, f"slice --time {path}")
        run("report", out)
    merged = os.path.join(tmp, "all_merged.json.gz")
    run("merge", *files, "-o", merged)
    doc = load(merged)
    rep = json.loads(run("report", "--json", merged).stdout)
    check(rep["events"] == len(events(doc)), "merge of every fixture re-reads")


def test_merge_extreme_base_times(tmp):
    """Base times at the ends of int64 are clamped, not overflowed (UBSan)."""
    paths = []
    for i, base in enumerate((9223372036854775807, -9223372036854775807)):
        path = os.path.join(tmp, f"base{i}.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": [{"ph": "X", "name": "a", "ts": -3999999999999999, "dur": 1,
                                        "pid": 1, "tid": 1, "id": 7},
                                       {"ph": "X", "name": "b", "ts": 3999999999999999, "dur": 1,
                                        "pid": 1, "tid": 1}],
                       "baseTimeNanoseconds": base}, f)
        paths.append(path)
    out = os.path.join(tmp, "base_merged.json")
    run("merge", *paths, "-o", out)
    check(len(events(load(out))) == 4 + 2 * 3, "merge of extreme base times")


def test_huge_durations_saturate(tmp):
    """Durations at the accepted limit summed over ops, tables and steps:
    no signed overflow (the UBSan build stops on one)."""
    big = 3999999999999999
    ev = []
    for i in range(4):
        ev += [{"ph": "X", "name": f"ProfilerStep#{i}", "ts": -big + i, "dur": big, "pid": 1, "tid": 1},
               {"ph": "X", "name": "aten::item", "ts": -big + i, "dur": big, "pid": 1, "tid": 1},
               {"ph": "X", "name": "k", "cat": "kernel", "ts": -big + i, "dur": big, "pid": 1, "tid": 2,
                "args": {"device": 0}},
               {"ph": "X", "name": "cudaDeviceSynchronize", "cat": "cuda_runtime", "ts": -big + i,
                "dur": big, "pid": 1, "tid": 3},
               {"ph": "B", "name": "b", "ts": -big, "pid": 1, "tid": 4},
               {"ph": "E", "ts": big, "pid": 1, "tid": 4}]
    path = os.path.join(tmp, "huge_durs.json")
    with open(path, "w") as f:
        json.dump(ev, f)
    for sub in ("report", "steps", "analyze"):
        run(sub, path)
        json.loads(run(sub, "--json", path).stdout)
    json.loads(run("diff", "--json", path, path).stdout)


def test_json_summaries_escape_paths(tmp):
    """--json of slice/merge/fix stays JSON when paths hold quotes or backslashes."""
    d = os.path.join(tmp, 'odd "dir" \\ x')
    os.mkdir(d)
    src = os.path.join(d, 'in "a".json')
    with open(src, "w") as f:
        f.write('[{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]')
    out = os.path.join(d, 'out "b".json')
    res = json.loads(run("slice", src, "-o", out, "--json").stdout)
    check(res["input"] == src and res["output"] == out, f"slice --json paths {res}")
    res = json.loads(run("merge", src, "-o", out, "--json").stdout)
    check(res["output"] == out, f"merge --json path {res}")
    res = json.loads(run("fix", src, "-o", out, "--json").stdout)
    check(res["input"] == src and res["output"] == out, f"fix --json paths {res}")


def test_merge_odd_flow_ids(tmp):
    """Flow ids get the rank prefix; arrays and objects are copied as they
    are (output stays JSON)."""
    path = os.path.join(tmp, "ids.json")
    ids = [7, "a\"b\\c", ["x\"y", 1], {"k": "v\n"}, True, None]
    with open(path, "w") as f:
        json.dump([{"ph": "s", "name": "f", "cat": "c", "ts": i, "pid": 1, "tid": 1, "id": v}
                   for i, v in enumerate(ids)], f, indent=1)
    out = os.path.join(tmp, "ids_merged.json")
    run("merge", path, path, "-o", out)
    got = [e["id"] for e in events(load(out)) if e.get("ph") == "s"]
    check(got[:len(ids)] == ["r0:7", 'r0:a"b\\c', ["x\"y", 1], {"k": "v\n"}, "r0:true", "r0:null"], f"merge ids {got}")
    check(got[len(ids)] == "r1:7", f"second rank's ids {got}")


def test_slice_time_window_far_out(tmp):
    """--time far past an epoch-based trace keeps nothing (no int64 overflow)."""
    src = os.path.join(FIX, "trace_filter__sampled_rank-0.json.gz")
    out = os.path.join(tmp, "far.json")
    run("slice", src, "--time", "9000000000s-", "-o", out)
    check(all(e["ph"] == "M" for e in events(load(out))), "far --time window keeps only metadata")


def test_stdin_for_multi_pass_commands(tmp):
    """'-' reads stdin also for the commands that read their input twice."""
    src = os.path.join(FIX, "mlp_adam.pt.trace.json")
    data = open(src, "rb").read()
    out = os.path.join(tmp, "stdin_out.json")

    def run_in(args, stdin, expect=0):
        p = subprocess.run([BIN, *args], input=stdin, capture_output=True)
        check(p.returncode == expect, f"stdin {args}: exit {p.returncode} != {expect}\n{p.stderr!r}")
        return p
    d = json.loads(run_in(["diff", "--json", "-", src], data).stdout)
    check(d["metric"] == "mean step time" and abs(d["change_pct"]) < 1e-9, f"diff - A {d['metric']}")
    run_in(["slice", "-", "--steps", "1", "-o", out], data)
    check(any(e.get("name") == "ProfilerStep#1" for e in events(load(out))), "slice - --steps keeps the step")
    run_in(["merge", "-", src, "-o", out], gzip.compress(data))
    check(len({e["pid"] for e in events(load(out))}) == 2, "merge - B")
    run_in(["fix", "-", "-o", out], data[: len(data) // 2])
    check(len(events(load(out))) > 0, "fix - -o OUT")


def test_bad_inputs(tmp):
    cases = {
        "empty.json": b"",
        "text.json": b"hello world",
        "syntax.json": b'{"traceEvents": [{"ph": "X", "ts": 1} {"x": 1}]}',
        "deep.json": b"[" * 5000,
        "utf8.json": b'[{"name": "\xff\xfe", "ph": "X", "ts": 1}]',
        "bigint.json": b'[{"name": "a", "ph": "X", "ts": 123456789012345678901234567890}]',
        "badgz.json.gz": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-garbage",
    }
    for name, data in cases.items():
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        for sub in ("report", "steps"):
            p = run(sub, path, expect=2)
            check(name in p.stderr, f"{sub} {name}: error names the file: {p.stderr!r}")
    p = run("report", os.path.join(tmp, "syntax.json"), expect=2)
    check("byte 38" in p.stderr, f"syntax error offset: {p.stderr!r}")
    run("report", "/nonexistent/trace.json", expect=2)
    run("report", "--bogus", expect=2)
    for sub in ("report", "steps", "analyze", "diff", "slice", "merge", "fix"):
        p = run(sub, "--help")
        check("usage:" in p.stdout, f"{sub} --help")


def test_help_names_every_option():
    """Issue 33: `help analyze` printed the general usage; analyze --help
    did not list --summary, which combine --help tells users to run."""
    for sub in ("report", "steps", "analyze", "diff", "slice", "merge", "combine", "fix", "config"):
        p, q = run("help", sub), run(sub, "--help")
        check(p.stdout == q.stdout and f"trainprof {sub}" in p.stdout, f"help {sub} is {sub} --help: {p.stdout[:80]!r}")
    usage = run("analyze", "--help").stdout
    for opt in ("--summary", "--summaries", "--json", "--top", "-j"):
        check(opt in usage, f"analyze --help lists {opt}")
    check("analyze --summary" in run("combine", "--help").stdout, "combine --help names analyze --summary")
    p = run("help", "bogus", expect=2)
    check("unknown command 'bogus'" in p.stderr, f"help bogus: {p.stderr!r}")
    check("usage:" in run("help").stdout, "help alone: the general usage")


def test_default_jobs_follow_cpu_affinity():
    """-j's default is the cores the process may run on (taskset, a cpuset,
    SLURM's --cpu-bind), not every core online: a rank bound to one core
    read its traces with as many threads as the node had cores."""
    if not hasattr(os, "sched_setaffinity"):
        return
    p = subprocess.run([BIN, "--help"], capture_output=True, text=True,
                       preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    check(p.returncode == 0 and "by default: 1 here" in p.stdout, f"--help bound to one core: {p.stdout[-200:]!r}")
    p = run("--help")
    n = min(len(os.sched_getaffinity(0)), 256)
    check(f"by default: {n} here" in p.stdout, f"--help with {n} cores: {p.stdout[-200:]!r}")


def test_a_json_array_that_is_not_a_trace_is_refused(tmp):
    """[1,2,3] and timing_profile.json's rows are JSON arrays, not traces:
    refused (exit 2, naming the file) as an object without traceEvents is."""
    for name, text in (("numbers.json", "[1,2,3]"),
                       ("timing_profile.json", '[{"step": 0, "total_batch_time": 0.1}]')):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        for sub in ("analyze", "steps", "report"):
            p = subprocess.run([BIN, sub, path], capture_output=True, text=True)
            check(p.returncode == 2 and name in p.stderr and "not a trace" in p.stderr,
                  f"{sub} {name}: exit {p.returncode}, {p.stderr.strip()[:120]!r}")


def test_a_trainprof_run_directory_is_one_run(tmp):
    """`trainprof run -o DIR` writes trace.json, memory_profile.json and
    run_summary.json: analyze read them as "2 rank(s) (world size -1)"."""
    d = os.path.join(tmp, "monitored")
    p = subprocess.run([BIN, "run", "--interval", "50ms", "-o", d, "--", sys.executable, "-c",
                        "import time; time.sleep(0.5)"], capture_output=True, text=True)
    check(p.returncode == 0 and os.path.exists(os.path.join(d, "run_summary.json")),
          f"trainprof run: {p.returncode} {p.stderr[-300:]}")
    a = subprocess.run([BIN, "analyze", d], capture_output=True, text=True)
    check(a.returncode == 0 and "rank(s)" not in a.stdout and "world size" not in a.stdout,
          f"analyze on a trainprof run directory: {a.stdout.strip()[:100]!r}")


def test_findings_count_inside_steps(tmp):
    """Issue 31: a span outside every step (the profiler's exit
    cudaDeviceSynchronize) is not step time; device events dropped for a
    negative duration make no GPU finding."""
    def step(n, ts, dur):
        return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "ts": ts, "dur": dur, "pid": 1, "tid": 1}

    def sync(ts, dur):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": ts, "dur": dur, "pid": 1, "tid": 1}

    def kernel(ts, dur):
        return {"ph": "X", "cat": "kernel", "name": "k", "ts": ts, "dur": dur, "pid": 0, "tid": 7}

    base = [step(1, 0, 1000), step(2, 1000, 1000), sync(100, 200)]
    path = os.path.join(tmp, "sync_in.json")
    with open(path, "w") as f:
        json.dump(base + [sync(2100, 900)], f)  # the exit sync, after step 2
    d = json.loads(run("analyze", "--json", path).stdout)
    syn = [f for f in d["findings"] if f["id"] == "synchronization"]
    check(len(syn) == 1 and abs(syn[0]["share_pct"] - 100 * 200 / 2000) < 0.01,
          f"sync inside steps only: {syn}")
    check(syn and "1 calls" in syn[0]["evidence"], f"sync calls: {syn}")
    check(syn and ".item()" not in syn[0]["suggestion"] and "cudaDeviceSynchronize" in syn[0]["suggestion"],
          f"a trace without PyTorch operators gets CUDA advice: {syn}")
    with open(path, "w") as f:
        json.dump([step(1, 0, 1000), step(2, 1000, 1000), sync(2100, 900)], f)
    d = json.loads(run("analyze", "--json", path).stdout)
    check(not [f for f in d["findings"] if f["id"] == "synchronization"], f"exit sync counted: {d['findings']}")
    # kernels with negative durations: dropped, and no GPU finding from what is left
    evs = [step(1, 0, 1000), step(2, 1000, 1000), kernel(10, 5), kernel(500, -50), kernel(1500, -20)]
    with open(path, "w") as f:
        json.dump(evs, f)
    p = run("analyze", "--json", path)
    d = json.loads(p.stdout)
    check(d.get("gpu_findings_withheld") == 2, f"withheld {d.get('gpu_findings_withheld')}")
    check(not [f for f in d["findings"] if f["id"] in ("launch_bound", "tiny_kernels", "low_occupancy")],
          f"GPU finding from dropped events: {d['findings']}")
    t = run("analyze", path).stdout
    check("No GPU finding: 2 device event(s)" in t, "analyze says why there is no GPU finding")


def test_report_steps_filter_gpu():
    """report --steps N on a GPU trace: the device events are those of the
    step as `steps` shows it (extended to the GPU work it launched), summed
    by hand from the trace."""
    paths = [os.path.join(FIX, "trace_filter__sampled_rank-0.json.gz"),
             os.path.join(SHARED, "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")]
    for path in filter(os.path.exists, paths):
        with gzip.open(path, "rt") as f:
            evs = events(json.load(f, parse_float=decimal.Decimal))
        host = {}
        for e in evs:
            n = str(e.get("name", ""))
            if e.get("ph") == "X" and n.startswith("ProfilerStep#") and e.get("cat") in (None, "user_annotation", "Operator", "cpu_op"):
                host.setdefault(int(n.split("#")[1]), (e["ts"], e["ts"] + e["dur"]))
        # the plugin's windows, every step kept (a filter names them)
        win, _, _ = plugin_steps(evs, host)
        order = sorted(win, key=lambda k: win[k][0])
        for num in order[:3]:
            want = decimal.Decimal(0)
            for e in evs:
                if e.get("ph") != "X" or e.get("cat") not in DEVICE_CATS or e.get("dur", 0) < 0:
                    continue
                k = max((m for m in order if win[m][0] <= e["ts"]), key=lambda m: win[m][0], default=None)
                if k == num and e["ts"] <= win[k][1]:
                    want += e["dur"]
            rep = json.loads(run("report", "--json", "--top", "0", "--steps", str(num), path).stdout,
                             parse_float=decimal.Decimal)
            got = sum((o["total_us"] for t in rep["tables"] if t["table"] == "gpu" for o in t["ops"]), decimal.Decimal(0))
            check(abs(got - want) < decimal.Decimal("0.01"), f"{path} --steps {num}: device {got} vs {want} us")


def main():
    test_help_names_every_option()
    test_default_jobs_follow_cpu_affinity()
    test_report_matches_key_averages()
    test_steps_match_profiler_step_spans()
    test_report_counts_on_kineto()
    test_report_steps_filter_gpu()
    test_diff_gate()
    test_analyze_findings()
    with tempfile.TemporaryDirectory() as tmp:
        test_begin_end_and_async(tmp)
        test_slice_merge_fix(tmp)
        test_slice_merge_every_fixture_reads_back(tmp)
        test_merge_extreme_base_times(tmp)
        test_huge_durations_saturate(tmp)
        test_json_summaries_escape_paths(tmp)
        test_merge_odd_flow_ids(tmp)
        test_slice_time_window_far_out(tmp)
        test_stdin_for_multi_pass_commands(tmp)
        test_bad_inputs(tmp)
        test_a_json_array_that_is_not_a_trace_is_refused(tmp)
        test_a_trainprof_run_directory_is_one_run(tmp)
        test_findings_count_inside_steps(tmp)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
