"""The report page's framework, Overview and Memory views in a real browser
(headless Debian chromium via playwright), checked against numbers computed
here with Python's json, torch's own key_averages() tables and HTA.

1. Kineto GPU traces of tests/fixtures: the page loads with no console
   error; the step categories (per step and in total) equal `trainprof steps
   --json`; the GPUs equal deviceProperties; GPU utilization equals the steps'
   busy time; against HTA's temporal breakdown (kernel span, last step
   dropped) the first n-1 steps' kernel / non-kernel GPU time agree within
   5%; a trace without [memory] events lists Memory as not in the trace.
2. A torch 2.13 CPU trace (tests/fixtures_gen, profile_memory): each
   operator's self and total memory increase on the page equals torch's
   self_cpu_memory_usage / cpu_memory_usage; the peak equals the highest
   "Total Allocated"; the allocation/free pairs equal a matching done here;
   dragging across the curve filters the allocation table to that range.
3. Hostile names (<!--, <script, </script, U+2028/U+2029, quotes,
   backslashes) reach the page as text, and the page still draws.
4. A view that throws shows its error in its own tab; the others draw.
6. A run with torch_ops and profile_memory: the run's own report.html
   holds torch's operators (its [memory] events, charged to aten:: ops).
5. `report --html` on an empty directory or a non-trace file exits 2 saying
   what was expected.
Screenshots go to <build>/browser-artifacts/.
"""
import glob
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_common import artifacts_dir, browser_or_skip, launch, torch_ops_run, watch_errors  # noqa: E402

sync_playwright = browser_or_skip()

BIN = os.environ["TRAINPROF_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")  # the repository's copies (see its README.md)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def load_json(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def page_data(path):
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script id="trainprof-data" type="application/json">(.*?)</script>', html, re.S)
    check(m is not None, f"{path}: no data script")
    return json.loads(m.group(1)) if m else {}


def report(src, out):
    p = subprocess.run([BIN, "report", "--html", out, src], capture_output=True, text=True)
    check(p.returncode == 0, f"report --html {src}: exit {p.returncode} {p.stderr}")
    return page_data(out) if p.returncode == 0 else None


def open_page(browser, path, tab=None):
    page = browser.new_page(viewport={"width": 1150, "height": 900})
    errors = watch_errors(page)
    page.goto("file://" + os.path.abspath(path) + ("#" + tab if tab else ""), wait_until="load")
    return page, errors


# ---- 1. Overview on Kineto GPU traces ------------------------------------------------

PARTS = ["kernel", "memcpy", "memset", "communication", "runtime", "data_loading", "cpu", "other"]


def sm_efficiency(raw, steps):
    """The plugin's estimate: per device, the sum of min(blocks per SM, 1) of
    the running kernels capped at 1, integrated over the steps' extent."""
    lo = min(s["start_us"] for s in steps)
    hi = max(s["start_us"] + s["dur_us"] for s in steps)
    span = sum(s["dur_us"] for s in steps)
    edges = {}
    for e in raw["traceEvents"]:
        a = e.get("args") or {}
        if e.get("ph") == "X" and e.get("cat") == "kernel" and "blocks per SM" in a:
            v = min(float(a["blocks per SM"]), 1.0)
            d = edges.setdefault(a.get("device", e.get("pid")), [])
            d += [(float(e["ts"]), v), (float(e["ts"]) + float(e["dur"]), -v)]
    busy = 0.0
    for d in edges.values():
        d.sort(key=lambda x: x[0])
        level = 0.0
        for (t, v), (t2, _) in zip(d, d[1:] + [(d[-1][0], 0)]):
            level += v
            a, b = max(t, lo), min(t2, hi)
            if b > a and level > 1e-6:
                busy += min(level, 1.0) * (b - a)
    return 100 * busy / (span * len(edges))


def hta_breakdown(trace, tmp):
    """HTA's temporal breakdown of one trace, or None without HTA."""
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        print("note: HTA not installed, its cross-check skipped")
        return None
    d = os.path.join(tmp, "hta_" + os.path.basename(trace).split(".")[0])
    os.makedirs(d, exist_ok=True)
    os.symlink(os.path.abspath(trace), os.path.join(d, "rank-0.json.gz"))
    return TraceAnalysis(trace_dir=d).get_temporal_breakdown(visualize=False).iloc[0]


