"""Every parameter name docs/PYTHON.md shows is accepted as a keyword, and
integer-likes are counts (numpy.int64, 0-d integer tensors); counter()
takes a 0-d float tensor. end_timer checks the token belongs to the name."""
import pytest

import trainprof
from core_helpers import load, ops, trace_events


def profiler(tmp_path, **kw):
    return trainprof.Profiler(log_dir=str(tmp_path), wait=0, warmup=0, active=3,
                              metrics="none", **kw)


def test_every_documented_name_as_a_keyword(tmp_path):
    p = profiler(tmp_path)
    with p.zone(name="forward"):
        pass
    p.counter(name="loss", value=0.5)
    p.counter("lr", value=1e-3)
    p.mark(name="eval")
    t = p.start_timer(name="data")
    p.end_timer(name="data", token=t)
    t = p.start_timer("data")
    p.end_timer("data", token=t)
    p.step(samples=8)
    p.step(samples=None)
    p.close()
    table = ops(p.run_dir)
    assert table["forward"]["count"] == 1 and table["data"]["count"] == 2
    timing = load(p.run_dir + "/timing_profile.json")
    assert timing[0]["samples_per_second"] > 0
    names = {e.get("name") for e in trace_events(p.run_dir)}
    assert {"eval", "loss", "lr"} <= names


@pytest.mark.parametrize("call, message", [
    (lambda p: p.step(sample=8), "unexpected keyword argument 'sample'"),
    (lambda p: p.step(8, samples=8), "multiple values for argument 'samples'"),
    (lambda p: p.counter(name="x"), "missing required argument 'value'"),
    (lambda p: p.zone(), "missing required argument 'name'"),
    (lambda p: p.mark("a", "b"), "takes at most 1 argument"),
    (lambda p: p.end_timer(name="x"), "missing required argument 'token'"),
])
def test_bad_keywords_name_the_parameter(tmp_path, call, message):
    p = profiler(tmp_path, enabled=False)
    with pytest.raises(TypeError, match=message):
        call(p)


def test_integer_likes_are_counts(tmp_path):
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    p = profiler(tmp_path)
    p.counter("loss", torch.tensor(0.25))
    p.counter(name="acc", value=np.float32(0.5))
    p.step(np.int64(8))
    p.step(samples=torch.tensor(8))
    p.step(np.uint16(8))
    t = p.start_timer("x")
    p.end_timer("x", np.int64(t))
    with pytest.raises(TypeError):
        p.step(torch.tensor(8.0))  # torch's own message: not an integer tensor
    with pytest.raises(TypeError, match="samples must be an int"):
        p.step(True)
    with pytest.raises(ValueError, match="non-negative"):
        p.step(np.int64(-1))
    p.close()
    timing = load(p.run_dir + "/timing_profile.json")
    assert [r["samples_per_second"] > 0 for r in timing[:3]] == [True] * 3
    values = {e["name"]: e["args"] for e in trace_events(p.run_dir) if e.get("ph") == "C"}
    assert list(values["loss"].values()) == [0.25]


def test_end_timer_checks_the_token_belongs_to_the_name(tmp_path):
    p = profiler(tmp_path)
    a = p.start_timer("a")
    b = p.start_timer("b")
    with pytest.raises(ValueError, match="another name"):
        p.end_timer("b", a)
    p.end_timer("a", a)  # still open after the refused end
    p.end_timer("b", b)
    p.close()
    table = ops(p.run_dir)
    assert table["a"]["count"] == 1 and table["b"]["count"] == 1
