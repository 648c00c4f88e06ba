"""trainprof.torch: PyTorch integration (imports torch; trainprof does not).

- cuda_memory(): allocated, reserved and peak bytes per CUDA device from
  torch.cuda, in the shape Profiler.set_memory_provider() takes; {} on a
  CPU-only torch (the memory rows then say there is no GPU).
- Every profiler opened while torch is imported and CUDA is present takes
  its GPU memory rows from cuda_memory() (set_memory_provider).
- profile(**keys): the PyTorch user's first line: a TrainingProfiler; with
  torch_ops=True torch.profiler runs inside trainprof's trace windows.
- With profiling.torch_ops true (any spelling: torch_ops=True,
  --profiling.torch_ops true, TRAINPROF_TORCH_OPS=1, YAML), every profiler
  drives torch.profiler on trainprof's own schedule: torch records only in
  the active steps of each window (warmup steps prepare it), never
  outside. At close,
  each window's torch trace is merged into trainprof's window trace (one
  timeline: torch's operators nest under trainprof's zones on the same
  thread track), in one pass over the traces, and report.html is written
  again from the merged traces.
"""
import contextlib
import gzip
import json
import os
import sys
import tempfile
import warnings

import torch
import torch.profiler

import trainprof
from trainprof import _core, _signals

SYNC_NAME = "trainprof.torch_sync"
SYNC_TRIES = 3
SYNC_MAX_HALF_WIDTH_US = 1000.0  # wider (all tries preempted): the wall clocks are closer


def cuda_memory():
    """{"cuda:N": {"bytes_in_use", "peak_bytes_in_use", "reserved_bytes",
    "total_bytes"}} for every visible CUDA device; {} without CUDA."""
    if not torch.cuda.is_available():
        return {}
    out = {}
    for i in range(torch.cuda.device_count()):
        out[f"cuda:{i}"] = {
            "bytes_in_use": int(torch.cuda.memory_allocated(i)),
            "peak_bytes_in_use": int(torch.cuda.max_memory_allocated(i)),
            "reserved_bytes": int(torch.cuda.memory_reserved(i)),
            "total_bytes": int(torch.cuda.get_device_properties(i).total_memory),
        }
    return out


def profile(torch_ops=False, log_to_wandb=False, **keys):
    """A TrainingProfiler with torch.cuda memory and, with torch_ops=True,
    torch.profiler inside the trace windows. keys are configuration keys
    (log_dir="runs", active=3, ...)."""
    if torch_ops:
        keys["torch_ops"] = True
    return trainprof.TrainingProfiler(log_to_wandb=log_to_wandb, **keys)


def _config_bool(prof, key):
    return (prof.config_get(key) or "false") == "true"


def _config_int(prof, key):
    return int(prof.config_get(key))


# Kineto's own progress lines, written from C++ to fd 2 at every start and
# stop of torch.profiler ("USDT:... profiler_start", "STAGE:... Completed
# Stage"): two per window, hundreds in a long run, and nothing went wrong.
_KINETO_CHATTER = (b"USDT:", b"STAGE:")


