"""`trainprof config` end to end, checked with Python's own json parser."""
import json
import os
import subprocess
import sys
import tempfile

BIN = os.environ["TRAINPROF_BIN"]
failures = 0


def run(args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINPROF_") or k == "TRAINPROF_BIN"}
    env.update(env_extra or {})
    p = subprocess.run([BIN, "config"] + args, capture_output=True, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


with tempfile.TemporaryDirectory() as tmp:
    yaml_path = os.path.join(tmp, "train.yaml")
    with open(yaml_path, "w") as f:
        f.write("model: {layers: 2}\nprofiling:\n  wait: 2\n  warmup: 2\n  metrics: [jsonl]\n")

    rc, out, err = run(["--json", yaml_path, "--", "--enable_profiling", "True",
                        "--profile_steps", "10", "profiling.output_dir=" + tmp],
                       {"TRAINPROF_WARMUP": "3"})
    check(rc == 0, "json rc %d %s" % (rc, err))
    cfg = json.loads(out)
    check(cfg["profiling.wait"] == {"value": 2, "source": "file %s:3" % yaml_path}, cfg["profiling.wait"])
    check(cfg["profiling.warmup"]["value"] == 3, "env beats file")
    check(cfg["profiling.warmup"]["source"] == "env TRAINPROF_WARMUP", cfg["profiling.warmup"])
    check(cfg["profiling.active"]["value"] == 10, "profile_steps")
    check(cfg["profiling.enabled"]["value"] is True, "enabled")
    check(cfg["profiling.log_dir"]["value"] == tmp, "output_dir")
    check(cfg["profiling.metrics"]["value"] == ["jsonl"], cfg["profiling.metrics"])
    check(cfg["profiling.skip_first"]["source"] == "default", "default source")
    for key, entry in cfg.items():
        check(key.startswith("profiling.") and set(entry) == {"value", "source"}, key)

    rc, out, err = run(["--explain", yaml_path])
    check(rc == 0 and "# file %s:3" % yaml_path in out and "# default" in out, "explain: " + out)

    rc, out, err = run([])
    check(rc == 0 and "profiling.wait = 1\n" in out, "plain: " + out)

    rc, out, err = run(["--", "--profiling.wiat=3"])
    check(rc == 2 and "did you mean `wait`?" in err, "unknown flag: " + err)

    rc, out, err = run(["--", "--batch", "3"])
    check(rc == 2 and "not a profiling flag" in err, "foreign flag: " + err)

    bad = os.path.join(tmp, "bad.yaml")
    with open(bad, "w") as f:
        f.write("profiling:\n  wait: [1\n")
    rc, out, err = run([bad])
    check(rc == 2 and bad + ":" in err and "malformed YAML" in err, "malformed: " + err)

    rc, out, err = run(["--markdown"])
    check(rc == 0 and out.startswith("# trainprof configuration"), "markdown")

    rc, out, err = run(["--help"])
    check(rc == 0 and "usage: trainprof config" in out, "help")

sys.exit(1 if failures else 0)
