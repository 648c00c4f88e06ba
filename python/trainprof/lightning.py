"""trainprof inside Lightning: a Profiler for Trainer(profiler=...) and a Callback.

    from trainprof.lightning import TrainprofProfiler, TrainprofCallback
    trainer = Trainer(profiler=TrainprofProfiler())            # every action Lightning times
    trainer = Trainer(callbacks=[TrainprofCallback()])          # keep your own profiler setting

Both the ``lightning.pytorch`` and the ``pytorch_lightning`` namespaces work:
the classes are built, on first use, over the namespace the program uses
(``pytorch_lightning`` when only it was imported, else ``lightning.pytorch``);
``classes_for("pytorch_lightning")`` names one explicitly. Lightning is
imported only here. ``Trainer(profiler="trainprof")`` is not possible:
Lightning 2.6 maps profiler strings through a dict local to
``trainer/setup.py:_init_profiler`` that offers no registration.
"""
import importlib
import importlib.util
import math
import os
import sys
import time
import warnings

from . import _core

__all__ = ["TrainprofProfiler", "TrainprofCallback", "classes_for", "format_action_table"]

# Actions that contain training batches: a step boundary falls inside them, so
# they are recorded as timers (complete zones), never as open begin/end zones.
_SPANNING_ACTIONS = frozenset({"run_training_epoch"})
_STEP_END_SUFFIX = ".on_train_batch_end"
_LOG_DIR_KEYS = ("log_dir", "profiling.log_dir", "output_dir", "profiling.output_dir",
                 "dirpath", "profiling.dirpath")


def _open_profiler(config, overrides, default_log_dir, rank, trainer=None):
    """A trainprof session from config/overrides; the log directory, rank and
    job only fill in what the user (arguments or TRAINPROF_* variables) left
    unset."""
    kw = dict(overrides)
    user_dir = (config is not None or os.environ.get("TRAINPROF_LOG_DIR")
                or any(k in kw for k in _LOG_DIR_KEYS))
    if default_log_dir and not user_dir:
        kw["log_dir"] = str(default_log_dir)
    if rank is not None and "rank" not in kw and "profiling.rank" not in kw \
            and not os.environ.get("TRAINPROF_RANK"):
        kw["rank"] = int(rank)
    if rank is not None and trainer is not None and _needs_job_id(config, kw):
        kw["job_id"] = _shared_job_id(trainer)
    return _core.Profiler(config, **kw)


def _one_table(config, overrides):
    """TrainprofProfiler's overrides: Lightning prints its table (with
    P50/P99) through describe(), so trainprof's own console table stays off
    unless the user names profiling.metrics (argument, config or
    TRAINPROF_METRICS)."""
    if config is not None or os.environ.get("TRAINPROF_METRICS") \
            or "metrics" in overrides or "profiling.metrics" in overrides:
        return overrides
    return dict(overrides, metrics="none")


def _needs_job_id(config, kw):
    """True when neither the user nor the launcher names the job (then each
    rank would get its own run number: one job, several names)."""
    if isinstance(config, _core.Config):
        if config.get("job_id") != "auto":
            return False
        config = None
    cfg = _core.Config()
    if isinstance(config, (str, os.PathLike)):
        cfg.load_yaml(config)
    elif config is not None:
        cfg.update(config)
    cfg.update(kw)
    cfg.load_env()
    if cfg.get("job_id") != "auto":
        return False
    return not any(os.environ.get(v) for v in _JOB_ENV)


_JOB_ENV = ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PMIX_NAMESPACE")


def _shared_job_id(trainer):
    """One job id for every rank of a multi-process fit: rank 0's, sent to
    the others (every rank calls this at the same point of setup, as
    Lightning's own collectives are called)."""
    mine = f"lightning-{time.strftime('%H%M%S')}-{os.getpid()}"
    try:
        return str(trainer.strategy.broadcast(mine, 0))
    except Exception:  # no process group: the launcher's port is shared by the ranks
        return f"lightning-port{os.environ.get('MASTER_PORT', '0')}"


def _check_config(config, overrides):
    """Raises trainprof.ConfigError now (naming the key and the suggestion)
    for a bad key, instead of later inside Trainer.fit."""
    cfg = _core.Config()
    if isinstance(config, (str, os.PathLike)):
        cfg.load_yaml(config)
    elif config is not None and not isinstance(config, _core.Config):
        cfg.update(config)
    cfg.update({k: v for k, v in overrides.items() if v is not None})


