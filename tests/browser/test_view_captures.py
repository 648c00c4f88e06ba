#!/usr/bin/env python3
"""The Captures view (issue 34) in headless chromium, on real runs:

- a C training loop (tests/integration/flight_loop) with one slow step and
  SIGUSR1 sent to it while it runs: the run directory's report.html (written at close)
  and `trainprof report --html OUT RUN_DIR` list every entry of its
  captures.json (reason, step), in order, each row's links pointing at
  files that exist, the trace first;
- a job directory of two ranks' captures.json written here (a hang on
  rank 0, an exception on rank 1): one row per capture with its rank;
- a run without captures: the tab says why it is empty.

No console error on any page. Exit 77 without chromium."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from browser_common import browser_or_skip, launch, watch_errors  # noqa: E402

BIN = os.environ.get("TRAINPROF_BIN", "build/trainprof")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


def page_data(path):
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script id="trainprof-data" type="application/json">(.*?)</script>', html, re.S)
    check(m is not None, f"{path}: no data script")
    return json.loads(m.group(1)) if m else {}


def shown_rows(browser, path):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors = watch_errors(page)
    page.goto("file://" + os.path.abspath(path), wait_until="load")
    tab = page.locator("[data-view='captures'], #tab-captures, button:has-text('Captures')").first
    if tab.count():
        tab.click()
    rows = page.eval_on_selector_all(
        "#captures-table tbody tr",
        "trs => trs.map(tr => ({reason: tr.dataset.reason, cells: [...tr.cells].map(td => td.textContent),"
        " links: [...tr.querySelectorAll('a')].map(a => a.getAttribute('href'))}))")
    text = page.inner_text("body")
    page.close()
    check(not errors, f"{path}: console errors {errors}")
    return rows, text


def planted(caps):
    """The planted captures are there: slow step 30, a signal at step 45 or later."""
    return any((c["reason"], c["step"]) == ("slow_step", 30) for c in caps) and \
        any(c["reason"] == "signal" and c["step"] >= 45 for c in caps)


def real_run(tmp):
    """tests/integration/flight_loop (public API): 5 ms steps, step 30 slow
    (a slow_step capture), SIGUSR1 at step 45 (a signal capture), SIGTERM
    at step 80 (it closes and exits 0). Returns the run directory."""
    exe = os.path.join(os.environ.get("TP_BUILD_DIR", "build"), "tests", "integration", "flight_loop")
    p = subprocess.Popen([exe, "--steps", "0", "--step_ms", "5", "--slow", "30",
                          "--profiling.output_dir", os.path.join(tmp, "runs")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)
    run = None
    for line in p.stdout:
        if line.startswith("run_dir "):
            run = line.split(" ", 1)[1].strip()
        elif line.strip() == "step 45":
            p.send_signal(signal.SIGUSR1)
        elif line.strip() == "step 80":
            p.send_signal(signal.SIGTERM)
    p.wait(timeout=120)
    check(p.returncode == 0, f"flight_loop exit {p.returncode}: {p.stderr.read()[-500:]}")
    check(run is not None and os.path.isdir(run), f"flight_loop's run directory: {run}")
    return run


def main():
    sync_playwright = browser_or_skip()
    tmp = tempfile.mkdtemp(prefix="tp_captures_view_")
    for attempt in range(3):
        run = real_run(tmp)
        caps = json.load(open(os.path.join(run, "captures.json")))["captures"] if run else []
        if run is None or planted(caps):
            break
        # a step the load made slow just before step 30 armed a capture whose
        # window covers step 30 (a traced step is not checked): run it again
        print(f"note: run {attempt + 1}: step 30 inside another capture's window: {[(c['reason'], c['step']) for c in caps]}")
    with sync_playwright() as p:
        browser = launch(p)
        if run:
            caps = json.load(open(os.path.join(run, "captures.json")))["captures"]
            # A loaded machine can make another step really slow: the recorder
            # is right to catch it, so more slow_step captures are allowed (and
            # the run is made again when one's window hid step 30: see planted()).
            reasons = [c["reason"] for c in caps]
            check(planted(caps) and reasons.count("signal") == 1 and set(reasons) == {"slow_step", "signal"},
                  f"the loop's captures: a slow step 30 and a signal at step 45 or later: {caps}")
            os.makedirs(os.path.join(tmp, "elsewhere"))
            for page_path in (os.path.join(run, "report.html"), os.path.join(tmp, "elsewhere", "cli.html")):
                if page_path.endswith("cli.html"):
                    r = subprocess.run([BIN, "report", "--html", page_path, run], capture_output=True, text=True)
                    check(r.returncode == 0, f"report --html: {r.stderr[-300:]}")
                d = page_data(page_path).get("captures")
                check(d is not None and [(c["reason"], c["step"]) for c in d["captures"]] ==
                      [(c["reason"], c["step"]) for c in caps], f"{page_path}: data {d} vs captures.json {caps}")
                rows, _ = shown_rows(browser, page_path)
                check([r["reason"] for r in rows] == [c["reason"] for c in caps], f"{page_path}: rows {rows}")
                for r, c in zip(rows, caps):
                    check(len(r["links"]) == len(c["files"]) and r["links"][0].endswith(".json"),
                          f"{page_path}: links {r['links']} for {c['files']}")
                    for href in r["links"]:  # relative to the page, wherever it was written
                        check(not href.startswith("/") and os.path.exists(os.path.join(os.path.dirname(page_path), href)),
                              f"{page_path}: a link to a missing file {href}")

        job = os.path.join(tmp, "job")
        for rank, entry in ((0, {"reason": "hang", "step": 7, "time": "2026-11-28T05:00:00Z",
                                 "files": ["captures/c_hang.pt.trace.json", "captures/c.hang.txt"],
                                 "detail": "no step ended for 300.0 s"}),
                            (1, {"reason": "exception", "step": 7, "time": "2026-11-28T04:59:58Z", "files": [],
                                 "detail": "RuntimeError: boom\nTraceback (most recent call last): ..."})):
            d = os.path.join(job, f"rank{rank}")
            os.makedirs(d)
            json.dump({"pid": 10 + rank, "host": "h", "rank": rank, "captures": [entry]},
                      open(os.path.join(d, "captures.json"), "w"))
        json.dump({"job_id": "j", "world_size": 2}, open(os.path.join(job, "job.json"), "w"))
        out = os.path.join(tmp, "job.html")
        r = subprocess.run([BIN, "report", "--html", out, job], capture_output=True, text=True)
        if r.returncode == 0:
            rows, _ = shown_rows(browser, out)
            check([(row["cells"][0], row["reason"]) for row in rows] == [("0", "hang"), ("1", "exception")],
                  f"job page rows {rows}")
            check(rows and rows[1]["cells"][4].startswith("RuntimeError: boom"), f"job page detail {rows}")
        else:  # a job without traces has no page yet: what it says must name why
            check("trace" in r.stderr, f"job without traces: {r.stderr[-300:]}")

        plain = os.path.join(tmp, "plain")
        shutil.copytree(os.path.join(os.environ.get("TP_SOURCE_DIR", "."), "tests", "fixtures"), plain,
                        ignore=shutil.ignore_patterns("*.md", "*.gz"))
        trace = next((os.path.join(plain, f) for f in sorted(os.listdir(plain)) if f.endswith(".pt.trace.json")), None)
        if trace:
            out = os.path.join(tmp, "plain.html")
            subprocess.run([BIN, "report", "--html", out, trace], capture_output=True)
            check(page_data(out).get("captures", "absent") is None, "a trace without captures: captures is null")
        browser.close()
    print(f"{len(failures)} failure(s)" if failures else "captures view: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
