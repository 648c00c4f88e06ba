#!/usr/bin/env python3
"""The SLURM tests' fixture, shared by every ctest run on the machine.

`up` (ctest FIXTURES_SETUP): scripts/slurm-local.sh up, and registers this
ctest run (its pid: the fixture's parent) as a user of the cluster in the
cluster's state directory; when the cluster was not up before, it notes that
the tests started it. `down` (FIXTURES_CLEANUP): unregisters this run, and
stops the cluster (scripts/slurm-local.sh down) only when the tests started
it and no other ctest run still uses it. So the suite leaves the machine as
it found it: a cluster a developer keeps up stays up, two suites at once
(two build directories) do not pull it from under each other, and CI is
left with no daemons (`up` costs about a second once slurm-wlm is installed).
Exit 77 (skipped) when the cluster cannot run here: not root, or slurm-wlm
and munge neither installed nor installable."""
import os
import re
import subprocess
import sys

from slurm_common import SCRIPT, skip_reason


def state_dir():
    out = subprocess.run([SCRIPT, "env"], capture_output=True, text=True).stdout
    return os.path.dirname(re.search(r"SLURM_CONF=(\S+)", out).group(1))


def users(state):
    """The registered ctest runs still alive (dead ones are forgotten)."""
    d = os.path.join(state, "test-users")
    os.makedirs(d, exist_ok=True)
    alive = []
    for name in os.listdir(d):
        if name.isdigit() and os.path.exists(f"/proc/{name}"):
            alive.append(name)
        else:
            os.unlink(os.path.join(d, name))
    return d, alive


def up():
    if os.geteuid() != 0:
        print(f"SKIP: {skip_reason()}")
        return 77
    state = state_dir()
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
    d, others = users(state)
    started = os.path.join(state, "started-by-tests")
    if not was_up:
        open(started, "w").close()
    elif not others and os.path.exists(started):
        os.unlink(started)  # up, yet no test run uses it: a developer's (a stale mark)
    open(os.path.join(d, str(os.getppid())), "w").close()
    return 0


def down():
    if os.geteuid() != 0:
        print(f"SKIP: {skip_reason()}")
        return 77
    state = state_dir()
    if not os.path.isdir(state):
        return 0
    d, _ = users(state)
    mine = os.path.join(d, str(os.getppid()))
    if os.path.exists(mine):
        os.unlink(mine)
    _, others = users(state)
    started = os.path.join(state, "started-by-tests")
    if others:
        print(f"left up: other test runs still use it (ctest pids {', '.join(others)})")
        return 0
    if not os.path.exists(started):
        print("left up: it was up before the tests")
        return 0
    os.unlink(started)
    p = subprocess.run([SCRIPT, "down"], capture_output=True, text=True, timeout=60)
    print(p.stdout + p.stderr)
    return p.returncode


if __name__ == "__main__":
    sys.exit(up() if sys.argv[1:] == ["up"] else down())