def format_action_table(stats, total_duration, stage=None):
    """Lightning's SimpleProfiler table (Action, Mean duration (s), Num calls,
    Total time (s), Percentage %) with trainprof's P50 (s) and P99 (s) added.
    stats: {action: {"count", "total_time", "avg_time", "p50", "p99"}}."""
    sep = os.linesep
    rows = sorted(stats.items(), key=lambda kv: kv[1]["total_time"], reverse=True)
    width = max([len(a) for a, _ in rows] + [len("Action")])

    def row(*cells):
        action, rest = cells[0], cells[1:]
        return f"{sep}|  {action:<{width}s}\t|" + "".join(f"  {c:<15}\t|" for c in rest)

    head = row("Action", "Mean duration (s)", "Num calls", "Total time (s)", "Percentage %",
               "P50 (s)", "P99 (s)")
    line = f"{sep}{'-' * len(head.expandtabs())}"
    out = (f"{stage.upper()} " if stage else "") + f"Profiler Report (trainprof){sep}"
    out += line + head + line
    calls = sum(s["count"] for _, s in rows)
    out += row("Total", "-", f"{calls}", f"{total_duration:.5}", "100 %", "-", "-") + line
    for action, s in rows:
        pct = 100.0 * s["total_time"] / total_duration if total_duration > 0 else math.nan
        out += row(action, f"{s['avg_time']:.5}", f"{s['count']}", f"{s['total_time']:.5}",
                   f"{pct:.5}", f"{s['p50']:.5}", f"{s['p99']:.5}")
    return out + line + sep


class _StepEnd:
    """`with profiler.profile(step-ending action):` after its first call: the
    action's zone, then the trainprof step (no generator, no start/stop)."""
    __slots__ = ("owner", "zone")

    def __init__(self, owner, zone):
        self.owner, self.zone = owner, zone

    def __enter__(self):
        self.zone.__enter__()
        return self

    def __exit__(self, *exc):
        self.zone.__exit__(None, None, None)
        owner = self.owner
        if owner.profiler is not None:
            owner.profiler.step(owner._batch_samples())
        return False


def _with_early(stats, early):
    """stats plus the actions timed before the session opened (Lightning's
    configure_callbacks comes before Profiler.setup): in the table only."""
    if not early:
        return stats
    out = dict(stats)
    for name, times in early.items():
        if name in out:
            continue
        ordered = sorted(times)
        pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
        total = sum(ordered)
        out[name] = {"count": len(ordered), "total_time": total, "avg_time": total / len(ordered),
                     "self_time": total, "min": ordered[0], "max": ordered[-1],
                     "p50": pick(0.5), "p90": pick(0.9), "p99": pick(0.99)}
    return out


def _batch_size(batch, extract):
    try:
        return int(extract(batch))
    except Exception:  # no tensor in the batch: the step has no samples
        return None