@contextlib.contextmanager
def _quiet_kineto():
    """While torch.profiler starts, steps across a window edge or stops,
    fd 2 goes to a temporary file; then everything it got except Kineto's
    progress lines is written back to fd 2 (warnings and errors still show,
    a moment later). KINETO_LOG_LEVEL would also hide its errors, and is
    read only once, when Kineto starts."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2, or sys.stderr closed: nothing to hide
        yield
        return
    held = tempfile.TemporaryFile()
    os.dup2(held.fileno(), 2)
    try:
        yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 2)
        os.close(saved)
        held.seek(0)
        rest = [ln for ln in held.read().splitlines(True) if not ln.startswith(_KINETO_CHATTER)]
        held.close()
        if rest:
            os.write(2, b"".join(rest))


class TorchWindows:
    """torch.profiler run on one trainprof profiler's schedule."""

    def __init__(self, prof):
        self.prof = prof
        self.pending = []  # (first step of the window, torch trace path)
        self.steps = 0  # steps ended so far
        self.window_first = 0
        # torch's window traces wait here until the merge at close
        self.tmpdir = tempfile.mkdtemp(prefix=".torch_ops_", dir=prof.run_dir)
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with warnings.catch_warnings():  # warmup=0 is the user's choice, not news
            warnings.filterwarnings("ignore", message=".*won't be using warmup.*")
            self.torch_prof = self._make_profiler(prof, activities)
        self.recording = False
        self.activities = activities
        self.extra = None  # a capture's window: [torch profile, steps left, first step]
        self.seen_captures = 0
        with _quiet_kineto():
            self.torch_prof.start()
        self._sync_if_recording()
        prof._set_step_hook(self.step)
        prof._add_close_hook(self.close)

    def _make_profiler(self, prof, activities):
        return torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(
                skip_first=_config_int(prof, "skip_first"), wait=_config_int(prof, "wait"),
                warmup=_config_int(prof, "warmup"), active=_config_int(prof, "active"),
                repeat=_config_int(prof, "repeat")),
            on_trace_ready=self._trace_ready,
            record_shapes=_config_bool(prof, "record_shapes"),
            profile_memory=_config_bool(prof, "profile_memory"))

    def _sync_if_recording(self, saved=False):
        """At the first recorded step of a window (saved: the step before
        ended a window, which the next may follow at once): one instant in
        both traces (a trainprof mark, a torch record_function), to align
        the clocks."""
        action = self.torch_prof.current_action
        now = action in (torch.profiler.ProfilerAction.RECORD,
                         torch.profiler.ProfilerAction.RECORD_AND_SAVE)
        if now and (saved or not self.recording):
            self.window_first = self.steps
            for _ in range(SYNC_TRIES):  # the narrowest one is used (a try may be preempted)
                self.prof.mark(SYNC_NAME)
                with torch.profiler.record_function(SYNC_NAME):
                    pass
                self.prof.mark(SYNC_NAME)
        self.recording = now

    def step(self):
        self._step()
        if self.extra is not None or self.prof.captures != self.seen_captures:
            self._capture_window()

    def _step(self):
        tp = self.torch_prof
        saved = tp.current_action == torch.profiler.ProfilerAction.RECORD_AND_SAVE
        if not saved and tp.schedule(tp.step_num + 1) == tp.current_action:
            tp.step()  # no transition: the steady state, kept cheap
            self.steps += 1
            self._sync_if_recording(saved)
            return
        # A SIGTERM's close waits: it would stop torch's profiler inside its
        # stop; and it waits until window_first names the window that began
        # here, or the close's stop would export this window under the last
        # one's name (over its file)
        with _signals.held(), warnings.catch_warnings():
            # "clears events at the end of each cycle": wanted
            warnings.filterwarnings("ignore", message=".*clears events at the end of each cycle.*")
            with _quiet_kineto():
                tp.step()
            self.steps += 1
            self._sync_if_recording(saved)

    def _capture_window(self):
        """After a slow_step or signal capture (docs/CAPTURES.md) the C layer
        traces the next capture_steps steps in a window of their own; torch's
        operators are recorded for them too, by a torch.profiler of their
        own (only while the schedule's profiler is idle for all of them:
        torch runs one profiler at a time), merged at close like a window."""
        if self.extra is not None:
            self.extra[1] -= 1
            if self.extra[1] > 0:
                return
            extra, _left, first = self.extra
            self.extra = None
            with _signals.held(), _quiet_kineto():
                extra.stop()
                path = os.path.join(self.tmpdir, f"capture_window_{first}.json")
                extra.export_chrome_trace(path)
                self.pending.append((first, path))
            return
        self.seen_captures = self.prof.captures
        if _last_capture_reason(self.prof.run_dir) not in ("slow_step", "signal"):
            return
        n = _config_int(self.prof, "capture_steps")
        tp = self.torch_prof
        idle = torch.profiler.ProfilerAction.NONE
        if tp.current_action != idle or any(tp.schedule(tp.step_num + k) != idle
                                            for k in range(1, n + 2)):
            return
        extra = torch.profiler.profile(activities=self.activities,
                                       record_shapes=_config_bool(self.prof, "record_shapes"),
                                       profile_memory=_config_bool(self.prof, "profile_memory"))
        with _signals.held(), _quiet_kineto():
            extra.start()
        for _ in range(SYNC_TRIES):  # the clocks' alignment, as for the schedule's windows
            self.prof.mark(SYNC_NAME)
            with torch.profiler.record_function(SYNC_NAME):
                pass
            self.prof.mark(SYNC_NAME)
        self.extra = [extra, n, self.steps]

    def _trace_ready(self, tp):
        path = os.path.join(self.tmpdir, f"window_{self.window_first}.json")
        if any(p == path for _, p in self.pending):  # never over a window not merged yet
            path = os.path.join(self.tmpdir, f"window_{self.window_first}_{len(self.pending)}.json")
        tp.export_chrome_trace(path)
        self.pending.append((self.window_first, path))

    def close(self):
        """After the trainprof session closed: stop torch, merge every window
        in one pass, rewrite report.html from the merged traces, and say so
        in one line (when the metrics go to the console)."""
        if self.torch_prof.current_action != torch.profiler.ProfilerAction.NONE:
            with _quiet_kineto():
                self.torch_prof.stop()
        if self.extra is not None:  # a capture's window cut by the end of the run
            self.extra[1] = 1
            self._capture_window()
        run_dir = self.prof.run_dir
        merged, kept = merge_windows(run_dir, self.pending)
        self.pending = []
        try:
            os.rmdir(self.tmpdir)
        except OSError:
            pass
        if merged and _config_bool(self.prof, "html_report"):
            _rewrite_report(run_dir)
        if "console" in (self.prof.config_get("metrics") or "").split(","):
            line = (f"trainprof.torch: torch operators of {len(merged)} window(s) merged into "
                    f"{os.path.join(run_dir, 'profiler_traces')}")
            if kept:
                line += f"; {len(kept)} kept beside them (no trainprof JSON trace)"
            print(line, flush=True)


