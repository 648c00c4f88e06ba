"""Benchmark `trainprof report` against Python's json.load, side by side.

  python3 bench_report.py --bin build/trainprof --gen build/bench/analyze/tp_gen_trace \
      --fixture ../shared/fixtures/kineto/trace_diff__control__control.json.gz \
      [--reader build/bench/analyze/tp_read_trace] [--size-mb 4096] [--py-size-mb 512] [--dir /tmp]
      [--jobs 2] [--files 8]

--before-bin OLD/trainprof --before-reader OLD/tp_read_trace: another build
(say, main before a change) timed against this one on the big trace,
interleaved: CPU time per core, peak RSS and the ratio.

Generates a SIZE_MB Kineto-like trace (repeated fixture events), measures
report's MB/s and peak RSS on it, then generates a PY_SIZE_MB trace (json.load
needs ~10x the file in RAM) and times report and json.load on that same file,
interleaved, best of --repeat. Prints ratios; absolute numbers on a shared
machine are noisy, ratios within one run are what to compare.

-j: report, analyze (and the reader alone) with -j 1 and -j JOBS on the big
trace, report on FILES copies of the small one (several files at once) and
on its gzip'd copy, interleaved; wall and CPU time side by side, and peak
RSS. The sequential figures above use -j 1.
"""
import argparse
import os
import resource
import subprocess
import sys
import time


def run_measured(cmd):
    """Wall seconds, peak RSS (MB) and CPU seconds of a child process."""
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.execvp(cmd[0], cmd)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}")
    return wall, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def generate(gen, fixture, path, size_mb):
    if not os.path.exists(path) or os.path.getsize(path) < size_mb * 1e6:
        subprocess.run([gen, fixture, path, str(size_mb)], check=True)
    return os.path.getsize(path) / 1e6


def best(cmd, repeat):
    runs = [run_measured(cmd) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), min(r[2] for r in runs)


def before_after(a, big, mb):
    """--before-reader against --reader and --before-bin against --bin on the
    big trace, runs interleaved so both see the same load; best CPU time
    (user + sys) of --repeat each."""
    pairs = [("reader alone", [a.before_reader, big], [a.reader, big])] if a.before_reader and a.reader else []
    if a.before_bin:
        pairs.append(("report", [a.before_bin, "report", big], [a.bin, "report", big]))
    for label, before, after in pairs:
        runs = ([], [])
        for _ in range(a.repeat):
            runs[0].append(run_measured(before))
            runs[1].append(run_measured(after))
        (cb, rb), (ca, ra) = [(min(r[2] for r in x), max(r[1] for r in x)) for x in runs]
        print(f"{label} on {mb:.0f} MB, CPU: before {cb:.2f} s = {mb / cb:.0f} MB/s per core (RSS {rb:.0f} MB), "
              f"after {ca:.2f} s = {mb / ca:.0f} MB/s per core (RSS {ra:.0f} MB); before / after = {cb / ca:.2f}")


def gz_floor(a, small, smb):
    """report on the gzip'd small file beside `zcat | wc -c`, the floor for gzip input."""
    gz = small + ".gz"
    if not os.path.exists(gz):
        with open(gz, "wb") as out:
            subprocess.run(["gzip", "-6", "-c", small], stdout=out, check=True)
    zcat = ["sh", "-c", f"zcat '{gz}' | wc -c"]
    rw, rc, zw, zc = [], [], [], []
    for _ in range(a.repeat):
        w, r, c = run_measured([a.bin, "report", "-j", "1", gz]); rw.append(w); rc.append(c)
        w, _, c = run_measured(zcat); zw.append(w); zc.append(c)
    print(f"gzip input ({os.path.getsize(gz) / 1e6:.0f} MB -> {smb:.0f} MB): trainprof report {min(rw):.2f} s wall, "
          f"{min(rc):.2f} s CPU ({smb / min(rc):.0f} MB/s); zcat | wc -c {min(zw):.2f} s wall, {min(zc):.2f} s CPU; "
          f"report / zcat = {min(rw) / min(zw):.2f} (wall), {min(rc) / min(zc):.2f} (CPU)")


def jobs_compare(a, label, cmd_for, mb):
    """cmd_for(j) run with j = 1 and j = a.jobs, interleaved, best of a.repeat."""
    runs = {1: [], a.jobs: []}
    for _ in range(a.repeat):
        for j in runs:
            runs[j].append(run_measured(cmd_for(j)))
    (w1, r1, c1), (wn, rn, cn) = [(min(x[0] for x in runs[j]), max(x[1] for x in runs[j]),
                                   min(x[2] for x in runs[j])) for j in runs]
    print(f"{label} ({mb:.0f} MB): -j 1 {w1:.2f} s wall, {c1:.2f} s CPU, RSS {r1:.0f} MB | "
          f"-j {a.jobs} {wn:.2f} s wall, {cn:.2f} s CPU, RSS {rn:.0f} MB | "
          f"wall -j 1 / -j {a.jobs} = {w1 / wn:.2f}, CPU -j {a.jobs} / -j 1 = {cn / c1:.2f}")


