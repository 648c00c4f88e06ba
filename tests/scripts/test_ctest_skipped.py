#!/usr/bin/env python3
"""scripts/ctest-skipped.py on a real ctest run: a small CMake project with a
passing test, a failing one, tests skipped with and without a reason and a
disabled one; the summary names every test that did not run, with the reason
its output gave, and the count out of the total."""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("TP_SOURCE_DIR", ".")
PROJECT = """cmake_minimum_required(VERSION 3.18)
project(skips NONE)
enable_testing()
add_test(NAME ok COMMAND sh -c "echo fine")
add_test(NAME broken COMMAND sh -c "echo SKIP: not really; exit 3")
add_test(NAME no_tool COMMAND sh -c "echo checking; echo 'SKIP: frobnicate not found (install it)'; exit 77")
add_test(NAME quiet_skip COMMAND sh -c "exit 77")
add_test(NAME lower COMMAND sh -c "echo 'skipped: sanitizer build'; exit 77")
add_test(NAME off COMMAND true)
set_tests_properties(no_tool quiet_skip lower PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(off PROPERTIES DISABLED ON)
"""


def main():
    tmp = tempfile.mkdtemp(prefix="tp_skips_")
    fails = []
    try:
        with open(os.path.join(tmp, "CMakeLists.txt"), "w") as f:
            f.write(PROJECT)
        build = os.path.join(tmp, "b")
        subprocess.run(["cmake", "-S", tmp, "-B", build], check=True, capture_output=True)
        p = subprocess.run(["ctest", "-j2", "--output-on-failure"], cwd=build, capture_output=True, text=True)
        log = os.path.join(tmp, "ctest.log")
        with open(log, "w") as f:
            f.write(p.stdout + p.stderr)
        out = subprocess.run([sys.executable, os.path.join(SRC, "scripts", "ctest-skipped.py"), log, build],
                             capture_output=True, text=True, check=True).stdout
        print(out)
        lines = out.splitlines()
        want = ["4 test(s) of 5 did not run:",
                "no_tool skipped: frobnicate not found (install it)",
                "quiet_skip skipped: (the test printed no reason)",
                "lower skipped: sanitizer build",
                "off disabled: DISABLED in its CMakeLists.txt"]
        flat = [" ".join(line.split()) for line in lines]
        for w in want:
            if w not in flat:
                fails.append(f"missing line {w!r}")
        if any(line.split()[0] in ("ok", "broken") for line in lines[1:]):
            fails.append("a test that ran is listed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in fails:
        print("FAIL:", f, file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