def _last_capture_reason(run_dir):
    """The reason of the last entry of run_dir/captures.json (None: none)."""
    try:
        with open(os.path.join(run_dir, "captures.json"), encoding="utf-8") as f:
            entries = json.load(f).get("captures", [])
    except (OSError, ValueError):
        return None
    return entries[-1].get("reason") if entries else None


def merge_windows(run_dir, pending):
    """Merges each torch window trace of pending ([(first step, path)])
    into the trainprof trace of the window holding that step, reading and
    writing each trainprof trace once. A torch trace with no trainprof JSON
    trace to go into is kept as profiler_traces/torch_window_<first>.pt.trace.json.
    Returns (trainprof traces merged, torch traces kept)."""
    left = sorted(pending)
    merged, kept = [], []
    folder = os.path.join(run_dir, "profiler_traces")
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    for name in names:
        if not left:
            break
        if not name.endswith((".pt.trace.json", ".pt.trace.json.gz")):
            continue
        path = os.path.join(folder, name)
        try:
            with _open_trace(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        meta = doc.get("trainprof", {}) if isinstance(doc, dict) else {}
        lo, hi = meta.get("first_step", -1), meta.get("last_step", -1)
        mine = [w for w in left if lo <= w[0] <= hi]
        if not mine:
            continue
        for _first, torch_path in mine:
            with open(torch_path, encoding="utf-8") as f:
                _merge_into(doc, json.load(f))
        _write_trace(path, doc)
        for _first, torch_path in mine:
            os.remove(torch_path)
        left = [w for w in left if w not in mine]
        merged.append(path)
    for first, torch_path in left:
        keep = os.path.join(folder, f"torch_window_{first}.pt.trace.json")
        os.makedirs(folder, exist_ok=True)
        os.replace(torch_path, keep)
        kept.append(keep)
        print(f"trainprof.torch: no trainprof JSON trace for the window from step {first}; "
              f"torch's trace kept as {keep}", file=sys.stderr)
    return merged, kept


def _rewrite_report(run_dir):
    """report.html again, now from the merged traces (the session wrote it
    before the merge); written beside and renamed, so it is never partial."""
    out = os.path.join(run_dir, "report.html")
    tmp = out + ".tmp"
    try:
        _core.report_html(run_dir, tmp)
        os.replace(tmp, out)
    except (OSError, ValueError) as e:
        print(f"trainprof.torch: warning: report.html not rewritten after the merge: {e}",
              file=sys.stderr)


def _open_trace(path, mode="rt", gz=None):
    """A trace file as text; gzip-compressed when gz (default: by the name)."""
    if gz if gz is not None else path.endswith(".gz"):
        return gzip.open(path, mode, encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def _sync_points(ours, theirs):
    """(trainprof time, torch time, half-width in us) of the narrowest sync
    instant: the middle of a pair of trainprof marks and the middle of the
    torch record_function between them; None when there is none usable."""
    marks = sorted(float(e["ts"]) for e in ours if e.get("name") == SYNC_NAME and "ts" in e)
    rfs = sorted((float(e["ts"]), float(e["dur"])) for e in theirs
                 if e.get("name") == SYNC_NAME and "ts" in e and "dur" in e)
    best = None
    for k in range(min(len(marks) // 2, len(rfs))):
        a, b = marks[2 * k], marks[2 * k + 1]
        cand = ((a + b) / 2, rfs[k][0] + rfs[k][1] / 2, (b - a) / 2)
        if best is None or cand[2] < best[2]:
            best = cand
    return best if best is not None and best[2] <= SYNC_MAX_HALF_WIDTH_US else None


def merge_torch_trace(trainprof_trace, torch_trace):
    """Moves torch's events onto trainprof's timeline inside trainprof_trace
    (one window; merge_windows does many in one pass). Returns the facts
    stored in the file's "trainprof"."torch_ops"."""
    with _open_trace(trainprof_trace) as f:
        doc = json.load(f)
    with open(torch_trace, encoding="utf-8") as f:
        facts = _merge_into(doc, json.load(f))
    _write_trace(trainprof_trace, doc)
    return facts


def _write_trace(path, doc):
    tmp = path + ".tmp"
    with _open_trace(tmp, "wt", gz=path.endswith(".gz")) as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(tmp, path)


def _merge_into(doc, theirs):
    """Adds torch's events (theirs, a torch trace) to doc (a trainprof trace).

    Both files keep ts in microseconds from their own baseTimeNanoseconds
    (wall clock). The offset is taken from the sync instant recorded in both
    (trainprof mark and torch record_function of the same moment), else from
    the two wall-clock bases. torch's CPU threads that trainprof also saw
    land on trainprof's track for that thread, so operators nest under the
    zones. Returns the facts stored in doc's "trainprof"."torch_ops".
    """
    meta = doc.setdefault("trainprof", {})
    base_shift = (int(theirs.get("baseTimeNanoseconds", 0)) - int(doc.get("baseTimeNanoseconds", 0))) / 1000.0
    sync = _sync_points(doc["traceEvents"], theirs.get("traceEvents", []))
    if sync is not None:
        shift, how, bound = sync[0] - sync[1], "sync instant", sync[2]
    else:
        shift, how, bound = base_shift, "wall clock", None
    small_tid = {int(os_tid): int(t) for t, os_tid in meta.get("threads", {}).items()}
    pid = meta.get("pid")
    added = 0
    for e in theirs.get("traceEvents", []):
        if e.get("ph") == "M" and e.get("pid") == pid and (
                e.get("name", "").startswith("process_") or e.get("tid") in small_tid):
            continue  # trainprof names its own process and threads
        if str(e.get("name", "")).startswith("ProfilerStep#"):
            continue  # trainprof's step events are the steps
        if e.get("pid") == pid and e.get("tid") in small_tid:
            e["tid"] = small_tid[e["tid"]]
        if "ts" in e and e.get("ph") != "M":
            e["ts"] = round(float(e["ts"]) + shift, 3)
        doc["traceEvents"].append(e)
        added += 1
    facts = {"events": added, "alignment": how, "shift_us": round(shift, 3),
             "sync_half_width_us": None if bound is None else round(bound, 3),
             "wall_clock_disagreement_us": round(shift - base_shift, 3),
             "torch_version": torch.__version__}
    meta["torch_ops"] = facts
    return facts


def _attach(prof, torch_ops):
    """Open hook (trainprof._on_open): CUDA memory, torch.profiler windows."""
    if prof.run_dir and torch.cuda.is_available():
        prof.set_memory_provider(cuda_memory)
    if torch_ops and _config_bool(prof, "trace"):
        if _config_bool(prof, "cuda") and torch.cuda.is_available():
            print("trainprof.torch: profiling.cuda and profiling.torch_ops both capture CUDA "
                  "activity with CUPTI, which takes one subscriber: torch's kernels may be "
                  "missing; keep one of them (docs/PYTHON.md)", file=sys.stderr)
        TorchWindows(prof)
