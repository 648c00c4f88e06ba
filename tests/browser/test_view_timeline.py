#!/usr/bin/env python3
"""The Timeline view in headless chromium, on real traces:

- a torch 2.13 CPU trace (tests/fixtures_gen, record_shapes, profile_memory,
  with_stack, with_modules): carried whole; its spans, steps and memory
  counter equal an independent count of the trace file and `trainprof steps
  --json`; wheel zoom, drag pan, keys and hover/click really work on the
  canvas;
- a Kineto GPU trace (../shared/fixtures): every launch-to-kernel flow of the
  page is one the trace's args.correlation makes;
- a trace too big to carry: the page carries the slowest, median and
  fastest steps of `trainprof steps --json` with all their events, says
  what it left out, and stays under its event budget;
- issue 31, on the Kineto GPU traces of tests/fixtures: rows grouped by GPU
  and process and named by the trace's own labels, the junk rows (an
  independent count of the folding rule) in a closed group a click opens,
  the axis not stretched by them, GPU utilization / est. SM efficiency
  tracks equal to an independent computation of the TensorBoard plugin's
  rules; the step band, buttons and picks equal `trainprof steps --json`
  (the plugin's GPU rule, issue 31 item 1) and the view names the rule;
  forward->backward flows of a torch 2.13 trace made here equal to
  the trace's fwdbwd flow pairs, drawn with the toggle, named on hover;
- issue 31 item 7, a page of the two rank traces of tests/fixtures: a rank
  selector; for each rank chosen, the step band and the slowest / median /
  fastest buttons are that rank's own of `trainprof steps --json` of its
  trace, each label naming the rank; every group says "rank R"; a one-rank
  page has no selector and no rank in its labels.
No console error anywhere. Screenshots go to the browser artifacts (and
docs/images/ with TP_UPDATE_IMAGES=1). Exit 77 without chromium."""
import decimal
import gzip
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from browser_common import watch_errors  # noqa: E402
from view_checks import check, run, shoot  # noqa: E402

BIN = os.environ.get("TRAINPROF_BIN", "build/trainprof")
SRC = os.environ.get("TP_SOURCE_DIR", ".")
FIX = os.path.normpath(os.environ.get("TP_FIXTURES", os.path.join(SRC, "..", "shared", "fixtures")))  # a path as a user writes it (pages show it)
CARRY = 150000  # TPA_TL_CARRY