def test_overview(browser, tmp):
    for name in ["nccl_parser_config__nccl_data", "amd_trace__mi250_minitoy_train_ROCm6_2_kineto",
                 "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace", "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace"]:
        src = os.path.join(FIXTURES, name + ".json.gz")
        out = os.path.join(tmp, name + ".html")
        data = report(src, out)
        if data is None:
            continue
        raw = load_json(src)
        steps = json.loads(subprocess.run([BIN, "steps", "--json", src], capture_output=True, text=True).stdout)["steps"]
        ov = data["overview"]
        cat = ov["categories"]
        check((cat is None) == (not steps), f"{name}: categories {cat is not None} but {len(steps)} steps")
        if cat:
            check(cat["n_steps"] == len(steps), f"{name}: {cat['n_steps']} steps, trainprof steps says {len(steps)}")
            for i, part in enumerate(PARTS):
                want = sum(s[part + "_us"] for s in steps) * 1e3
                check(abs(cat["total_ns"][i] - want) <= len(steps) + 1, f"{name}: {part} total {cat['total_ns'][i]} != {want}")
            if ov["gpu"]:
                busy = sum(s["gpu_util_pct"] * s["dur_us"] for s in steps) / sum(s["dur_us"] for s in steps)
                check(abs(ov["gpu"]["utilization_pct"] - busy) < 0.01, f"{name}: utilization {ov['gpu']['utilization_pct']} != {busy}")
        if cat and ov["gpu"] and ov["gpu"]["sm_efficiency_pct"] is not None:
            want = sm_efficiency(raw, steps)
            check(abs(ov["gpu"]["sm_efficiency_pct"] - want) < 0.05, f"{name}: est. SM efficiency {ov['gpu']['sm_efficiency_pct']} != {want}")
            check(ov["gpu"]["sm_efficiency_pct"] <= ov["gpu"]["utilization_pct"] + 1e-6, f"{name}: SM efficiency above utilization")
        props = raw.get("deviceProperties", []) if isinstance(raw, dict) else []
        check([g["name"] for g in ov["gpus"]] == [p["name"] for p in props], f"{name}: GPUs {ov['gpus']} vs deviceProperties")
        page, errors = open_page(browser, out)
        check(not errors, f"{name}: console {errors}")
        if cat:
            cols = page.query_selector_all('svg[data-chart="categories"] g.col')
            check(len(cols) == len(steps), f"{name}: {len(cols)} step bars for {len(steps)} steps")
            for c, s in zip(cols, steps):
                check(abs(float(c.get_attribute("data-total")) - s["dur_us"] * 1e3) <= 1, f"{name}: step {s['step']} bar total")
            labels = page.query_selector_all('svg[data-chart="categories_total"] text.val')
            check(len(labels) == sum(1 for t in cat["total_ns"] if t > 0), f"{name}: not every total bar is labelled")
        check(len(page.query_selector_all("#gpu-table tbody tr")) == len(props), f"{name}: GPU table rows")
        if props:
            first = page.query_selector("#gpu-table tbody tr td").text_content()
            check(first == f"{props[0]['name']} #{props[0].get('id', 0)}", f"{name}: first GPU {first}")
            used = page.evaluate("Array.from(document.querySelectorAll('#gpu-table tbody tr')).map(tr => tr.lastElementChild.textContent)")
            check(used.count("-") >= len(props) - 1, f"{name}: the GPUs table marks more than the rank's device: {used}")
        # one rank: no rank selector, titles as before; every finding says which traced steps it comes from (issue 31)
        check(ov.get("ranks") is None and page.query_selector("#ov-rank") is None, f"{name}: a rank selector on a page of one rank")
        froms = page.evaluate("[...document.querySelectorAll('#findings-list .finding .from')].map(e => e.textContent)")
        want_from = f"{len(steps)} traced step" if len(steps) > 1 else f"traced step #{steps[0]['step']}" if steps else "the trace"
        check(len(froms) == len(ov["findings"]) and all(want_from in t and "rank" not in t for t in froms),
              f"{name}: findings' sources {froms}, want {want_from!r}")
        mem_tab = page.query_selector('#tabs button[data-view="memory"]')
        check(mem_tab and "missing" in mem_tab.get_attribute("class"), f"{name}: Memory tab should say not in this trace")
        page.screenshot(path=os.path.join(artifacts_dir(), f"views_overview_{name[:20]}.png"), full_page=True)
        page.close()
        if name.startswith("nccl") and cat:
            hta = hta_breakdown(src, tmp)
            if hta is not None:  # HTA leaves the last step out and spans the kernels
                first = steps[:-1]
                kern = sum(s["kernel_us"] for s in first)
                other = sum(s["memcpy_us"] + s["memset_us"] + s["communication_us"] for s in first)
                check(abs(kern - hta["compute_time(us)"]) <= 0.05 * kern, f"HTA compute {hta['compute_time(us)']} vs kernel {kern}")
                check(abs(other - hta["non_compute_time(us)"]) <= 0.05 * other, f"HTA non-compute {hta['non_compute_time(us)']} vs {other}")
                print(f"HTA: compute {hta['compute_time(us)']} us vs {kern:.0f}; non-compute {hta['non_compute_time(us)']} vs {other:.0f};"
                      f" idle {hta['idle_time_pctg']}% of the kernel span vs {100 - ov['gpu']['utilization_pct']:.2f}% of the steps")


