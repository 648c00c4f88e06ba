"""SIGTERM and SIGINT close the run before the program ends.

SLURM preemption, torchrun, Kubernetes and `timeout` end a job with
SIGTERM; Ctrl-C sends SIGINT. When a profiler opens on the main thread with
profiling.handle_signals true (the default), a Python handler is installed
for both signals (unless the program ignores that signal, or a handler
installed outside Python holds it). On the first signal it:

1. sets both signals to their default action, so a second one ends the
   process at once, even in the middle of the close;
2. closes every open profiler (files written, torch windows merged,
   report.html), as close() does;
3. puts back the handler that was there before and delivers the signal
   again: the program's own handler runs, or the default action ends the
   process, so the exit status still says "terminated" (-15 / 143).

The handler runs on the main thread between bytecodes, never inside the
C library. A signal that comes while a close is already under way (an
explicit close() or the one at exit) lets that close finish, then goes on
as above. A forked child (a DataLoader worker) does not own the run: there
the signal goes straight to the previous handler.
"""
import os
import signal
import sys
import threading

from . import _core

SIGNALS = (signal.SIGTERM, signal.SIGINT)

_previous = {}   # signum -> the handler before ours
_owner_pid = None  # the process whose profilers the handler closes
_pending = []    # signals that came while a close was under way


def install(prof):
    """Installs the handlers for prof's process (idempotent); nothing when
    prof's handle_signals is false or this is not the main thread."""
    global _owner_pid
    if prof.config_get("handle_signals") != "true":
        return
    if threading.current_thread() is not threading.main_thread():
        return
    _owner_pid = os.getpid()
    for signum in SIGNALS:
        current = signal.getsignal(signum)
        if current is _handler:
            continue  # installed already (here, or inherited across fork)
        if current is signal.SIG_IGN or current is None:
            continue  # ignored by the program, or held by a non-Python handler
        _previous[signum] = current
        signal.signal(signum, _handler)


def _handler(signum, frame):
    if os.getpid() != _owner_pid:  # a forked child: the run is its parent's
        _chain(signum)
        return
    for s in SIGNALS:  # a second signal ends the process at once
        if s in _previous:
            signal.signal(s, signal.SIG_DFL)
    if _core._closing():  # a close is under way below this frame: let it finish
        _pending.append(signum)
        return
    try:
        _core._close_all()
    finally:
        _chain(signum)


def _after_close():
    """_core's closed hook: a signal that came during a close goes on now."""
    if _pending and os.getpid() == _owner_pid:
        signum = _pending.pop()
        _pending.clear()
        _chain(signum)


def _chain(signum):
    """Puts the previous handlers back and delivers signum to them (or to
    the default action, which ends the process)."""
    for s, prev in list(_previous.items()):
        signal.signal(s, prev)
    for stream in (sys.stdout, sys.stderr):  # the default action kills without flushing
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    signal.raise_signal(signum)


_core._set_closed_hook(_after_close)
