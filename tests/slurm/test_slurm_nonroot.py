#!/usr/bin/env python3
"""scripts/slurm-local.sh without root: `up` and `down` say that they need
root and exit 1, touching nothing (run as nobody when the test runs as
root). Needs no cluster."""
import os
import shutil
import subprocess
import sys
import tempfile

from slurm_common import SCRIPT, check, finish


def main():
    tmp = tempfile.mkdtemp(prefix="tp_slurm_nonroot_")
    try:
        os.chmod(tmp, 0o755)
        script = os.path.join(tmp, "slurm-local.sh")  # readable by nobody wherever the checkout is
        shutil.copy(SCRIPT, script)
        os.chmod(script, 0o755)
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        env = dict(os.environ, TP_SLURM_DIR=os.path.join(tmp, "state"))
        for cmd in ("up", "down"):
            p = subprocess.run([*drop, script, cmd], capture_output=True, text=True, env=env, timeout=30)
            print(f"{cmd}: exit {p.returncode}: {p.stderr.strip()}")
            check(p.returncode == 1, f"{cmd} as non-root exited {p.returncode}")
            check("needs root" in p.stderr, f"{cmd} as non-root said {p.stderr!r}")
        check(not os.path.exists(os.path.join(tmp, "state")), "non-root up created its state directory")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
