"""trainprof's bootstrap for profiling without code changes (docs/RUN.md).

`trainprof run` and `python -m trainprof` put this directory first on
PYTHONPATH and the profiling flags in TRAINPROF_RUN_ARGS, so every Python
process the command starts imports this file at startup (the `site` module
imports `sitecustomize`). It

1. runs the sitecustomize this one hides (the next one on sys.path), if any;
2. takes this directory off sys.path (the program sees its usual path);
3. imports trainprof from the package this file belongs to and calls
   trainprof._auto.install_from_env(), which only registers import hooks:
   nothing is profiled until the program trains.

Nothing here may stop the program: any failure is one line on stderr.
"""


def _trainprof_bootstrap():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))

    def same(entry):
        try:
            return os.path.abspath(entry or os.getcwd()) == here
        except OSError:
            return False

    sys.path[:] = [p for p in sys.path if not same(p)]
    try:  # the sitecustomize this one hides
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = module
            spec.loader.exec_module(module)
    except Exception as err:
        print(f"trainprof: the program's sitecustomize failed: {err!r}", file=sys.stderr)
    if os.environ.get("TRAINPROF_RUN_ARGS") is None:
        return
    package_root = os.path.dirname(os.path.dirname(here))  # <root>/trainprof/_bootstrap
    sys.path.insert(0, package_root)  # this trainprof, not another one on the path
    try:
        from trainprof import _auto
        _auto.install_from_env()
    except Exception as err:
        print(f"trainprof: automatic profiling off: cannot import trainprof from "
              f"{package_root}: {err!r}", file=sys.stderr)
    finally:
        try:
            sys.path.remove(package_root)
        except ValueError:
            pass


_trainprof_bootstrap()
del _trainprof_bootstrap
