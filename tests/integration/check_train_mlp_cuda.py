#!/usr/bin/env python3
"""Run examples/cuda/train_mlp_cuda on a real GPU and check what trainprof
recorded against what the loop did (ground truth without nsys): per active
step 10 kernel launches (3 linear_forward, softmax_xent, 3 linear_grad,
2 linear_backward_input, sgd_update), 2 host->device copies from pinned or
pageable memory, 1 memset; GPU zones on every step; per-device memory in
memory_profile.json; `trainprof analyze` reads the trace. Without a GPU the
example exits 77 and this test reports a skip (ctest SKIP_RETURN_CODE 77).

usage: check_train_mlp_cuda.py EXE CUPTI_LIB
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

EXE, CUPTI = sys.argv[1], sys.argv[2]
STEPS, ACTIVE, KERNELS_PER_STEP = 20, 3, 10
FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def run(tmp, *extra):
    env = dict(os.environ, TRAINPROF_CUPTI_LIB=CUPTI)
    cmd = [EXE, "--quiet", "--max_steps", str(STEPS), "--loss_every", "5", "--profiling.log_dir",
           tmp, "--profiling.cuda", "true", "--profiling.wait", "5", "--profiling.warmup", "2",
           "--profiling.active", str(ACTIVE), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if p.returncode == 77:
        print(p.stdout.strip() or "no CUDA device: skipped")
        sys.exit(77)
    check(p.returncode == 0, f"{cmd}: exit {p.returncode}: {p.stderr[-2000:]}")
    run_dir = [l for l in p.stdout.splitlines() if "run directory" in l][-1].split(": ", 1)[1]
    trace = glob.glob(os.path.join(run_dir, "profiler_traces", "*.pt.trace.json"))[0]
    with open(trace) as f:
        return run_dir, trace, json.load(f)["traceEvents"]


def xs(ev, cat):
    return [e for e in ev if e.get("ph") == "X" and e.get("cat") == cat]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("pinned", "pageable"):
            sub = os.path.join(tmp, mode)
            run_dir, trace, ev = run(sub, *(["--pageable"] if mode == "pageable" else []))
            kernels = xs(ev, "kernel")
            check(len(kernels) == ACTIVE * KERNELS_PER_STEP, f"{mode}: {len(kernels)} kernels")
            h2d = [c for c in xs(ev, "gpu_memcpy") if "HtoD" in c["name"]]
            want = "Pinned" if mode == "pinned" else "Pageable"
            check(len(h2d) == 2 * ACTIVE and all(want in c["name"] for c in h2d), f"{mode}: copies {[c['name'] for c in h2d]}")
            check(len(xs(ev, "gpu_memset")) == ACTIVE, f"{mode}: memsets")
            launches = [r for r in xs(ev, "cuda_runtime") if r["name"].startswith("cudaLaunchKernel")]
            check(len(launches) == len(kernels), f"{mode}: launches {len(launches)}")
            flows = [e for e in ev if e.get("cat") == "ac2g" and e.get("ph") == "f"]
            check(len(flows) >= len(kernels), f"{mode}: ac2g flows")
            with open(os.path.join(run_dir, "operations.json")) as f:
                ops = {o["name"]: o for o in json.load(f)}
            for z in ("h2d_copy", "forward", "backward", "optimizer_step"):
                check(ops.get(z, {}).get("gpu_count") == STEPS, f"{mode}: GPU zone {z} on every step")
            with open(os.path.join(run_dir, "memory_profile.json")) as f:
                rows = json.load(f)
            check(rows and "cuda:0" in rows[-1].get("memory", {}), f"{mode}: cuda:0 memory")
            a = subprocess.run([os.environ["TRAINPROF_BIN"], "analyze", "--json", trace],
                               capture_output=True, text=True)
            check(a.returncode == 0 and json.loads(a.stdout)["kernel_calls"] == len(kernels),
                  f"{mode}: analyze")
            print(f"{mode}: {len(kernels)} kernels, {len(h2d)} HtoD copies; analyze:",
                  a.stdout[:300].replace("\n", " "))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
