#!/usr/bin/env python3
"""README.md as it is today (issue 33, item 7):

- the `pip install .` path installs torch first, the CPU build pinned as in
  requirements.txt, and numpy;
- the quoted output of scripts/run-example.sh has only the sections the
  script prints now (it no longer runs `trainprof analyze`), and its
  periodic metrics blocks are in today's form: `Step N` numbered as
  metrics.jsonl numbers steps (0-based: 99 for the 100th), times in the
  table's units (`avg=2.208 ms`), as src/sink/console.c prints them.
Exits 1 naming each mismatch."""
import os
import re
import sys

ROOT = os.environ.get("TP_SOURCE_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def section(text, heading):
    """The text under a markdown heading, up to the next heading of any level."""
    start = text.index(heading)
    nxt = re.search(r"^#{1,6} ", text[start + len(heading):], re.M)
    return text[start:start + len(heading) + nxt.start()] if nxt else text[start:]


def test_pip_install_path_installs_torch_first():
    req = read("requirements.txt")
    torch = re.search(r"^torch==(\S+)", req, re.M).group(1)
    pip = section(read("README.md"), "### From Python: `pip install .`")
    first = pip.find(f"pip install torch=={torch}")
    check(first >= 0, f"README's pip path does not install torch=={torch} (requirements.txt's pin)")
    check("download.pytorch.org/whl/cpu" in pip, "README's pip path does not say the CPU build")
    check(re.search(r"pip install [^\n]*numpy", pip) is not None, "README's pip path does not install numpy")


def code_blocks(text):
    """The fenced blocks' texts, in order."""
    blocks, cur = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if cur is None:
                cur = []
            else:
                blocks.append("\n".join(cur))
                cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


def quoted_run_example(readme):
    return [b for b in code_blocks(readme) if "=== training examples/" in b]


HEADERS = [  # the section headers scripts/run-example.sh and the examples print today
    r"=== building trainprof",
    r"=== training examples/",
    r"=== trainprof: \d+ steps, ",          # the console sink's table (src/sink/console.c)
    r"=== files written to ",
    r"=== trainprof steps ",
    r"=== trainprof report --top 10 ",
]


def test_run_example_output_is_todays():
    script = read("scripts/run-example.sh")
    check("trainprof analyze" not in script, "run-example.sh runs analyze again: update this test")
    blocks = quoted_run_example(read("README.md"))
    check(blocks, "README quotes no run-example output")
    for block in blocks:
        for line in block.splitlines():
            if line.startswith("==="):
                check(any(re.match(h, line) for h in HEADERS), f"README quotes a section run-example.sh "
                      f"does not print: {line[:80]!r}")
            m = re.match(r"--- Profiling Metrics \(Step (\d+)\) ---", line)
            if m:
                check((int(m.group(1)) + 1) % 100 == 0, f"README's metrics block {line!r}: steps are "
                      "numbered from 0 (the 100th is Step 99)")
            if re.match(r"\S+: avg=", line):
                check(re.match(r"\S+: avg=\d+\.\d{3} (s|ms|us), total=\d+\.\d{3} (s|ms|us), count=\d+$",
                               line) is not None, f"README's metrics line in the old units: {line!r}")
        check("Findings" not in block, "README's run-example output shows Findings it no longer prints")


def main():
    test_pip_install_path_installs_torch_first()
    test_run_example_output_is_todays()
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
