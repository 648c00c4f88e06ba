"""One profiler per program: the module-level helpers (profile_operation,
profile_data_loader, log_profiling_metrics) and the JAX wrappers record into
the Profiler the program opened, not into a second global session that
leaves a stray ./runs directory (until set_profiler says otherwise)."""
import os
import textwrap

import pytest

from tp_pyhelpers import run_python

PROGRAM = """
import os, sys, trainprof
os.chdir(sys.argv[1])              # a stray ./runs would land here
prof = trainprof.{make}(log_dir="mine", metrics="none")

@trainprof.profile_operation("forward")
def forward(x):
    return x + 1

for batch in trainprof.profile_data_loader([1, 2, 3]):
    forward(batch)
    prof.step(1)
metrics = trainprof.log_profiling_metrics()
print("same", trainprof.get_profiler() is prof)
print("keys", sorted(k for k in metrics if k.endswith("_count")))
prof.close()
"""


@pytest.mark.parametrize("make", ["Profiler", "TrainingProfiler"])
def test_helpers_record_into_the_programs_profiler(tmp_path, make):
    res = run_python(PROGRAM.format(make=make), args=[str(tmp_path)])
    assert "same True" in res.stdout, res.stdout
    assert "profiling/forward_count" in res.stdout
    assert "profiling/data_batch_production_count" in res.stdout
    assert sorted(os.listdir(tmp_path)) == ["mine"]  # no ./runs of a second session
    (run,) = os.listdir(tmp_path / "mine")
    ops = {o["name"]: o for o in __import__("json").load(open(tmp_path / "mine" / run / "operations.json"))}
    assert ops["forward"]["count"] == 3 and ops["data_batch_production"]["count"] == 3


def test_profiling_off_means_the_helpers_record_nothing(tmp_path):
    code = textwrap.dedent("""
    import os, sys, trainprof
    os.chdir(sys.argv[1])
    prof = trainprof.Profiler(enabled=False)
    trainprof.profile_operation("f")(lambda: None)()
    print(trainprof.get_profiler() is prof)
    """)
    res = run_python(code, args=[str(tmp_path)])
    assert res.stdout.strip() == "True"
    assert os.listdir(tmp_path) == []


def test_set_profiler_wins_and_a_closed_profiler_hands_over(tmp_path):
    code = textwrap.dedent("""
    import os, sys, trainprof
    os.chdir(sys.argv[1])
    a = trainprof.Profiler(log_dir="a", metrics="none")
    b = trainprof.TrainingProfiler(log_dir="b", metrics="none")
    print(trainprof.get_profiler() is b)      # the last opened
    trainprof.set_profiler(a)
    print(trainprof.get_profiler() is a)      # until set_profiler says otherwise
    trainprof.set_profiler(None)
    b.close()
    print(trainprof.get_profiler() is a)      # a closed one is not used: a, still open
    a.close()
    g = trainprof.get_profiler()              # ... and with none open, one is opened
    print(g is not a and g is not b and not g.closed)
    g.close()
    """)
    res = run_python(code, args=[str(tmp_path)], env={"TRAINPROF_METRICS": "none"})
    assert res.stdout.split() == ["True", "True", "True", "True"], res.stdout
