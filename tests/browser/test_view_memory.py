"""The Memory view's device selector, size filter and the callers of
aten::empty rows (issue 31, item 8), in headless chromium, checked against an
independent read of each trace here (Python's json, the TensorBoard plugin's
rules written out below).

1. A synthetic Kineto-shaped trace built here with [memory] events on three
   devices (CPU, cuda:0, cuda:1; none of the Kineto GPU fixtures of
   tests/fixtures was recorded with profile_memory=True), the addresses
   reused across devices: the page data carries, per device, each
   operator's allocations / frees / self and total increase and the
   allocation/free pairs exactly as read here; each aten::empty* allocation
   names the operator that called it. On the page: a device selector
   (CPU, cuda:0, cuda:1; cuda:0 first, the plugin's default), one curve,
   and the peak, operator and allocation tables of the chosen device only;
   switching the device switches all of them; the size filter (min / max
   and a unit) keeps exactly the allocations in [min, max] as typed (per
   device, as the plugin), with a time range chosen on the curve too.
2. A torch 2.13 CPU trace with profile_memory=True (tests/fixtures_gen):
   the same figures against the read here; "aten::_to_copy
   (aten::empty_strided)" rows; the size filter.
3. A run with torch_ops and profile_memory (the Python package): the run's
   own report.html shows the view.
4. Two ranks (issue 31 item 7): two torch 2.13 CPU traces with
   profile_memory=True of different models, written as rank0/ and rank1/ of
   a job directory, paged as the job directory, as the two files named in
   the other order, and as two flat files named by their
   distributedInfo.rank: the ranks are never merged; each rank's devices,
   curve, peak, operators, allocation pairs and events equal the page of
   that rank's trace alone and the read here. On the page: a rank selector
   (TP.rankPicker, ranks 0 and 1), and for the rank chosen its own count,
   curve, peak and tables, every title naming the rank; a page of one rank
   has no selector (part 2).
Screenshots: report_memory.png, report_memory_devices.png,
report_run_memory.png, report_memory_ranks.png (docs/images/ with TP_UPDATE_IMAGES=1).
"""
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_common import torch_ops_run, watch_errors  # noqa: E402
from view_checks import check as check_, run, shoot, table  # noqa: E402


def check(cond, msg):
    check_(cond, msg)
    return cond


BIN = os.environ["TRAINPROF_BIN"]
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# the categories of host spans torch writes (device work and runtime calls are not operators)
HOST_CATS = {"cpu_op", "user_annotation", "python_function"}
STEP = re.compile(r"^ProfilerStep#\d+$")
DEVICE_NAMES = {0: "CPU", 1: "cuda"}


# ---- the independent read -------------------------------------------------------------------

def ns(us):
    return round(us * 1000)


def device_name(a):
    t, i = a.get("Device Type", 0), a.get("Device Id", -1)
    return "CPU" if t == 0 else f"{DEVICE_NAMES[t]}:{i}"


