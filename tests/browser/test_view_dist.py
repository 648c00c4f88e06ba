#!/usr/bin/env python3
"""The Distributed view in headless chromium:

- two Kineto rank traces named together (`trainprof report --html OUT R0
  R1`, ../shared/fixtures trace_filter__sampled_rank-0/1) and a directory
  holding them;
- a real 2-rank gloo DDP job of torch 2.13 (examples/python/train_ddp.py
  under torchrun, rank 1 slowed down), its job directory.

On each: no console error; the Overview keeps the ranks apart (a rank
selector; the chosen rank's steps, categories, step time and findings,
each step label naming the rank: issue 31); the page's figures (straggler, per-rank table,
collectives, clock) equal `trainprof analyze --json` of the same ranks, as
the page shows them; each step's computation + overlap + communication +
other is the step; the DDP job's straggler is the slowed rank. Exit 77
without chromium (the DDP part is skipped without torch)."""
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from browser_common import watch_errors  # noqa: E402
from view_checks import check, run, shoot, table  # noqa: E402

BIN = os.environ.get("TRAINPROF_BIN", "build/trainprof")
SRC = os.environ.get("TP_SOURCE_DIR", ".")
FIX = os.path.normpath(os.environ.get("TP_FIXTURES", os.path.join(SRC, "..", "shared", "fixtures")))  # a path as a user writes it (pages show it)


def trainprof(args):
    p = subprocess.run([BIN, *args], capture_output=True, text=True)
    check(p.returncode == 0, f"{args}: {p.stderr[-2000:]}")
    return p.stdout


def fmt(page, fn, v):
    return page.evaluate(f"TP.{fn}({json.dumps(v)})")


def check_page(browser, html, cli, name, shot=None, ov_shot=None):
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors = watch_errors(page)
    page.goto("file://" + os.path.abspath(html) + "#distributed")
    page.wait_for_selector("#dist-ranks")
    X = page.evaluate("JSON.parse(document.getElementById('trainprof-data').textContent).distributed")
    # the job part is the CLI's, number for number
    check(X["job"] == cli, f"{name}: the page's job differs from analyze --json")
    rows = table(page, "#dist-ranks")
    want = sorted(cli["per_rank"], key=lambda w: w["rank"])
    check(len(rows) == len(want), f"{name}: {len(rows)} rank rows vs {len(want)}")
    for row, w in zip(rows, want):
        shown = [int(row[0]), row[3], row[4], row[7], row[8], row[9], row[10]]
        exp = [w["rank"], fmt(page, "fmtDur", w["mean_ns"]), fmt(page, "fmtDur", w["p50_ns"]),
               fmt(page, "fmtDur", w["compute_mean_ns"]), fmt(page, "fmtDur", w["comm_mean_ns"]),
               fmt(page, "fmtDur", w["wait_mean_ns"]),
               # issue 31: collectives of unknown size say so, not 0 B
               fmt(page, "fmtBytes", w["bytes_per_step"]) if w["bytes_per_step"] or not w["comm_mean_ns"] else "unknown"]
        check(shown == exp, f"{name}: rank row {shown} vs {exp}")
    st = cli["straggler"]
    text = page.locator("#dist-straggler").inner_text()
    if st["persistent"]:
        check(f"Rank {st['rank']} is the slowest" in text and fmt(page, "fmtDur", st["lead_p50_ns"]) in text,
              f"{name}: straggler text {text!r}")
    for f in cli["findings"]:
        check(f in text, f"{name}: finding {f!r} shown")
    clock = page.locator("#dist-clock").inner_text()
    check(fmt(page, "fmtDur", cli["clock"]["start_spread_p50_ns"]) in clock, f"{name}: clock spread shown")
    # every step's split adds up to the step
    for r in X["ranks"]:
        s = r["steps"]
        for i in range(len(s["dur"])):
            parts = [s[k][i] for k in ("computation", "overlap", "communication", "other")]
            check(sum(parts) == s["dur"][i] and min(parts) >= 0, f"{name}: rank {r['rank']} step {s['num'][i]} {parts}")
        coll = sum(c["calls"] for c in r["collectives"])
        check(coll > 0, f"{name}: rank {r['rank']} has collectives")
    coll_rows = table(page, "#dist-collectives")
    check(len(coll_rows) == sum(len(r["collectives"]) for r in X["ranks"]), f"{name}: collectives rows")
    # the per-step chart follows the rank chosen
    page.select_option("#dist-steps select", index=1)
    check(page.get_attribute("#dist-steps svg[data-chart=rank-steps]", "data-rank") == str(X["ranks"][1]["rank"]),
          f"{name}: the step chart shows the chosen rank")
    # issue 31: every step label names its rank (the ranks' step numbers are the same)
    tips = page.evaluate("[...document.querySelectorAll('#dist-steps svg[data-chart=rank-steps] title')].map(t => t.textContent)")
    want = f"rank {X['ranks'][1]['rank']} \u00b7 step "
    check(tips and all(t.startswith(want) for t in tips), f"{name}: step labels {tips[:3]} do not name rank {X['ranks'][1]['rank']}")
    page.select_option("#dist-steps select", index=0)
    if shot:
        shoot(page, shot, full_page=True)
    check(not errors, f"{name}: console errors {errors}")
    page.close()
    check_overview(browser, html, name, X, ov_shot)
    return X


