#!/usr/bin/env python3
"""The SLURM tests' fixture. `up` (ctest FIXTURES_SETUP): scripts/slurm-local.sh
up, noting in the build directory whether this run started the cluster.
`down` (FIXTURES_CLEANUP): scripts/slurm-local.sh down, only when `up`
started it: the suite leaves the machine as it found it (a cluster a
developer keeps up stays up), and leaves no daemons behind in CI, where
`up` costs about a second once slurm-wlm is installed.
Exit 77 (skipped) when the cluster cannot run here: not root, or slurm-wlm
and munge neither installed nor installable."""
import os
import subprocess
import sys

from slurm_common import SCRIPT, skip_reason

MARK = os.path.join(os.environ.get("TP_BUILD_DIR", "build"), "slurm-started-by-tests")


def up():
    if os.geteuid() != 0:
        print(f"SKIP: {skip_reason()}")
        return 77
    was_up = subprocess.run([SCRIPT, "status"], capture_output=True).returncode == 0
    p = subprocess.run([SCRIPT, "up"], capture_output=True, text=True, timeout=540)
    print(p.stdout + p.stderr)
    if p.returncode != 0:
        reason = skip_reason()
        if reason:  # apt-get could not install slurm-wlm/munge
            print(f"SKIP: {reason}")
            return 77
        print("FAIL: scripts/slurm-local.sh up failed", file=sys.stderr)
        return 1
    if not was_up:
        open(MARK, "w").close()
    return 0


def down():
    if not os.path.exists(MARK):
        print("the cluster was up before the tests (or never started by them): left as found")
        return 0
    os.unlink(MARK)
    p = subprocess.run([SCRIPT, "down"], capture_output=True, text=True, timeout=60)
    print(p.stdout + p.stderr)
    return p.returncode


if __name__ == "__main__":
    sys.exit(up() if sys.argv[1:] == ["up"] else down())
