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
