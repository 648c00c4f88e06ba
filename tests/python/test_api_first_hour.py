"""Issue 33, the Python user's first scripts: counters reach every metrics
row (metrics.jsonl and metrics.csv read back with json and csv), epochs
restart batch_idx in plain loops, the timer style and the data loader
helper mark steps when the program marks none, and the console's periodic
block numbers its steps as metrics.jsonl does."""
import csv
import json
import os

import trainprof
from tp_pyhelpers import jsonl, load, only_run_dir, run_python


def test_counters_reach_every_metrics_row(tmp_path):
    with trainprof.Profiler(log_dir=str(tmp_path), metrics="jsonl,csv", log_every=5,
                            memory=False, trace=False) as prof:
        for i in range(12):
            prof.counter("loss", float(i))
            if i % 2 == 0:
                prof.counter("lr", 0.1 * i)
            prof.step(4)
    run_dir = only_run_dir(tmp_path)
    rows = jsonl(run_dir)
    assert [r["step"] for r in rows] == [4, 9, 11]  # every 5 steps, then the last step at close
    values, start = list(range(12)), 0
    for r in rows:
        since = values[start:r["step"] + 1]
        assert r["counter/loss"] == since[-1], r
        assert r["counter/loss_mean"] == sum(since) / len(since), r
        lr_since = [0.1 * i for i in range(start, r["step"] + 1) if i % 2 == 0]
        assert r["counter/lr"] == 0.1 * (r["step"] - r["step"] % 2)
        assert r["counter/lr_mean"] == sum(lr_since) / len(lr_since)
        start = r["step"] + 1
    with open(os.path.join(run_dir, "metrics.csv"), newline="") as f:
        table = list(csv.DictReader(f))
    assert [int(t["step"]) for t in table] == [4, 9, 11]
    for t, r in zip(table, rows):
        assert float(t["counter/loss"]) == r["counter/loss"]
        assert float(t["counter/loss_mean"]) == r["counter/loss_mean"]


def test_a_counter_not_recorded_since_the_last_row_has_no_mean(tmp_path):
    with trainprof.Profiler(log_dir=str(tmp_path), metrics="jsonl", log_every=2,
                            memory=False, trace=False) as prof:
        prof.counter("val_loss", 3.5)
        for _ in range(4):
            prof.step()
    rows = jsonl(only_run_dir(tmp_path))
    assert [r["step"] for r in rows] == [1, 3]
    assert rows[0]["counter/val_loss"] == 3.5 and rows[0]["counter/val_loss_mean"] == 3.5
    assert rows[1]["counter/val_loss"] == 3.5 and "counter/val_loss_mean" not in rows[1]


def test_epoch_end_restarts_batch_idx_in_a_plain_loop(tmp_path):
    with trainprof.Profiler(log_dir=str(tmp_path), metrics="jsonl", log_every=1, memory=False,
                            trace=False) as prof:
        for _epoch in range(2):
            for _batch in range(3):
                prof.step(2)
            prof.epoch_end()
    run_dir = only_run_dir(tmp_path)
    want = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert [(r["epoch"], r["batch_idx"]) for r in jsonl(run_dir)] == want
    timing = load(os.path.join(run_dir, "timing_profile.json"))
    assert [(r["epoch"], r["batch_idx"]) for r in timing] == want


TIMER_STYLE = """
import sys, time, trainprof
from trainprof import get_profiler, profile_data_loader, profile_operation, log_profiling_metrics
loader = [[float(i)] * 4 for i in range(12)]

@profile_operation("forward")
def forward(batch):
    time.sleep(0.0005)
    return sum(batch)

prof = get_profiler()                       # the guide's style: no step() anywhere
for epoch in range(2):
    for batch in profile_data_loader(loader):
        tok = prof.start_timer("optimizer_step")
        forward(batch)
        prof.end_timer("optimizer_step", tok)
log_profiling_metrics()
prof.close()
print("RUN_DIR", prof.run_dir)
"""


def run_dir_of(stdout):
    return [ln.split(" ", 1)[1] for ln in stdout.splitlines() if ln.startswith("RUN_DIR ")][0]


