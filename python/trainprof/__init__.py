"""trainprof: where each training step's time and memory go.

The hot path (zones, timers, counters, steps) is the C extension
``trainprof._core``; this module adds the spellings of the reference
projects on top of it:

    import trainprof
    prof = trainprof.Profiler(log_dir="runs", active=3)
    fwd = prof.zone("forward")          # made once, reused every step
    for batch in trainprof.profile_data_loader(loader, profiler=prof):
        with fwd:
            loss = model(batch)
        prof.step(len(batch))
    prof.close()

Only the standard library is imported here; ``trainprof.torch`` imports torch.
See docs/PYTHON.md.
"""
import argparse
import functools
import sys
import threading
import weakref

from . import _captures, _core, _signals
from ._core import Config, ConfigError, Profiler, ProfilerClosedError, Zone, cli_path

__version__ = _core.__version__

__all__ = [
    "Profiler", "Config", "Zone", "ConfigError", "ProfilerClosedError", "TrainingProfiler",
    "__version__", "cli_path", "get_profiler", "set_profiler", "profile_operation",
    "profile_data_loader", "log_profiling_metrics", "add_metrics_logger",
    "remove_metrics_logger", "add_argparse_arguments", "profiler_from_argparse",
]

_global = None          # set_profiler()'s
_opened = []            # weakrefs to the profilers the program opened, in order
_opened_here = None     # the one get_profiler() opened, kept alive
_global_lock = threading.Lock()
_metrics_loggers = []
_open_listeners = []    # fn(prof) after every open (trainprof._auto: the program's own profiler)


def _program_profiler():
    """The open profiler the program opened last, or None."""
    for ref in reversed(_opened):
        prof = ref()
        if prof is not None and not prof.closed:
            return prof
    return None


def get_profiler():
    """The profiler the module-level helpers record into: the one given to
    set_profiler(); else the profiler the program opened last (any
    Profiler, TrainingProfiler, trainprof.torch.profile, a Lightning or JAX
    callback's), while it is open; else one opened here on first use from
    defaults and TRAINPROF_* variables (a TrainingProfiler)."""
    global _opened_here
    prof = _global
    if prof is not None:
        return prof
    prof = _program_profiler()
    if prof is not None:
        return prof
    with _global_lock:
        prof = _global or _program_profiler()
        if prof is None:
            prof = _opened_here = TrainingProfiler()  # the program's from now on
        return prof


def set_profiler(prof):
    """Makes prof the global profiler (what get_profiler() and the
    module-level helpers use; None: back to the one the program opened);
    returns the previous one (not closed)."""
    global _global
    with _global_lock:
        old, _global = _global, prof
    return old


def add_metrics_logger(fn):
    """Registers a wandb.log-shaped callable, fn(metrics: dict, step=int),
    that log_profiling_metrics() sends its profiling/* values to."""
    if not callable(fn):
        raise TypeError(f"add_metrics_logger: {fn!r} is not callable")
    if fn not in _metrics_loggers:
        _metrics_loggers.append(fn)


def remove_metrics_logger(fn):
    """Unregisters a logger added with add_metrics_logger (no error if absent)."""
    if fn in _metrics_loggers:
        _metrics_loggers.remove(fn)


class TrainingProfiler(Profiler):
    """The timer style of the foundational-SSM guide over the C profiler.

    start_timer/end_timer, zone, step and counter are the C methods of
    Profiler; this class adds get_summary(), reset() and
    log_profiling_metrics(). log_to_wandb=True also writes the profiling/*
    keys to metrics.jsonl (the C layer) and sends them to wandb.log when a
    W&B run is active (nothing happens when wandb is not installed).
    log_every=None keeps the configuration's value (default 100).
    """

    def __init__(self, log_to_wandb=False, log_every=None, config=None, **overrides):
        if log_every is not None:
            overrides.setdefault("log_every", log_every)
        if log_to_wandb:
            overrides.setdefault("log_to_wandb", True)
        super().__init__(config, **overrides)
        self.log_to_wandb = bool(log_to_wandb)
        self._baseline = {}
        self._counters = {}  # name -> [last, sum, n] since the last log_profiling_metrics()

    def counter(self, name, value):
        """Profiler.counter, and kept for log_profiling_metrics()'s rows
        (counter/<name>, counter/<name>_mean), as the C layer's metrics rows
        carry them."""
        super().counter(name, value)
        c = self._counters.get(name)
        v = float(value)
        if c is None:
            self._counters[name] = [v, v, 1]
        else:
            c[0] = v
            c[1] += v
            c[2] += 1

    def get_summary(self):
        """{name: {"avg_time", "total_time", "count", "self_time", "min",
        "max", "p50", "p90", "p99"}} in seconds, for the operations recorded
        since the start (or the last reset()). After a reset, count, totals
        and avg cover the time since it; min, max and the percentiles are
        the whole run's (the C layer keeps one distribution per operation)."""
        out = {}
        for name, row in self.summary().items():
            base = self._baseline.get(name)
            if base is None:
                out[name] = dict(row)
                continue
            count = row["count"] - base["count"]
            if count <= 0:
                continue
            total = row["total_time"] - base["total_time"]
            out[name] = dict(row, count=count, total_time=total, avg_time=total / count,
                             self_time=row["self_time"] - base["self_time"])
        return out

    def reset(self):
        """Starts get_summary() afresh. The run's files still cover the whole
        run: only this view is reset."""
        self._baseline = {name: dict(row) for name, row in self.summary().items()}

    def log_profiling_metrics(self, step=None):
        """Prints the per-operation block and sends the profiling/* values to
        the registered metrics loggers (and to W&B with log_to_wandb=True).
        Returns the metrics dict."""
        extra = {}
        for name, c in self._counters.items():
            extra[f"counter/{name}"] = c[0]
            if c[2]:
                extra[f"counter/{name}_mean"] = c[1] / c[2]
            c[1], c[2] = 0.0, 0
        return _log_metrics(self, self.get_summary(), step, self.log_to_wandb, extra)


