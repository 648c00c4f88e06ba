"""`pip wheel .` builds a wheel that installs into a fresh virtual
environment and works there: trainprof imports, __version__ equals the C
library's tp_version(), a profiler writes its run directory, and the bundled
`trainprof` CLI runs (from the package and from the venv's bin/).

    check_wheel.py SOURCE_DIR WORK_DIR

The wheel is built with the running python's scikit-build-core
(--no-build-isolation: no network needed); the fresh venv gets only the
wheel (pip install --no-index).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


CHECK = textwrap.dedent("""
    import json, os, subprocess, sys, tempfile
    import trainprof
    from trainprof import _core
    assert trainprof.__version__ == _core.version(), (trainprof.__version__, _core.version())
    assert os.path.dirname(trainprof.__file__).startswith(sys.prefix), trainprof.__file__
    with tempfile.TemporaryDirectory() as d:
        p = trainprof.Profiler(log_dir=d, metrics="none")
        with p.zone("forward"):
            pass
        p.step()
        p.close()
        ops = json.load(open(os.path.join(p.run_dir, "operations.json")))
        assert [o["name"] for o in ops] == ["forward"], ops
    cli = _core.cli_path()
    out = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True).stdout
    assert trainprof.__version__ in out, out
    print("wheel ok:", trainprof.__version__, trainprof.__file__, cli)
""")

# No code change (docs/RUN.md): both CLIs find the installed package's
# bootstrap, so a Python command's processes load trainprof._auto at startup.
AUTO = "import os, sys; print(os.environ.get('TRAINPROF_RUN_ARGS'), 'trainprof._auto' in sys.modules)"


def main(src, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    wheels = os.path.join(work, "dist")
    run([sys.executable, "-m", "pip", "wheel", src, "--no-build-isolation", "--no-deps",
         "-w", wheels])
    wheel = glob.glob(os.path.join(wheels, "trainprof-*.whl"))
    assert len(wheel) == 1, wheel
    venv = os.path.join(work, "venv")
    run([sys.executable, "-m", "venv", venv])  # fresh: no system site-packages
    vpy = os.path.join(venv, "bin", "python")
    run([vpy, "-m", "pip", "install", "--no-index", "--no-deps", wheel[0]])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    run([vpy, "-c", CHECK], cwd=work, env=env)
    run([os.path.join(venv, "bin", "trainprof"), "--version"], env=env)
    pkg_cli = subprocess.run([vpy, "-c", "import trainprof; print(trainprof.cli_path())"], env=env,
                             capture_output=True, text=True, check=True).stdout.strip()
    for cli in (os.path.join(venv, "bin", "trainprof"), pkg_cli):
        out = subprocess.run([cli, "run", "-o", os.path.join(work, "tree"), "--profiling.active",
                              "2", "--", vpy, "-c", AUTO], env=env, cwd=work, capture_output=True,
                             text=True, check=True).stdout
        flags, loaded = out.rsplit(None, 1)
        assert json.loads(flags) == ["--profiling.active", "2"] and loaded == "True", (cli, out)
    script = os.path.join(work, "hello.py")
    with open(script, "w") as f:
        f.write(AUTO + "\n")
    out = subprocess.run([vpy, "-m", "trainprof", script], env=env, cwd=work, capture_output=True,
                         text=True, check=True).stdout
    flags, loaded = out.rsplit(None, 1)
    assert json.loads(flags) == [] and loaded == "True", out
    print("no code change ok: trainprof run and python -m trainprof in the wheel's venv")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: check_wheel.py SOURCE_DIR WORK_DIR")
    sys.exit(main(sys.argv[1], sys.argv[2]))
