"""report.html in a real browser (headless Debian chromium via playwright).

1. A run of the example (two trace windows): report.html is written at
   close; it loads without console errors; every chart's point count and
   axis range match the run's own JSON files read here with Python's json;
   the trace windows are marked; the ops table sorts; profiling.html_report
   false writes none.
2. `trainprof report --html` on a synthetic old-Kineto trace.
3. A synthetic run directory of 1,000,000 steps with a GPU whose memory
   grows and fragments: the page stays small, loads in under a second, and
   shows the memory findings.
Screenshots go to <build>/browser-artifacts/.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analyze"))
from browser_common import artifacts_dir, browser_or_skip, launch, watch_errors  # noqa: E402

sync_playwright = browser_or_skip()
import gen_generations  # noqa: E402

BIN = os.environ["TRAINPROF_BIN"]
EXAMPLES = os.environ["TP_EXAMPLES_DIR"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def close(a, b, rel=1e-4):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-9)


def page_data(path):
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script id="trainprof-data" type="application/json">(.*?)</script>', html, re.S)
    check(m is not None, f"{path}: no data script")
    check("http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html,
          f"{path}: the page refers to the network")
    return json.loads(m.group(1)) if m else {}


def open_page(browser, path):
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    errors = watch_errors(page)
    page.goto("file://" + os.path.abspath(path), wait_until="load")
    return page, errors


def chart(page, name):
    return page.query_selector(f'svg[data-chart="{name}"]')


def attr(el, k):
    return float(el.get_attribute(k))


def rows(path):
    with open(path) as f:
        return json.load(f)


def check_line_chart(page, name, values, what):
    svg = chart(page, name)
    check(svg is not None, f"{what}: no {name} chart")
    if not svg:
        return
    check(int(attr(svg, "data-points")) == len(values), f"{what}: {name} points {svg.get_attribute('data-points')} != {len(values)}")
    check(close(attr(svg, "data-ymin"), min(values)), f"{what}: {name} ymin {svg.get_attribute('data-ymin')} != {min(values)}")
    check(close(attr(svg, "data-ymax"), max(values)), f"{what}: {name} ymax {svg.get_attribute('data-ymax')} != {max(values)}")
    cols = int(attr(svg, "data-columns"))
    check(cols <= 1024, f"{what}: {name} has {cols} columns")
    for line in svg.query_selector_all("polyline.series"):
        n = int(line.get_attribute("data-n"))
        pts = len(line.get_attribute("points").split())
        check(n == pts == cols, f"{what}: {name} line has {pts} points, data-n {n}, columns {cols}")


def test_run_dir(browser, tmp):
    logs = os.path.join(tmp, "runs")
    cmd = [os.path.join(EXAMPLES, "train_mlp"), "--max_steps", "400", "--quiet",
           "--profiling.log_dir", logs, "--profiling.wait", "100", "--profiling.repeat", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    check(p.returncode == 0, f"train_mlp exit {p.returncode}: {p.stderr[-500:]}")
    run = glob.glob(os.path.join(logs, "*"))[0]
    report = os.path.join(run, "report.html")
    check(os.path.exists(report), "report.html not written at close")
    if not os.path.exists(report):
        return
    data = page_data(report)
    timing = rows(os.path.join(run, "timing_profile.json"))
    memory = rows(os.path.join(run, "memory_profile.json"))
    ops = rows(os.path.join(run, "operations.json"))
    config = rows(os.path.join(run, "config.json"))
    traces = sorted(glob.glob(os.path.join(run, "profiler_traces", "*.pt.trace.json")))
    page, errors = open_page(browser, report)
    check_line_chart(page, "step_ms", [r["total_batch_time"] * 1e3 for r in timing], "run")
    check_line_chart(page, "throughput", [r["samples_per_second"] for r in timing], "run")
    check_line_chart(page, "rss", [r["rss_bytes"] / 1048576 for r in memory], "run")
    check_line_chart(page, "system", [r["cpu_memory_percent"] for r in memory], "run")
    windows = []
    for t in traces:
        nums = [int(e["name"].split("#")[1]) for e in rows(t)["traceEvents"]
                if e.get("name", "").startswith("ProfilerStep#")]
        windows.append(f"{min(nums)}-{max(nums)}")
    got = [r.get_attribute("data-window") for r in chart(page, "step_ms").query_selector_all("rect.win")]
    check(len(traces) == 2 and got == windows, f"trace windows drawn {got}, traces say {windows}")
    bars = page.query_selector_all('svg[data-chart="parts"] rect.bar')
    check(len(bars) >= len(timing) // 4, f"{len(bars)} breakdown bars for {len(timing)} steps")
    table = page.query_selector_all("#ops-table tbody tr")
    check(len(table) == len(ops), f"ops table {len(table)} rows, operations.json {len(ops)}")
    page.click('#ops-table th[data-col="2"]')
    first = int(page.query_selector("#ops-table tbody tr td:nth-child(3)").text_content())
    check(first == max(o["count"] for o in ops), f"sorted by calls: first row {first}")
    cfg = page.query_selector_all("#config-table tbody tr")
    check(len(cfg) == len(config), f"config table {len(cfg)} rows, config.json {len(config)} keys")
    check(len(page.query_selector_all(".finding")) == len(data["overview"]["findings"]), "findings not all shown")
    page.screenshot(path=os.path.join(artifacts_dir(), "report_run.png"), full_page=True)
    check(not errors, f"run report console: {errors}")
    page.close()
    # turned off
    logs2 = os.path.join(tmp, "runs_off")
    subprocess.run(cmd[:4] + ["--profiling.log_dir", logs2, "--profiling.html_report", "false"],
                   capture_output=True, cwd=tmp)
    run2 = glob.glob(os.path.join(logs2, "*"))
    check(run2 and not os.path.exists(os.path.join(run2[0], "report.html")),
          "profiling.html_report false still wrote report.html")


def test_trace(browser, tmp):
    traces = gen_generations.write_all(os.path.join(tmp, "gens"))
    src = [t for t in traces if t.endswith("kineto_1_8.json")][0]
    out = os.path.join(tmp, "trace.html")
    p = subprocess.run([BIN, "report", "--html", out, src], capture_output=True, text=True)
    check(p.returncode == 0, f"report --html {src}: {p.stderr}")
    page, errors = open_page(browser, out)
    check_line_chart(page, "step_ms", [gen_generations.STEP_US / 1e3] * gen_generations.STEPS, "trace")
    check(page.query_selector('.finding[data-id="data_loading"]') is not None, "trace report lacks data_loading")
    check(len(page.query_selector_all('svg[data-chart="categories"] rect.bar')) > 0, "no bars")
    page.screenshot(path=os.path.join(artifacts_dir(), "report_trace.png"), full_page=True)
    check(not errors, f"trace report console: {errors}")
    page.close()
    p = subprocess.run([BIN, "report", "--html", out, os.path.join(tmp, "missing.json")], capture_output=True, text=True)
    check(p.returncode == 2 and "missing.json" in p.stderr, f"missing input: exit {p.returncode} {p.stderr}")


def write_big_run(d, n):
    os.makedirs(d)
    with open(os.path.join(d, "timing_profile.json"), "w") as f:
        f.write("[\n")
        f.write(",\n".join(
            '{"step":%d,"total_batch_time":%.6f,"samples_per_second":%.1f,"operations":{"forward":{"time":%.6f,"count":1}}}'
            % (i, 0.010 + (i % 1000) * 1e-6 + (0.05 if i == 777777 else 0), 6400 - (i % 1000) * 0.5, 0.006)
            for i in range(n)))
        f.write("\n]\n")
    with open(os.path.join(d, "memory_profile.json"), "w") as f:
        f.write("[\n")
        g = 1073741824
        f.write(",\n".join(
            '{"step":%d,"rss_bytes":%d,"cpu_memory_percent":%.2f,"memory":{"cuda:0":{"bytes_in_use":%d,'
            '"peak_bytes_in_use":%d,"bytes_reserved":%d}}}'
            % (i, 2 * g + i * 512, 30 + i * 1e-5, g + i * 2048, g + i * 2048 + g // 4, 6 * g)
            for i in range(0, n, 10)))
        f.write("\n]\n")
    with open(os.path.join(d, "operations.json"), "w") as f:
        json.dump([{"name": "forward", "count": n, "total_time": 0.006 * n, "self_time": 0.006 * n,
                    "avg_time": 0.006, "min_time": 0.006, "max_time": 0.006, "top_level": True}], f)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"profiling.name": {"value": "big", "source": "flag"}}, f)


def test_million_steps(browser, tmp):
    run = os.path.join(tmp, "big_run")
    n = 1_000_000
    write_big_run(run, n)
    out = os.path.join(tmp, "big.html")
    p = subprocess.run([BIN, "report", "--html", out, run], capture_output=True, text=True)
    check(p.returncode == 0, f"report --html big run: {p.stderr}")
    size = os.path.getsize(out)
    check(size < 2_000_000, f"1M-step report is {size} bytes")
    page, errors = open_page(browser, out)
    load_ms = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
    print(f"1M steps: report {size} bytes, page load {load_ms:.0f} ms")
    check(load_ms < 1000, f"1M-step report loads in {load_ms:.0f} ms")
    svg = chart(page, "step_ms")
    check(svg and int(attr(svg, "data-points")) == n, "step chart does not count 1M points")
    check(svg and close(attr(svg, "data-ymax"), (0.010 + 777e-6 + 0.05) * 1e3), "the one slow step (max) is lost in the downsampling")
    check(svg and close(attr(svg, "data-ymin"), 10.0), "min step time lost")
    gpu = chart(page, "gpu")
    check(gpu is not None and len(gpu.query_selector_all("polyline.series")) == 3, "GPU chart lacks allocated/reserved/peak")
    ids = [f.get_attribute("data-id") for f in page.query_selector_all(".finding")]
    check("memory_growth" in ids and "fragmentation" in ids, f"memory findings: {ids}")
    page.screenshot(path=os.path.join(artifacts_dir(), "report_1m_steps.png"), full_page=True)
    check(not errors, f"1M report console: {errors}")
    page.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = launch(p)
        test_run_dir(browser, tmp)
        test_trace(browser, tmp)
        test_million_steps(browser, tmp)
        browser.close()
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