def expected(trace):
    """Per device: {name: [allocs, alloc_bytes, frees, free_bytes, self_inc, total_inc]},
    the pairs (op, caller, bytes, t_alloc, t_free), the peak and the event count.
    Each event goes to the host operators open on its thread at its time ([start, end]);
    an allocation whose innermost operator starts with aten::empty names the nearest
    enclosing operator that does not (the plugin names the direct parent: see docs)."""
    evs = trace["traceEvents"]
    t0 = min(ns(e["ts"]) for e in evs if e.get("ph") != "M" and "ts" in e)
    ops = collections.defaultdict(list)
    for e in evs:
        if e.get("ph") == "X" and e.get("cat") in HOST_CATS and "dur" in e:
            name = "ProfilerStep*" if STEP.match(e["name"]) else e["name"]
            ops[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), name))
    for v in ops.values():
        v.sort(key=lambda o: (o[0], -o[1]))
    mem = sorted((e for e in evs if e.get("name") == "[memory]" and e.get("ph") in ("i", "I")), key=lambda e: e["ts"])
    out = {}
    open_ = {}
    for e in mem:
        a, t = e["args"], ns(e["ts"])
        dev = out.setdefault(device_name(a), {"ops": collections.defaultdict(lambda: [0] * 6), "pairs": [],
                                               "peak": None, "events": 0})
        dev["events"] += 1
        dev["peak"] = a["Total Allocated"] if dev["peak"] is None else max(dev["peak"], a["Total Allocated"])
        stack = [o for o in ops[(e["pid"], e["tid"])] if o[0] <= t <= o[1]]
        b = a["Bytes"]
        op, caller = (stack[-1][2] if stack else None), None
        if stack:
            s = dev["ops"][op]
            if b > 0:
                s[0] += 1
                s[1] += b
            elif b < 0:
                s[2] += 1
                s[3] -= b
            s[4] += b
            for o in stack:
                dev["ops"][o[2]][5] += b
            if op.startswith("aten::empty"):
                caller = next((o[2] for o in reversed(stack[:-1]) if not o[2].startswith("aten::empty")), None)
        key = (device_name(a), a["Addr"])
        if b > 0:
            dev["pairs"].append([op, caller, b, t - t0, None])
            open_[key] = dev["pairs"][-1]
        elif b < 0 and key in open_:
            open_.pop(key)[4] = t - t0
    for dev in out.values():
        dev["ops"] = {k: v for k, v in dev["ops"].items() if any(v)}
    return out


def page_data(path):
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script id="trainprof-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def report(src, out, *more):
    p = subprocess.run([BIN, "report", "--html", out, src, *more], capture_output=True, text=True)
    check(p.returncode == 0, f"report --html {src}: exit {p.returncode}: {p.stderr[-500:]}")
    return page_data(out)["memory"] if p.returncode == 0 else None


def compare_data(mem, want, label):
    """The page data of each device against the read here."""
    if not check(mem and "op_names" in mem and "devices_traced" in mem,
                 f"{label}: no per-device memory data: {sorted(mem or {})}"):
        return {}
    names = mem["op_names"]
    devs = {d["name"]: k for k, d in enumerate(mem["devices_traced"])}
    check(set(devs) == set(want), f"{label}: devices {sorted(devs)}, the trace has {sorted(want)}")
    check(mem["pairs_all"] and mem["n_pairs"] == sum(len(w["pairs"]) for w in want.values()),
          f"{label}: {mem['n_pairs']} pairs (all listed: {mem['pairs_all']})")
    for dname, k in devs.items():
        d, w = mem["devices_traced"][k], want.get(dname)
        if w is None:
            continue
        got = {names[r[0]]: list(r[1:]) for r in d["ops"]}
        check(got == w["ops"], f"{label} {dname}: operators differ: " +
              str({n: (got.get(n), w["ops"].get(n)) for n in set(got) | set(w["ops"]) if got.get(n) != w["ops"].get(n)})[:600])
        check(mem["n_pairs_device"][k] == len(w["pairs"]), f"{label} {dname}: {mem['n_pairs_device'][k]} pairs, read here {len(w['pairs'])}")
        check(d["peak_bytes"] == w["peak"] and d["events"] == w["events"],
              f"{label} {dname}: peak {d['peak_bytes']} / {d['events']} events, read here {w['peak']} / {w['events']}")
        pairs = sorted(((names[p[1]] if p[1] >= 0 else None, names[p[5]] if p[5] >= 0 else None, p[2], p[3], p[4])
                        for p in mem["pairs"] if p[0] == k), key=repr)
        wp = sorted((tuple(p) for p in w["pairs"]), key=repr)
        check(pairs == wp, f"{label} {dname}: pairs differ: {[p for p in pairs if p not in wp][:4]} vs {[p for p in wp if p not in pairs][:4]}")
    return devs


def shown_op(p):
    """An allocation row's operator as the plugin shows it."""
    return f"{p[1]} ({p[0]})" if p[1] else (p[0] or "(no operator)")