def load_trace(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d


def drawable(events):
    """What the view draws, counted independently: complete spans with a
    duration >= 0, instants, counters."""
    out = []
    for e in events:
        ph = e.get("ph")
        if "ts" not in e or ph not in ("X", "i", "I", "C"):
            continue
        if ph == "X" and not (isinstance(e.get("dur"), (int, float, decimal.Decimal)) and e["dur"] >= 0):
            continue
        out.append(e)
    return out


def html_for(args, out, cwd=None):
    p = subprocess.run([os.path.abspath(BIN), *args], capture_output=True, text=True, cwd=cwd)
    check(p.returncode == 0, f"{args}: {p.stderr}")
    return out


def steps_json(trace):
    p = subprocess.run([BIN, "steps", "--json", trace], capture_output=True, text=True)
    check(p.returncode == 0, f"steps {trace}: {p.stderr}")
    return json.loads(p.stdout)["steps"]


def picks_of(st):
    """The steps the page shows, from `trainprof steps --json`: of equal
    durations the earlier (it starts first) is the slower, the faster and the
    nearer the median."""
    med = sorted(s["dur_us"] for s in st)[(len(st) - 1) // 2]
    return {"slowest": min(st, key=lambda s: (-s["dur_us"], s["start_us"])),
            "median": min(st, key=lambda s: (abs(s["dur_us"] - med), s["dur_us"], s["start_us"])),
            "fastest": min(st, key=lambda s: (s["dur_us"], s["start_us"]))}


def open_view(browser, path):
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors = watch_errors(page)
    page.goto("file://" + os.path.abspath(path) + "#timeline")
    page.wait_for_selector("#view-timeline canvas")
    page.wait_for_timeout(300)
    T = page.evaluate("JSON.parse(document.getElementById('trainprof-data').textContent).timeline")
    return page, errors, T


def view_range(page):
    r = page.evaluate("[+document.querySelector('#view-timeline .card').dataset.viewLo,"
                      " +document.querySelector('#view-timeline .card').dataset.viewHi]")
    return r[0], r[1]


def events_of(T):
    ev = T["ev"]
    return [ev[i:i + 7] for i in range(0, len(ev), 7)]


def check_torch(browser, tmp):
    gen = os.path.join(tmp, "gen")
    p = subprocess.run([sys.executable, os.path.join(SRC, "tests", "fixtures_gen", "gen_torch_traces.py"), gen],
                       capture_output=True, text=True)
    if p.returncode != 0:
        check(False, f"gen_torch_traces: {p.stderr[-2000:]}")
        return
    trace = os.path.join(gen, "full.pt.trace.json")
    out = html_for(["report", "--html", os.path.join(tmp, "torch.html"), trace], os.path.join(tmp, "torch.html"))
    page, errors, T = open_view(browser, out)
    events = drawable(load_trace(trace))
    check(T["whole"] and T["events_seen"] == len(events) and T["events_carried"] == len(events),
          f"whole trace: page {T['events_seen']}/{T['events_carried']} vs {len(events)} in the file")
    # spans drawn: every X and instant but the [memory] counters, with their durations
    spans = sorted(round(e["dur"] * 1000) if e["ph"] == "X" else 0 for e in events
                   if e["ph"] != "C" and e.get("name") != "[memory]")
    page_spans = sorted(e[2] for e in events_of(T))
    check(page_spans == spans, f"span durations differ: {len(page_spans)} vs {len(spans)}")
    names = {T["names"][e[3]] for e in events_of(T)}
    check({e["name"] for e in events if e["ph"] == "X"} <= names, "every span name is in the page")
    # the memory counter: one point per [memory] event with its Total Allocated
    mem = [e for e in events if e.get("name") == "[memory]"]
    alloc = [c for c in T["counters"] if c["name"] == "memory allocated (CPU)"]
    check(len(alloc) == 1 and alloc[0]["v"] == [e["args"]["Total Allocated"] for e in sorted(mem, key=lambda e: e["ts"])],
          "memory allocated counter equals the [memory] events")
    # a series at zero throughout (a CPU trace's reserved memory) is named, not drawn
    zero = sorted({c["name"] for c in T["counters"] if not any(c["v"])})
    drawn = [n for n, _ in json.loads(page.locator("#view-timeline .card").get_attribute("data-counters"))]
    note = page.locator("#view-timeline .tl-zero")
    check("memory reserved (CPU)" in zero and not set(zero) & set(drawn) and
          "memory allocated (CPU)" in drawn and note.count() == 1 and
          all(n in note.inner_text() for n in zero), f"zero series {zero}, drawn {drawn}")
    # steps: those of `trainprof steps --json`, and the picks
    st = steps_json(trace)
    page_steps = {s["num"]: s["dur"] for s in T["steps"]}
    check(page_steps == {s["step"]: round(s["dur_us"] * 1000) for s in st}, f"steps {page_steps} vs {st}")
    want = {k: s["step"] for k, s in picks_of(st).items()}
    picks = {s["pick"]: s["num"] for s in T["steps"] if s.get("pick")}
    check(picks == want, f"picks {picks} vs {want}")
    # a host-only trace: its ProfilerStep spans, no rule note (issue 31 item 1)
    check(T.get("step_rule") == "host" and page.locator("#view-timeline .tl-rule").count() == 0,
          f"host-only: no rule note: {T.get('step_note')!r}")
    canvas = page.locator("#view-timeline canvas")
    box = canvas.bounding_box()
    lo, hi = view_range(page)
    # wheel zoom at the middle of the drawing area: the range shrinks around the pointer
    px = box["x"] + 230 + (box["width"] - 230) / 2
    t_at = lo + (px - box["x"] - 230) / (box["width"] - 230) * (hi - lo)
    page.mouse.move(px, box["y"] + 60)
    page.mouse.wheel(0, -300)
    page.wait_for_timeout(100)
    lo2, hi2 = view_range(page)
    check(hi2 - lo2 < 0.9 * (hi - lo) and lo2 <= t_at <= hi2, f"wheel zoom: {lo},{hi} -> {lo2},{hi2} at {t_at}")
    # drag pan: both ends move by the same amount, against the drag
    page.mouse.move(px, box["y"] + 60)
    page.mouse.down()
    page.mouse.move(px - 200, box["y"] + 60, steps=5)
    page.mouse.up()
    lo3, hi3 = view_range(page)
    check(lo3 > lo2 and abs((lo3 - lo2) - (hi3 - hi2)) <= 2, f"drag pan: {lo2},{hi2} -> {lo3},{hi3}")
    # keys: 0 shows everything again, w zooms in, d pans right
    page.locator("#view-timeline .tl-wrap").focus()
    page.keyboard.press("0")
    check(view_range(page) == (lo, hi), "key 0 restores the whole range")
    page.keyboard.press("w")
    lo4, hi4 = view_range(page)
    check(hi4 - lo4 < hi - lo, "key w zooms in")
    page.keyboard.press("d")
    lo5, hi5 = view_range(page)
    check(lo5 > lo4 and hi5 > hi4, "key d pans right")
    page.keyboard.press("0")
    # hover and click the slowest step's span: its name and duration show
    evs = events_of(T)
    i = max(range(len(evs)), key=lambda k: evs[k][2] if T["names"][evs[k][3]].startswith("ProfilerStep#") else -1)
    pos = page.evaluate(f"document.querySelector('#view-timeline .card')._tl.box({i})")
    page.mouse.move(pos["x"], pos["y"])
    page.wait_for_timeout(100)
    tip = page.locator("#view-timeline .tl-tip")
    want_dur = page.evaluate(f"TP.fmtDur({evs[i][2]})")
    check(tip.is_visible() and T["names"][evs[i][3]] in tip.inner_text() and want_dur in tip.inner_text(),
          f"hover tip: {tip.inner_text() if tip.is_visible() else 'hidden'}")
    page.mouse.click(pos["x"], pos["y"])
    check(T["names"][evs[i][3]] in page.locator("#view-timeline .tl-detail").inner_text(), "click pins the details")
    page.mouse.move(0, 0)
    # one rank: no selector, no rank in the step labels
    check(page.locator("#tl-rank").count() == 0 and not any("rank" in x for x in card_data(page, "steps") or ["rank"]),
          f"one rank: no rank named: {card_data(page, 'steps')[:3]}")
    shoot(page, "report_timeline.png")
    check(not errors, f"console errors (torch trace): {errors}")
    page.close()


def check_flows(browser, tmp):
    trace = os.path.join(FIX, "kineto", "trace_diff__control__control.json.gz")
    if not os.path.exists(trace):
        print("no Kineto fixture: flows not checked")
        return
    out = html_for(["report", "--html", os.path.join(tmp, "gpu.html"), trace], os.path.join(tmp, "gpu.html"))
    page, errors, T = open_view(browser, out)
    by_corr = {}
    for e in drawable(load_trace(trace)):
        c = (e.get("args") or {}).get("correlation")
        if c and e["ph"] == "X":
            by_corr.setdefault(c, set()).add(e["name"])
    page_corr = {}
    for e in events_of(T):
        if e[5]:
            page_corr.setdefault(e[5], set()).add(T["names"][e[3]])
    check(page_corr and all(c in by_corr and names <= by_corr[c] for c, names in page_corr.items()),
          "every flow of the page is one of the trace's correlations")
    linked = [c for c, n in page_corr.items() if len(n) >= 2]
    check(len(linked) > 100, f"launch-to-kernel flows in the page: {len(linked)}")
    gpu_rows = [r for r in T["rows"] if r["kind"] == "gpu"]
    check(gpu_rows, "GPU stream rows")
    # click a kernel: its flow is drawn (the details name the linked launch)
    evs = events_of(T)
    k = next(i for i, e in enumerate(evs) if e[4] == 4 and e[5] in linked)
    page.evaluate(f"(() => {{ const c = document.querySelector('#view-timeline .card'); const e = {json.dumps(evs[k])};"
                  f" c._tl.setView(e[1] - 50000, e[1] + e[2] + 50000); }})()")
    pos = page.evaluate(f"document.querySelector('#view-timeline .card')._tl.box({k})")
    page.mouse.click(pos["x"], pos["y"])
    check("linked" in page.locator("#view-timeline .tl-detail").inner_text(), "a kernel's details name its flow")
    shoot(page, "report_timeline_gpu.png")
    check(not errors, f"console errors (GPU trace): {errors}")
    page.close()


def big_trace(path, steps=30, per_step=12000):
    """A trace over the page's budget: steps of known, distinct durations,
    each with per_step spans; written with GPU-like events last, as Kineto."""
    durs = [20000 + ((k * 7) % steps) * 300 for k in range(steps)]  # us
    ev, gpu, t = [], [], 0
    for k, d in enumerate(durs):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": t, "dur": d})
        w = d / per_step
        for i in range(per_step // 2):
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::op%d" % (i % 50), "pid": 1, "tid": 1,
                       "ts": t + 2 * i * w, "dur": w, "args": {"correlation": k * per_step + i}})
            gpu.append({"ph": "X", "cat": "kernel", "name": "kernel%d" % (i % 20), "pid": 0, "tid": 7,
                        "ts": t + (2 * i + 1) * w, "dur": w * 0.9, "args": {"correlation": k * per_step + i}})
        t += d + 1000
    with open(path, "w") as f:
        json.dump({"traceEvents": ev + gpu}, f)
    return durs


def check_big(browser, tmp):
    trace = os.path.join(tmp, "big.json")
    big_trace(trace)
    out = html_for(["report", "--html", os.path.join(tmp, "big.html"), trace], os.path.join(tmp, "big.html"))
    page, errors, T = open_view(browser, out)
    st = steps_json(trace)
    want = picks_of(st)
    picks = {s["pick"]: s for s in T["steps"] if s.get("pick")}
    check(not T["whole"] and T["events_carried"] <= CARRY, f"bounded: {T['events_carried']}")
    events = drawable(load_trace(trace))
    for name, s in want.items():
        got = picks.get(name)
        check(got and got["num"] == s["step"], f"{name}: page {got} vs steps --json {s}")
        if not got:
            continue
        lo, hi = s["start_us"], s["start_us"] + s["dur_us"]
        inside = sum(1 for e in events if e["ts"] < hi and e["ts"] + e.get("dur", 0) >= lo)
        t0 = T["t0_ns"]
        carried = sum(1 for e in events_of(T) if e[1] + t0 < hi * 1000 and e[1] + e[2] + t0 >= lo * 1000)
        check(carried == inside and got["left_out"] == 0, f"{name} step: {carried} of {inside} events carried")
    check("left out" in T["note"] and f"of {len(events)} events" in T["note"], f"note: {T['note']}")
    # GPU tracks over each chosen step's window only (the gaps carry no kernel)
    wins = {g.get("step"): (g["start"], g["end"]) for g in T["gpu_tracks"]}
    check(wins.keys() == {s["num"] for s in picks.values()} and
          all(wins[s["num"]] == (s["start"], s["start"] + s["dur"]) for s in picks.values()),
          f"GPU tracks per chosen step: {wins}")
    check(len(page.evaluate("JSON.parse(document.querySelector('#view-timeline .card').dataset.tracks)")) == 1,
          "one utilization track (3 windows), no SM efficiency without blocks per SM")
    check("left out" in page.locator("#view-timeline .tl-note").inner_text(), "the page says what it left out")
    size = os.path.getsize(out)
    print(f"big trace: {os.path.getsize(trace) / 1e6:.1f} MB -> page {size / 1e6:.2f} MB, "
          f"{T['events_carried']} of {T['events_seen']} events")
    page.click("#view-timeline button:has-text('slowest step')")
    page.wait_for_timeout(100)
    lo, hi = view_range(page)
    s = picks.get("slowest")
    check(s and lo <= s["start"] and hi >= s["start"] + s["dur"] and hi - lo < 1.2 * s["dur"], "slowest button zooms to it")
    check(not errors, f"console errors (big trace): {errors}")
    page.close()


# ---- issue 31: rows, folding, GPU tracks, forward->backward flows -----------------------

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")


def load_exact(path):
    """The trace with exact microsecond decimals (ts of 1.7e15 us do not fit a
    double once in ns)."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        d = json.load(f, parse_float=decimal.Decimal)
    return d["traceEvents"] if isinstance(d, dict) else d


def ns(us):
    return int((decimal.Decimal(us) * 1000).to_integral_value(decimal.ROUND_DOWN))  # as the reader: digits past ns dropped


def folded_rows(events):
    """The folding rule of docs/REPORT.md, counted independently: rows by
    (pid, tid, device or host); folded when no span of positive duration, a
    string pid's row of at most 3 events, or its spans' union under 0.1 % of
    the drawn span (first to last span of the rows not folded by the first
    two rules)."""
    rows = {}
    for e in drawable(events):
        if e["ph"] == "C" or e.get("name") == "[memory]":
            continue
        key = (e["pid"], e["tid"], e.get("cat") in GPU_CATS)
        r = rows.setdefault(key, {"n": 0, "spans": []})
        r["n"] += 1
        if e["ph"] == "X" and e["dur"] > 0:
            r["spans"].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
    empty = {k for k, r in rows.items() if not r["spans"] or (isinstance(k[0], str) and r["n"] <= 3)}
    spans = [s for k, r in rows.items() if k not in empty for s in r["spans"]]
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    out = set(empty)
    for k, r in rows.items():
        busy, end = 0, None
        for a, b in sorted(r["spans"]):
            start = a if end is None or a > end else end
            busy += max(0, b - start)
            end = b if end is None else max(end, b)
        if busy < 0.001 * (hi - lo):
            out.add(k)
    return out, lo, hi


def gpu_tracks(events, track, t0):
    """A track of the page computed again with the plugin's rules: the merged
    kernel ranges of the device (utilization) and, at each instant, min(sum
    of the running kernels' blocks per SM, 1) (merge_ranges_with_value), per
    bucket of the page's size."""
    ks = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("pid") == track["pid"]
          and e["dur"] >= 0]
    pts = []
    for k in ks:
        a, v = ns(k["ts"]), float((k.get("args") or {}).get("blocks per SM") or 0)
        pts += [(a, 0, max(v, 0.0)), (a + ns(k["dur"]), 1, max(v, 0.0))]
    pts.sort(key=lambda p: (p[0], p[1]))
    segs, running, total, last = [], 0, 0.0, None
    for t, kind, v in pts:
        if last is not None and t > last and running:
            segs.append((last, t, min(total, 1.0)))
        last = t
        running, total = (running + 1, total + v) if kind == 0 else (running - 1, total - v)
    lo, hi, w, n = track["start"] + t0, track["end"] + t0, track["bucket"], len(track["util"])
    bounds = [(lo + i * w, lo + (i + 1) * w if i < n - 1 else hi) for i in range(n)]
    util, sm = [0.0] * n, [0.0] * n
    for a, b, v in segs:
        for i, (x, y) in enumerate(bounds):
            o = min(b, y) - max(a, x)
            if o > 0:
                util[i] += o
                sm[i] += o * v
    return [u / (y - x) for u, (x, y) in zip(util, bounds)], [u / (y - x) for u, (x, y) in zip(sm, bounds)]


def last_thread_names(events):
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"].rstrip()
    return names


def t0_of(html):
    """The page's t0_ns read by Python (past 2^53: the browser's JSON.parse rounds it)."""
    with open(html) as f:
        text = f.read()
    i = text.index('"t0_ns":', text.index('"timeline":')) + len('"t0_ns":')
    return int(text[i:text.index(",", i)])


def card_data(page, key):
    return page.evaluate(f"JSON.parse(document.querySelector('#view-timeline .card').dataset.{key} || 'null')")


def check_gpu_rows(browser, tmp):
    fix = os.path.join(SRC, "tests", "fixtures")
    for name, shot in (("ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "report_timeline_groups.png"),
                       ("trace_diff__control__control.json.gz", None)):
        trace = os.path.join(fix, name)
        out = html_for(["report", "--html", os.path.join(tmp, name + ".html"), trace], os.path.join(tmp, name + ".html"))
        page, errors, T = open_view(browser, out)
        T["t0_ns"] = t0_of(out)
        events = load_exact(trace)
        labels = {}
        for e in events:
            if e.get("ph") == "M" and e.get("name") == "process_labels":
                labels[e["pid"]] = e["args"]["labels"]
        # groups: the GPUs first, named by their labels; rows named by the trace (a thread's last name)
        groups = card_data(page, "groups")
        gpus = sorted({labels[e["pid"]] for e in events if e.get("cat") == "kernel"})
        check([g[0] for g in groups[:len(gpus)]] == gpus, f"{name}: GPU groups first {groups} vs {gpus}")
        threads = last_thread_names(events)
        for r in T["rows"]:
            want = threads.get((r["pid"], r["tid"]))
            if want and not r["folded"]:
                check(r["label"] == want, f"{name}: row {r['name']} is named {want!r} in the trace")
            check(not r["label"].startswith("penv#"), f"{name}: row label {r['label']}")
        for r in T["rows"]:
            if r["kind"] == "gpu":
                check(r["group"].startswith("GPU ") and r["label"].startswith("stream "), f"{name}: GPU row {r['name']}")
        # folded: the rows of the independent rule, in a closed group at the bottom
        want, lo, hi = folded_rows(events)
        got = set()
        for r in T["rows"]:
            if r["folded"]:
                got.add((r["group"] if r["group"] in ("Spans", "Traces") else r["pid"],
                         r["label"] if r["group"] in ("Spans", "Traces") else r["tid"], r["kind"] == "gpu"))
        want = {(k[0], k[1], k[2]) for k in want}
        check(got == want and got, f"{name}: folded rows {got} vs {want}")
        visible = card_data(page, "rows")
        check(groups[-1][0].startswith(f"{len(want)} more row") and groups[-1][2] is False,
              f"{name}: the folded group last and closed: {groups[-1]}")
        check(len(visible) == len(T["rows"]) - len(want), f"{name}: {len(visible)} rows shown")
        # the axis: the drawn span of the rows not folded, plus 1 % either side
        vlo, vhi = view_range(page)
        span = hi - lo
        check(abs((vhi + T["t0_ns"]) - (hi + 0.01 * span)) <= 2 and abs((vlo + T["t0_ns"]) - (lo - 0.01 * span)) <= 2,
              f"{name}: axis {vlo},{vhi} vs the drawn span {lo - T['t0_ns']},{hi - T['t0_ns']}")
        # a click on the folded group's header opens it, another closes it
        pos = page.evaluate(f"document.querySelector('#view-timeline .card')._tl.header({json.dumps(groups[-1][0])})")
        page.mouse.click(pos["x"], pos["y"])
        check(len(card_data(page, "rows")) == len(T["rows"]), f"{name}: the folded group opens on a click")
        page.mouse.click(pos["x"], pos["y"])
        check(len(card_data(page, "rows")) == len(visible), f"{name}: and closes again")
        # GPU tracks: the plugin's rules computed again
        check(len(T["gpu_tracks"]) == len(gpus), f"{name}: a track per GPU: {len(T['gpu_tracks'])}")
        for g in T["gpu_tracks"]:
            util, sm = gpu_tracks(events, g, T["t0_ns"])
            check(g["bucket"] in [10 ** k for k in range(3, 13)] and len(g["util"]) <= 100, f"{name}: buckets {g['bucket']}")
            check(max(abs(a - b) for a, b in zip(util, g["util"])) < 1e-9, f"{name}: {g['name']} utilization {g['util']} vs {util}")
            check(g["sm"] and max(abs(a - b) for a, b in zip(sm, g["sm"])) < 1e-9, f"{name}: {g['name']} SM efficiency")
        tracks = card_data(page, "tracks")
        check(len(tracks) == 2 * len(gpus), f"{name}: tracks drawn {tracks}")
        # hovering a bucket of the first track names its value
        g = T["gpu_tracks"][0]
        b = max(range(len(g["util"])), key=lambda i: g["util"][i])
        pos = page.evaluate(f"document.querySelector('#view-timeline .card')._tl.track(0, {b})")
        page.mouse.move(pos["x"], pos["y"])
        page.wait_for_timeout(100)
        tip = page.locator("#view-timeline .tl-tip")
        want = page.evaluate(f"TP.fmtPct({100 * g['util'][b]})")
        check(tip.is_visible() and "utilization: " + want in tip.inner_text(),
              f"{name}: hovering a utilization bucket: {tip.inner_text() if tip.is_visible() else 'hidden'} vs {want}")
        page.mouse.move(0, 0)
        if name.startswith("ns_"):
            check(len(T["fwdbwd"]) // 2 == sum(1 for e in events if e.get("cat") == "fwdbwd" and e["ph"] == "s"),
                  f"{name}: forward-backward pairs {len(T['fwdbwd']) // 2}")
            # off at first, as the plugin's trace view (drawn on selection): the count in the label
            check(card_data(page, "fwdbwd") is False, f"{name}: forward-backward arrows off at first")
            label = page.locator("#view-timeline .tl-fwdbwd").inner_text()
            check(f"({len(T['fwdbwd']) // 2})" in label, f"{name}: the toggle's label counts them: {label}")
        if shot:
            shoot(page, shot)
        check(not errors, f"console errors ({name}): {errors}")
        page.close()


# ---- issue 31 item 1: steps on GPU traces by the TensorBoard plugin's rule ------------------

def check_gpu_steps(browser, tmp):
    """The band, the buttons and the picks on GPU traces are the steps of
    `trainprof steps --json` (the plugin's rule: each step runs to the end
    of the GPU work it launched), and the view says which rule it used."""
    fix = os.path.join(SRC, "tests", "fixtures")
    for name in ("ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                 "trace_diff__control__control.json.gz", "trace_diff__test__test.json.gz"):
        trace = os.path.join(fix, name)
        out = html_for(["report", "--html", os.path.join(tmp, "steps_" + name + ".html"), trace],
                       os.path.join(tmp, "steps_" + name + ".html"))
        page, errors, T = open_view(browser, out)
        st = steps_json(trace)
        check(st, f"{name}: steps --json has steps")
        want_band, want = band_and_buttons(page, st)
        check(card_data(page, "steps") == want_band, f"{name}: band {card_data(page, 'steps')} vs {want_band}")
        buttons = page.locator("#view-timeline .tl-steps button").all_inner_texts()
        check(buttons == want, f"{name}: buttons {buttons} vs {want}")
        check({s["num"]: s["dur"] for s in T["steps"]} == {s["step"]: round(s["dur_us"] * 1000) for s in st},
              f"{name}: page steps {T['steps']} vs {st}")
        rule = page.locator("#view-timeline .tl-rule")
        check(rule.count() == 1 and "as the TensorBoard plugin counts them" in rule.inner_text(),
              f"{name}: the rule said on the view")
        # the slowest button zooms to the slowest step's whole span (its GPU work included)
        slow = picks_of(st)["slowest"]
        btn = page.locator(f"#view-timeline .tl-steps button:has-text('slowest step #{slow['step']}')")
        check(btn.count() == 1, f"{name}: one slowest button, #{slow['step']}")
        if btn.count() != 1:
            page.close()
            continue
        btn.click()
        page.wait_for_timeout(100)
        lo, hi = view_range(page)
        t0 = t0_of(out)
        a = ns(slow["start_us"]) - t0
        b = a + round(slow["dur_us"] * 1000)
        check(lo <= a and hi >= b and hi - lo < 1.2 * (b - a), f"{name}: slowest zooms to it: {lo},{hi} vs {a},{b}")
        if name.startswith("ns_"):
            shoot(page, "report_timeline_steps.png")
        check(not errors, f"console errors ({name}): {errors}")
        page.close()


GEN_FWDBWD = """
import sys, torch, torch.nn as nn
from torch.profiler import profile, ProfilerActivity
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
with profile(activities=[ProfilerActivity.CPU], with_stack=False) as prof:
    for _ in range(2):
        loss = nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        prof.step()
prof.export_chrome_trace(sys.argv[1])
"""


def bind(spans, pid, tid, t):
    """The innermost span on (pid, tid) enclosing t: the latest start, then the shortest."""
    best = None
    for s in spans:
        if s["pid"] == pid and s["tid"] == tid and s["ts"] <= t <= s["ts"] + s["dur"]:
            if best is None or (s["ts"], -s["dur"]) > (best["ts"], -best["dur"]):
                best = s
    return best


def check_fwdbwd(browser, tmp):
    trace = os.path.join(tmp, "fwdbwd.json")
    p = subprocess.run([sys.executable, "-c", GEN_FWDBWD, trace], capture_output=True, text=True)
    if p.returncode != 0:
        check(False, f"torch trace with backward: {p.stderr[-2000:]}")
        return
    events = load_exact(trace)
    spans = [e for e in events if e.get("ph") == "X"]
    ends = {}
    for e in events:
        if e.get("cat") == "fwdbwd":
            ends.setdefault(e["id"], {})[e["ph"]] = e
    want = []
    for i, pair in ends.items():
        a, b = bind(spans, pair["s"]["pid"], pair["s"]["tid"], pair["s"]["ts"]), bind(spans, pair["f"]["pid"], pair["f"]["tid"], pair["f"]["ts"])
        want.append((a["name"], ns(a["ts"]), b["name"], ns(b["ts"])))
    check(len(want) >= 4, f"the torch trace has forward-backward flows: {len(want)}")
    out = html_for(["report", "--html", os.path.join(tmp, "fwdbwd.html"), trace], os.path.join(tmp, "fwdbwd.html"))
    page, errors, T = open_view(browser, out)
    evs, t0 = events_of(T), t0_of(out)
    got = []
    for i in range(0, len(T.get("fwdbwd", [])), 2):
        a, b = evs[T["fwdbwd"][i]], evs[T["fwdbwd"][i + 1]]
        got.append((T["names"][a[3]], a[1] + t0, T["names"][b[3]], b[1] + t0))
    check(sorted(got) == sorted(want), f"forward-backward pairs: page {sorted(got)[:3]} vs trace {sorted(want)[:3]}")
    check(T.get("fwdbwd_left_out") == 0, f"fwdbwd left out: {T.get('fwdbwd_left_out')}")
    # the toggle draws them all; hovering a backward op names its forward op
    check(card_data(page, "fwdbwd") is False, "forward-backward arrows off at first")
    page.check("#view-timeline .tl-fwdbwd input")
    check(card_data(page, "fwdbwd") is True, "the toggle turns them on")
    k = T["fwdbwd"][1]
    e = evs[k]
    page.evaluate(f"document.querySelector('#view-timeline .card')._tl.setView({e[1] - e[2]}, {e[1] + 2 * e[2]})")
    pos = page.evaluate(f"document.querySelector('#view-timeline .card')._tl.box({k})")
    page.mouse.move(pos["x"], pos["y"])
    page.wait_for_timeout(100)
    tip = page.locator("#view-timeline .tl-tip")
    check(tip.is_visible() and "forward \u2192 backward" in tip.inner_text(), f"hover: {tip.inner_text() if tip.is_visible() else 'hidden'}")
    check(not errors, f"console errors (fwdbwd): {errors}")
    page.close()


# ---- issue 31 item 7: several ranks on one page --------------------------------------------

def shown_picks(st):
    """The buttons of a rank, from `trainprof steps --json` of its trace: a
    step is shown once, under the first of slowest, median, fastest."""
    out, seen = [], set()
    for name, s in picks_of(st).items():
        if s["step"] not in seen:
            seen.add(s["step"])
            out.append((name, s))
    return out


def band_and_buttons(page, st, rank=""):
    """What the step band and the buttons read for `trainprof steps --json`'s
    steps st, durations as the page formats them; rank: "rank R " when the
    page has several."""
    fmt = page.evaluate("s => s.map(d => TP.fmtDur(d))", [round(s["dur_us"] * 1000) for s in st])
    picked = {s["step"]: n for n, s in shown_picks(st)}
    band = [f"{rank}#{s['step']}" + (f" {picked[s['step']]}" if s["step"] in picked else "") + f" {d}"
            for s, d in zip(st, fmt)]
    buttons = [f"{rank + chr(0xb7) + ' ' if rank else ''}{n} step #{s['step']} ({fmt[st.index(s)]})"
               for n, s in sorted(shown_picks(st), key=lambda p: p[1]["start_us"])]
    return band, buttons


def check_ranks(browser, tmp):
    names = [os.path.join("tests", "fixtures", f"trace_filter__sampled_rank-{r}.json.gz") for r in (0, 1)]
    traces = [os.path.join(SRC, n) for n in names]
    out = os.path.join(os.path.abspath(tmp), "ranks.html")
    html_for(["report", "--html", out, *names], out, cwd=SRC)  # the paths as a user writes them (the page shows them)
    page, errors, T = open_view(browser, out)
    check([r["name"] for r in T.get("ranks") or []] == ["rank 0", "rank 1"], f"ranks: {T.get('ranks')}")
    sel = page.locator("#tl-rank")
    check(sel.count() == 1 and sel.locator("option").all_inner_texts() == ["0", "1"], "a rank selector of ranks 0 and 1")
    for r, trace in enumerate(traces):
        if sel.count():
            sel.select_option(str(r))
            page.wait_for_timeout(100)
        st = steps_json(trace)
        check(page.evaluate("document.querySelector('#view-timeline .card').dataset.rank") == f"rank {r}",
              f"rank {r} chosen")
        # the band: this rank's steps only, each naming it
        want_band, want = band_and_buttons(page, st, f"rank {r} ")
        check(card_data(page, "steps") == want_band, f"rank {r} band {card_data(page, 'steps')} vs {want_band}")
        # the buttons: this rank's own slowest / median / fastest, in the order of the steps
        buttons = page.locator("#view-timeline .tl-steps button").all_inner_texts()
        check(buttons == want, f"rank {r} buttons {buttons} vs {want}")
        # the slowest button zooms to this rank's slowest step
        slow = picks_of(st)["slowest"]
        btn = page.locator(f"#view-timeline .tl-steps button:has-text('slowest step #{slow['step']}')")
        check(btn.count() == 1, f"rank {r}: one slowest button")
        if btn.count() != 1:
            continue
        btn.click()
        page.wait_for_timeout(100)
        lo, hi = view_range(page)
        t0 = t0_of(out)
        a, b = ns(slow["start_us"]) - t0, ns(slow["start_us"]) - t0 + round(slow["dur_us"] * 1000)
        check(lo <= a and hi >= b and hi - lo < 1.2 * (b - a), f"rank {r}: slowest zooms to it: {lo},{hi} vs {a},{b}")
    # the page's own picks: each rank's of its trace, not of the 4 steps merged
    for f, trace in enumerate(traces):
        got = {s["pick"]: s["num"] for s in T["steps"] if s.get("pick") and s["file"] == f}
        check(got == {n: s["step"] for n, s in shown_picks(steps_json(trace))}, f"trace {f + 1} picks {got}")
    groups = [g[0] for g in card_data(page, "groups") if "more row" not in g[0]]
    check(groups and all(g.startswith(("rank 0 \u00b7 ", "rank 1 \u00b7 ")) for g in groups), f"groups {groups}")
    check(any(g.startswith("rank 1 \u00b7 GPU") for g in groups), f"rank 1's GPU group: {groups}")
    page.click("#view-timeline button:has-text('Whole')")
    shoot(page, "report_timeline_ranks.png")
    check(not errors, f"console errors (ranks): {errors}")
    page.close()


def main():
    return run(check_torch, check_flows, check_big, check_gpu_rows, check_gpu_steps, check_fwdbwd, check_ranks,
               prefix="tp_tl_")


if __name__ == "__main__":
    sys.exit(main())
