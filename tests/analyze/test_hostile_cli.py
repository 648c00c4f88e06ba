"""Issue 32: the CLI under hostile conditions. No command writes over its
own input, slice/merge/fix outputs are atomic (the old file stays on any
failure, a full disk included), a failed write to stdout is never exit 0,
`fix` repairs a cut and nothing else, one bad file does not hide a run or a
job, and `combine` says on stderr why nothing could be read.

Runs the real `trainprof` binary (env TRAINPROF_BIN) on the fixture in
argv[1]; Python's json module checks every file written.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ["TRAINPROF_BIN"]
FIX = sys.argv[1]
TRACE = os.path.join(FIX, "mlp_adam.pt.trace.json")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, expect=0, stdout=subprocess.PIPE, cwd=None):
    p = subprocess.run([BIN, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=cwd)
    check(p.returncode == expect, f"{args}: exit {p.returncode} != {expect}\n{p.stderr}")
    return p


def read(path):
    with open(path, "rb") as f:
        return f.read()


def n_events(path):
    with open(path) as f:
        doc = json.load(f)
    return len(doc["traceEvents"] if isinstance(doc, dict) else doc)


def leftovers(d):
    return [n for n in os.listdir(d) if ".tmp." in n]


def test_never_over_input(tmp):
    """Item 1: -o naming the input (another spelling, a symlink, a hard link)
    is refused with exit 2 naming both, and the input is untouched."""
    t = os.path.join(tmp, "t.json")
    shutil.copy(TRACE, t)
    before = read(t)
    os.symlink("t.json", os.path.join(tmp, "link.json"))
    os.link(t, os.path.join(tmp, "hard.json"))
    for out in ("./t.json", "link.json", "hard.json", t):
        for cmd in (["fix", "t.json", "-o", out], ["slice", "t.json", "-o", out],
                    ["slice", "t.json", "--min-dur", "5us", "-o", out], ["merge", "t.json", "-o", out],
                    ["merge", TRACE, "link.json", "-o", out]):
            p = run(*cmd, expect=2, cwd=tmp)
            inp = "link.json" if "link.json" in cmd[:-2] else "t.json"
            check("the output is the input" in p.stderr and os.path.basename(out) in p.stderr
                  and inp in p.stderr, f"{cmd}: names both files: {p.stderr!r}")
            check(read(t) == before, f"{cmd}: the input is intact")
    for cmd in (["report", "--html", "link.json", "t.json"], ["diff", "--html", "hard.json", TRACE, "t.json"]):
        p = run(*cmd, expect=2, cwd=tmp)
        check("the output is the input" in p.stderr, f"{cmd}: refused: {p.stderr!r}")
        check(read(t) == before, f"{cmd}: the input is intact")
    check(not leftovers(tmp), f"no temporary files left: {leftovers(tmp)}")


def test_outputs_atomic(tmp):
    """Item 2: a bad input or an error mid-file leaves the old output as it
    was (every filter), and a good run replaces it whole."""
    out = os.path.join(tmp, "out.json")
    run("slice", TRACE, "-o", out)
    good = read(out)
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write("garbage")
    mid = os.path.join(tmp, "mid.json")  # an error after 300 good events
    evs = [{"name": f"op{i}", "ph": "X", "ts": i * 10, "dur": 5, "pid": 1, "tid": 1} for i in range(600)]
    text = json.dumps({"traceEvents": evs})
    k = text.index('"ts": 3000,')
    with open(mid, "w") as f:
        f.write(text[:k] + '"ts": @,' + text[k + len('"ts": 3000,'):])
    for src in (bad, mid):
        for filt in ([], ["--min-dur", "1us"], ["--cat", "x"], ["--steps", "1-2"], ["--time", "0-5ms"]):
            run("slice", src, *filt, "-o", out, expect=2)
            check(read(out) == good, f"slice {os.path.basename(src)} {filt}: the old output stays")
        run("merge", TRACE, src, "-o", out, expect=2)
        check(read(out) == good, f"merge with {os.path.basename(src)}: the old output stays")
        run("fix", src, "-o", out, expect=2)
        check(read(out) == good, f"fix {os.path.basename(src)}: the old output stays")
    check(not leftovers(tmp), f"no temporary files left: {leftovers(tmp)}")
    # through a symlink: the link stays a link to the new file
    os.symlink("out.json", os.path.join(tmp, "alias.json"))
    run("slice", TRACE, "--min-dur", "5us", "-o", "alias.json", cwd=tmp)
    check(os.path.islink(os.path.join(tmp, "alias.json")), "the link stays a link")
    check(n_events(out) < n_events(TRACE), "the file it points at is the new slice")
    # a device is written in place (never renamed over)
    run("slice", TRACE, "-o", "/dev/null")
    check(os.path.exists("/dev/null") and not os.path.isfile("/dev/null"), "/dev/null is still a device")
    p = run("slice", TRACE, "-o", "/dev/full", expect=2)
    check("No space left" in p.stderr, f"/dev/full says why: {p.stderr!r}")


def mount_small_tmpfs(d):
    """A 256 KB file system, or None (with the reason) when not permitted."""
    os.makedirs(d)
    if os.geteuid() != 0 or not shutil.which("mount"):
        return "not root: cannot mount a small tmpfs"
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", d], capture_output=True, text=True)
    return None if p.returncode == 0 else f"mount tmpfs refused: {p.stderr.strip()}"


def test_full_disk(tmp):
    """Item 2 on a full file system: the existing output is not replaced by a
    cut file, no temporary is left, exit 2 with the reason."""
    d = os.path.join(tmp, "small")
    why = mount_small_tmpfs(d)
    if why:
        print("SKIP test_full_disk:", why)
        return
    try:
        out = os.path.join(d, "out.json")
        run("slice", TRACE, "--min-dur", "20us", "-o", out)
        good = read(out)
        fd = os.open(os.path.join(d, "filler"), os.O_WRONLY | os.O_CREAT)
        try:  # fill it up
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        os.close(fd)
        for cmd in (["slice", TRACE, "-o", out], ["merge", TRACE, TRACE, "-o", out], ["fix", TRACE, "-o", out]):
            p = run(*cmd, expect=2)
            check("No space left" in p.stderr, f"{cmd[0]} on a full disk says why: {p.stderr!r}")
            check(read(out) == good, f"{cmd[0]} on a full disk: the old output stays whole")
            check(not leftovers(d), f"{cmd[0]}: no temporary left on the full disk: {leftovers(d)}")
    finally:
        subprocess.run(["umount", d])


def test_stdout_full():
    """Item 3: every command that prints its result fails (exit 2, the
    reason on stderr) when stdout cannot be written."""
    summary = tempfile.NamedTemporaryFile(suffix=".json", delete=False)
    subprocess.run([BIN, "analyze", "--summary", TRACE], stdout=summary, check=True)
    summary.close()
    cmds = [["report", TRACE], ["report", "--json", TRACE], ["analyze", TRACE], ["analyze", "--json", TRACE],
            ["analyze", "--summary", TRACE], ["steps", TRACE], ["steps", "--json", TRACE],
            ["diff", TRACE, TRACE], ["combine", summary.name], ["config"], ["--help"],
            ["slice", TRACE, "-o", "-"], ["fix", TRACE, "-o", "-"]]
    with open("/dev/full", "w") as full:
        for cmd in cmds:
            p = run(*cmd, expect=2, stdout=full)
            check("No space left" in p.stderr, f"{cmd}: says why: {p.stderr!r}")
    os.unlink(summary.name)


def test_summaries_unwritten(tmp):
    """Item 3: `analyze --summaries DIR` whose files cannot be written is
    exit 2 with the reason, not a warning and exit 0."""
    job = make_job(tmp)
    not_dir = os.path.join(tmp, "not_a_dir")
    open(not_dir, "w").close()
    p = run("analyze", "--summaries", not_dir, job, expect=2)
    check("could not be written" in p.stderr and "Not a directory" in p.stderr, f"says why: {p.stderr!r}")
    out = os.path.join(tmp, "sums")
    os.makedirs(out)
    run("analyze", "--summaries", out, job)
    for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name)) as f:
            check("trainprof_rank_summary" in json.load(f), f"{name} is a summary")


def test_fix_repairs_cuts_only(tmp):
    """Item 4: one bad value among 2,001 events is damage (exit 2, byte
    offset), not a cut; deep nesting is an error; a cut (also one followed by
    the zeros a crash leaves) is repaired."""
    evs = [{"name": f"op{i}", "ph": "X", "ts": i * 10, "dur": 5, "pid": 1, "tid": 1} for i in range(2001)]
    text = json.dumps({"traceEvents": evs})
    k = text.index('"ts": 10000,')
    nan = os.path.join(tmp, "nan.json")
    with open(nan, "w") as f:
        f.write(text[:k] + '"ts": NaN,' + text[k + len('"ts": 10000,'):])
    out = os.path.join(tmp, "fixed.json")
    for args in (["fix", nan], ["fix", nan, "-o", out]):
        p = run(*args, expect=2)
        check(f"byte {k + 6}" in p.stderr and "damaged" in p.stderr, f"{args}: byte offset: {p.stderr!r}")
    check(not os.path.exists(out), "nothing written for a damaged trace")
    deep = os.path.join(tmp, "deep.json")
    with open(deep, "w") as f:
        f.write('{"traceEvents": [' + "[" * 200000)
    p = run("fix", deep, "-o", out, expect=2)
    check("nesting" in p.stderr, f"deep nesting is an error: {p.stderr!r}")
    cut = os.path.join(tmp, "cut.json")
    with open(cut, "w") as f:
        f.write(text[: len(text) // 2])
    zeros = os.path.join(tmp, "zeros.json")
    with open(zeros, "wb") as f:
        f.write(text[: len(text) // 2].encode() + b"\0" * 8192 + b"\n")
    for src in (cut, zeros):
        run("fix", src, expect=1)
        run("fix", src, "-o", out)
        check(900 < n_events(out) < 1100, f"{os.path.basename(src)}: the events before the cut")


def make_job(tmp):
    job = os.path.join(tmp, "job")
    for r in (0, 1):
        os.makedirs(os.path.join(job, f"rank{r}"))
        shutil.copy(TRACE, os.path.join(job, f"rank{r}", "a.json"))
    os.symlink("loop.json", os.path.join(job, "rank0", "loop.json"))  # links to itself
    open(os.path.join(job, "rank1", "zero.json"), "w").close()
    return job


def test_bad_file_does_not_hide_a_run(tmp):
    """Item 5: a 0-byte trace of a run and a looping symlink or an empty file
    in a rank are skipped with a warning; the rest is read; `report --html`
    takes a job directory without job.json as `analyze` does."""
    run_dir = os.path.join(tmp, "run")
    os.makedirs(os.path.join(run_dir, "profiler_traces"))
    shutil.copy(TRACE, os.path.join(run_dir, "profiler_traces", "w1.json"))
    open(os.path.join(run_dir, "profiler_traces", "w2.json"), "w").close()
    for cmd in (["analyze", run_dir], ["report", run_dir], ["steps", run_dir],
                ["report", "--html", os.path.join(tmp, "run.html"), run_dir]):
        p = run(*cmd)
        check("w2.json: skipped: empty file" in p.stderr, f"{cmd}: warns: {p.stderr!r}")
    job = make_job(tmp)
    p = run("analyze", "--json", job)
    check("loop.json: skipped" in p.stderr and "zero.json: skipped" in p.stderr, f"analyze job warns: {p.stderr!r}")
    ranks = json.loads(p.stdout)
    check(ranks["ranks"] == 2 and len(ranks["per_rank"]) == 2, f"both ranks read: {ranks['ranks']}")
    merged = os.path.join(tmp, "merged.json")
    run("merge", job, "-o", merged)
    check(n_events(merged) > 2 * n_events(TRACE) - 10, "merge reads both ranks")
    html = os.path.join(tmp, "job.html")
    run("report", "--html", html, job)  # no job.json in it
    with open(html) as f:
        page = f.read()
    check('"job directory"' in page, "the page reads it as a job directory")


def test_combine_says_why(tmp):
    """Item 9: exit 2 with each reason on stderr and no empty table; the OS
    reason in "cannot open"."""
    notsum = os.path.join(tmp, "notsum.json")
    with open(notsum, "w") as f:
        f.write('{"a": 1}')
    p = run("combine", notsum, expect=2)
    check("not a rank summary" in p.stderr and "no rank of" in p.stderr, f"combine non-summary: {p.stderr!r}")
    check(p.stdout == "", f"no empty table: {p.stdout!r}")
    p = run("combine", os.path.join(tmp, "missing.json"), expect=2)
    check("No such file or directory" in p.stderr, f"the OS reason: {p.stderr!r}")
    bad = os.path.join(tmp, "badjob")
    for r in (0, 1):
        os.makedirs(os.path.join(bad, f"rank{r}"))
        with open(os.path.join(bad, f"rank{r}", "a.json"), "w") as f:
            f.write("not json")
    for cmd in (["analyze", bad], ["steps", "--json", bad]):
        p = run(*cmd, expect=2)
        check("no rank of" in p.stderr and "rank0" in p.stderr and "rank1" in p.stderr,
              f"{cmd}: each rank's reason on stderr: {p.stderr!r}")
        check(p.stdout == "", f"{cmd}: no empty table: {p.stdout!r}")


def test_absurd_numbers(tmp):
    """Item 7: spans from -4e18 to +4e18 ns (the reader's limit) give a sane
    whole-trace row (no negative duration, GPU idle within 0-100 %) and a
    warning; diff --html caps a 5 MB name as report --html does."""
    lim = 4e15  # us
    evs = [{"name": "k", "ph": "X", "ts": -lim, "dur": lim, "pid": 0, "tid": 7, "cat": "kernel"},
           {"name": "a", "ph": "X", "ts": lim, "dur": lim, "pid": 1, "tid": 1, "cat": "cpu_op"},
           {"name": "b", "ph": "B", "ts": -lim, "pid": 1, "tid": 2}, {"name": "b", "ph": "E", "ts": lim, "pid": 1, "tid": 2}]
    huge = os.path.join(tmp, "huge.json")
    with open(huge, "w") as f:
        json.dump({"traceEvents": evs}, f)
    p = run("steps", "--json", huge)
    check("cut there" in p.stderr, f"steps warns about the clamped span: {p.stderr!r}")
    doc = json.loads(p.stdout)
    whole = json.dumps(doc)
    check('"dur_ns": -' not in whole and "-1007" not in whole, f"no negative step: {whole[:400]}")
    json.loads(run("analyze", "--json", huge).stdout)
    text = run("analyze", huge).stdout
    check("4071" not in text and "-100730376" not in text, f"analyze stays sane: {text[:300]}")
    name = "N" * (5 << 20)
    pages = []
    for tag, dur in (("a", 10), ("b", 20)):
        path = os.path.join(tmp, f"{tag}.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": [{"name": name, "ph": "X", "ts": 0, "dur": dur, "pid": 1, "tid": 1,
                                        "cat": "cpu_op"}]}, f)
        pages.append(path)
    html = os.path.join(tmp, "diff.html")
    run("diff", "--html", html, *pages)
    size = os.path.getsize(html)
    check(size < 1 << 20, f"diff --html caps names: {size} bytes")
    with open(html) as f:
        check("N" * 8192 in f.read(), "the name's first 8,192 characters are on the page")


def clean(p, what):
    """No sanitizer report (in the ASan+UBSan build these tests run there too)."""
    for word in ("runtime error", "LeakSanitizer", "AddressSanitizer"):
        check(word not in p.stderr, f"{what}: {word}: {p.stderr[-2000:]}")


def test_sanitizer_paths(tmp):
    """Item 8: nameless events, empty event lists, a rank without traces,
    failing combines and merges of more than 1,024 files (UBSan: null
    pointers with zero lengths to memcpy/qsort; LSan: the merge's paths)."""
    noname = os.path.join(tmp, "noname.json")
    with open(noname, "w") as f:
        json.dump({"traceEvents": [
            {"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}, {"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "name": ""},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {}},
            {"ph": "X", "ts": 5, "dur": 1, "pid": 0, "tid": 7, "cat": "kernel"}]}, f)
    empty = os.path.join(tmp, "empty_events.json")
    with open(empty, "w") as f:
        json.dump({"traceEvents": []}, f)
    for src in (noname, empty):
        for cmd in (["report", src], ["steps", "--json", src], ["analyze", src], ["analyze", "--summary", src],
                    ["report", "--html", os.path.join(tmp, "p.html"), src],
                    ["diff", "--html", os.path.join(tmp, "d.html"), src, noname],
                    ["slice", src, "-o", os.path.join(tmp, "s.json")], ["merge", src, "-o", os.path.join(tmp, "m.json")]):
            no_page = src == empty and cmd[:2] == ["report", "--html"]  # "no trace events": exit 2
            clean(run(*cmd, expect=2 if no_page else 0), cmd)
    summary = os.path.join(tmp, "sum.json")
    with open(summary, "w") as f:
        subprocess.run([BIN, "analyze", "--summary", empty], stdout=f, check=True)
    clean(run("combine", summary), "combine of an empty summary")
    clean(run("combine", os.path.join(tmp, "nope.json"), expect=2), "failing combine")
    job = os.path.join(tmp, "job")
    os.makedirs(os.path.join(job, "rank0"))  # a rank without traces
    os.makedirs(os.path.join(job, "rank1"))
    shutil.copy(TRACE, os.path.join(job, "rank1", "a.json"))
    clean(run("merge", job, "-o", os.path.join(tmp, "jm.json")), "merge with an empty rank")
    clean(run("analyze", job), "analyze with an empty rank")
    many = os.path.join(tmp, "many", "rank0")
    os.makedirs(many)
    for i in range(1030):
        with open(os.path.join(many, f"t{i:04d}.json"), "w") as f:
            json.dump({"traceEvents": [{"name": "a", "ph": "X", "ts": i, "dur": 1, "pid": 1, "tid": 1}]}, f)
    p = run("merge", os.path.dirname(many), "-o", os.path.join(tmp, "mm.json"), expect=2)
    check("too many files" in p.stderr, f"more than 1,024 files is an error, not a silent cut: {p.stderr!r}")
    clean(p, "merge of 1,030 files")
    clean(run("merge", noname, os.path.dirname(many), "-o", os.path.join(tmp, "mm.json"), expect=2), "merge 1+1030")


def main():
    with tempfile.TemporaryDirectory() as base:
        for i, t in enumerate((test_never_over_input, test_outputs_atomic, test_full_disk,
                               test_fix_repairs_cuts_only, test_bad_file_does_not_hide_a_run,
                               test_combine_says_why, test_absurd_numbers, test_sanitizer_paths,
                               test_summaries_unwritten)):
            d = os.path.join(base, str(i))
            os.makedirs(d)
            t(d)
        test_stdout_full()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
