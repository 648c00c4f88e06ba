#!/usr/bin/env python3
"""`trainprof diff --html OUT A B` in headless chromium, on two real Kineto
runs (tests/fixtures: trace_diff control vs test, steps 1009-1011): no console error; the
headline, the run table, the step breakdown, the step pairs, the operators
by impact (those in one run only included, marked) and the findings that
moved equal `trainprof diff --json --top 0` of the same runs as the page
shows them; kernels are labelled as the Kernels view labels them (no
return type, never cut by their column, no two operators one label); the search box filters the operators; the other views say why
they are not on this page; --fail-if-slower still gates. Exit 77 without
chromium."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from browser_common import watch_errors  # noqa: E402
from view_checks import check, run, shoot, table  # noqa: E402

BIN = os.environ.get("TRAINPROF_BIN", "build/trainprof")
SRC = os.environ.get("TP_SOURCE_DIR", ".")
FIX = os.path.join(SRC, "tests", "fixtures")  # the repository's copies (see its README.md)
# per operator row: [text shown, full name (title), whether the column cuts it]
CELLS_JS = """() => Array.from(document.querySelectorAll('#diff-ops-table tbody td.l:first-child'))
  .map(td => [td.textContent, td.title, td.scrollWidth > td.clientWidth + 1])"""


def diff_page(browser, tmp):
    a = os.path.join(FIX, "trace_diff__control__control.json.gz")
    b = os.path.join(FIX, "trace_diff__test__test.json.gz")
    html = os.path.join(tmp, "diff.html")
    p = subprocess.run([BIN, "diff", "--html", html, a, b], capture_output=True, text=True)
    check(p.returncode == 0 and p.stdout == "", f"diff --html: rc {p.returncode} {p.stdout[:200]} {p.stderr}")
    g = subprocess.run([BIN, "diff", "--html", os.path.join(tmp, "g.html"), "--fail-if-slower", "5", a, b],
                       capture_output=True, text=True)
    check(g.returncode == 1 and os.path.exists(os.path.join(tmp, "g.html")), f"gate with --html: {g.returncode}")
    bad = subprocess.run([BIN, "diff", "--html", a, b], capture_output=True, text=True)
    check(bad.returncode == 2, "--html without an output file is bad input")
    cli = json.loads(subprocess.run([BIN, "diff", "--json", "--top", "0", a, b], capture_output=True, text=True).stdout)
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors = watch_errors(page)
    page.goto("file://" + html)
    page.wait_for_selector("#diff-ops")
    check(page.get_attribute("#tabs button[aria-selected=true]", "data-view") == "diff", "the page opens on Diff")
    fmt = lambda fn, v: page.evaluate(f"TP.{fn}({json.dumps(v)})")  # noqa: E731
    head = page.locator(".diff-headline").inner_text()
    check(fmt("fmtDur", cli["metric_a_us"] * 1000) in head and fmt("fmtDur", cli["metric_b_us"] * 1000) in head and
          f"+{cli['change_pct']:.1f}%" in head, f"headline {head!r} vs {cli['metric_a_us']} {cli['metric_b_us']}")
    runs = table(page, "#diff-runs")
    check([r[2] for r in runs] == [str(cli["steps"]["count_a"]), str(cli["steps"]["count_b"])], f"steps {runs}")
    D = page.evaluate("JSON.parse(document.getElementById('trainprof-data').textContent).diff")
    check(D["pairs"]["a"] == [round(x["dur_a_us"] * 1000) for x in cli["steps"]["pairs"]] and
          D["pairs"]["b"] == [round(x["dur_b_us"] * 1000) for x in cli["steps"]["pairs"]], "step pairs")
    check(page.get_attribute("svg[data-chart=diff-steps]", "data-points") == str(len(cli["steps"]["pairs"])),
          "step pair chart points")
    # operators: the page's order by impact is diff's order; values as shown
    ops = table(page, "#diff-ops-table")
    # a row's full name is its first cell's title (kernels are shown by their label)
    cells = page.evaluate(CELLS_JS)
    for row, (label, full, cut) in zip(ops, cells):
        row[0] = full
    kernels = [c for c, r in zip(cells, ops) if r[1] == "gpu"]
    check(kernels, "the fixtures have kernels among the operators shown")
    cut = [c[0] for c in kernels if c[2]]
    check(not cut, f"{len(cut)} of {len(kernels)} kernel names cut by their column: {cut[:3]}")
    seen = {}
    for label, full, _ in cells:
        seen.setdefault(label, set()).add(full)
    same = {k: v for k, v in seen.items() if len(v) > 1}
    check(not same, f"operators with one label: {list(same.items())[:2]}")
    check(all(not c[0].startswith("void ") for c in kernels), f"kernel labels keep the return type: {kernels[:2]}")
    check(len(ops) == min(50, len(cli["ops"])), f"{len(ops)} operator rows shown")
    names = [o["name"] for o in cli["ops"]]
    for i, row in enumerate(ops):
        o = cli["ops"][i]
        exp = [o["name"], o["kind"], fmt("fmtNum", o["calls_a"]), fmt("fmtNum", o["calls_b"]),
               fmt("fmtDur", round(o["total_a_us"] * 1000)), fmt("fmtDur", round(o["total_b_us"] * 1000))]
        got = [row[0], row[1], row[3], row[4], row[5], row[6]]
        if got != exp and row[0] in names:  # ties in |change| may swap neighbours
            o = cli["ops"][names.index(row[0])]
            exp = [o["name"], o["kind"], fmt("fmtNum", o["calls_a"]), fmt("fmtNum", o["calls_b"]),
                   fmt("fmtDur", round(o["total_a_us"] * 1000)), fmt("fmtDur", round(o["total_b_us"] * 1000))]
        check(got == exp, f"operator row {i}: {got} vs {exp}")
    check(D["ops_total"] == len(cli["ops"]), f"every operator carried: {D['ops_total']} vs {len(cli['ops'])}")
    only = [o for o in cli["ops"] if o["calls_a"] == 0 or o["calls_b"] == 0]
    check(only, "the fixtures have operators in one run only")
    status = {o["name"] + o["kind"]: o["status"] for o in D["ops"]}
    for o in only:
        check(status.get(o["name"] + o["kind"]) == ("new" if o["calls_a"] == 0 else "gone"), f"{o['name']} marked")
    # search reaches the rows past the first 50
    target = only[-1]["name"]
    page.fill("#diff-ops .tp-search", target)
    found = table(page, "#diff-ops-table")
    for row, c in zip(found, page.evaluate(CELLS_JS)):
        row[0] = c[1]
    check(any(r[0] == target and r[2] in ("B only (new)", "A only (gone)") for r in found), f"search {target!r}: {found[:3]}")
    page.fill("#diff-ops .tp-search", "")
    # step breakdown and findings
    parts = {r[0]: r[1:3] for r in table(page, "#diff-breakdown")}
    D_parts = {p["name"]: [fmt("fmtDur", p["a_ns"]), fmt("fmtDur", p["b_ns"])] for p in D["parts"] if p["a_ns"] or p["b_ns"]}
    check(parts == D_parts and parts, f"breakdown {parts}")
    fr = table(page, "#diff-findings")
    check([(r[0], r[5]) for r in fr] == [(m["id"], m["verdict"]) for m in cli["findings_moved"]],
          f"findings {fr} vs {cli['findings_moved']}")
    page.click("#tabs button[data-view=overview]")
    check("compares two runs" in page.locator("#view-overview").inner_text(), "other views say why they are absent")
    page.click("#tabs button[data-view=diff]")
    shoot(page, "report_diff.png", clip={"x": 0, "y": 0, "width": 1300, "height": 1900}, full_page=True)
    check(not errors, f"console errors {errors}")
    page.close()


def main():
    return run(diff_page, prefix="tp_diff_")


if __name__ == "__main__":
    sys.exit(main())
