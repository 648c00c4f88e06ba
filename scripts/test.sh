#!/usr/bin/env bash
# The whole test suite: unit, integration, fuzz-corpus replay, header and
# install checks — in a normal build, again under ASan+UBSan, and the
# concurrency tests under TSan. Installs missing Debian packages first.
#
#   scripts/test.sh            everything
#   TP_TEST_QUICK=1 scripts/test.sh   normal build only
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${TP_JOBS:-2}

scripts/install-deps.sh

run_suite() {
  local dir=$1; shift
  local label=$1; shift
  echo "=== trainprof tests: $label ($dir) ==="
  mkdir -p "$dir"
  cmake -S "$root" -B "$dir" -DTP_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$root/.venv/bin/python" "$@" >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; exit 1; }
  cmake --build "$dir" -j"$jobs" 2>&1 | grep -E "warning|error" || true
  cmake --build "$dir" -j"$jobs" >/dev/null
  (cd "$dir" && ctest --output-on-failure -j"$jobs" ${TP_CTEST_ARGS:-})
}

run_suite build-test "release" -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${TP_TEST_QUICK:-0}" = "1" ]; then
  exit 0
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
run_suite build-asan "ASan+UBSan" -DCMAKE_BUILD_TYPE=Debug -DTP_SANITIZE=address -DTP_TEST_SMALL_LIMITS=ON
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
TP_CTEST_ARGS="-L concurrency" run_suite build-tsan "TSan (concurrency tests)" -DCMAKE_BUILD_TYPE=Debug -DTP_SANITIZE=thread
echo "=== all suites passed ==="
