#!/usr/bin/env python3
"""The tests ctest did not run, and why: ctest's summary says only
"100% tests passed" and lists skipped tests without a reason. Reads ctest's
console output (the "did not run" list) and Testing/Temporary/LastTest.log
(every test's output, where a skipping test prints "SKIP: reason") and
prints one line per skipped test with its reason.

  scripts/ctest-skipped.py CTEST_OUTPUT BUILD_DIR"""
import os
import re
import sys


def not_run(console):
    """[(name, why)] from the "The following tests did not run:" list."""
    out, on = [], False
    for line in console.splitlines():
        if line.startswith("The following tests did not run"):
            on = True
        elif on:
            m = re.match(r"\s+\d+ - (\S+) \((.+)\)\s*$", line)
            if not m:
                break
            out.append((m.group(1), m.group(2)))
    return out


def outputs(last_test_log):
    """{test name: its output} from LastTest.log."""
    out, name, lines, on = {}, None, [], False
    for line in last_test_log.splitlines():
        m = re.match(r"\d+/\d+ Test: (\S+)$", line)
        if m:
            name, lines, on = m.group(1), [], False
        elif line == "Output:":
            on = True
        elif line == "<end of output>":
            if name:
                out[name] = [x for x in lines if x.strip() and not x.startswith("-----")]
            on = False
        elif on:
            lines.append(line)
    return out


def reason(lines):
    for line in reversed(lines):
        m = re.match(r"\s*(?:SKIP|skip(?:ped|ping)?)\b:?\s*(.*)", line, re.IGNORECASE)
        if m:
            return m.group(1) or line.strip()
    return lines[-1].strip() if lines else "(the test printed no reason)"


def main():
    with open(sys.argv[1], errors="replace") as f:
        console = f.read()
    log = os.path.join(sys.argv[2], "Testing", "Temporary", "LastTest.log")
    try:
        with open(log, errors="replace") as f:
            outs = outputs(f.read())
    except OSError:
        outs = {}
    skipped = not_run(console)
    total = re.search(r"tests? (?:passed|failed)[^\n]*out of (\d+)", console)
    of = f" of {total.group(1)}" if total else ""
    if not skipped:
        print(f"no test skipped{of}")
        return 0
    print(f"{len(skipped)} test(s){of} did not run:")
    width = max(len(n) for n, _ in skipped)
    for name, why in skipped:
        if why == "Skipped":
            text = reason(outs.get(name, []))
        elif why == "Disabled":
            text = "DISABLED in its CMakeLists.txt"
        else:  # e.g. a fixture it requires failed
            text = "see the log"
        print(f"  {name:<{width}}  {why.lower()}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