def shown_rows(page, card, table_id):
    """(first cells of the rows shown, the number of rows in all: the note says it past the limit)."""
    rows = table(page, table_id)
    note = page.query_selector(f"{card} .tp-table-wrap p.note").text_content()
    m = re.search(r"of (\d+) rows", note)
    return [r[0] for r in rows], int(m.group(1)) if m else (0 if "No rows" in note else len(rows))


def pair_rows(page):
    return shown_rows(page, "#mem-pairs", "#mem-pairs-table")


def size_filter(page, lo, hi, unit):
    page.select_option("#mem-size-unit", str(unit))
    page.fill("#mem-size-min", "" if lo is None else str(lo))
    page.fill("#mem-size-max", "" if hi is None else str(hi))


def in_size(pairs, lo, hi, unit):
    return [p for p in pairs if (lo is None or p[2] >= lo * unit) and (hi is None or p[2] <= hi * unit)]


def open_page(browser, path):
    page = browser.new_page(viewport={"width": 1150, "height": 1300})
    errors = watch_errors(page)
    page.goto("file://" + path + "#memory")
    page.wait_for_selector("#view-memory")
    return page, errors


# ---- 1. three devices ------------------------------------------------------------------------

def synthetic_trace():
    """3 steps of a Kineto-shaped trace: host thread 1 and an autograd thread 2; [memory]
    events on CPU, cuda:0 and cuda:1 (addresses counted from the same base on each device);
    kernels and runtime calls as Kineto writes them."""
    ev = [{"ph": "M", "name": "process_name", "pid": 10, "args": {"name": "python"}},
          {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}}]
    total = collections.Counter()
    addr = collections.Counter()

    def x(name, ts, dur, tid=1, cat="cpu_op"):
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 10, "tid": tid, "ts": ts, "dur": dur, "args": {}})

    def mem(ts, dev, nbytes, tid=1, a=None):
        """An event; returns the tensor (device, address, bytes)."""
        t, i = (0, -1) if dev == "CPU" else (1, int(dev[-1]))
        if a is None:
            addr[dev] += 1
            a = 0x7f0000000000 + addr[dev] * 0x100000
        total[dev] += nbytes
        ev.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 10, "tid": tid, "ts": ts,
                   "args": {"Total Reserved": 0 if dev == "CPU" else -(-total[dev] // (2 << 20)) * (2 << 20),
                            "Total Allocated": total[dev], "Bytes": nbytes, "Addr": a,
                            "Device Type": t, "Device Id": i}})
        return (dev, a, nbytes)

    def free(ts, tensor, tid=1):
        mem(ts, tensor[0], -tensor[2], tid, tensor[1])

    for s in range(3):
        t = 1000 + s * 10000
        x(f"ProfilerStep#{s + 1}", t, 9000, cat="user_annotation")
        x("aten::randn", t + 100, 50)
        x("aten::empty", t + 110, 10)
        c = mem(t + 115, "CPU", 4096 << s)                        # caller aten::randn
        x("aten::to", t + 200, 300)
        x("aten::_to_copy", t + 210, 280)
        x("aten::empty_strided", t + 220, 10)
        cp = mem(t + 225, "cuda:0", (3 << 20) + 512 * s, a=0x7e0000000000)  # caller aten::_to_copy; one address each step
        x("aten::copy_", t + 240, 200)
        x("cudaMemcpyAsync", t + 250, 150, cat="cuda_runtime")
        x("aten::linear", t + 600, 400)
        x("aten::addmm", t + 620, 360)
        big = mem(t + 700, "cuda:0", 64 << 20)                    # no caller: addmm allocates
        x("cudaLaunchKernel", t + 710, 20, cat="cuda_runtime")
        x("aten::zeros_like", t + 1100, 200)
        x("aten::empty_like", t + 1110, 40)
        x("aten::empty_strided", t + 1120, 20)
        z = mem(t + 1130, "cuda:1", 1 << 20)                      # caller aten::zeros_like, not aten::empty_like
        x("aten::zero_", t + 1160, 100)
        x("aten::empty", t + 1400, 10)
        sm = mem(t + 1405, "cuda:1", 512)                         # caller ProfilerStep* (an annotation)
        x("aten::add_", t + 2000, 100)
        free(t + 2050, c)                                         # freed inside aten::add_
        free(t + 2500, cp)                                        # freed in no operator but the step
        x("autograd::engine::evaluate_function: AddmmBackward0", t + 3000, 2000, tid=2)
        x("aten::mm", t + 3100, 600, tid=2)
        x("aten::empty", t + 3200, 20, tid=2)
        g = mem(t + 3210, "cuda:0", 16 << 20, tid=2)              # caller aten::mm on the autograd thread
        free(t + 4000, g, tid=2)
        free(t + 8000, big)
        free(t + 8500, z)
        free(t + 8600, sm)
        ev.append({"ph": "X", "cat": "kernel", "name": "void gemm_kernel<float, 128>(float const*)", "pid": 0, "tid": 7,
                   "ts": t + 720, "dur": 300, "args": {"device": 0, "stream": 7}})
    mem(31000, "cuda:0", 2 << 20)                                 # never freed, outside every operator
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100"}, {"id": 1, "name": "NVIDIA A100"}],
            "traceEvents": ev}


