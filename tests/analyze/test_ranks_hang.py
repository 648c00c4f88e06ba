"""`trainprof ranks JOB_DIR` on a hung job: the hang captures each rank
wrote (captures.json and the .hang.txt dump, in the recorder's format,
docs/CAPTURES.md) say where every rank is and which did not arrive.

Job directories are written here in that format (the end-to-end case, a
real 2-rank gloo job under torchrun, is tests/python/test_torch_captures_ddp.py):
  - rank 1 stalls before its all_reduce, rank 0 waits in it (same step):
    rank 1 did not arrive;
  - rank 2 is a step behind the others, all in collectives: rank 2 is late;
  - every rank waits in all_reduce at the same step: none is named;
  - a rank that raised (an exception capture, no hang): the others wait for it;
  - no captures at all: no hang section, and no traces is still exit 2.
Every JSON output is parsed with Python's json; the text is read for the
same verdict.
"""
import json
import os
import subprocess
import sys
import tempfile

BIN = os.environ["TRAINPROF_BIN"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


COLLECTIVE_STACK = """Thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 2801 in all_reduce
  File "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py", line 81 in wrapper
  File "/job/train.py", line 40 in train_step
  File "/job/train.py", line 52 in <module>
"""
STALL_STACK = """Thread 0x00007f0000000001 (most recent call first):
  File "/job/train.py", line 33 in stall_before_all_reduce
  File "/job/train.py", line 38 in train_step
  File "/job/train.py", line 52 in <module>
"""
IDLE_THREAD = """Thread 0x00007f0000000002 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap
"""


def write_rank(job, rank, captures, dumps):
    d = os.path.join(job, f"rank{rank}")
    os.makedirs(os.path.join(d, "captures"), exist_ok=True)
    doc = {"pid": 1000 + rank, "host": "node", "rank": rank, "process_start": 1, "capture_steps": 10,
           "captures": captures}
    with open(os.path.join(d, "captures.json"), "w") as f:
        json.dump(doc, f)
    for name, text in dumps.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)


def hang_capture(rank, step, zones, stacks):
    dump = f"captures/capture_1_hang_step{step}.hang.txt"
    text = (f"trainprof hang dump: no step ended for 2.0 s\n"
            f"run /job/rank{rank}, rank {rank}, pid {1000 + rank}, host node, at 2026-11-28T04:00:00Z\n\n"
            f"== trainprof: zones open on each thread (outermost first) ==\n"
            f"step {step} in progress for 2.1 s (thread 1)\n"
            f"thread 1 \"MainThread\":{zones}\n"
            f"thread 2 \"pt_autograd_0\": no zone open\n\n"
            f"== threads of the process (kernel view: state, wait channel, system call) ==\n"
            f"tid 4242 \"python\": sleeping, kernel wait channel futex_wait_queue, in system call futex (202)\n\n"
            f"== Python: every thread's stack (most recent call first) ==\n" + "\n".join(stacks))
    cap = {"reason": "hang", "step": step, "time": "2026-11-28T04:00:00Z",
           "files": [f"captures/capture_1_hang_step{step}.pt.trace.json", dump], "detail": "no step ended for 2.0 s"}
    return cap, {dump: text}