def check_overview(browser, html, name, X, shot=None):
    """Issue 31 item 7: the Overview of several ranks does not merge their
    steps: a rank selector, and for the rank chosen its own steps (as many
    as the Distributed view counts for it), categories, step time and
    findings, every step label naming the rank."""
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors = watch_errors(page)
    page.goto("file://" + os.path.abspath(html) + "#overview")
    page.wait_for_selector("#view-overview .card")
    ov = page.evaluate("JSON.parse(document.getElementById('trainprof-data').textContent).overview")
    opts = page.evaluate("[...document.querySelectorAll('#ov-rank option')].map(o => o.textContent)")
    want = [str(r["rank"]) for r in X["ranks"]]
    check(opts == want, f"{name}: Overview rank selector {opts}, ranks {want}")
    for i, r in enumerate(ov.get("ranks") or []):
        if not opts:
            break
        page.select_option("#ov-rank", index=i)
        rank, tag = r["rank"], f"rank {r['rank']}"
        d = [k for k in X["ranks"] if k["rank"] == rank]
        check(d and r["n_steps"] == d[0]["steps_total"], f"{name}: {tag}: {r['n_steps']} steps, Distributed {d and d[0]['steps_total']}")
        steps = page.locator('#stats [data-stat="steps"]').inner_text()
        check(steps.split()[0] == str(r["n_steps"]) and f"(rank {rank})" in steps, f"{name}: {tag}: steps stat {steps!r}")
        cat = page.query_selector("svg[data-chart=categories]")
        check(cat is not None and cat.get_attribute("data-rank") == str(rank) and
              int(cat.get_attribute("data-points")) == r["n_steps"], f"{name}: {tag}: categories chart")
        tips = page.evaluate("[...document.querySelectorAll('svg[data-chart=categories] title')].map(t => t.textContent)")
        check(tips and all(t.startswith(f"rank {rank} \u00b7 step ") for t in tips), f"{name}: {tag}: bar labels {tips[:2]}")
        sm = page.query_selector("svg[data-chart=step_ms]")
        if sm is not None:
            check(sm.get_attribute("data-rank") == str(rank) and int(sm.get_attribute("data-points")) == r["n_steps"],
                  f"{name}: {tag}: step time chart {sm.get_attribute('data-rank')} {sm.get_attribute('data-points')}")
            check(f"(rank {rank})" in page.locator("#s-step").inner_text(), f"{name}: {tag}: step time card names no rank")
        head = page.locator("#findings h2").inner_text() if page.locator("#findings h2").count() else ""
        check(f"(rank {rank})" in head, f"{name}: {tag}: findings title {head!r}")
        froms = page.evaluate("[...document.querySelectorAll('#findings-list .finding .from')].map(e => e.textContent)")
        check(len(froms) == len(r["findings"]) and all(f"rank {rank}'s" in t for t in froms), f"{name}: {tag}: findings from {froms}")
    if shot:
        page.select_option("#ov-rank", index=0)
        shoot(page, shot, full_page=True)
    check(not errors, f"{name}: Overview console errors {errors}")
    page.close()


def kineto(browser, tmp):
    ranks = [os.path.join(FIX, "kineto", f"trace_filter__sampled_rank-{r}.json.gz") for r in (0, 1)]
    if not all(os.path.exists(p) for p in ranks):
        print("no Kineto rank fixtures")
        return
    d = os.path.join(tmp, "kineto_job")
    os.makedirs(d)
    for p in ranks:
        shutil.copy(p, d)
    cli = json.loads(trainprof(["analyze", "--json", d]))
    html = os.path.join(tmp, "ranks.html")
    trainprof(["report", "--html", html, *ranks])
    check_page(browser, html, {**cli, "per_rank": [{**w, "source": ranks[i]} for i, w in enumerate(cli["per_rank"])]},
               "kineto ranks")
    html2 = os.path.join(tmp, "dir.html")
    trainprof(["report", "--html", html2, d])
    check_page(browser, html2, cli, "kineto directory")


def ddp(browser, tmp):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP DDP part: no torch")
        return
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.path.join(os.environ.get("TP_BUILD_DIR", "build"), "python"))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           os.path.join(SRC, "examples", "python", "train_ddp.py"), "--max_steps", "8", "--log_every", "4",
           "--slow_rank", "1", "--slow_ms", "40", "--profiling.log_dir", os.path.join(tmp, "runs"),
           "--profiling.wait", "0", "--profiling.warmup", "0", "--profiling.active", "8",
           "--profiling.memory", "false", "--profiling.metrics", "none"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0 and "No module named 'trainprof" in p.stderr:
        print("SKIP DDP part: the trainprof package is not built")
        return
    check(p.returncode == 0, f"torchrun: {p.stderr[-3000:]}")
    jobs = glob.glob(os.path.join(tmp, "runs", "*_job-*"))
    check(len(jobs) == 1, f"one job directory: {jobs}")
    if not jobs:
        return
    cli = json.loads(trainprof(["analyze", "--json", jobs[0]]))
    html = os.path.join(tmp, "job.html")
    trainprof(["report", "--html", html, jobs[0]])
    X = check_page(browser, html, cli, "gloo DDP job", "report_distributed.png", "report_overview_ranks.png")
    check(cli["straggler"]["rank"] == 1 and cli["straggler"]["persistent"], f"DDP straggler {cli['straggler']}")
    check(all(r["synced"] for r in X["ranks"]), "DDP ranks' clocks synced")


def main():
    return run(kineto, ddp, prefix="tp_dist_")


if __name__ == "__main__":
    sys.exit(main())