# ---- 2. Memory on a torch 2.13 trace ------------------------------------------------------

def memory_events(trace):
    return sorted((e for e in trace["traceEvents"] if e.get("name") == "[memory]"), key=lambda e: e["ts"])


def pairs_of(mem):
    """(bytes, alloc us, free us or None) of each allocation, matched by device and address."""
    open_, pairs = {}, []
    for e in mem:
        a = e["args"]
        key = (a.get("Device Type"), a.get("Device Id"), a["Addr"])
        if a["Bytes"] > 0:
            pairs.append([a["Bytes"], e["ts"], None])
            open_[key] = len(pairs) - 1
        elif a["Bytes"] < 0 and key in open_:
            pairs[open_.pop(key)][2] = e["ts"]
    return pairs


def device_ops(mem, device):
    """{name: statistics} of one device's operators as the page data carries them."""
    dev = [d for d in mem.get("devices_traced", []) if d["name"] == device]
    keys = ("allocs", "alloc_bytes", "frees", "free_bytes", "self_inc", "total_inc")
    return {mem["op_names"][r[0]]: dict(zip(keys, r[1:])) for r in (dev[0]["ops"] if dev else [])}


def test_memory(browser, tmp):
    gen = os.path.join(tmp, "torch")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "fixtures_gen", "gen_torch_traces.py"), gen],
                       capture_output=True, text=True)
    check(p.returncode == 0, f"gen_torch_traces: {p.stderr[-400:]}")
    if p.returncode:
        return
    src = os.path.join(gen, "full.pt.trace.json")
    out = os.path.join(tmp, "torch.html")
    data = report(src, out)
    if data is None:
        return
    mem = data["memory"]
    ka = load_json(os.path.join(gen, "full.key_averages.json"))["by_name"]
    ops = device_ops(mem, "CPU")
    compared = 0
    for r in ka:
        if not r["self_cpu_memory_bytes"] and not r["cpu_memory_bytes"]:
            continue
        o = ops.get(r["key"])
        compared += 1
        check(o is not None and o["self_inc"] == r["self_cpu_memory_bytes"] and o["total_inc"] == r["cpu_memory_bytes"],
              f"memory of {r['key']}: page {o and (o['self_inc'], o['total_inc'])}, torch "
              f"{(r['self_cpu_memory_bytes'], r['cpu_memory_bytes'])}")
    check(compared >= 10, f"only {compared} operators with memory in key_averages")
    events = memory_events(load_json(src))
    check(mem["n_events"] == len(events), f"{mem['n_events']} memory events, the trace has {len(events)}")
    peak = max(e["args"]["Total Allocated"] for e in events)
    pairs = pairs_of(events)
    check(mem["n_pairs"] == len(pairs), f"{mem['n_pairs']} pairs, matched here {len(pairs)}")
    page, errors = open_page(browser, out, "memory")
    svg = page.query_selector('svg[data-chart="mem_0"]')
    check(svg is not None and int(svg.get_attribute("data-peak")) == peak, f"peak {svg and svg.get_attribute('data-peak')} != {peak}")
    row = [tr for tr in page.query_selector_all("#mem-ops-table tbody tr")
           if tr.query_selector("td").text_content() == "aten::empty"]
    want = [r for r in ka if r["key"] == "aten::empty"][0]
    check(row and int(ops["aten::empty"]["allocs"]) > 0, "aten::empty not in the memory operators table")
    shown = page.evaluate("TP.fmtBytes(%d)" % want["self_cpu_memory_bytes"])
    check(row and shown in [td.text_content() for td in row[0].query_selector_all("td")], f"aten::empty self increase {shown} not shown")
    check(page.query_selector("#mem-pairs-table tbody tr") is not None, "no allocation rows")
    # drag across the middle fifth of the chart: the pairs table follows
    box = svg.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + box["height"] * 0.5)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5, steps=4)
    page.mouse.up()
    rng = page.query_selector("#mem-range")
    a, b = float(rng.get_attribute("data-a")), float(rng.get_attribute("data-b"))
    check(0 < a < b, f"range {a}-{b}")
    inside = [p for p in mem["pairs"] if p[3] <= b and (p[4] is None or p[4] >= a)]
    note = page.query_selector("#mem-pairs .tp-table-wrap p.note").text_content()
    n_rows = len(page.query_selector_all("#mem-pairs-table tbody tr"))
    check(n_rows == min(25, len(inside)) and (len(inside) <= 25 or f"of {len(inside)} rows" in note),
          f"range {a:.0f}-{b:.0f} ns: {n_rows} rows ({note!r}), {len(inside)} pairs in it")
    page.screenshot(path=os.path.join(artifacts_dir(), "views_memory_torch.png"), full_page=True)
    page.click('#tabs button[data-view="overview"]')
    check(page.is_visible("#view-overview") and not page.is_visible("#view-memory"), "tabs do not switch")
    page.screenshot(path=os.path.join(artifacts_dir(), "views_overview_torch.png"), full_page=True)
    check(not errors, f"torch page console: {errors}")
    page.close()


