#!/usr/bin/env bash
# The main job: build trainprof (library, CLI, Python package), train the C
# example MLP and then the PyTorch example CNN with profiling on, and show
# what the profiler found and where the files went.
#
#   scripts/run-example.sh [flags...]   e.g. --max_steps 500 --batch 128 --profiling.active 5
# The flags go to both examples (both take --max_steps, --batch and every
# profiling flag). TP_EXAMPLES=c or TP_EXAMPLES=python runs only one.
#
# It installs what it needs when missing (scripts/install-deps.sh example:
# compiler, CMake, libyaml, zlib, libdeflate with apt-get, which needs root or
# sudo; torch into .venv). Quiet: the installs' and the build's output go to
# build-logs/ (shown when something fails), and Kineto's USDT/STAGE lines
# are left out of the example's output (kept in build-logs/examples.log).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/quiet.sh
scripts/install-deps.sh example
python=$(pwd)/.venv/bin/python
log=$(pwd)/build-logs/build.log
: >"$log"
echo "=== building trainprof (log: build-logs/build.log) ==="
quiet "$log" "cmake (configure)" cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTP_BUILD_TESTS=OFF \
  -DPython3_EXECUTABLE="$python"
quiet "$log" "cmake --build" cmake --build build -j"${TP_JOBS:-2}"
if [[ ,${TP_EXAMPLES:-c,python}, == *,python,* ]] && ! ls build/python/trainprof/_core*.so >/dev/null 2>&1; then
  echo "the trainprof Python extension was not built (Python headers missing?): see $log" >&2
  exit 1
fi

args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--max_steps 300 --batch 64)
log_dir=${TP_LOG_DIR:-runs}
which=${TP_EXAMPLES:-c,python}

# show_run LOG: the files of the run directory LOG names, and the trace analyzed
show_run() {
  local run_dir
  run_dir=$(sed -n 's/^trainprof: results in //p' "$1" | tail -n 1)
  [ -n "$run_dir" ] || run_dir=$(ls -td "$log_dir"/*/ | head -n 1)
  echo
  echo "=== files written to $run_dir ==="
  find "$run_dir" -type f | sort | while read -r f; do
    printf '  %-80s %8s bytes\n' "$f" "$(stat -c %s "$f")"
  done
  local trace
  trace=$(find "$run_dir/profiler_traces" -name '*.pt.trace.json*' 2>/dev/null | sort | head -n 1)
  if [ -n "$trace" ]; then
    echo
    echo "=== trainprof steps $trace ==="
    build/trainprof steps "$trace" || true
    echo
    echo "=== trainprof report --top 10 $trace ==="
    build/trainprof report --top 10 "$trace" || true
  fi
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
examples_log=build-logs/examples.log
: >"$examples_log"
# without_kineto_noise: Kineto (torch.profiler) prints a USDT line at every
# trace start and stop, and STAGE lines; they go to the log only
without_kineto_noise() {
  tee -a "$examples_log" | grep --line-buffered -vE '^(USDT|STAGE):[0-9-]+ [0-9:.]+ [0-9]+:[0-9]+ [A-Za-z]+\.cpp:[0-9]+\]' || true
}
if [[ ,$which, == *,c,* ]]; then
  echo "=== training examples/train_mlp.c with trainprof (${args[*]}) ==="
  build/examples/train_mlp "${args[@]}" --profiling.log_dir "$log_dir" 2>&1 | tee -a "$examples_log" | tee "$out"
  show_run "$out"
fi
if [[ ,$which, == *,python,* ]]; then
  echo
  echo "=== training examples/python/train_cnn.py with trainprof (${args[*]} --num_workers 2 --profiling.torch_ops true) ==="
  PYTHONPATH="$(pwd)/build/python" "$python" examples/python/train_cnn.py "${args[@]}" \
    --num_workers 2 --profiling.torch_ops true --profiling.log_dir "$log_dir" 2>&1 | without_kineto_noise | tee "$out"
  show_run "$out"
fi
