"""Shared by the browser tests: headless Debian chromium through the venv's
playwright (never `playwright install`), console error capture, artifacts.

A test calls `browser_or_skip()` first: when playwright or chromium is
missing it prints why and exits 0 with ctest's skip code convention
(SKIP_RC, registered as SKIP_RETURN_CODE)."""
import os
import shutil
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
