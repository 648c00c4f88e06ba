#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one run on a machine that has one
# (CI has none: there these paths build and their tests skip). Builds
# trainprof with the CUDA example, runs the GPU tests (NVML, CUDA runtime,
# CUPTI, the CUDA example end to end), then the no-code-change path on an
# unmodified PyTorch CUDA script (python -m trainprof: steps, phases, GPU
# memory, a slow-step capture), `trainprof top --json` on it while it runs
# (gpu_bytes), and `trainprof report --html` on its run directory.
#
#   scripts/gpu-check.sh [OUT_DIR]    (default ./gpu-check-out)
#   TP_GPU_CMAKE_ARGS="-DTP_WITH_YAML=OFF" scripts/gpu-check.sh   (a machine
#       without libyaml's headers and no network to install them)
#
# Uses the machine's own python3 (it must have torch with CUDA) and cmake.
# Prints one PASS/FAIL line per check and "N passed, N failed" at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}
pass=0
fail=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

nvidia-smi -L | tee "$out/gpus.txt" || bad "nvidia-smi"
jobs=$(nproc)
if cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTP_BUILD_BENCH=OFF \
      -DPython3_EXECUTABLE="$(command -v "$py")" ${TP_GPU_CMAKE_ARGS:-} >"$out/configure.log" 2>&1 &&
   cmake --build build-gpu -j"$jobs" >"$out/build.log" 2>&1; then
  ok "build with CUDA ($(grep -c 'cuda' "$out/build.log") CUDA lines in the log)"
else
  bad "build (tail of the logs follows)"; tail -30 "$out/configure.log" "$out/build.log" 2>/dev/null
  echo "$pass passed, $fail failed"; exit 1
fi

(cd build-gpu && ctest --output-on-failure -R 'cuda|gpu|cupti|nvml' >"$out/ctest-gpu.log" 2>&1)
rc=$?
grep -E 'Test +#|tests passed' "$out/ctest-gpu.log"
if [ $rc -eq 0 ] && ! grep -q 'Skipped\|Not Run' "$out/ctest-gpu.log"; then ok "GPU tests ran and passed"
else bad "GPU tests (rc $rc; skips count as failures on a GPU machine)"; fi

# an unmodified PyTorch CUDA script: no trainprof in it
cat >"$out/train_gpu.py" <<'EOF'
import sys, time, torch
dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.utils.data.TensorDataset(torch.randn(4096, 1024), torch.randn(4096, 1024))
loader = torch.utils.data.DataLoader(data, batch_size=64, num_workers=2)
for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    for i, (x, y) in enumerate(loader):
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if epoch == 1 and i == 20:
            time.sleep(0.5)          # one slow step: a slow_step capture
    torch.cuda.synchronize()
print("trained", file=sys.stderr)
EOF
export PYTHONPATH="$PWD/build-gpu/python${PYTHONPATH:+:$PYTHONPATH}"
rm -rf "$out/runs"
(cd "$out" && "$py" -m trainprof --profiling.output_dir runs train_gpu.py 4 >"$out/auto.log" 2>&1) &
pid=$!
# top while it trains: poll until a few steps are in (CUDA and the workers take a while to start)
for _ in $(seq 1 90); do
  sleep 1
  build-gpu/trainprof top --json "$out/runs" >"$out/top.json" 2>"$out/top.err" || continue
  "$py" -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]; sys.exit(0 if (r["step"] or 0) >= 20 and r["state"] == "running" else 1)' "$out/top.json" && break
  kill -0 $pid 2>/dev/null || break
done
wait $pid
rc=$?
tail -5 "$out/auto.log"
[ $rc -eq 0 ] && ok "python -m trainprof on an unmodified CUDA script" || bad "python -m trainprof (rc $rc)"
"$py" - "$out" <<'EOF' && ok "outputs of the CUDA run" || bad "outputs of the CUDA run"
import glob, json, os, sys
out = sys.argv[1]
runs = glob.glob(os.path.join(out, "runs", "*"))
assert len(runs) == 1, runs
run = runs[0]
rows = json.load(open(os.path.join(run, "timing_profile.json")))
print("steps:", len(rows), "(4 epochs x 64 batches = 256 optimizer steps)")
assert len(rows) == 256, len(rows)
ops = json.load(open(os.path.join(run, "operations.json")))
names = {o.get("name") for o in (ops if isinstance(ops, list) else ops.get("operations", []))}
print("zones:", sorted(n for n in names if n)[:20])
mem = json.load(open(os.path.join(run, "memory_profile.json")))
gpu = [r for r in mem if r.get("gpu_memory_allocated_gb", 0) > 0]
print("memory rows:", len(mem), "with GPU memory:", len(gpu),
      "peak allocated GB:", max((r.get("gpu_memory_allocated_gb", 0) for r in mem), default=0))
assert gpu, "no GPU memory in memory_profile.json"
caps = json.load(open(os.path.join(run, "captures.json")))["captures"]
print("captures:", [(c["reason"], c["step"]) for c in caps])
assert any(c["reason"] == "slow_step" for c in caps), caps
top = json.load(open(os.path.join(out, "top.json")))
print("top --json:", json.dumps(top["runs"][0])[:500])
r0 = top["runs"][0]  # running past step 20, or (a fast machine) already closed with every step
assert (r0["state"] == "running" and r0["step"] >= 20) or (r0["ended_reason"] == "closed" and r0["step"] == 256), top
assert (top["runs"][0].get("gpu_bytes") or 0) > 0, "top: no gpu_bytes"
EOF
if build-gpu/trainprof report --html "$out/report.html" "$out"/runs/* >"$out/report.log" 2>&1; then
  ok "report --html on the CUDA run ($(stat -c %s "$out/report.html") bytes)"
else bad "report --html: $(tail -3 "$out/report.log")"; fi
build-gpu/trainprof analyze "$out"/runs/* >"$out/analyze.txt" 2>&1 && ok "analyze on the CUDA run" || bad "analyze"
head -12 "$out/analyze.txt"

# with torch's operators: Kineto's GPU trace (kernels, memcpy) through the analyzer
rm -rf "$out/runs_ops"
if (cd "$out" && "$py" -m trainprof --profiling.output_dir runs_ops --profiling.torch_ops true \
      train_gpu.py 2 >"$out/auto_ops.log" 2>&1) &&
   build-gpu/trainprof analyze "$out"/runs_ops/* >"$out/analyze_ops.txt" 2>&1; then
  head -14 "$out/analyze_ops.txt"
  if grep -qE '^ +kernel +[1-9]' "$out/analyze_ops.txt"; then ok "torch_ops on CUDA: kernel time in the analysis"
  else bad "torch_ops on CUDA: no kernel time"; fi
else bad "torch_ops run or its analyze: $(tail -3 "$out/auto_ops.log" "$out/analyze_ops.txt")"; fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
