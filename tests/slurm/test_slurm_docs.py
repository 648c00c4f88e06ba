#!/usr/bin/env python3
"""docs/DISTRIBUTED.md shows the SLURM recipes exactly as the tests run them:
every job script of tests/slurm/jobs appears verbatim in a fenced block, and
every SLURM_* variable trainprof reads (the string literals of
src/config/cfg_job.c) is named in the docs. Needs no cluster."""
import glob
import os
import re
import sys

from slurm_common import JOBS, SRC, check, finish


def main():
    doc = open(os.path.join(SRC, "docs", "DISTRIBUTED.md")).read()
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", doc, re.S | re.M)
    scripts = sorted(glob.glob(os.path.join(JOBS, "*.sbatch")))
    check(len(scripts) >= 5, f"job scripts: {scripts}")
    for path in scripts:
        text = open(path).read()
        check(any(text in b for b in blocks), f"{os.path.relpath(path, SRC)} is not verbatim in docs/DISTRIBUTED.md")
        check(os.path.relpath(path, SRC) in doc, f"docs/DISTRIBUTED.md does not name {os.path.relpath(path, SRC)}")
    read = set(re.findall(r'"(SLURM_[A-Z_]+)"', open(os.path.join(SRC, "src", "config", "cfg_job.c")).read()))
    check(read >= {"SLURM_PROCID", "SLURM_JOB_ID"}, f"cfg_job.c reads {read}")
    for var in sorted(read):
        check(f"`{var}`" in doc, f"docs/DISTRIBUTED.md does not name `{var}`, which trainprof reads")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