def check_device(page, mem, want, devs, dname, label):
    """The chosen device's curve, peak and tables on the page."""
    k = devs[dname]
    charts = page.query_selector_all('#view-memory svg[data-chart^="mem_"]')
    check(len(charts) == 1 and charts[0].get_attribute("data-device") == dname and
          charts[0].get_attribute("data-chart") == f"mem_{k}" and int(charts[0].get_attribute("data-peak")) == want[dname]["peak"],
          f"{label} {dname}: curves {[(c.get_attribute('data-device'), c.get_attribute('data-peak')) for c in charts]}")
    ops, n = shown_rows(page, "#mem-ops", "#mem-ops-table")
    check(n == len(want[dname]["ops"]) and set(ops) <= set(want[dname]["ops"]),
          f"{label} {dname}: operators table {n} rows {sorted(ops)[:8]}, read here {len(want[dname]['ops'])}")
    rows, n = pair_rows(page)
    check(n == len(want[dname]["pairs"]) and set(rows) <= {shown_op(p) for p in want[dname]["pairs"]},
          f"{label} {dname}: {n} allocation rows {rows[:5]}, read here {len(want[dname]['pairs'])}")
    peak = page.query_selector(f'[data-stat="peak_{k}"] b')
    check(peak is not None and peak.text_content() == page.evaluate(f"TP.fmtBytes({want[dname]['peak']})"),
          f"{label} {dname}: peak stat {peak and peak.text_content()}")
    # every tile one value in one unit (a count and a size were one tile: "13 / 2.62 MiB")
    tiles = page.evaluate("Array.from(document.querySelectorAll('#view-memory .stat b')).map(b => b.textContent)")
    check(tiles and not any(" / " in t for t in tiles), f"{label} {dname}: tiles {tiles}")
    n_alive = page.text_content(f'[data-stat="alive_{k}"] b') if page.query_selector(f'[data-stat="alive_{k}"] b') else None
    check(n_alive is not None and n_alive.replace(",", "").isdigit(), f"{label} {dname}: allocations alive at the peak {n_alive!r}")