def test_timer_style_without_step_has_a_step_per_batch(tmp_path):
    """Issue 33: the foundational-SSM timer style never calls step(); the
    run ended with 0 steps, empty timing_profile.json and no trace."""
    res = run_python(TIMER_STYLE, env={"TRAINPROF_LOG_DIR": str(tmp_path), "TRAINPROF_WAIT": "1",
                                       "TRAINPROF_WARMUP": "1", "TRAINPROF_ACTIVE": "2"})
    run_dir = run_dir_of(res.stdout)
    timing = load(os.path.join(run_dir, "timing_profile.json"))
    assert len(timing) == 24, len(timing)
    assert all(r["operations"]["forward"]["count"] == 1 for r in timing)
    assert all(r["operations"]["data_batch_production"]["count"] == 1 for r in timing[1:])
    assert load(os.path.join(run_dir, "training_summary.json"))["total_steps"] == 24
    assert os.listdir(os.path.join(run_dir, "profiler_traces"))  # the schedule's window was traced
    assert "no step was marked" not in res.stderr


def test_a_program_that_steps_itself_is_not_stepped_again(tmp_path):
    with trainprof.Profiler(log_dir=str(tmp_path), memory=False, trace=False,
                            metrics="none") as prof:
        for batch in trainprof.profile_data_loader(range(10), profiler=prof):
            prof.step()
        n = 0
        for batch in trainprof.profile_data_loader(range(10), profiler=prof):
            n += 1
            if n % 5 == 0:  # the program's own steps from now on, never ours
                prof.step()
        assert prof.steps == 12


def test_no_step_marked_is_said_once_at_close(tmp_path):
    res = run_python("import trainprof\n"
                     f"p = trainprof.Profiler(log_dir={str(tmp_path)!r}, trace=False)\n"
                     "with p.zone('work'):\n    pass\n"
                     "p.close()\n")
    assert res.stderr.count("no step was marked") == 1, res.stderr
    assert "prof.step()" in res.stderr


def test_console_metrics_number_steps_as_metrics_jsonl(tmp_path):
    res = run_python("import time, trainprof\n"
                     f"p = trainprof.Profiler(log_dir={str(tmp_path)!r}, trace=False, log_every=5,"
                     " metrics='jsonl,console')\n"
                     "for i in range(10):\n"
                     "    with p.zone('forward'):\n        time.sleep(0.002)\n"
                     "    p.step()\n"
                     "p.close()\n")
    blocks = [int(ln.split("(Step ")[1].split(")")[0]) for ln in res.stdout.splitlines()
              if ln.startswith("--- Profiling Metrics")]
    assert blocks == [r["step"] for r in jsonl(only_run_dir(tmp_path))][:2] == [4, 9]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("forward: avg=")][0]
    avg, total = line.split("avg=")[1].split(", total=")
    assert avg.endswith(" ms") and total.split(",")[0].endswith(" ms"), line  # the table's units


def test_cpu_only_run_says_no_gpu_probe_in_the_summary_not_the_console(tmp_path):
    res = run_python("import trainprof\n"
                     f"p = trainprof.Profiler(log_dir={str(tmp_path)!r}, trace=False, metrics='none')\n"
                     "p.step(); p.close()\n")
    assert "GPU" not in res.stderr and "GPU" not in res.stdout, res.stderr
    summary = load(os.path.join(only_run_dir(tmp_path), "training_summary.json"))
    if summary.get("gpu_found") is False:  # this machine has no GPU
        assert summary["gpu_probe"], summary


def test_counters_reach_the_wandb_rows_of_log_profiling_metrics(tmp_path):
    """The rows log_profiling_metrics() sends to wandb.log / the metrics
    loggers carry each counter's last value and its mean since the last call."""
    got = []
    logger = lambda metrics, step=None: got.append(metrics)  # noqa: E731
    trainprof.add_metrics_logger(logger)
    try:
        with trainprof.TrainingProfiler(log_dir=str(tmp_path), metrics="none", memory=False,
                                        trace=False) as prof:
            for i in range(4):
                prof.counter("loss", float(i))
                prof.step()
            prof.log_profiling_metrics()
            prof.counter(name="loss", value=10.0)
            prof.log_profiling_metrics()
            prof.log_profiling_metrics()
    finally:
        trainprof.remove_metrics_logger(logger)
    assert got[0]["counter/loss"] == 3.0 and got[0]["counter/loss_mean"] == 1.5
    assert got[1]["counter/loss"] == 10.0 and got[1]["counter/loss_mean"] == 10.0
    assert got[2]["counter/loss"] == 10.0 and "counter/loss_mean" not in got[2]
