"""What the SLURM tests share: the one-node cluster of scripts/slurm-local.sh
(up already: the slurm_up fixture started it), submitting the job scripts of
tests/slurm/jobs as a cluster user would, waiting for jobs, and checks.

Jobs inherit the submitting environment (sbatch's default --export=ALL), so
the environment built here puts the trainprof CLI, the MPI example and the
test's Python (torchrun, python) first on PATH: the job scripts name them as
a user's would, without paths."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("TP_SOURCE_DIR", ".")
BIN = os.path.abspath(os.environ.get("TRAINPROF_BIN", "build/trainprof"))
EXAMPLES = os.path.abspath(os.environ.get("TP_EXAMPLES_DIR", "build/examples"))
SCRIPT = os.path.join(SRC, "scripts", "slurm-local.sh")
JOBS = os.path.join(SRC, "tests", "slurm", "jobs")
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "PREEMPTED", "BOOT_FAIL", "DEADLINE"}
FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg, file=sys.stderr)
    return cond


def finish():
    """The test's exit status: 1 with the failures counted, else 0."""
    if FAILS:
        print(f"{len(FAILS)} failure(s)", file=sys.stderr)
        return 1
    print("ok")
    return 0


def run_test(body, needs=()):
    """A SLURM test's frame: exit 77 when a module of NEEDS does not import
    or the cluster cannot run here, else body(env, tmp) in a temporary
    directory (kept with TP_KEEP=1); returns the test's exit status."""
    for module in needs:
        try:
            __import__(module)
        except ImportError as e:
            print(f"SKIP: {e}")
            return 77
    env = cluster_env()
    tmp = tempfile.mkdtemp(prefix="tp_slurm_")
    try:
        body(env, tmp)
    finally:
        if not os.environ.get("TP_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
    return finish()


def skip_reason():
    """Why the cluster cannot run here (the test is skipped), or None."""
    if os.geteuid() != 0:
        return "scripts/slurm-local.sh needs root (it starts munged, slurmctld and slurmd)"
    missing = [b for b in ("slurmctld", "slurmd", "munged", "sbatch") if not shutil.which(b)]
    if missing:
        return f"slurm-wlm/munge not installed and not installable here (no {', '.join(missing)})"
    return None


def cluster_env():
    """The environment of a cluster user: SLURM_CONF from `slurm-local.sh
    status`, PATH with trainprof, the MPI example and this Python first.
    Exits 77 when the cluster cannot run here, 1 when it should but is down."""
    reason = skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        sys.exit(77)
    p = subprocess.run([SCRIPT, "status"], capture_output=True, text=True)
    m = re.search(r"export SLURM_CONF=(\S+)", p.stdout)
    if p.returncode != 0 or not m:
        print(f"FAIL: the cluster is not up (slurm_up starts it): {p.stdout}{p.stderr}", file=sys.stderr)
        sys.exit(1)
    env = dict(os.environ)
    env["SLURM_CONF"] = m.group(1)
    env["PATH"] = os.pathsep.join([os.path.dirname(BIN), os.path.join(EXAMPLES, "mpi"),
                                   os.path.dirname(sys.executable), env.get("PATH", "")])
    # mpirun refuses root without these (the cluster's jobs run as root here)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def sbatch(env, cwd, script, args=(), options=()):
    """Submits tests/slurm/jobs/SCRIPT with ARGS from CWD; returns the job id."""
    cmd = ["sbatch", "--parsable", *options, os.path.join(JOBS, script), *map(str, args)]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    if not check(p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}: {p.stderr}"):
        return None
    job = p.stdout.strip().split(";")[0]
    print(f"submitted {script} {' '.join(map(str, args))}: job {job}")
    return job


def job_states(env, job):
    """{job or array task id: state} from scontrol (ended jobs stay listed
    for MinJobAge, 600 s in slurm-local's configuration)."""
    p = subprocess.run(["scontrol", "show", "job", "-o", job], env=env, capture_output=True, text=True)
    out = {}
    for line in p.stdout.splitlines():
        jid = re.search(r"\bJobId=(\d+)", line)
        task = re.search(r"\bArrayTaskId=(\S+)", line)
        state = re.search(r"\bJobState=(\S+)", line)
        if jid and state:
            out[jid.group(1) + (f"_{task.group(1)}" if task else "")] = state.group(1)
    return out


def wait_job(env, job, timeout):
    """Waits until the job (every task of an array) has ended; returns
    {task: state}, or fails the test at TIMEOUT seconds (and cancels it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = job_states(env, job)
        if states and all(s in ENDED for s in states.values()):
            return states
        time.sleep(0.25)
    check(False, f"job {job} still running after {timeout} s: {job_states(env, job)}")
    subprocess.run(["scancel", job], env=env)
    return job_states(env, job)


def job_output(cwd, job):
    """The job's output (slurm-<job>.out in the directory it was submitted from)."""
    try:
        with open(os.path.join(cwd, f"slurm-{job}.out"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def run_job(env, cwd, script, args=(), options=(), timeout=240):
    """sbatch + wait: the job's output; fails the test unless it COMPLETED."""
    job = sbatch(env, cwd, script, args, options)
    if job is None:
        return None, ""
    states = wait_job(env, job, timeout)
    out = job_output(cwd, job)
    check(states and all(s == "COMPLETED" for s in states.values()),
          f"job {job} ({script}) ended {states}: {out[-3000:]}")
    return job, out


def tp(*args, cwd=None):
    """The trainprof CLI: (exit status, stdout, stderr)."""
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=240, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def analyze_json(path, *extra):
    code, out, err = tp("analyze", "--json", *extra, path)
    check(code == 0, f"trainprof analyze --json {path} exited {code}: {err[-2000:]}")
    try:
        return json.loads(out)
    except ValueError as e:
        check(False, f"analyze --json {path}: not JSON ({e}): {out[:500]}")
        return {"per_rank": [], "straggler": {}}


def check_straggler(a, rank, slow_ms, what):
    """The cross-rank analysis names RANK, its lead within 20 % of SLOW_MS."""
    st = a.get("straggler") or {}
    lead = st.get("lead_p50_ns", 0) / 1e6
    print(f"{what}: straggler rank {st.get('rank')}, lead {lead:.1f} ms (injected {slow_ms} ms)")
    check(st.get("rank") == rank, f"{what}: straggler {st}, rank {rank} slowed")
    check(abs(lead - slow_ms) <= 0.2 * slow_ms, f"{what}: lead {lead:.1f} ms vs {slow_ms} ms injected")