def test_devices(browser, tmp):
    src = os.path.join(tmp, "devices.json")
    with open(src, "w") as f:
        json.dump(synthetic_trace(), f)
    trace = json.load(open(src))
    want = expected(trace)
    out = os.path.join(tmp, "devices.html")
    mem = report(src, out)
    devs = compare_data(mem, want, "3 devices")
    if not devs:
        return
    check(mem["devices_traced"][mem["default_device"]]["name"] == "cuda:0", "the first GPU is not shown first")
    callers = collections.Counter((p[0], p[1]) for d in want.values() for p in d["pairs"] if p[1])
    check(callers == {("aten::empty_strided", "aten::_to_copy"): 3, ("aten::empty_strided", "aten::zeros_like"): 3,
                      ("aten::empty", "aten::randn"): 3, ("aten::empty", "ProfilerStep*"): 3, ("aten::empty", "aten::mm"): 3},
          f"the read here: callers {callers}")
    page, errors = open_page(browser, out)
    opts = page.eval_on_selector_all("#mem-device option", "os => os.map(o => [o.textContent.split(' ')[0], o.selected])")
    check([o[0] for o in opts] == ["CPU", "cuda:0", "cuda:1"] and [o[0] for o in opts if o[1]] == ["cuda:0"],
          f"device selector {opts}")
    check_device(page, mem, want, devs, "cuda:0", "3 devices")
    rows, _ = pair_rows(page)
    check("aten::_to_copy (aten::empty_strided)" in rows and "aten::mm (aten::empty)" in rows and "aten::addmm" in rows,
          f"cuda:0 allocations' operators {sorted(set(rows))}")
    # the size filter, live: from 2 to 16 MiB inclusive, then from 3 MiB up, then an empty range
    pairs0 = want["cuda:0"]["pairs"]
    for lo, hi in ((2, 16), (3, None), (None, 2), (20, 10)):
        size_filter(page, lo, hi, 1048576)
        rows, n = pair_rows(page)
        keep = in_size(pairs0, lo, hi, 1048576)
        check(n == len(keep) and sorted(rows) == sorted(shown_op(p) for p in keep),
              f"size {lo}-{hi} MiB: {n} rows {sorted(rows)}, read here {len(keep)}")
    size_filter(page, 3072, 3072.9, 1024)
    _, n = pair_rows(page)
    check(n == len(in_size(pairs0, 3072, 3072.9, 1024)) == 2, f"size 3072-3072.9 KiB: {n} rows")
    check("2 allocations of 3072 KiB to 3072.9 KiB" in page.text_content("#mem-size-note"), page.text_content("#mem-size-note"))
    size_filter(page, 2, 16, 1048576)
    check(page.text_content("#mem-pairs-note").startswith(f"{len(pairs0)} allocations of cuda:0"), page.text_content("#mem-pairs-note"))
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, "report_memory_devices.png", full_page=True)
    size_filter(page, 3072, 3072.9, 1024)
    # another device: everything follows; the filter is kept per device (as the plugin)
    page.select_option("#mem-device", str(devs["cuda:1"]))
    check_device(page, mem, want, devs, "cuda:1", "3 devices")
    rows, _ = pair_rows(page)
    check("aten::zeros_like (aten::empty_strided)" in rows and "ProfilerStep* (aten::empty)" in rows,
          f"cuda:1 allocations' operators {sorted(set(rows))}")
    check(page.input_value("#mem-size-min") == "", "the size filter of cuda:0 applied to cuda:1")
    page.select_option("#mem-device", str(devs["CPU"]))
    check_device(page, mem, want, devs, "CPU", "3 devices")
    check(pair_rows(page)[0] and set(pair_rows(page)[0]) == {"aten::randn (aten::empty)"}, f"CPU rows {pair_rows(page)[0]}")
    page.select_option("#mem-device", str(devs["cuda:0"]))
    check(page.input_value("#mem-size-min") == "3072" and page.input_value("#mem-size-unit") == "1024",
          "cuda:0's size filter is not kept")
    # a range on the curve: the allocations of this device alive in it, sizes filtered too
    size_filter(page, None, None, 1048576)
    svg = page.query_selector('svg[data-chart^="mem_"]')
    box = svg.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.5)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.65, box["y"] + box["height"] * 0.5, steps=4)
    page.mouse.up()
    rng = page.query_selector("#mem-range")
    a, b = float(rng.get_attribute("data-a") or 0), float(rng.get_attribute("data-b") or 0)
    inside = [p for p in pairs0 if p[3] <= b and (p[4] is None or p[4] >= a)]
    _, n = pair_rows(page)
    check(0 < a < b and n == len(inside) and 0 < n < len(pairs0), f"range {a:.0f}-{b:.0f} ns: {n} rows, read here {len(inside)}")
    size_filter(page, 10, None, 1048576)
    _, n = pair_rows(page)
    check(n == len(in_size(inside, 10, None, 1048576)), f"range and size: {n} rows")
    ops = {r[0] for r in table(page, "#mem-ops-table")}
    check(ops and ops <= set(want["cuda:0"]["ops"]), f"the operators in the range are not cuda:0's: {sorted(ops)}")
    check(not errors, f"3 devices page console: {errors}")
    page.close()


