"""Instruction budgets of the recorder, counted by callgrind.

Runs bench_steps under `valgrind --tool=callgrind` (10 steps of 20,000
zones per case) and checks the instructions per zone it prints for the
recording thread and for the collector's drain, in the aggregate-only and
the trace-window sessions. The collector's figure is the median of the
drains that did a step's work (bench_steps.c median_drain): the maximum,
used before, caught the totals' periodic refresh now and then and ranged
from 338 to 6,299 between runs of one binary (CI passed or failed by
chance). Counts do not depend on the machine's load otherwise (under load
the collector thread takes more of the steps, which only lowers the trace
case's median), so a budget crossed is a regression, not noise. Measured
when the budgets were set (RelWithDebInfo, gcc 12): recording thread 93;
collector 265-298 (aggregate) and 1177 (trace, Chrome JSON); at stop 37,
medians 335 and 1,361-1,367 (the flight recorder's ring came since). The
collector costed 452 and 5184 before it merged runs of records and
formatted without printf.

Usage: check_instructions.py VALGRIND BENCH_STEPS
"""
import os
import re
import subprocess
import sys
import tempfile

BUDGET = {  # case: (recording thread, collector) instructions per zone
    "aggregate": (100, 360),
    "trace": (100, 1500),
}
LINE = re.compile(r"callgrind (\w+): instructions per zone ([\d.]+) .*"
                  r"collector per zone ([\d.]+) \(min ([\d.]+)\)")


def measure(valgrind, bench):
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([valgrind, "--tool=callgrind", "--separate-threads=yes", bench,
                              "1", "10", "20000"], cwd=d, capture_output=True, text=True,
                             timeout=540)
    found = {m.group(1): tuple(float(m.group(i)) for i in (2, 3, 4))
             for m in map(LINE.match, out.stdout.splitlines()) if m}
    if set(found) != set(BUDGET):
        sys.exit("no callgrind lines from %s:\n%s\n%s" % (bench, out.stdout, out.stderr))
    return found


def main():
    if os.environ.get("TP_SANITIZE"):
        print("SKIP: sanitizer build")
        return 77
    valgrind, bench = sys.argv[1], os.path.abspath(sys.argv[2])
    found = measure(valgrind, bench)
    fails = 0
    for case, (writer, coll, coll_min) in sorted(found.items()):
        w_max, c_max = BUDGET[case]
        print("%-9s recording thread %.1f (budget %d), collector %.1f (budget %d)"
              % (case, writer, w_max, coll, c_max))
        # the collector thread may drain a step before the measuring call
        # does; the median is of the drains that did a step's work (0: fewer
        # than 3 of the 10 did)
        if coll < 50:
            print("  collector count incomplete (every step drained by the collector thread)")
            fails += 1
        if writer > w_max or coll > c_max:
            print("  over budget")
            fails += 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