def jobs_section(a, big, mb, small, smb):
    print(f"-j {a.jobs} against -j 1 ({os.cpu_count()} cores online, load {os.getloadavg()[0]:.1f}):")
    for cmd in ("report", "analyze"):
        jobs_compare(a, f"  {cmd}", lambda j: [a.bin, cmd, "-j", str(j), big], mb)
    if a.reader:
        jobs_compare(a, "  reader alone", lambda j: [a.reader, big, str(j)], mb)
    many = [small] * a.files
    jobs_compare(a, f"  report on {a.files} files", lambda j: [a.bin, "report", "-j", str(j), *many],
                 smb * a.files)
    gz = small + ".gz"
    if os.path.exists(gz):
        jobs_compare(a, "  report on gzip input", lambda j: [a.bin, "report", "-j", str(j), gz], smb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--reader", help="tp_read_trace: also time the reader alone (no analysis)")
    ap.add_argument("--before-bin", help="an older trainprof: its report side by side with --bin")
    ap.add_argument("--before-reader", help="an older tp_read_trace: side by side with --reader")
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--size-mb", type=int, default=4096)
    ap.add_argument("--py-size-mb", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--jobs", type=int, default=2, help="-j compared with -j 1")
    ap.add_argument("--files", type=int, default=8, help="files for report's several-files case")
    ap.add_argument("--only-jobs", action="store_true", help="only the -j comparison")
    ap.add_argument("--keep", action="store_true", help="keep the generated traces")
    a = ap.parse_args()

    big = os.path.join(a.dir, f"tp_bench_{a.size_mb}mb.json")
    small = os.path.join(a.dir, f"tp_bench_{a.py_size_mb}mb.json")
    py = [sys.executable, "-c", "import json,sys; json.load(open(sys.argv[1]))"]
    try:
        mb = generate(a.gen, a.fixture, big, a.size_mb)
        subprocess.run(["cat", big], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        if a.only_jobs:
            smb = generate(a.gen, a.fixture, small, a.py_size_mb)
            if not os.path.exists(small + ".gz"):
                with open(small + ".gz", "wb") as out:
                    subprocess.run(["gzip", "-6", "-c", small], stdout=out, check=True)
            jobs_section(a, big, mb, small, smb)
            return
        wall, rss, cpu = best([a.bin, "report", "-j", "1", big], a.repeat)
        print(f"report on {mb:.0f} MB: {wall:.2f} s wall = {mb / wall:.0f} MB/s "
              f"({cpu:.2f} s CPU = {mb / cpu:.0f} MB/s per core), peak RSS {rss:.0f} MB")
        if a.reader:
            wall, rss, cpu = best([a.reader, big], a.repeat)
            print(f"reader alone on {mb:.0f} MB: {wall:.2f} s wall = {mb / wall:.0f} MB/s "
                  f"({cpu:.2f} s CPU = {mb / cpu:.0f} MB/s per core), peak RSS {rss:.0f} MB")
        if a.before_bin or a.before_reader:
            before_after(a, big, mb)

        smb = generate(a.gen, a.fixture, small, a.py_size_mb)
        tw, trss, pw, prss, tc, pc = [], 0, [], 0, [], []
        for _ in range(a.repeat):  # interleaved so both see the same machine load
            w, r, c = run_measured([a.bin, "report", "-j", "1", small]); tw.append(w); trss = max(trss, r); tc.append(c)
            w, r, c = run_measured(py + [small]); pw.append(w); prss = max(prss, r); pc.append(c)
        t, p = min(tw), min(pw)
        print(f"same {smb:.0f} MB file: trainprof report {t:.2f} s ({smb / t:.0f} MB/s, RSS {trss:.0f} MB), "
              f"python json.load {p:.2f} s ({smb / p:.0f} MB/s, RSS {prss:.0f} MB)")
        print(f"ratio: report is {p / t:.1f}x faster than json.load alone (wall), "
              f"{min(pc) / min(tc):.1f}x by CPU time, using {prss / max(trss, 1):.0f}x less memory")
        gz_floor(a, small, smb)
        jobs_section(a, big, mb, small, smb)
    finally:
        if not a.keep:
            for f in (big, small, small + ".gz"):
                if os.path.exists(f):
                    os.remove(f)


if __name__ == "__main__":
    main()