# ---- 3. hostile names ---------------------------------------------------------------------

HOSTILE = ["<!--<script>", "</script><b>bold</b>", "a\u2028b\u2029c", 'quote " and \\ backslash', "<script>alert(1)</script>"]


def test_hostile(browser, tmp):
    ev = [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}]
    for i, n in enumerate(HOSTILE):
        ts = 10 + i * 100
        ev.append({"ph": "X", "cat": "cpu_op", "name": n, "pid": 1, "tid": 1, "ts": ts, "dur": 50})
        ev.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts + 1,
                   "args": {"Total Reserved": 0, "Total Allocated": 1000 * (i + 1), "Bytes": 1000, "Device Id": -1,
                            "Device Type": 0, "Addr": 4096 * (i + 1)}})
    src = os.path.join(tmp, "hostile.json")
    with open(src, "w") as f:
        json.dump({"traceEvents": ev}, f, ensure_ascii=False)
    out = os.path.join(tmp, "hostile.html")
    data = report(src, out)
    if data is None:
        return
    html = open(out, encoding="utf-8").read()
    block = html.split('type="application/json">', 1)[1].split("</script>", 1)[0]
    check("<" not in block and "\u2028" not in block and "\u2029" not in block, "the data block holds a raw < or U+2028/9")
    check(set(HOSTILE) <= set(device_ops(data["memory"], "CPU")), "hostile names not in the data")
    page, errors = open_page(browser, out, "memory")
    names = [td.text_content() for td in page.query_selector_all("#mem-ops-table tbody tr td:first-child")]
    check(set(HOSTILE) <= set(names), f"hostile names on the page: {names}")
    check(page.query_selector("#mem-ops-table b") is None, "a name became markup")
    check(not errors, f"hostile page console: {errors}")
    page.close()
    # a run directory's zone names with quotes and backslashes show as written
    run = os.path.join(tmp, "quoted_run")
    os.makedirs(run)
    name = 'zone "q" \\ back\\slash <!--'
    with open(os.path.join(run, "operations.json"), "w") as f:
        json.dump([{"name": name, "count": 3, "total_time": 0.3, "self_time": 0.3, "avg_time": 0.1,
                    "min_time": 0.1, "max_time": 0.1, "top_level": True}], f)
    with open(os.path.join(run, "timing_profile.json"), "w") as f:
        json.dump([{"step": i, "total_batch_time": 0.2, "samples_per_second": 10.0,
                    "operations": {name: {"time": 0.1, "count": 1}}} for i in range(3)], f)
    out = os.path.join(tmp, "quoted.html")
    if report(run, out) is None:
        return
    page, errors = open_page(browser, out)
    cell = page.query_selector("#ops-table tbody tr td")
    check(cell is not None and cell.text_content() == name, f"zone name shows as {cell and cell.text_content()!r}, not {name!r}")
    check(not errors, f"quoted run page console: {errors}")
    page.close()