# ---- 2. torch 2.13 on the CPU --------------------------------------------------------------

def test_torch(browser, tmp):
    gen = os.path.join(tmp, "torch")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "fixtures_gen", "gen_torch_traces.py"), gen],
                       capture_output=True, text=True)
    if "No module named 'torch'" in p.stderr:
        print("note: no torch here: the torch 2.13 trace is not tried")
        return
    if not check(p.returncode == 0, f"gen_torch_traces: {p.stderr[-400:]}"):
        return
    src = os.path.join(gen, "full.pt.trace.json")
    want = expected(json.load(open(src)))
    out = os.path.join(tmp, "torch.html")
    mem = report(src, out)
    devs = compare_data(mem, want, "torch")
    if not devs:
        return
    pairs = want["CPU"]["pairs"]
    check(sum(1 for p in pairs if p[1] == "aten::_to_copy") >= 10, "no aten::_to_copy (aten::empty_strided) allocation in torch's trace")
    page, errors = open_page(browser, out)
    check(page.eval_on_selector("#mem-device", "s => s.disabled && s.options.length === 1"), "one device: the selector is not off")
    check(page.query_selector("#mem-rank") is None and "rank" not in page.text_content("#view-memory h2"),
          "a page of one rank has a rank selector or names a rank")
    check_device(page, mem, want, devs, "CPU", "torch")
    page.fill("#mem-pairs .tp-search", "(aten::empty")
    _, n = pair_rows(page)
    check(n == sum(1 for p in pairs if p[1]), f"torch: {n} rows of aten::empty* with their caller, read here {sum(1 for p in pairs if p[1])}")
    page.fill("#mem-pairs .tp-search", "aten::_to_copy (")
    rows, n = pair_rows(page)
    check(n == sum(1 for p in pairs if p[1] == "aten::_to_copy") and set(rows) == {"aten::_to_copy (aten::empty_strided)"},
          f"torch: {n} rows of aten::_to_copy (aten::empty_strided): {set(rows)}")
    page.fill("#mem-pairs .tp-search", "")
    size_filter(page, 100, 400, 1024)
    rows, n = pair_rows(page)
    check(n == len(in_size(pairs, 100, 400, 1024)) > 0, f"torch: size 100-400 KiB: {n} rows, read here {len(in_size(pairs, 100, 400, 1024))}")
    size_filter(page, None, None, 1024)
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, "report_memory.png", clip={"x": 0, "y": 0, "width": 1150, "height": 1650})
    check(not errors, f"torch page console: {errors}")
    page.close()


# ---- 3. a run's own page -------------------------------------------------------------------

def test_run(browser, tmp):
    logs = os.path.join(tmp, "runs")
    p = torch_ops_run(logs)
    if p is None:
        return
    if not check(p.returncode == 0, f"torch_ops run: {p.stderr[-600:]}"):
        return
    runs = [os.path.join(logs, d) for d in os.listdir(logs)]
    page, errors = open_page(browser, os.path.join(runs[0], "report.html"))
    check(page.query_selector('svg[data-chart="mem_0"][data-device="CPU"]') is not None and
          page.query_selector("#mem-pairs-table tbody tr") is not None, "the run's page has no traced memory")
    shoot(page, "report_run_memory.png", clip={"x": 0, "y": 0, "width": 1150, "height": 1300})
    check(not errors, f"run page console: {errors}")
    page.close()


# ---- 4. two ranks --------------------------------------------------------------------------

