"""A hang in a 2-rank gloo DDP-style job under torchrun (issue 34): rank 1
stalls before its all_reduce, so rank 0 waits inside it. With a short
profiling.hang_timeout both ranks write a hang capture: rank 0's dump shows
it waiting in all_reduce, rank 1's shows where it is stuck, and both ranks
list it in captures.json of their rank directory. The Python API is used
explicitly (the no-code-change bootstrap is separate)."""
import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

SCRIPT = """
    import sys, time
    import torch
    import torch.distributed as dist
    import trainprof

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    prof = trainprof.Profiler(log_dir=sys.argv[1], metrics="none", html_report=False,
                              memory=False, trace=False, hang_timeout="2s",
                              capture_slow_step=0)

    def stall_before_all_reduce():
        time.sleep(7)

    x = torch.ones(1000)
    for step in range(6):
        with prof.zone("forward"):
            y = x * 2
        if rank == 1 and step == 3:
            stall_before_all_reduce()
        with prof.zone("all_reduce"):
            dist.all_reduce(y)
        prof.step()
    prof.close()
    dist.destroy_process_group()
"""


def test_both_ranks_dump_where_they_wait(tmp_path):
    script = tmp_path / "ddp_hang.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1")
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                        str(script), str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=240, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
    jobs = glob.glob(str(tmp_path / "runs" / "*_job-*"))
    assert len(jobs) == 1, jobs
    dumps = {}
    for rank in (0, 1):
        run_dir = os.path.join(jobs[0], f"rank{rank}")
        with open(os.path.join(run_dir, "captures.json"), encoding="utf-8") as f:
            doc = json.load(f)
        assert doc["rank"] == rank
        hangs = [c for c in doc["captures"] if c["reason"] == "hang"]
        assert len(hangs) == 1 and hangs[0]["step"] == 3, doc
        assert hangs[0]["open_zones"] == (["all_reduce"] if rank == 0 else []), hangs[0]
        for rel in hangs[0]["files"]:
            if rel.endswith(".json"):
                with open(os.path.join(run_dir, rel), encoding="utf-8") as f:
                    json.load(f)
        (dump,) = [f for f in hangs[0]["files"] if f.endswith(".hang.txt")]
        dumps[rank] = open(os.path.join(run_dir, dump), encoding="utf-8").read()
    assert "in all_reduce" in dumps[0] and "all_reduce (open" in dumps[0], dumps[0]
    assert "in stall_before_all_reduce" in dumps[1], dumps[1]
    assert "all_reduce (open" not in dumps[1], dumps[1]