def test_warmup(browser, tmp):
    """A first step 20x the others is marked above the axis, not flattening them."""
    ev, t = [], 0
    for i in range(30):
        d = 500000 if i == 0 else 20000 + (i % 5) * 1000
        ev.append({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#%d" % i, "pid": 1, "tid": 1, "ts": t, "dur": d})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 10, "dur": d // 2})
        t += d + 10
    src = os.path.join(tmp, "warmup.json")
    with open(src, "w") as f:
        json.dump({"traceEvents": ev}, f)
    out = os.path.join(tmp, "warmup.html")
    if report(src, out) is None:
        return
    page, errors = open_page(browser, out)
    marked = page.query_selector_all('svg[data-chart="step_ms"] g.clipped')
    check(len(marked) == 1 and float(marked[0].get_attribute("data-y")) == 500e6, "the warm-up step is not marked on the step chart")
    ticks = [t.text_content() for t in page.query_selector_all('svg[data-chart="step_ms"] text.ytick')]
    check(ticks and ticks[-1] in ("28 ms", "30 ms", "26 ms"), f"step chart axis not clipped: {ticks}")
    check(len(page.query_selector_all('svg[data-chart="categories"] rect.clip')) == 1, "the warm-up bar is not clipped")
    check(not errors, f"warm-up page console: {errors}")
    page.close()


# ---- 4. a view that throws ------------------------------------------------------------------

def test_failing_view(browser, tmp):
    src = os.path.join(FIXTURES, "nccl_parser_config__nccl_data.json.gz")
    out = os.path.join(tmp, "nccl_failing.html")
    if report(src, out) is None:
        return
    html = open(out, encoding="utf-8").read()
    bad = "<script>TP.view({key:'overview2',title:'Broken',order:15,render(){throw new Error('broken view')}});</script>\n"
    html = html.replace("<script>TP.start();</script>", bad + "<script>TP.start();</script>")
    html = html.replace('{"meta":', '{"overview2":{},"meta":', 1)
    bad_out = os.path.join(tmp, "failing.html")
    with open(bad_out, "w", encoding="utf-8") as f:
        f.write(html)
    page, errors = open_page(browser, bad_out, "overview2")
    err = page.query_selector("#view-overview2 .error")
    check(err is not None and "broken view" in err.text_content(), "the failing view's tab does not show its error")
    check(page.query_selector('#view-overview svg[data-chart="categories"]') is not None, "the other views stopped drawing")
    check(any("broken view" in e for e in errors), "a failing view is not reported on the console")
    page.close()


# ---- 6. a run's own report.html with torch_ops ---------------------------------------

def test_run_torch_ops(browser, tmp):
    logs = os.path.join(tmp, "torch_ops_runs")
    p = torch_ops_run(logs)
    if p is None:
        return
    check(p.returncode == 0, f"torch_ops run: {p.stderr[-600:]}")
    pages = glob.glob(os.path.join(logs, "*", "report.html"))
    check(len(pages) == 1, f"report.html of the torch_ops run: {pages}")
    if not pages:
        return
    mem = page_data(pages[0]).get("memory") or {}
    names = {n for n, o in device_ops(mem, "CPU").items() if o["allocs"]}
    check(mem.get("n_events", 0) > 0 and any(n.startswith("aten::") for n in names),
          f"the run's report.html lacks torch's operators: {mem.get('n_events')} memory events, {sorted(names)[:8]}")
    page, errors = open_page(browser, pages[0], "memory")
    check(page.query_selector('svg[data-chart="mem_0"]') is not None, "no memory curve on the run's page")
    check(not errors, f"torch_ops run page console: {errors}")
    page.close()


# ---- 5. inputs that are not traces --------------------------------------------------------

def test_bad_inputs(tmp):
    empty = os.path.join(tmp, "empty_dir")
    os.makedirs(empty)
    text = os.path.join(tmp, "notes.txt")
    with open(text, "w") as f:
        f.write("hello\n")
    obj = os.path.join(tmp, "other.json")
    with open(obj, "w") as f:
        f.write('{"a": 1}\n')
    for src in (empty, text, obj):
        out = os.path.join(tmp, "bad.html")
        p = subprocess.run([BIN, "report", "--html", out, src], capture_output=True, text=True)
        check(p.returncode == 2 and src in p.stderr and "expected" in p.stderr,
              f"report --html {src}: exit {p.returncode}, {p.stderr.strip()!r}")
        check(not os.path.exists(out), f"report --html {src} wrote a page")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = launch(p)
        test_overview(browser, tmp)
        test_memory(browser, tmp)
        test_hostile(browser, tmp)
        test_failing_view(browser, tmp)
        test_warmup(browser, tmp)
        test_run_torch_ops(browser, tmp)
        test_bad_inputs(tmp)
        browser.close()
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
