#!/usr/bin/env bash
# The main job: build trainprof, train the example MLP with profiling on,
# then show what the profiler found and where the files went.
#
#   scripts/run-example.sh [example flags...]   e.g. --max_steps 500 --batch 128
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTP_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"${TP_JOBS:-2}" >/dev/null

args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--max_steps 300 --batch 64)
log_dir=${TP_LOG_DIR:-runs}

echo "=== training examples/train_mlp.c with trainprof (${args[*]}) ==="
out=$(mktemp)
build/examples/train_mlp "${args[@]}" --profiling.log_dir "$log_dir" 2>&1 | tee "$out"
run_dir=$(sed -n 's/^trainprof: results in //p' "$out" | tail -n 1)
rm -f "$out"
if [ -z "$run_dir" ]; then
  run_dir=$(ls -td "$log_dir"/*/ | head -n 1)
fi

echo
echo "=== files written to $run_dir ==="
find "$run_dir" -type f | sort | while read -r f; do
  printf '  %-80s %8s bytes\n' "$f" "$(stat -c %s "$f")"
done

trace=$(find "$run_dir/profiler_traces" -name '*.pt.trace.json*' 2>/dev/null | sort | head -n 1)
if [ -n "$trace" ]; then
  echo
  echo "=== trainprof steps $trace ==="
  build/trainprof steps "$trace" || true
  echo
  echo "=== trainprof report --top 10 $trace ==="
  build/trainprof report --top 10 "$trace" || true
fi
