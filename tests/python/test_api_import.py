"""`import trainprof` needs only the standard library, and the package is the
C library's version."""
from tp_pyhelpers import run_python


def test_import_needs_only_the_standard_library():
    code = ("import sys, trainprof\n"
            "bad = sorted(m for m in ('torch', 'numpy', 'wandb', 'omegaconf', 'yaml', 'lightning')"
            " if m in sys.modules)\n"
            "assert not bad, bad\n"
            "p = trainprof.Profiler(enabled=False)\n"
            "p.step(); p.close()\n"
            "assert 'torch' not in sys.modules\n")
    run_python(code)


def test_version_is_the_c_library_version():
    import trainprof
    assert trainprof.__version__ == trainprof._core.version()
    assert trainprof.__version__.count(".") == 2


def test_public_names():
    import trainprof
    for name in trainprof.__all__:
        assert hasattr(trainprof, name), name
    assert trainprof.Profiler is trainprof._core.Profiler
    assert issubclass(trainprof.TrainingProfiler, trainprof.Profiler)
