"""trainprof for JAX training loops, by the names JAX projects already use.

The foundational-SSM wrappers time a call until its outputs are ready
(jax.block_until_ready), so the time is the device work and not JAX's
asynchronous dispatch:

    loss_fn = profile_jax_loss_fn(loss_fn, "loss_fn")
    make_step = profile_make_step(make_step)

Artifex's callbacks, with Artifex's hooks (on_train_begin(trainer),
on_batch_begin(trainer, batch), on_batch_end(trainer, batch, logs),
on_train_end(trainer)), usable in a callbacks list, in a plain loop, or as
context managers:

    JAXProfiler(ProfilingConfig(log_dir, start_step, end_step, trace_memory, trace_python))
    MemoryProfiler(MemoryProfileConfig(log_dir, profile_every_n_steps, log_device_memory))

The timer API (get_profiler, TrainingProfiler, profile_operation, ...) is the
same as with PyTorch and is re-exported here. jax is imported only here.
"""
import dataclasses
import functools
import json
import os
import tempfile

import jax

from . import (TrainingProfiler, _auto_for, _core, get_profiler,  # noqa: F401
               log_profiling_metrics, profile_data_loader, profile_operation)

__all__ = ["profile_jax_loss_fn", "profile_make_step", "ProfilingConfig", "JAXProfiler",
           "MemoryProfileConfig", "MemoryProfiler", "device_memory", "get_profiler",
           "TrainingProfiler", "profile_operation", "profile_data_loader",
           "log_profiling_metrics"]


def _has_tracer(values):
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(values))


def _timed_until_ready(fn, name, profiler, ends_step=False):
    """fn wrapped in zone `name` that ends once fn's outputs are ready. Calls
    made while JAX traces fn (inside jit/grad: the arguments are tracers)
    are not timed: they run no device work. ends_step: each timed call
    ends a step when the program marks none (trainprof._AutoSteps)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    zone = owner = seen = None

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        nonlocal zone, owner, seen
        if _has_tracer((args, kwargs)):
            return fn(*args, **kwargs)
        prof = profiler if profiler is not None else get_profiler()
        if prof is not owner:
            zone, owner, seen = prof.zone(name), prof, None
        with zone:
            out = jax.block_until_ready(fn(*args, **kwargs))
        if ends_step:
            seen = _auto_for(prof).end_step(prof, prof.steps if seen is None else seen)
        return out
    return wrapper


def profile_jax_loss_fn(loss_fn, name="loss_fn", profiler=None):
    """loss_fn timed as zone `name` until its outputs are ready (profiler:
    a trainprof.Profiler, default the global one of get_profiler())."""
    return _timed_until_ready(loss_fn, name, profiler)


def profile_make_step(make_step, name="make_step", profiler=None, steps=True):
    """make_step (the jitted update of the foundational-SSM trainer) timed as
    zone `name` until the new parameters, optimizer state and loss are ready.
    When the program marks no steps (never calls prof.step()), each call
    ends a step (one per iteration with profile_data_loader in the same
    loop); steps=False: never."""
    return _timed_until_ready(make_step, name, profiler, ends_step=bool(steps))


def _batch_size(batch):
    leaves = jax.tree_util.tree_leaves(batch)
    shape = getattr(leaves[0], "shape", None) if leaves else None
    return int(shape[0]) if shape else None


class _Callback:
    """Artifex's hook names; a context manager calls on_train_begin/_end."""

    def on_train_begin(self, trainer=None):
        pass

    def on_batch_begin(self, trainer=None, batch=None):
        pass

    def on_batch_end(self, trainer=None, batch=None, logs=None):
        pass

    def on_train_end(self, trainer=None):
        pass

    def __enter__(self):
        self.on_train_begin(None)
        return self

    def __exit__(self, *exc):
        self.on_train_end(None)
        return False


@dataclasses.dataclass
class ProfilingConfig:
    """Artifex's ProfilingConfig. Batches are counted from 0; the JAX trace
    starts at the beginning of batch start_step and stops at the end of
    batch end_step (both included, as in Artifex)."""
    log_dir: str = "logs/profiles"
    start_step: int = 10
    end_step: int = 20
    trace_memory: bool = True
    trace_python: bool = False


