#!/usr/bin/env bash
# The main job: build trainprof (library, CLI, Python package), train the C
# example MLP and then the PyTorch example CNN with profiling on, and show
# what the profiler found and where the files went.
#
#   scripts/run-example.sh [flags...]   e.g. --max_steps 500 --batch 128 --profiling.active 5
# The flags go to both examples (both take --max_steps, --batch and every
# profiling flag). TP_EXAMPLES=c or TP_EXAMPLES=python runs only one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
python=$(pwd)/.venv/bin/python
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTP_BUILD_TESTS=OFF \
  -DPython3_EXECUTABLE="$python" >/dev/null
cmake --build build -j"${TP_JOBS:-2}" >/dev/null

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
if [[ ,$which, == *,c,* ]]; then
  echo "=== training examples/train_mlp.c with trainprof (${args[*]}) ==="
  build/examples/train_mlp "${args[@]}" --profiling.log_dir "$log_dir" 2>&1 | tee "$out"
  show_run "$out"
fi
if [[ ,$which, == *,python,* ]]; then
  echo
  echo "=== training examples/python/train_cnn.py with trainprof (${args[*]} --num_workers 2 --profiling.torch_ops true) ==="
  PYTHONPATH="$(pwd)/build/python" "$python" examples/python/train_cnn.py "${args[@]}" \
    --num_workers 2 --profiling.torch_ops true --profiling.log_dir "$log_dir" 2>&1 | tee "$out"
  show_run "$out"
fi
