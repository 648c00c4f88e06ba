"""trainprof._auto_torch: what automatic profiling finds in an unmodified
PyTorch (or Lightning) script. Installed by trainprof._auto right after the
program imports torch; every hook costs a few hundred nanoseconds when no
session is open, and records nothing outside the process that trains.

- a step per optimizer step, and zone optimizer_step around it: torch's
  global optimizer step hooks (register_optimizer_step_pre_hook/post_hook);
- data_loading: the training thread's wait for a batch (the DataLoader
  iterator's __next__, and iter(loader), which starts the workers);
- forward: the outermost module call only. Global module hooks would take
  every module off torch's fast path (+2.7 % on a small MLP), so they run
  only from the first optimizer built to the end of the first optimizer
  step, to find the top-level modules (called outside any other module,
  holding a trainable parameter); from then on those classes' forward is
  wrapped (recording for those modules only), and the global hooks are gone;
- backward: torch.autograd.backward (Tensor.backward calls it);
- checkpoint_save: torch.save;
- gc: the garbage collector's pauses (gc.callbacks), while a session is open;
- Lightning: Trainer() gets trainprof.lightning's profiler (or its callback
  when the program chose a profiler): steps = batches, epochs counted; the
  torch hooks above then stand aside.
"""
import functools
import gc

from . import _auto

# zones of the open automatic session (None: nothing to record)
_ZDATA = _ZFWD = _ZBWD = _ZOPT = _ZSAVE = _ZGC = None
_prof = None
_trained = False       # an optimizer was built in this process
_opt_open = False      # optimizer_step zone entered by the pre-hook
_samples = None        # leading dimension of the last batch
_fwd_depth = 0         # nesting of wrapped forward calls
_roots = set()         # id() of the top-level modules found
_discovery = None      # (hook handles, {id(module): (module, trainable)}) while searching
DISCOVERY_MAX = 10000  # top-level calls before the search gives up (no optimizer step)


def _set_session(prof):
    """trainprof._auto listener: a session opened (zones made) or went away."""
    global _ZDATA, _ZFWD, _ZBWD, _ZOPT, _ZSAVE, _ZGC, _prof, _opt_open
    if prof is None:
        _ZDATA = _ZFWD = _ZBWD = _ZOPT = _ZSAVE = _ZGC = _prof = None
        _opt_open = False
        if _gc_callback in gc.callbacks:
            gc.callbacks.remove(_gc_callback)
        return
    _prof = prof
    _ZDATA, _ZFWD, _ZBWD = prof.zone("data_loading"), prof.zone("forward"), prof.zone("backward")
    _ZOPT, _ZSAVE, _ZGC = prof.zone("optimizer_step"), prof.zone("checkpoint_save"), prof.zone("gc")
    if _gc_callback not in gc.callbacks:
        gc.callbacks.append(_gc_callback)


def _signal():
    """A training event with no session open: opens it when this process
    trains (an optimizer was built here). True when a session is open now."""
    if not _trained or _auto.status() != "idle":
        return False
    return _auto.session() is not None


def _gc_callback(phase, info):
    z = _ZGC
    if z is None:
        return
    try:
        if phase == "start":
            z.__enter__()
        else:
            z.__exit__(None, None, None)
    except Exception:  # the session closing on another thread: nothing to record
        pass


# ---- optimizer: steps ----------------------------------------------------------

def _opt_pre(optimizer, args, kwargs):
    global _opt_open
    z = _ZOPT
    if z is None:
        if not _signal():
            return None
        z = _ZOPT
    z.__enter__()
    _opt_open = True
    return None


def _opt_post(optimizer, args, kwargs):
    global _opt_open
    if _discovery is not None:
        _end_discovery()
    if not _opt_open:
        return
    _opt_open = False
    _ZOPT.__exit__(None, None, None)
    _prof.step(_samples)


def _on_optimizer(optimizer):
    """An optimizer was built: this process trains (unless it is a forked
    child); the search for the top-level modules starts."""
    global _trained
    if _auto.status() not in ("idle", "open"):  # off (a forked child), or aside
        return
    first = not _trained
    _trained = True
    if first and _discovery is None:
        _start_discovery()


# ---- forward: the top-level modules ----------------------------------------------

def _start_discovery():
    global _discovery
    from torch.nn.modules import module as tmod
    seen, depth, calls = {}, [0], [0]
    entered = []  # forward zone entered at depth 0 (a stack: re-entrancy)

    def pre(module, args):
        if depth[0] == 0:
            calls[0] += 1
            if calls[0] > DISCOVERY_MAX:  # no optimizer step comes: stop looking
                _end_discovery()
                return
            key = id(module)
            hit = seen.get(key)
            if hit is None:
                hit = seen[key] = (module, _trainable(module))
            z = _ZFWD if hit[1] else None
            if z is None and hit[1] and _signal():
                z = _ZFWD
            if z is not None:
                z.__enter__()
            entered.append(z)
        depth[0] += 1

    def post(module, args, out):
        depth[0] -= 1
        if depth[0] == 0 and entered:
            z = entered.pop()
            if z is not None:
                z.__exit__(None, None, None)

    handles = (tmod.register_module_forward_pre_hook(pre), tmod.register_module_forward_hook(post))
    _discovery = (handles, seen)


def _trainable(module):
    try:
        return any(p.requires_grad for p in module.parameters())
    except Exception:
        return False


def _end_discovery():
    """First optimizer step done: the global module hooks go; the classes of
    the top-level trainable modules get a forward that records the zone."""
    global _discovery
    if _discovery is None:
        return
    handles, seen = _discovery
    _discovery = None
    for h in handles:
        h.remove()
    for module, trainable in seen.values():
        if trainable:
            _roots.add(id(module))
            _wrap_forward(type(module))


def _wrap_forward(cls):
    orig = cls.__dict__.get("forward") or getattr(cls, "forward", None)
    if orig is None or getattr(orig, "_trainprof_auto", False):
        return

    @functools.wraps(orig)
    def forward(self, *args, **kwargs):
        global _fwd_depth
        z = _ZFWD
        if z is None or _fwd_depth or id(self) not in _roots:  # the class serves elsewhere too
            return orig(self, *args, **kwargs)
        _fwd_depth = 1
        try:
            with z:
                return orig(self, *args, **kwargs)
        finally:
            _fwd_depth = 0
    forward._trainprof_auto = True
    cls.forward = forward


# ---- data loading, backward, torch.save ------------------------------------------------

def _batch_size(batch):
    first = batch[0] if type(batch) in (list, tuple) and batch else batch
    shape = getattr(first, "shape", None)
    try:
        return int(shape[0]) if shape else None
    except (TypeError, IndexError):
        return None


def _wrap_next(orig):
    @functools.wraps(orig)
    def __next__(self):
        global _samples
        z = _ZDATA
        if z is None:
            if not _signal():
                return orig(self)
            z = _ZDATA
        with z:
            batch = orig(self)
        _samples = _batch_size(batch)
        return batch
    return __next__


def _wrap_iter(orig):
    @functools.wraps(orig)
    def __iter__(self):
        z = _ZDATA
        if z is None:
            return orig(self)
        with z:  # starting the workers is waiting for data too
            return orig(self)
    return __iter__


def _wrap_zone(orig, which, opens):
    """orig called inside the zone named by which() when a session is open;
    opens: the call is a training event (may open the session)."""
    @functools.wraps(orig)
    def wrapper(*args, **kwargs):
        z = which()
        if z is None:
            if not opens or not _signal():
                return orig(*args, **kwargs)
            z = which()
        with z:
            return orig(*args, **kwargs)
    return wrapper


def patch_torch(torch):
    """Installs the hooks (trainprof._auto, right after `import torch`)."""
    from torch.optim import optimizer as topt
    from torch.utils.data import dataloader as tdl

    init = topt.Optimizer.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _on_optimizer(self)
    topt.Optimizer.__init__ = __init__
    topt.register_optimizer_step_pre_hook(_opt_pre)
    topt.register_optimizer_step_post_hook(_opt_post)
    tdl._BaseDataLoaderIter.__next__ = _wrap_next(tdl._BaseDataLoaderIter.__next__)
    tdl.DataLoader.__iter__ = _wrap_iter(tdl.DataLoader.__iter__)
    torch.autograd.backward = _wrap_zone(torch.autograd.backward, lambda: _ZBWD, True)
    torch.save = _wrap_zone(torch.save, lambda: _ZSAVE, False)
    _auto.add_listener(_set_session)


# ---- Lightning ----------------------------------------------------------------------------

def patch_lightning(pl):
    """Trainer(...) gets trainprof.lightning's profiler (or callback); the
    torch hooks stand aside for it (Lightning's own steps are the steps)."""
    name = pl.__name__
    trainer_cls = pl.Trainer
    init = trainer_cls.__init__
    if getattr(init, "_trainprof_auto", False):
        return

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            _attach_lightning(self, name)
        except Exception as err:  # never break the program's Trainer
            _auto.say(f"Lightning not profiled: {err!r}")
    __init__._trainprof_auto = True
    trainer_cls.__init__ = __init__


def _attach_lightning(trainer, namespace):
    if _auto.status() not in ("idle", "open"):
        return
    from . import lightning as tpl
    prof_cls, cb_cls = tpl.classes_for(namespace)
    if isinstance(trainer.profiler, prof_cls) or any(isinstance(c, cb_cls) for c in trainer.callbacks):
        return  # the program's own trainprof integration
    base = type(trainer.profiler).__name__
    _auto.stand_aside()  # the Lightning session is the run from now on
    if base == "PassThroughProfiler":
        trainer.profiler = prof_cls(config=_auto.make_config())
    else:
        trainer.callbacks.append(cb_cls(config=_auto.make_config()))
