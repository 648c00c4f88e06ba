"""SIGTERM and SIGINT close the run before the program ends.

SLURM preemption, torchrun, Kubernetes and `timeout` end a job with
SIGTERM; Ctrl-C sends SIGINT. When a profiler opens on the main thread with
profiling.handle_signals true (the default), a Python handler is installed
for both signals (unless the program ignores that signal, or a handler
installed outside Python holds it). On the first signal it:

1. takes over both signals for the close: the same signal again within
   REPEAT_GRACE_S of the first is ignored (SLURM and `kill -- -PGID` signal
   every process of the job, and torchrun's agent, signalled too, sends it
   again to its workers a moment later); any other, or one later, ends the
   process at once, even in the middle of the close;
2. takes over SIGCHLD for the close: the DataLoader workers got the same
   signal and die meanwhile, and torch's SIGCHLD handler would raise
   "DataLoader worker ... is killed by signal" into the close;
3. closes every open profiler (files written, torch windows merged,
   report.html), as close() does;
4. puts back the handlers that were there before and delivers the signal
   again: the program's own handler runs, or the default action ends the
   process, so the exit status still says "terminated" (-15 / 143). The
   handler installed is _core._on_signal (C): a Python handler that was
   there before (Python's own SIGINT handler raising KeyboardInterrupt)
   is called from it once every trainprof frame has returned, so Ctrl-C's
   traceback ends in the program's code, not here.

The handler runs on the main thread between bytecodes, never inside the
C library. A signal that comes while a close is already under way (an
explicit close() or the one at exit) lets that close finish, then goes on
as above; one that comes inside a held() section (trainprof.torch moving
torch.profiler from one window to the next: a close nested in there would
stop torch's profiler inside its own stop) waits for the section's end. A forked child (a DataLoader worker) does not own the run: there
the signal goes straight to the previous handler.
"""
import os
import signal
import sys
import threading
import time

from . import _core

SIGNALS = (signal.SIGTERM, signal.SIGINT)
REPEAT_GRACE_S = 2.0  # the same signal again this soon is the same request


_previous = {}   # signum -> the handler before ours
_owner_pid = None  # the process whose profilers the handler closes
_pending = []    # signals that came while a close was under way
_first = None    # (signum, monotonic time) of the signal being handled
_held = [0]      # held() sections open on the main thread
_sigchld = []    # [SIGCHLD's handler before the close] while it is muted


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
        if current is _core._on_signal:
            continue  # installed already (here, or inherited across fork)
        if current is signal.SIG_IGN or current is None:
            continue  # ignored by the program, or held by a non-Python handler
        _previous[signum] = current
        signal.signal(signum, _core._on_signal)


def _handler(signum, frame):
    """Called by _core._on_signal; returns the handler it calls next, or None."""
    global _first
    if os.getpid() != _owner_pid:  # a forked child: the run is its parent's
        return _chain(signum, direct=True)
    _first = (signum, time.monotonic())
    for s in SIGNALS:
        if s in _previous:
            signal.signal(s, _again)
    _mute_sigchld()
    if _core._closing() or _held[0]:  # under way below this frame: let it finish
        _pending.append(signum)
        return None
    return _close_and_chain(signum, direct=True)


def _close_and_chain(signum, direct=False):
    try:
        _core._close_all()
    finally:
        next_handler = _chain(signum, direct)
    return next_handler


class held:
    """`with held():` a signal that comes inside waits for the end (then
    the run closes, and the signal goes on as above)."""
    __slots__ = ()

    def __enter__(self):
        _held[0] += 1

    def __exit__(self, *exc):
        _held[0] -= 1
        if _pending and not _held[0] and not _core._closing() and os.getpid() == _owner_pid:
            signum = _pending.pop()
            _pending.clear()
            _close_and_chain(signum)


def _again(signum, frame):
    """A signal during the close: the first one again within
    REPEAT_GRACE_S (forwarded by a launcher) is ignored; any other ends the
    process at once (at the next bytecode: after a C call under way)."""
    if _first and signum == _first[0] and time.monotonic() - _first[1] < REPEAT_GRACE_S:
        return
    signal.signal(signum, signal.SIG_DFL)
    _flush()
    signal.raise_signal(signum)


def _mute_sigchld():
    """Children that die during the close (the DataLoader workers, killed
    by the same signal) raise nothing into it: SIGCHLD's Python handler is
    swapped for one that does nothing, also for a SIGCHLD already pending."""
    current = signal.getsignal(signal.SIGCHLD)
    if _sigchld or not callable(current):
        return  # muted already; or no Python handler there to keep out
    _sigchld.append(current)
    signal.signal(signal.SIGCHLD, _ignore)


def _ignore(signum, frame):
    pass


def _after_close():
    """_core's closed hook: a signal that came during a close goes on now."""
    if _pending and not _held[0] and os.getpid() == _owner_pid:
        signum = _pending.pop()
        _pending.clear()
        _chain(signum)


def _chain(signum, direct=False):
    """Puts the previous handlers back and delivers signum to them (or to
    the default action, which ends the process). direct: a previous Python
    handler is returned instead, for _core._on_signal to call once this
    frame is gone (None returned otherwise)."""
    global _first
    if _sigchld and signal.getsignal(signal.SIGCHLD) is _ignore:
        signal.signal(signal.SIGCHLD, _sigchld.pop())
    _sigchld.clear()
    _first = None
    for s, prev in list(_previous.items()):
        signal.signal(s, prev)
    _flush()
    prev = _previous.get(signum)
    if direct and callable(prev):
        return prev
    signal.raise_signal(signum)
    return None


def _flush():
    for stream in (sys.stdout, sys.stderr):  # the default action kills without flushing
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass


_core._set_closed_hook(_after_close)
_core._set_signal_hook(_handler)
