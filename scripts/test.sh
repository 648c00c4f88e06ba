#!/usr/bin/env bash
# The whole test suite: unit, integration, fuzz-corpus replay, header and
# install checks, the SLURM jobs (tests/slurm: a one-node cluster started
# with scripts/slurm-local.sh when run as root) — in a normal build, again
# under ASan+UBSan, the concurrency tests under TSan, and a short libFuzzer
# campaign when clang is there (fuzz/campaign.sh). Installs missing
# Debian packages first (scripts/install-deps.sh test: apt-get as root or
# with sudo; the first time, a venv of ~2 GB and several minutes).
#
# Quiet: per suite, the compiler's warnings and errors, the failing tests with
# their output, and at the end the tests that did not run and why. Full logs
# in each build directory: configure.log, build.log, ctest.log.
#
#   scripts/test.sh            everything
#   TP_TEST_QUICK=1 scripts/test.sh   normal build only
#   TP_VERBOSE=1 scripts/test.sh      ctest's full output on the terminal too
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${TP_JOBS:-2}
. scripts/quiet.sh

scripts/install-deps.sh test

run_suite() {
  local dir=$1; shift
  local label=$1; shift
  echo "=== trainprof tests: $label ($dir) ==="
  mkdir -p "$dir"
  : >"$dir/configure.log"
  : >"$dir/build.log"
  quiet "$dir/configure.log" "cmake (configure)" \
    cmake -S "$root" -B "$dir" -DTP_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$root/.venv/bin/python" "$@"
  quiet "$dir/build.log" "cmake --build" cmake --build "$dir" -j"$jobs"
  # the compiler's diagnostics (not target names such as config_errors)
  grep -E "(warning|error): " "$dir/build.log" || true
  local rc=0
  if [ "${TP_VERBOSE:-0}" = "1" ]; then
    (cd "$dir" && ctest --output-on-failure -j"$jobs" ${TP_CTEST_ARGS:-}) 2>&1 | tee "$dir/ctest.log" || rc=$?
  else
    # failures (with their output) as they happen, then ctest's summary
    (cd "$dir" && ctest --output-on-failure -j"$jobs" ${TP_CTEST_ARGS:-}) >"$dir/ctest.log" 2>&1 || rc=$?
    awk '/\*\*\*(Failed|Timeout|Exception|Not Run)/ { show = 1 }
         /^ *Start +[0-9]+:|Test +#[0-9]+: .* Passed/ { show = 0 }
         /tests passed|tests failed/ { print; show = 0; next }
         /^The following tests FAILED/ { show = 1 }
         /^The following tests did not run|^Errors while running CTest/ { show = 0 }
         show' "$dir/ctest.log"
  fi
  scripts/ctest-skipped.py "$dir/ctest.log" "$dir" | sed 's/^/  /'
  echo "  (full output: $dir/ctest.log)"
  [ "$rc" -eq 0 ] || exit "$rc"
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
# A time-boxed libFuzzer campaign (TP_FUZZ_SECONDS per target, 30 by default)
# from the kept corpus: the fuzz targets under clang (ASan+UBSan+coverage).
if command -v clang >/dev/null; then
  export ASAN_OPTIONS=detect_leaks=1
  CC=clang CXX=clang++ TP_CTEST_ARGS="-L fuzz" run_suite build-fuzz "libFuzzer campaign" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTP_FUZZ=ON -DTP_BUILD_EXAMPLES=OFF -DTP_BUILD_CUDA=OFF
else
  echo "=== libFuzzer campaign skipped: no clang (scripts/install-deps.sh test installs it; fuzz/campaign.sh) ==="
fi
echo "=== all suites passed ==="