def _fmt_time(seconds):
    """The console table's units: "1.234 s", "23.400 ms", "5.000 us"."""
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.3f} us"


def _log_metrics(prof, summary, step, to_wandb, extra=None):
    if step is None:  # the last step ended, numbered as metrics.jsonl numbers it
        step = max(prof.steps - 1, 0)
    lines = [f"--- Profiling Metrics (Step {step}) ---"]
    metrics = {}
    for name, row in summary.items():
        avg, total, count = row["avg_time"], row["total_time"], row["count"]
        lines.append(f"{name}: avg={_fmt_time(avg)}, total={_fmt_time(total)}, count={count}")
        metrics[f"profiling/{name}_avg_time"] = avg
        metrics[f"profiling/{name}_total_time"] = total
        metrics[f"profiling/{name}_count"] = count
    metrics.update(extra or {})
    print("\n".join(lines), flush=True)
    for fn in list(_metrics_loggers):
        fn(dict(metrics), step=step)
    if to_wandb:
        _wandb_log(metrics, step)
    return metrics


def _wandb_log(metrics, step):
    """wandb.log when wandb is installed and a run is active; else nothing."""
    try:
        import wandb
    except ImportError:
        return
    if getattr(wandb, "run", None) is not None:
        wandb.log(metrics, step=step)


def log_profiling_metrics(step=None, profiler=None):
    """log_profiling_metrics() of the global profiler (or of profiler)."""
    prof = profiler if profiler is not None else get_profiler()
    if isinstance(prof, TrainingProfiler):
        return prof.log_profiling_metrics(step)
    return _log_metrics(prof, prof.summary(), step, False)


def profile_operation(name, profiler=None):
    """Decorator: each call of the function is a zone `name` of the global
    profiler (looked up at the first call, so decorating at import time
    opens nothing) or of profiler."""
    if not isinstance(name, str):
        raise TypeError(f"profile_operation: name must be a str, not {type(name).__name__}")

    def decorate(fn):
        zone = None
        owner = None

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            nonlocal zone, owner
            prof = profiler if profiler is not None else get_profiler()
            if prof is not owner:
                zone, owner = prof.zone(name), prof
            with zone:
                return fn(*args, **kwargs)
        return wrapper
    return decorate


class _AutoSteps:
    """Steps for a program that marks none (issue 33): the timer style of
    the foundational-SSM guide never calls step(), so profile_data_loader
    and trainprof.jax.profile_make_step end a step where the program
    evidently iterates: after each batch's work, after each make_step call.
    One per profiler: `auto` counts the steps marked here; once
    prof.steps exceeds it the program marks its own, and nothing is marked
    here again. `seen` is prof.steps at a helper's last boundary, so two
    helpers in one loop mark one step per iteration, not two."""

    def __init__(self):
        self.auto = 0
        self.off = False

    def end_step(self, prof, seen, samples=None):
        """Ends a step unless the program marks its own, or a step already
        ended since `seen`; returns prof.steps afterwards."""
        steps = prof.steps
        if self.off or prof.closed or steps > self.auto:
            self.off = True
            return steps
        if steps == seen:
            prof.step(samples)
            self.auto += 1
        return prof.steps


_auto_steps = weakref.WeakKeyDictionary()


def _auto_for(prof):
    """The _AutoSteps of prof (made at first use)."""
    state = _auto_steps.get(prof)
    if state is None:
        state = _auto_steps[prof] = _AutoSteps()
    return state


def _batch_samples(batch):
    """The leading dimension of a batch's first array (a tensor, a numpy or
    JAX array, or the first of a tuple/list/dict of them); None otherwise."""
    first = batch
    if isinstance(batch, (list, tuple)) and batch:
        first = batch[0]
    elif isinstance(batch, dict) and batch:
        first = next(iter(batch.values()))
    shape = getattr(first, "shape", None)
    try:
        return int(shape[0]) if shape else None
    except (TypeError, ValueError, IndexError):
        return None


