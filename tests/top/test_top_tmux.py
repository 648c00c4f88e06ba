"""The terminal view of `trainprof top`, driven in a tmux pane (issue 30).

Two live_loop processes (argv[1]) run side by side; `trainprof top` on their
log directory is started in a detached tmux session on a private socket.
Checked from `tmux capture-pane`: it draws (the header, both runs, the
detail panel), it refreshes (the frame changes by itself), the down arrow
chooses the other run (the detail panel follows), and q quits with exit
status 0 (the shell after it prints the status). Exit 77 without tmux.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

TP = os.environ["TRAINPROF_BIN"]
LOOP = sys.argv[1]
TMUX = shutil.which("tmux")
FAILURES = []


def check(cond, msg):
    if not cond:
        FAILURES.append(msg)
        print("FAIL:", msg, flush=True)
    return cond


def main():
    if not TMUX:
        print("tmux not found: skipped (scripts/install-deps.sh installs it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="tp_top_tmux_")
    sock = f"tp_top_{os.getpid()}"
    procs = []

    def tmux(*args):
        return subprocess.run([TMUX, "-L", sock, *args], capture_output=True, text=True, timeout=30)

    def screen():
        return tmux("capture-pane", "-p", "-t", "top").stdout

    def wait_screen(what, pred, timeout=60):
        end = time.time() + timeout
        text = ""
        while time.time() < end:
            text = screen()
            if pred(text):
                return text
            time.sleep(0.2)
        check(False, f"timed out waiting for {what}; the screen:\n{text}")
        return text

    try:
        log_dir = os.path.join(tmp, "runs")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINPROF_")}
        for _ in range(2):
            p = subprocess.Popen([LOOP, "--profiling.log_dir", log_dir, "--profiling.trace", "false",
                                  "--profiling.log_every", "0", "--profiling.metrics", "none",
                                  "--steps", "0", "--step_ms", "10"], stdout=subprocess.PIPE, text=True, env=env)
            check(p.stdout.readline().startswith("dir "), "live_loop started")
            procs.append(p)
        end = time.time() + 60
        while time.time() < end and sum(os.path.exists(os.path.join(log_dir, d, "live.json"))
                                        for d in os.listdir(log_dir)) < 2:
            time.sleep(0.1)
        cmd = f"'{TP}' top --interval 0.3 '{log_dir}'; echo top-exited-$?; sleep 120"
        r = tmux("new-session", "-d", "-s", "top", "-x", "160", "-y", "40", cmd)
        if not check(r.returncode == 0, f"tmux new-session: {r.stderr}"):
            return 1
        first = wait_screen("the first frame", lambda s: "RANK" in s and s.count("running") >= 2)
        check("trainprof top" in first and "2 runs going under" in first, f"header:\n{first}")
        detail = [l for l in first.splitlines() if l.startswith("run: ")]
        check(len(detail) == 1, f"one detail panel:\n{first}")
        check(any(l.startswith(">") for l in first.splitlines()), f"a chosen row:\n{first}")
        wait_screen("a refresh", lambda s: s != first and "RANK" in s)
        tmux("send-keys", "-t", "top", "Down")
        after = wait_screen("the detail panel of the other run",
                            lambda s: [l for l in s.splitlines() if l.startswith("run: ")] not in ([], detail)
                            and "RANK" in s, timeout=20)
        pids = {str(p.pid) for p in procs}
        shown = [l for l in after.splitlines() if l.startswith("run: ")]
        check(shown and any(f"pid {pid} " in shown[0] for pid in pids), f"detail of a loop: {shown}")
        tmux("send-keys", "-t", "top", "q")
        done = wait_screen("q to quit", lambda s: "top-exited-" in s, timeout=20)
        check("top-exited-0" in done, f"exit status after q:\n{done}")
        check("RANK" not in done, f"the screen restored after q:\n{done}")
    finally:
        tmux("kill-server")
        for p in procs:
            p.kill()
            p.wait()
            p.stdout.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
