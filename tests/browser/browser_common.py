"""Shared by the browser tests: headless Debian chromium through the venv's
playwright (never `playwright install`), console error capture, artifacts.

A test calls `browser_or_skip()` first: when playwright or chromium is
missing it prints why and exits 0 with ctest's skip code convention
(SKIP_RC, registered as SKIP_RETURN_CODE)."""
import os
import shutil
import subprocess
import sys

CHROMIUM = os.environ.get("TP_CHROMIUM", "/usr/bin/chromium")
SKIP_RC = 77


def browser_or_skip():
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401
    except ImportError:
        print("SKIP: python playwright is not installed (scripts/install-deps.sh installs it)")
        sys.exit(SKIP_RC)
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        print(f"SKIP: {CHROMIUM} not found (scripts/install-deps.sh installs Debian chromium)")
        sys.exit(SKIP_RC)
    from playwright.sync_api import sync_playwright
    return sync_playwright


def launch(p):
    return p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)


def artifacts_dir():
    d = os.path.join(os.environ.get("TP_BUILD_DIR", "."), "browser-artifacts")
    os.makedirs(d, exist_ok=True)
    return d


def watch_errors(page):
    """Collects console errors and page exceptions into a list."""
    errors = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    return errors


# A small torch run with torch_ops and profile_memory: a run directory whose
# own report.html holds torch's operators and memory events.
TORCH_OPS_RUN = """
import sys, trainprof, torch, torch.nn as nn
p = trainprof.Profiler(log_dir=sys.argv[1], torch_ops=True, wait=0, warmup=0, active=2, profile_memory=True)
m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
for i in range(3):
    with p.zone("forward"):
        y = m(torch.randn(16, 32)).sum()
    y.backward()
    p.step()
p.close()
"""


def torch_ops_run(log_dir):
    """Runs TORCH_OPS_RUN into log_dir with the build tree's package; None
    (and a note) where the package or torch is not importable."""
    env = dict(os.environ, PYTHONPATH=os.path.join(os.environ.get("TP_BUILD_DIR", "."), "python"))
    p = subprocess.run([sys.executable, "-c", TORCH_OPS_RUN, log_dir], capture_output=True, text=True, env=env)
    if "No module named" in p.stderr:
        print("note: trainprof's python package or torch is not importable: the torch_ops run is skipped")
        return None
    return p