class profile_data_loader:
    """Iterates over loader, timing the wait for each batch as zone `name`.

    Works with any iterable, torch.utils.data.DataLoader included (with
    num_workers > 0 the wait is the main process waiting for the workers;
    the first wait of each pass includes iter(loader), which starts them).
    When the loader has a length, exactly len(loader) waits are timed: the
    final StopIteration is not counted as a batch.

    Steps: when the program marks none (it never calls prof.step()), each
    batch is a step, ended when the loop asks for the next batch (or
    leaves), with the batch's leading dimension as its samples. Once the
    program calls step() itself, only its steps count. steps=False: never
    mark steps here (a loop that steps every few batches and does not
    call step() before its first few).
    """

    def __init__(self, loader, name="data_batch_production", profiler=None, steps=True):
        self.loader = loader
        self.name = name
        self.profiler = profiler
        self.steps = steps

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        prof = self.profiler if self.profiler is not None else get_profiler()
        zone = prof.zone(self.name)
        auto = _auto_for(prof) if self.steps else None
        try:
            remaining = len(self.loader)
        except TypeError:
            remaining = -1
        it = None
        while remaining != 0:
            with zone:
                if it is None:  # starting DataLoader workers is waiting for data too
                    it = iter(self.loader)
                try:
                    batch = next(it)
                except StopIteration:
                    return
            remaining -= 1
            seen = prof.steps
            try:
                yield batch
            finally:  # the loop is done with this batch (next batch, break or error)
                if auto is not None:
                    auto.end_step(prof, seen, _batch_samples(batch))
        if it is not None:
            yield from it  # a length that was too short: the rest, untimed


def _on_open(prof):
    """Called by _core after every session opened: PyTorch extras. With
    torch already imported and CUDA present, GPU memory comes from
    torch.cuda; with profiling.torch_ops, torch.profiler runs in the trace
    windows. Neither imports torch when the program did not. On the main
    thread, SIGTERM/SIGINT close the run first (trainprof._signals). Called
    for every Profiler(), profiling off included: the last one opened is the
    program's profiler (get_profiler()) unless set_profiler() named one."""
    _opened[:] = [r for r in _opened if r() is not None and not r().closed]
    _opened.append(weakref.ref(prof))
    for fn in list(_open_listeners):
        fn(prof)
    if prof.run_dir is None:
        return
    _signals.install(prof)
    _captures.install(prof)  # an escaping exception is a capture (docs/CAPTURES.md)
    torch_ops = prof.config_get("torch_ops") == "true"
    if torch_ops or "torch" in sys.modules:
        from . import torch as tp_torch
        tp_torch._attach(prof, torch_ops)


_core._set_open_hook(_on_open)


# ---- argparse: the RAVE-style flags -----------------------------------------

_BOOL_WORDS = {"true": True, "1": True, "yes": True, "on": True,
               "false": False, "0": False, "no": False, "off": False}

# (flag, help): the flags the C layer also takes bare (docs/CONFIG.md).
_RAVE_FLAGS = [
    ("--enable_profiling", "bool", "profile this run (profiling.enabled)"),
    ("--enable_timing_profiling", "bool",
     "per-step timing and per-operation statistics (profiling.timing)"),
    ("--enable_memory_profiling", "bool",
     "memory sampling, memory_profile.json (profiling.memory)"),
    ("--profile_steps", "int", "trace one window of N steps (profiling.active=N, repeat=1)"),
]


def _str2bool(text):
    word = str(text).strip().lower()
    if word not in _BOOL_WORDS:
        raise argparse.ArgumentTypeError(
            f"`{text}` is not a boolean; accepted: true/false, yes/no, on/off, 1/0")
    return _BOOL_WORDS[word]


def add_argparse_arguments(parser):
    """Adds --enable_profiling, --enable_timing_profiling,
    --enable_memory_profiling (True/False, or alone for True) and
    --profile_steps N to an argparse parser, in a "trainprof" group.
    Unset flags stay None. Build the profiler with
    profiler_from_argparse(namespace, unknown_args). Returns the group."""
    group = parser.add_argument_group("trainprof", "profiling flags (docs/CONFIG.md lists every "
                                      "key; --profiling.KEY VALUE is accepted too)")
    for flag, kind, text in _RAVE_FLAGS:
        if kind == "bool":
            group.add_argument(flag, type=_str2bool, nargs="?", const=True, default=None,
                               metavar="BOOL", help=text)
        else:
            group.add_argument(flag, type=int, default=None, metavar="N", help=text)
    return group


def profiler_from_argparse(namespace, args=(), cls=None):
    """Opens a profiler from a namespace parsed by a parser that had
    add_argparse_arguments, plus leftover arguments (e.g. the unknown ones
    of parse_known_args) holding --profiling.KEY V / profiling.KEY=V.
    Everything goes through the C flag parser, so errors name the flag.
    Returns (profiler, the arguments no one consumed); cls defaults to
    TrainingProfiler."""
    argv = []
    for flag, _kind, _text in _RAVE_FLAGS:
        value = getattr(namespace, flag[2:], None)
        if value is not None:
            argv += [flag, str(value)]
    return (cls or TrainingProfiler).from_args(argv + list(args))
