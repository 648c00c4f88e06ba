"""An exception that escapes the program is a flight-recorder capture.

When a profiler with profiling.capture on opens, sys.excepthook and
threading.excepthook are wrapped (once per process): an exception that
escapes the main script, or a thread, asks every open profiler of this
process for a capture with reason ``exception`` (the message and the
traceback in its ``detail``), then the hook that was there before runs as
it would have: the traceback is printed and the process dies with its own
error and exit status. The capture itself is written by the collector
thread (or by the close at exit, which always comes after the hook), so
nothing here waits. KeyboardInterrupt is left alone (Ctrl-C is not a
failure; profiling.handle_signals closes the run then). docs/CAPTURES.md.
"""
import os
import sys
import threading
import traceback

_pid = None        # the process whose hooks are ours
_prev_sys = None
_prev_threading = None


def install(prof):
    """Wraps the exception hooks (idempotent) when prof keeps captures."""
    global _pid, _prev_sys, _prev_threading
    if prof.config_get("capture") != "true" or _pid == os.getpid():
        return
    _pid = os.getpid()
    if sys.excepthook is not _excepthook:
        _prev_sys = sys.excepthook
        sys.excepthook = _excepthook
    if threading.excepthook is not _thread_excepthook:
        _prev_threading = threading.excepthook
        threading.excepthook = _thread_excepthook


def _capture_all(detail):
    """Asks every open profiler of this process for an `exception` capture."""
    if os.getpid() != _pid:
        return  # a forked child: the run is its parent's
    trainprof = sys.modules.get("trainprof")
    for ref in list(getattr(trainprof, "_opened", ())):
        prof = ref()
        if prof is None or prof.closed or prof.run_dir is None:
            continue
        try:
            prof.capture("exception", detail)
        except Exception:  # never in the way of the program's own error
            pass


def _describe(etype, value, tb, where=""):
    head = "".join(traceback.format_exception_only(etype, value)).strip()
    text = "".join(traceback.format_exception(etype, value, tb))
    return f"{head}{where}\n\n{text}"


def _excepthook(etype, value, tb):
    try:
        if not issubclass(etype, KeyboardInterrupt):
            _capture_all(_describe(etype, value, tb))
    finally:
        (_prev_sys or sys.__excepthook__)(etype, value, tb)


def _thread_excepthook(args):
    try:
        if args.exc_type is not None and not issubclass(args.exc_type, (KeyboardInterrupt, SystemExit)):
            name = getattr(args.thread, "name", None) or "?"
            _capture_all(_describe(args.exc_type, args.exc_value, args.exc_traceback,
                                   f" (in thread {name})"))
    finally:
        (_prev_threading or threading.__excepthook__)(args)