# rank r: a model 64 x (r + 1) wide on batches of 16 x (r + 1), 2 + r active steps
GEN_RANKS = """
import os, sys, torch, torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule
for r in (0, 1):
    torch.manual_seed(r)
    m = nn.Sequential(nn.Linear(32, 64 * (r + 1)), nn.ReLU(), nn.Linear(64 * (r + 1), 8))
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    d = os.path.join(sys.argv[1], "rank%d" % r)
    os.makedirs(d)
    done = lambda p, d=d: p.export_chrome_trace(os.path.join(d, "train.pt.trace.json"))
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2 + r, repeat=1),
                 profile_memory=True, record_shapes=True, on_trace_ready=done) as p:
        for _ in range(3 + r):
            loss = m(torch.randn(16 * (r + 1), 32)).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            p.step()
"""


def rank_part(mem, slots):
    """The page data of one rank's device slots, renumbered as a page of that rank alone has them."""
    idx = {k: i for i, k in enumerate(slots)}
    return {"op_names": mem["op_names"], "pairs_all": mem["pairs_all"],
            "devices_traced": [{f: v for f, v in mem["devices_traced"][k].items() if f != "rank"} for k in slots],
            "pairs": [[idx[p[0]]] + p[1:] for p in mem["pairs"] if p[0] in idx],
            "n_pairs": sum(mem["n_pairs_device"][k] for k in slots),
            "n_pairs_device": [mem["n_pairs_device"][k] for k in slots],
            "events": [e[:3] + [idx[e[3]]] for e in mem["events"] if e[3] in idx] if mem["events"] is not None else None}


def by_names(mem):
    """The figures of a page's devices, operators named: comparable across pages."""
    n = mem["op_names"]
    name = lambda i: n[i] if i >= 0 else None  # noqa: E731
    devs = mem["devices_traced"]
    return {"devices": {d["name"]: (d["type"], d["id"], d["events"], d["peak_bytes"], d["peak_t"], d["curve"],
                                    sorted([name(r[0])] + r[1:] for r in d["ops"])) for d in devs},
            "pairs": sorted((devs[p[0]]["name"], name(p[1]), p[2], p[3], p[4], name(p[5])) for p in mem["pairs"]),
            "n_pairs": {devs[k]["name"]: c for k, c in enumerate(mem["n_pairs_device"])},
            "events": None if mem["events"] is None else [(e[0], e[1], name(e[2]), devs[e[3]]["name"]) for e in mem["events"]]}


def ranks_apart(mem, want, alone, label):
    """Each rank of a page of two: in rank order, its own devices, equal to its page alone and to the read here."""
    rk = mem and mem.get("ranks")
    if not check(isinstance(rk, list) and [r["rank"] for r in rk] == [0, 1],
                 f"{label}: ranks {rk and [r.get('rank') for r in rk]}: merged"):
        return
    check(mem["n_events"] == sum(w["events"] for r in want for w in want[r].values()), f"{label}: {mem['n_events']} events")
    for r in rk:
        part = rank_part(mem, r["devices"])
        check(all(mem["devices_traced"][k]["rank"] == r["rank"] for k in r["devices"]), f"{label}: rank {r['rank']}'s devices")
        check(r["n_events"] == sum(w["events"] for w in want[r["rank"]].values()), f"{label}: rank {r['rank']}: {r['n_events']} events")
        compare_data(part, want[r["rank"]], f"{label} rank {r['rank']}")
        got, alo = by_names(part), by_names(alone[r["rank"]])
        for f in got:
            check(got[f] == alo[f], f"{label}: rank {r['rank']}'s {f} differ from its page alone: {str(got[f])[:300]} vs {str(alo[f])[:300]}")


