"""Shared by the Timeline, Distributed and Diff browser tests: failures
collected (every check runs, one exit status), tables read as the page
shows them, screenshots (into docs/images/ with TP_UPDATE_IMAGES=1), and
one browser over a temporary directory."""
import os
import shutil
import sys
import tempfile

from browser_common import artifacts_dir, browser_or_skip, launch

SRC = os.environ.get("TP_SOURCE_DIR", ".")
FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def table(page, sel):
    """The rows of the table(s) under sel, each a list of cell texts."""
    return page.evaluate(f"""[...document.querySelectorAll('{sel} tbody tr')].map(tr =>
        [...tr.querySelectorAll('td')].map(td => td.textContent))""")


def shoot(page, name, **kw):
    path = os.path.join(artifacts_dir(), name)
    page.screenshot(path=path, **kw)
    if os.environ.get("TP_UPDATE_IMAGES"):
        shutil.copy(path, os.path.join(SRC, "docs", "images", name))


def run(*parts, prefix="tp_view_"):
    """Calls each part(browser, tmp) with one chromium; returns the exit status."""
    sp = browser_or_skip()
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        with sp() as p:
            browser = launch(p)
            for part in parts:
                part(browser, tmp)
            browser.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("FAILED" if FAILS else "ok", len(FAILS))
    return 1 if FAILS else 0
