"""The report page's size and speed on a large trace (never a test).

    python bench_page.py --bin trainprof --gen tp_gen_trace --fixture F --size-mb 1024 --dir D

Generates a SIZE_MB Kineto trace from a GPU fixture (bench/analyze's
generator), then, alternating in one run so the machine's noise hits both
alike: `trainprof report TRACE` (text to /dev/null) and `trainprof report
--html PAGE TRACE`, best of --runs each, and their ratios in wall time and
in CPU time (user + system of every thread); the page's size;
and the time headless Chromium takes to load it and draw every view
(performance.now() when the page's start() returns; --no-browser skips it).

--against OTHER (repeatable) times another build in the same rounds, in
turn with --bin (each round: every binary's report, then its page), and
prints each one's best and median and their ratios: a change measured side
by side with the build before it."""
import argparse
import os
import statistics
import subprocess
import sys
import time


def timed(cmd):
    """(wall seconds, CPU seconds: user + system of the command and its threads)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"{' '.join(cmd)}: exit {os.waitstatus_to_exitcode(status)}: {err}")
    return wall, ru.ru_utime + ru.ru_stime


def chromium_ms(page_path, runs):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "browser"))
    from browser_common import launch
    from playwright.sync_api import sync_playwright
    out = []
    with sync_playwright() as p:
        b = launch(p)
        for _ in range(runs):
            page = b.new_page(viewport={"width": 1150, "height": 900})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto("file://" + os.path.abspath(page_path), wait_until="load")
            ms = float(page.evaluate("document.documentElement.dataset.renderedMs"))
            if errors:
                sys.exit(f"page errors: {errors}")
            out.append(ms)
            page.close()
        b.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--against", action="append", default=[], help="another build, timed in the same rounds")
    ap.add_argument("--no-browser", action="store_true",
                    help="skip the Chromium draw time (a machine without chromium, e.g. the device)")
    a = ap.parse_args()
    trace = os.path.join(a.dir, f"bench_page_{a.size_mb}mb.json")
    if not os.path.exists(trace) or os.path.getsize(trace) < a.size_mb * 1e6 * 0.9:
        subprocess.run([a.gen, a.fixture, trace, str(a.size_mb)], check=True)
    page = os.path.join(a.dir, "bench_page.html")
    rep, html = [], []
    others = {b: ([], []) for b in a.against}
    for _ in range(a.runs):
        rep.append(timed([a.bin, "report", trace]))
        html.append(timed([a.bin, "report", "--html", page, trace]))
        for b, (r, h) in others.items():
            r.append(timed([b, "report", trace]))
            h.append(timed([b, "report", "--html", os.path.join(a.dir, "bench_page_against.html"), trace]))
    size = os.path.getsize(page)
    ms = [] if a.no_browser else chromium_ms(page, a.runs)
    print(f"trace: {trace} ({os.path.getsize(trace) / 1e6:.0f} MB)")
    for what, i in (("wall", 0), ("CPU", 1)):
        r, h = [x[i] for x in rep], [x[i] for x in html]
        print(f"{what}: trainprof report:        best {min(r):.2f} s of {a.runs} ({', '.join(f'{t:.2f}' for t in r)})")
        print(f"{what}: trainprof report --html: best {min(h):.2f} s of {a.runs} ({', '.join(f'{t:.2f}' for t in h)})")
        print(f"{what}: ratio (best / best):     {min(h) / min(r):.2f}x")
    side_by_side = [(a.bin, (rep, html))] + list(others.items()) if others else []
    for b, (r, h) in side_by_side:
        rw, hw = [x[0] for x in r], [x[0] for x in h]
        print(f"side by side: {b}: report best {min(rw):.2f} / median {statistics.median(rw):.2f} s, "
              f"--html best {min(hw):.2f} / median {statistics.median(hw):.2f} s, "
              f"ratio {min(hw) / min(rw):.2f}x / {statistics.median(hw) / statistics.median(rw):.2f}x, "
              f"--html CPU best {min(x[1] for x in h):.2f} s")
    print(f"page: {size / 1e6:.2f} MB")
    if ms:
        print(f"chromium load + draw:    best {min(ms):.0f} ms of {a.runs} ({', '.join(f'{t:.0f}' for t in ms)})")


if __name__ == "__main__":
    main()