class JAXProfiler(_Callback):
    """Each batch is a trainprof step (samples = the batch's leading
    dimension), written to a run directory under config.log_dir; in the
    window [start_step, end_step] JAX's own profiler runs too
    (jax.profiler.start_trace with create_perfetto_trace=True, each batch a
    StepTraceAnnotation "train"), its trace landing in <run_dir>/jax_trace/
    (plugins/profile/<time>/*.trace.json.gz and perfetto_trace.json.gz),
    while trainprof traces the same steps (trace_memory -> profile_memory,
    trace_python -> with_stack). profiler: record into this trainprof
    Profiler instead of opening one (it is then left open)."""

    def __init__(self, config=None, profiler=None, **overrides):
        self.config = config if config is not None else ProfilingConfig()
        if self.config.end_step < self.config.start_step:
            raise ValueError(f"ProfilingConfig: end_step ({self.config.end_step}) is before "
                             f"start_step ({self.config.start_step})")
        self.profiler = profiler
        self._owned = False
        self._overrides = overrides
        self.step = 0
        self.trace_dir = None
        self._tracing = False
        self._annotation = None

    @property
    def run_dir(self):
        return getattr(self.profiler, "run_dir", None)

    def on_train_begin(self, trainer=None):
        if self.profiler is None:
            cfg = self.config
            kw = dict(log_dir=str(cfg.log_dir), start_step=cfg.start_step,
                      end_step=cfg.end_step + 1, profile_memory=bool(cfg.trace_memory),
                      with_stack=bool(cfg.trace_python))
            kw.update(self._overrides)
            self.profiler = _core.Profiler(None, **kw)
            self._owned = True
        _auto_for(self.profiler).off = True  # its batches are the steps, not make_step's calls
        self.step = 0

    def on_batch_begin(self, trainer=None, batch=None):
        if self.profiler is None:
            self.on_train_begin(trainer)
        if self.step == self.config.start_step:
            self._start_trace()
        if self._tracing:
            self._annotation = jax.profiler.StepTraceAnnotation("train", step_num=self.step)
            self._annotation.__enter__()
        self.profiler.step_begin()

    def on_batch_end(self, trainer=None, batch=None, logs=None):
        if self.profiler is None:
            return
        if self._annotation is not None:
            self._annotation.__exit__(None, None, None)
            self._annotation = None
        self.profiler.step(_batch_size(batch) if batch is not None else None)
        if self._tracing and self.step >= self.config.end_step:
            self._stop_trace()
        self.step += 1

    def on_train_end(self, trainer=None):
        if self._annotation is not None:
            self._annotation.__exit__(None, None, None)
            self._annotation = None
        if self._tracing:
            self._stop_trace()
        if self._owned and self.profiler is not None:
            self.profiler.close()
            self._owned = False

    def _start_trace(self):
        base = self.run_dir or str(self.config.log_dir)
        self.trace_dir = os.path.join(base, "jax_trace")
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 1 if self.config.trace_python else 0
        try:
            jax.profiler.start_trace(self.trace_dir, create_perfetto_trace=True,
                                     profiler_options=options)
            self._tracing = True
        except RuntimeError as err:  # another trace is running: training goes on
            print(f"trainprof.jax: JAX trace not started: {err}", flush=True)

    def _stop_trace(self):
        self._tracing = False
        jax.profiler.stop_trace()


def device_memory(devices=None):
    """{"cpu:0": {"bytes_in_use", "peak_bytes_in_use"}} for the devices whose
    memory_stats() answers (the trainprof.Profiler.set_memory_provider shape),
    and the names of those that return none (the CPU does)."""
    stats, without = {}, []
    for dev in devices if devices is not None else jax.local_devices():
        name = f"{dev.platform}:{dev.id}"
        try:
            raw = dev.memory_stats()
        except Exception:  # a backend that does not implement it
            raw = None
        if not raw or "bytes_in_use" not in raw:
            without.append(name)
            continue
        stats[name] = {"bytes_in_use": int(raw["bytes_in_use"]),
                       "peak_bytes_in_use": int(raw.get("peak_bytes_in_use",
                                                        raw["bytes_in_use"]))}
    return stats, without


@dataclasses.dataclass
class MemoryProfileConfig:
    """Artifex's MemoryProfileConfig."""
    log_dir: str = "logs/memory"
    profile_every_n_steps: int = 100
    log_device_memory: bool = True


class MemoryProfiler(_Callback):
    """Every profile_every_n_steps batches (from batch 0), a row
    {"step", "memory": {"cpu:0": {"bytes_in_use", "peak_bytes_in_use"}}} is
    added to log_dir/memory_profile.json, which is rewritten atomically at
    each row, so it is valid JSON at every moment (Artifex writes it only at
    train end). Devices whose memory_stats() returns nothing are listed in
    the row's "devices_without_stats" instead. profiler: a trainprof
    Profiler that also gets these devices through set_memory_provider."""

    def __init__(self, config=None, profiler=None):
        self.config = config if config is not None else MemoryProfileConfig()
        if self.config.profile_every_n_steps < 1:
            raise ValueError("MemoryProfileConfig: profile_every_n_steps must be >= 1, not "
                             f"{self.config.profile_every_n_steps}")
        self.profiler = profiler
        self.rows = []
        self.step = 0
        self.path = os.path.join(str(self.config.log_dir), "memory_profile.json")

    def on_train_begin(self, trainer=None):
        os.makedirs(str(self.config.log_dir), exist_ok=True)
        self.rows, self.step = [], 0
        self._write()
        if self.profiler is not None and self.config.log_device_memory:
            self.profiler.set_memory_provider(lambda: device_memory()[0])

    def on_batch_end(self, trainer=None, batch=None, logs=None):
        if self.step % self.config.profile_every_n_steps == 0:
            self.rows.append(self._row(self.step))
            self._write()
        self.step += 1

    def on_train_end(self, trainer=None):
        self._write()

    def _row(self, step):
        row = {"step": step, "memory": {}}
        if self.config.log_device_memory:
            stats, without = device_memory()
            row["memory"] = stats
            if without:
                row["devices_without_stats"] = without
        return row

    def _write(self):
        directory = str(self.config.log_dir)
        fd, tmp = tempfile.mkstemp(prefix=".memory_profile.", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.rows, f, indent=2)
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise
