"""trainprof._auto: profiling a training script that was not changed.

`python -m trainprof [--profiling.KEY V ...] train.py` and `trainprof run --
python train.py` (docs/RUN.md) install this module in every Python process
they start (trainprof/_bootstrap/sitecustomize.py, with the flags in
TRAINPROF_RUN_ARGS). It imports nothing heavy: when the program imports
torch, Lightning or JAX, their hooks are put in place (trainprof._auto_torch,
trainprof._auto_jax) right after that import.

The session opens lazily, at the first training event of a process that
trains (for PyTorch: after an optimizer was built, the first batch wait,
forward, backward or optimizer step; for JAX: the first call of a jitted
function). A process that never trains (the launcher, a DataLoader worker,
any helper) opens none and leaves no run directory. A forked child never
opens one: the run is its parent's.

A profiler the program opens itself (trainprof.Profiler, a Lightning or JAX
callback's) wins: the automatic one stands aside (closed if it was open)
and records nothing more, so there is never a second session.
"""
import atexit
import json
import os
import sys
import threading

ENV_ARGS = "TRAINPROF_RUN_ARGS"  # JSON list of --profiling flags (trainprof run, python -m trainprof)

# status: idle (no session yet), open, aside (the program's own profiler
# records), off (profiling disabled for this process, or a forked child)
_status = "idle"
_flags = []
_prof = None
_opening = False
_installed = False
_lock = threading.Lock()
_listeners = []       # fn(prof or None): a session opened (prof) or went away (None)
_exit_hooks = []      # fn(prof): before the automatic session closes at exit
_said = set()         # notes printed once


def say(text, key=None):
    """One line on stderr, once per key (default: the text)."""
    key = key or text
    if key in _said:
        return
    _said.add(key)
    print(f"trainprof: {text}", file=sys.stderr, flush=True)


def status():
    return _status


def profiler():
    """The automatic session, or None."""
    return _prof


def flags():
    return list(_flags)


def make_config():
    """A Config holding the flags given to trainprof run / python -m trainprof
    (flag precedence; TRAINPROF_* variables and defaults under them)."""
    from . import _core
    cfg = _core.Config()
    cfg.parse_args(list(_flags))
    return cfg


def add_listener(fn):
    _listeners.append(fn)
    if _prof is not None:
        fn(_prof)


def add_exit_hook(fn):
    _exit_hooks.append(fn)


def session():
    """The automatic session, opened now if this process may open one (a
    training event calls this); None when it cannot."""
    if _status == "open":
        return _prof
    if _status != "idle":
        return None
    with _lock:
        if _status == "idle":
            _open()
    return _prof


def _open():
    global _status, _prof, _opening
    from . import _core
    _opening = True
    try:
        prof = _core.Profiler(make_config())
    except Exception as err:  # a bad TRAINPROF_* variable, an unwritable log_dir
        _status = "off"
        say(f"automatic profiling off in this process: {err}")
        return
    finally:
        _opening = False
    if _status != "idle":  # the program's own profiler opened meanwhile (its open hook ran)
        prof.close()
        return
    if prof.run_dir is None:  # profiling.enabled false, or a rank not in profiling.ranks
        _status = "off"
        return
    _prof, _status = prof, "open"
    prof._add_close_hook(_closed)
    for fn in list(_listeners):
        fn(prof)


def _closed():
    """The automatic session closed (at exit, by a signal, or standing aside)."""
    global _prof, _status
    if _prof is None:
        return
    _prof = None
    if _status == "open":
        _status = "off"
    for fn in list(_listeners):
        fn(None)


def stand_aside(reason=None):
    """The program records with its own profiler from now on: the automatic
    session (if open) closes, and none opens in this process."""
    global _status
    prof = _prof
    _status = "aside"
    if prof is not None:
        _closed()
        try:
            prof.close()
        except Exception as err:
            say(f"closing the automatic session: {err}")
        if reason:
            say(f"{reason}: the automatic session ({prof.run_dir}) closed, "
                f"{prof.steps} step(s) in it")


def _on_open(prof):
    """trainprof's open hook: a profiler the program opened itself."""
    if not _opening and _status in ("idle", "open"):
        stand_aside("the program opened its own profiler")


def _forked():
    """In a forked child (a DataLoader worker): the run is the parent's."""
    global _status, _prof
    _status, _prof = "off", None
    for fn in list(_listeners):
        fn(None)


def _at_exit():
    prof = _prof
    if prof is None:
        return
    for fn in list(_exit_hooks):
        try:
            fn(prof)
        except Exception as err:
            say(f"at exit: {err}")


# ---- import hooks ----------------------------------------------------------

_post_import = {}  # module name -> fn(module), run once right after its import


class _Finder:
    """A sys.meta_path entry that finds nothing itself: for the modules in
    _post_import it asks the finders after it and wraps the loader's
    exec_module, so the hook runs once the module is fully imported."""

    def find_spec(self, name, path=None, target=None):
        if name not in _post_import:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        inner = loader.exec_module

        def exec_module(module):
            inner(module)
            _run_post_import(name, module)
        try:
            loader.exec_module = exec_module  # this module's own loader object
        except AttributeError:
            return None
        return spec

    def invalidate_caches(self):
        pass


def _run_post_import(name, module):
    fn = _post_import.pop(name, None)
    if fn is None:
        return
    try:
        fn(module)
    except Exception as err:  # never break the program's import
        say(f"automatic profiling of {name} not installed: {err!r}")


def when_imported(name, fn):
    """fn(module) once `name` is imported: now if it already is."""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__spec__", None) is not None \
            and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        _post_import.pop(name, None)
        try:
            fn(module)
        except Exception as err:
            say(f"automatic profiling of {name} not installed: {err!r}")
        return
    _post_import[name] = fn


def install(flag_list=()):
    """Turns automatic profiling on in this process (idempotent). flag_list:
    the --profiling flags, checked now (ConfigError names a bad key)."""
    global _installed, _flags
    from . import _core
    _core.Config().parse_args(list(flag_list))  # raises ConfigError naming the key
    _flags = list(flag_list)  # called again (python -m trainprof under trainprof run): these
    if _installed:
        return
    _installed = True
    from . import _open_listeners
    _open_listeners.append(_on_open)
    os.register_at_fork(after_in_child=_forked)
    atexit.register(_at_exit)  # after trainprof's own: runs before its close at exit
    from . import _auto_torch, _auto_jax
    when_imported("torch", _auto_torch.patch_torch)
    when_imported("lightning.pytorch", _auto_torch.patch_lightning)
    when_imported("pytorch_lightning", _auto_torch.patch_lightning)
    when_imported("jax", _auto_jax.patch_jax)
    if _post_import and not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def install_from_env():
    """install() with the flags of TRAINPROF_RUN_ARGS; a malformed value is
    reported once and leaves profiling off in this process."""
    text = os.environ.get(ENV_ARGS)
    if text is None:
        return False
    try:
        flag_list = json.loads(text) if text.strip() else []
        if not isinstance(flag_list, list) or not all(isinstance(a, str) for a in flag_list):
            raise ValueError("not a JSON list of strings")
    except ValueError as err:
        say(f"{ENV_ARGS}: {err}: automatic profiling off")
        return False
    try:
        install(flag_list)
    except Exception as err:
        say(f"automatic profiling off: {err}")
        return False
    return True