def test_ranks(browser, tmp):
    job = os.path.join(tmp, "job")
    os.makedirs(job)
    p = subprocess.run([sys.executable, "-c", GEN_RANKS, job], capture_output=True, text=True)
    if "No module named 'torch'" in p.stderr:
        print("note: no torch here: the two ranks are not tried")
        return
    if not check(p.returncode == 0, f"two ranks' traces: {p.stderr[-400:]}"):
        return
    src = [os.path.join(job, f"rank{r}", "train.pt.trace.json") for r in (0, 1)]
    traces = [json.load(open(s)) for s in src]
    want = {r: expected(t) for r, t in enumerate(traces)}
    check(want[0]["CPU"]["peak"] != want[1]["CPU"]["peak"] and want[0]["CPU"]["events"] != want[1]["CPU"]["events"],
          "the read here: the two ranks are alike")
    alone = {r: report(src[r], os.path.join(tmp, f"alone{r}.html")) for r in (0, 1)}
    for r in (0, 1):
        compare_data(alone[r], want[r], f"rank {r} alone")
    out = os.path.join(tmp, "ranks.html")
    ranks_apart(report(job, out), want, alone, "job directory")
    ranks_apart(report(src[1], os.path.join(tmp, "ranks_r.html"), src[0]), want, alone, "rank1/ rank0/ named")
    flat = []
    for r in (1, 0):  # distributedInfo.rank names them; named rank 1 first
        t = dict(traces[r], distributedInfo={"backend": "gloo", "rank": r, "world_size": 2})
        flat.append(os.path.join(tmp, f"{'ab'[1 - r]}.pt.trace.json"))
        with open(flat[-1], "w") as f:
            json.dump(t, f)
    ranks_apart(report(flat[0], os.path.join(tmp, "ranks_d.html"), flat[1]), want, alone, "distributedInfo")

    mem = page_data(out)["memory"]
    page, errors = open_page(browser, out)
    opts = page.eval_on_selector_all("#mem-rank option", "os => os.map(o => o.textContent)")
    check(opts == ["0", "1"], f"rank selector {opts}")
    for i, r in enumerate(mem.get("ranks") or []):
        rank = r["rank"]
        page.select_option("#mem-rank", index=i)
        devs = {mem["devices_traced"][k]["name"]: k for k in r["devices"]}
        label = f"ranks page rank {rank}"
        check(page.eval_on_selector_all("#mem-device option", "os => os.map(o => Number(o.value))") == r["devices"],
              f"{label}: device selector is not the rank's")
        check_device(page, mem, want[rank], devs, "CPU", label)
        chart = page.query_selector('#view-memory svg[data-chart^="mem_"]')
        check(chart.get_attribute("data-rank") == str(rank), f"{label}: chart data-rank {chart.get_attribute('data-rank')}")
        titles = page.eval_on_selector_all("#view-memory .card h2", "hs => hs.map(h => h.textContent)")
        check(len(titles) == 4 and all(t.endswith(f"(rank {rank})") for t in titles), f"{label}: titles {titles}")
        check(page.text_content("#mem-chart h3") == f"rank {rank} \u00b7 CPU", f"{label}: {page.text_content('#mem-chart h3')}")
        n = sum(w["events"] for w in want[rank].values())
        count = page.text_content("#mem-count")
        check(count.startswith(f"{page.evaluate(f'TP.fmtNum({n})')} [memory] events of rank {rank} on 1 device"), f"{label}: {count}")
        stat = page.text_content(f'[data-stat="peak_{devs["CPU"]}"]')
        check(f"rank {rank} \u00b7 CPU peak allocated" in stat, f"{label}: peak stat {stat}")
        npairs = page.evaluate(f"TP.fmtNum({len(want[rank]['CPU']['pairs'])})")
        check(page.text_content("#mem-pairs-note").startswith(f"{npairs} allocations of rank {rank} \u00b7 CPU"),
              f"{label}: {page.text_content('#mem-pairs-note')[:80]}")
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, "report_memory_ranks.png", clip={"x": 0, "y": 0, "width": 1150, "height": 1300})
    check(not errors, f"ranks page console: {errors}")
    page.close()


if __name__ == "__main__":
    sys.exit(run(test_devices, test_torch, test_run, test_ranks, prefix="tp_view_memory_"))