def _build(namespace):
    """The two classes over one Lightning namespace ("lightning.pytorch" or
    "pytorch_lightning")."""
    pl = importlib.import_module(namespace)
    base_profiler = importlib.import_module(namespace + ".profilers").Profiler
    Callback = pl.Callback
    extract = importlib.import_module(namespace + ".utilities.data").extract_batch_size

    class TrainprofProfiler(base_profiler):
        """Lightning Profiler recording every action Lightning times as a
        trainprof zone (nested as Lightning nests them), a trainprof step at
        each training batch (ending after the LightningModule's
        on_train_batch_end), an epoch at each training epoch's end, the SimpleProfiler table plus P50/P99 at the
        end, and trainprof's run directory.

        dirpath: parent of the run directory (default: the trainer's log_dir,
        unless log_dir/output_dir is given in config or overrides).
        filename: as in Lightning, the table goes to dirpath/filename.txt
        instead of the log. config / overrides: as trainprof.Profiler
        (a dict, DictConfig, YAML path or trainprof.Config; KEY=value).
        The session opens at setup() in each process (so each DDP rank has its
        own run directory) and closes at teardown()."""

        def __init__(self, dirpath=None, filename=None, config=None, **overrides):
            super().__init__(dirpath=dirpath, filename=filename)
            self._tp_config = config
            self._tp_overrides = overrides
            self.profiler = None      # the trainprof session (None between runs)
            self.run_dir = None       # the last run directory written
            self._zones = {}
            self._open = []           # zones open, innermost last: (name, enter, exit, ends_step, zone)
            self._timers = {}         # action -> token of a timer in flight
            self._start_time = time.perf_counter()
            self._final = None        # (stats, duration) of the last closed session
            self._warned = False
            self._early_open = {}     # actions started before setup(): begin time
            self._early = {}          # their durations (s), shown in the table only
            _check_config(config, overrides)

        def setup(self, stage, local_rank=None, log_dir=None):
            super().setup(stage=stage, local_rank=local_rank, log_dir=log_dir)
            if self.profiler is not None:
                return
            module = getattr(self, "_lightning_module", None)
            trainer = getattr(module, "trainer", None) if module is not None else None
            rank = getattr(trainer, "global_rank", None) if trainer is not None else None
            if rank is not None and getattr(trainer, "world_size", 1) <= 1:
                rank = None
            self.profiler = _open_profiler(self._tp_config, _one_table(self._tp_config,
                                                                       self._tp_overrides),
                                           self.dirpath, rank, trainer)
            self.run_dir = self.profiler.run_dir
            self._zones, self._open, self._timers = {}, [], {}
            self._start_time = time.perf_counter()
            self._final = None

        def start(self, action_name):
            entry = self._zones.get(action_name)
            if entry is None:
                entry = self._new_entry(action_name)
                if entry is None:
                    if self.profiler is None:  # configure_callbacks comes before setup()
                        self._early_open[action_name] = time.perf_counter()
                    return
            entry[1]()
            self._open.append(entry)

        def profile(self, action_name):
            """Lightning's `with profiler.profile(action):`. An action seen
            before is its trainprof zone itself (a C context manager: no
            generator, no Python frame), the step-ending one a _StepEnd; the
            first call goes through Lightning's start/stop."""
            entry = self._zones.get(action_name)
            if entry is not None:
                return entry[4] if not entry[3] else _StepEnd(self, entry[4])
            return super().profile(action_name)

        def stop(self, action_name):
            opened = self._open
            if opened and opened[-1][0] == action_name:
                entry = opened.pop()
                entry[2](None, None, None)
                if entry[3]:
                    self.profiler.step(self._batch_samples())
                return
            token = self._timers.pop(action_name, None)
            if token is not None:
                self.profiler.end_timer(action_name, token)
                if action_name == "run_training_epoch":  # the rows' epoch and batch_idx
                    self.profiler.epoch_end()
                return
            if self.profiler is not None:
                self._stop_out_of_order(action_name)
            elif action_name in self._early_open:  # before setup(): timed here
                begin = self._early_open.pop(action_name)
                self._early.setdefault(action_name, []).append(time.perf_counter() - begin)

        def _batch_samples(self):
            """The training batch's size, found as Lightning finds it
            (extract_batch_size) in the batch the trainer's results hold."""
            try:
                batch = self._lightning_module.trainer._results.batch
            except Exception:  # no module, trainer or batch: no samples
                return None
            if batch is None:
                return None
            first = batch[0] if isinstance(batch, (list, tuple)) and batch else batch
            shape = getattr(first, "shape", None)  # the common (x, y) batch of tensors
            if shape is not None and len(shape) > 0 and type(first).__name__ == "Tensor":
                return int(shape[0])
            return _batch_size(batch, extract)

        def _new_entry(self, action_name):
            """(name, enter, exit, ends_step, zone) of an action's zone, made at
            its first start; None for actions recorded as timers (or no session)."""
            prof = self.profiler
            if prof is None:
                return None
            if action_name in _SPANNING_ACTIONS:
                self._timers[action_name] = prof.start_timer(action_name)
                if action_name == "run_training_epoch":
                    prof.step_begin()
                return None
            zone = prof.zone(action_name)
            ends_step = (action_name.startswith("[LightningModule]")
                         and action_name.endswith(_STEP_END_SUFFIX))
            entry = (action_name, zone.__enter__, zone.__exit__, ends_step, zone)
            self._zones[action_name] = entry
            return entry

        def _stop_out_of_order(self, action_name):
            """A stop that is not the innermost open action: the actions opened
            after it end here too (trainprof zones nest strictly)."""
            names = [entry[0] for entry in self._open]
            if action_name not in names:
                self._warn(f"stop({action_name!r}) without start: ignored")
                return
            self._warn(f"stop({action_name!r}) while {names[-1]!r} is open: "
                       "the inner actions end with it")
            while self._open:
                entry = self._open.pop()
                entry[2](None, None, None)
                if entry[0] == action_name:
                    return

        def _warn(self, text):
            if not self._warned:
                self._warned = True
                warnings.warn(f"trainprof.lightning: {text}", RuntimeWarning, stacklevel=3)

        def _stats(self):
            if self._final is not None:
                return self._final
            if self.profiler is None:
                return {}, 0.0
            stats = self.profiler.summary()
            if self.profiler.enabled:
                stats = _with_early(stats, self._early)
            return stats, time.perf_counter() - self._start_time

        def summary(self):
            stats, duration = self._stats()
            if not stats:
                return ""
            table = format_action_table(stats, duration, self._stage)
            if self.run_dir:
                table += f"trainprof run directory: {self.run_dir}{os.linesep}"
            return table

        def teardown(self, stage):
            if self.profiler is not None:
                prof = self.profiler
                while self._open:  # an exception left actions open
                    self._open.pop()[2](None, None, None)
                for name, token in list(self._timers.items()):
                    prof.end_timer(name, token)
                self._timers = {}
                duration = time.perf_counter() - self._start_time
                prof.close()
                stats = _with_early(prof.summary(), self._early) if prof.enabled else {}
                self._final = (stats, duration)
                self._early = {}
                self.profiler, self._zones = None, {}  # the closed session's zones go too
            super().teardown(stage=stage)

        def __getstate__(self):
            # spawn-based strategies pickle the trainer: the session stays behind
            state = self.__dict__.copy()
            state.update(profiler=None, _zones={}, _open=[], _timers={})
            return state

    class TrainprofCallback(Callback):
        """For users who keep their own Trainer(profiler=...): each training
        batch is a trainprof step (samples = the batch size), each training
        epoch a trainprof epoch, backward
        (on_before_backward .. on_after_backward) and optimizer_step
        (on_before_optimizer_step .. the batch end) are zones.
        profiler: a trainprof.Profiler to record into (left open), or None to
        open one at fit start (config/overrides as trainprof.Profiler; log
        directory default: the trainer's log_dir) and close it at fit end."""

        def __init__(self, profiler=None, config=None, **overrides):
            super().__init__()
            if profiler is None:
                _check_config(config, overrides)
            self.profiler = profiler
            self._owned = False
            self._tp_config = config
            self._tp_overrides = overrides
            self.run_dir = getattr(profiler, "run_dir", None)
            self._backward = self._optimizer = None
            self._optimizer_open = False

        def setup(self, trainer, pl_module, stage):
            if self.profiler is None:
                rank = trainer.global_rank if trainer.world_size > 1 else None
                self.profiler = _open_profiler(self._tp_config, self._tp_overrides,
                                               trainer.log_dir, rank, trainer)
                self._owned = True
                self.run_dir = self.profiler.run_dir
            self._backward = self.profiler.zone("backward")
            self._optimizer = self.profiler.zone("optimizer_step")

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            self.profiler.step_begin()

        def on_before_backward(self, trainer, pl_module, loss):
            self._end_optimizer()
            self._backward.__enter__()

        def on_after_backward(self, trainer, pl_module):
            self._backward.__exit__(None, None, None)

        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            self._end_optimizer()
            self._optimizer.__enter__()
            self._optimizer_open = True

        def _end_optimizer(self):
            if self._optimizer_open:
                self._optimizer_open = False
                self._optimizer.__exit__(None, None, None)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self._end_optimizer()
            self.profiler.step(_batch_size(batch, extract))

        def on_train_epoch_end(self, trainer, pl_module):
            self.profiler.epoch_end()  # the rows' epoch and batch_idx

        def teardown(self, trainer, pl_module, stage):
            self._end_optimizer()
            if self._owned and self.profiler is not None:
                self.profiler.close()
                self.profiler, self._owned = None, False

    for cls in (TrainprofProfiler, TrainprofCallback):
        cls.__module__, cls.__qualname__ = __name__, cls.__name__
    return TrainprofProfiler, TrainprofCallback


_built = {}


def classes_for(namespace):
    """(TrainprofProfiler, TrainprofCallback) over "lightning.pytorch" or
    "pytorch_lightning"; ImportError when that package is missing."""
    if namespace not in ("lightning.pytorch", "pytorch_lightning"):
        raise ValueError(f"classes_for: {namespace!r} is not lightning.pytorch or pytorch_lightning")
    if namespace not in _built:
        _built[namespace] = _build(namespace)
    return _built[namespace]


def _default_namespace():
    if "pytorch_lightning" in sys.modules and "lightning" not in sys.modules:
        return "pytorch_lightning"
    if importlib.util.find_spec("lightning") is None:
        return "pytorch_lightning"
    return "lightning.pytorch"


def __getattr__(name):  # PEP 562: Lightning is imported at first use
    if name in ("TrainprofProfiler", "TrainprofCallback"):
        prof_cls, cb_cls = classes_for(_default_namespace())
        globals().update(TrainprofProfiler=prof_cls, TrainprofCallback=cb_cls)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