def ranks(job, *extra):
    p = subprocess.run([BIN, "ranks", *extra, job], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def hang_of(job):
    rc, out, err = ranks(job, "--json")
    check(rc == 0, f"{job}: ranks --json exit {rc}: {err}")
    try:
        return json.loads(out)["hang"]
    except (ValueError, KeyError) as e:
        check(False, f"{job}: ranks --json is not the documented object: {e}: {out[:300]}")
        return None


def main():
    root = tempfile.mkdtemp(prefix="tp_hang_")

    # rank 1 stalls before its all_reduce; rank 0 waits in it
    job = os.path.join(root, "stall")
    cap, files = hang_capture(0, 3, " step_body (open 2.1 s) > all_reduce (open 2.0 s)",
                              [COLLECTIVE_STACK, IDLE_THREAD])
    write_rank(job, 0, [cap], files)
    cap, files = hang_capture(1, 3, " step_body (open 2.1 s)", [STALL_STACK, IDLE_THREAD])
    write_rank(job, 1, [{"reason": "slow_step", "step": 1, "time": "t", "files": [], "detail": ""}, cap], files)
    h = hang_of(job)
    check(h is not None and h["late"] == [1], f"stall: late ranks {h and h['late']}, expected [1]")
    if h:
        r0, r1 = h["ranks"]
        check(r0["in_collective"] and r0["waiting_in"] == "all_reduce (distributed_c10d.py:2801)", f"stall: rank 0 {r0}")
        check(r0["where"].startswith("train_step (train.py:40)"), f"stall: rank 0 where {r0['where']!r}")
        check(not r1["in_collective"] and r1["where"].startswith("stall_before_all_reduce (train.py:33)"),
              f"stall: rank 1 {r1}")
        check(r1["dump"].endswith(".hang.txt") and r1["step"] == 3, f"stall: rank 1 dump/step {r1}")
    rc, out, err = ranks(job)
    check(rc == 0 and "did not arrive: rank 1 " in out, f"stall text: rc {rc}: {out[-600:]} {err}")
    check("rank 1: step 3, not in a collective: in zone step_body, in stall_before_all_reduce (train.py:33)"
          in out, f"stall text names where rank 1 is: {out[-600:]}")

    # rank 2 a step behind, every rank in a collective
    job = os.path.join(root, "behind")
    for rank, step in ((0, 7), (1, 7), (2, 6)):
        cap, files = hang_capture(rank, step, " all_reduce (open 2.0 s)", [COLLECTIVE_STACK])
        write_rank(job, rank, [cap], files)
    h = hang_of(job)
    check(h is not None and h["late"] == [2], f"behind: late {h and h['late']}, expected [2]")

    # everyone waits in the same place: nobody named
    job = os.path.join(root, "together")
    for rank in (0, 1):
        cap, files = hang_capture(rank, 5, " all_reduce (open 2.0 s)", [COLLECTIVE_STACK])
        write_rank(job, rank, [cap], files)
    h = hang_of(job)
    check(h is not None and h["late"] == [] and h["hung_ranks"] == 2, f"together: {h}")
    rc, out, _ = ranks(job)
    check("no rank is behind the others" in out, f"together text: {out[-400:]}")

    # a rank that raised: the others hang waiting for it
    job = os.path.join(root, "raised")
    cap, files = hang_capture(0, 9, " all_reduce (open 2.0 s)", [COLLECTIVE_STACK])
    write_rank(job, 0, [cap], files)
    write_rank(job, 1, [{"reason": "exception", "step": 9, "time": "t", "files": [],
                         "detail": "RuntimeError: CUDA out of memory\nTraceback ..."}], {})
    h = hang_of(job)
    check(h is not None and h["late"] == [1], f"raised: late {h and h['late']}, expected [1]")
    if h:
        check(h["ranks"][1]["reason"] == "exception" and "out of memory" in h["ranks"][1]["detail"],
              f"raised: rank 1 {h['ranks'][1]}")

    # no captures, no traces: nothing to say, bad input as before
    job = os.path.join(root, "empty")
    os.makedirs(os.path.join(job, "rank0"))
    rc, out, err = ranks(job)
    check(rc == 2 and "hang:" not in out, f"empty: rc {rc} {out[-300:]}")

    # a damaged captures.json or dump is not a crash
    job = os.path.join(root, "damaged")
    os.makedirs(os.path.join(job, "rank0"))
    with open(os.path.join(job, "rank0", "captures.json"), "w") as f:
        f.write('{"rank": 0, "captures": [{"reason": "hang", "step": 2, "files": ["missing.hang.txt"]}, {"reas')
    rc, out, err = ranks(job, "--json")
    check(rc == 0 and json.loads(out)["hang"]["ranks"][0]["step"] == 2, f"damaged: rc {rc} {out[-300:]} {err}")

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ranks_hang: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
