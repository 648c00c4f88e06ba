"""python -m trainprof [--profiling.KEY VALUE ...] SCRIPT [ARGS ...]
python -m trainprof [--profiling.KEY VALUE ...] -m MODULE [ARGS ...]

Runs an unmodified training script with automatic profiling (docs/RUN.md):
steps, data loading, forward, backward, optimizer step, checkpoint saves and
garbage-collector pauses of a PyTorch script, Lightning's batches and
epochs, a JAX script's jitted train step, memory as usual. The profiling
flags come before the script; everything after it is the script's own
(sys.argv as `python SCRIPT ARGS` would give). Python processes the script
starts (torchrun's workers, spawned workers) are profiled too: the
bootstrap directory goes first on PYTHONPATH and the flags into
TRAINPROF_RUN_ARGS. Exit status: the script's own; 2 for a bad flag or a
script that does not exist.
"""
import json
import os
import runpy
import sys

USAGE = ("usage: python -m trainprof [--profiling.KEY VALUE ...] SCRIPT [ARGS ...]\n"
         "       python -m trainprof [--profiling.KEY VALUE ...] -m MODULE [ARGS ...]\n"
         "Profiles an unmodified training script (docs/RUN.md lists what it finds;\n"
         "docs/CONFIG.md the keys). Flags after SCRIPT are the script's own.\n")
BARE = ("--enable_profiling", "--enable_timing_profiling", "--enable_memory_profiling",
        "--profile_steps")


def _is_flag(arg):
    """A profiling flag in any spelling tp_config_parse_args takes."""
    if arg.startswith(("--profiling.", "-profiling.")):
        return True
    if arg.lstrip("+").startswith("profiling.") and "=" in arg:
        return True
    return arg.split("=", 1)[0] in BARE


def split_args(argv, config):
    """(profiling flags, the rest) of argv: the flags lead, up to the first
    argument that is not one (its value included: the C parser decides
    whether a flag takes the next argument). Flags go into config, so a bad
    key raises trainprof.ConfigError naming it."""
    flags, i = [], 0
    while i < len(argv) and _is_flag(argv[i]):
        pair = argv[i:i + 2]
        if "=" in argv[i] or len(pair) == 2 and (_is_flag(pair[1]) or pair[1] == "--"):
            pair = pair[:1]  # no separate value: the next argument is not one
        rest = config.parse_args(pair)
        used = len(pair) - len(rest)
        flags += pair[:used]
        i += used
    return flags, argv[i:]


def _fail(text):
    print(f"python -m trainprof: {text}", file=sys.stderr)
    sys.exit(2)


def _export(flags):
    """The same profiling for the Python processes the script starts."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = here + (os.pathsep + path if path else "")
    os.environ["TRAINPROF_RUN_ARGS"] = json.dumps(flags)


def _script_frames(tb, filename):
    """The traceback from the script's first frame (runpy's and ours cut)."""
    t = tb
    while t is not None and t.tb_frame.f_code.co_filename != filename:
        t = t.tb_next
    return t or tb


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        (sys.stdout if argv else sys.stderr).write(USAGE)
        sys.exit(0 if argv else 2)
    from trainprof import _auto, _core
    try:
        flags, rest = split_args(argv, _core.Config())
    except _core.ConfigError as err:
        _fail(str(err))
    if not rest:
        _fail("no script given\n" + USAGE)
    module = None
    if rest[0] == "-m":
        if len(rest) < 2:
            _fail("-m needs a module name")
        module, args = rest[1], rest[2:]
    elif rest[0].startswith("-"):
        _fail(f"unknown option '{rest[0]}': profiling flags are --profiling.KEY VALUE "
              "(docs/CONFIG.md); the script comes next")
    else:
        script, args = rest[0], rest[1:]
        if not os.path.isfile(script):
            _fail(f"can't open file '{script}': "
                  f"{'is a directory' if os.path.isdir(script) else 'no such file'}")
    _export(flags)
    _auto.install(flags)
    if module is not None:
        sys.argv = [module] + args
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return
    sys.argv = [script] + args
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as err:  # as `python SCRIPT` shows it: the script's frames only
        tb = _script_frames(err.__traceback__, os.path.abspath(script))
        sys.excepthook(type(err), err.with_traceback(tb), tb)
        sys.exit(1)


if __name__ == "__main__":
    main()
