#!/usr/bin/env bash
# fuzz/campaign.sh - a time-boxed libFuzzer campaign over every fuzz target,
# starting from the kept corpus (fuzz/corpus/<name>/). Needs clang with
# libFuzzer (Debian: clang libclang-rt-14-dev; scripts/install-deps.sh test).
#
#   fuzz/campaign.sh [SECONDS] [--keep]
#       builds build-fuzz (CC=clang, -DTP_FUZZ=ON: ASan+UBSan+coverage), runs
#       each target SECONDS (default 60) and fails on any crash, leak,
#       sanitizer report or input slower than 10 s (its reproducer is kept in
#       build-fuzz/campaign/). --keep merges the new inputs that add coverage
#       into fuzz/corpus/<name>/ (commit them: they are replayed by ctest
#       fuzz_<name> in every build).
#   fuzz/campaign.sh --run BINARY NAME SECONDS
#       one target (what ctest fuzz_<name>_campaign runs in a TP_FUZZ build).
# A developer's campaign draws a new seed each time, to keep finding bugs.
# Under CI (CI=true, or TP_FUZZ_SEED set) the seed is fixed (1, or
# TP_FUZZ_SEED) and the inputs bounded (TP_FUZZ_RUNS, 1000: every target reaches it well inside the time cap here): CI replays
# the same inputs every time, a prefix of them on a slower machine, so a
# submission is never failed by a finding its author could not have seen;
# what a developer's campaign finds goes into the corpus, which CI replays.
# Exit: 0 nothing found, 1 a finding (see above), 2 cannot run (no clang).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

run_one() {  # BINARY NAME SECONDS [BUILD_DIR]
  local bin=$1 name=$2 secs=$3 out=${4:-$(dirname "$1")}/campaign/$2
  mkdir -p "$out/new"
  echo "fuzz campaign: $name for ${secs}s (corpus $root/fuzz/corpus/$name)"
  # the first directory receives what is new; the kept corpus is read only
  local fixed=()
  if [ -n "${TP_FUZZ_SEED:-}" ] || [ "${CI:-}" = "true" ]; then
    fixed=(-seed="${TP_FUZZ_SEED:-1}" -runs="${TP_FUZZ_RUNS:-1000}")
  fi
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 "${fixed[@]}" \
    -artifact_prefix="$out/" "$out/new" "$root/fuzz/corpus/$name" 2>"$out/log" || {
    tail -40 "$out/log" >&2
    echo "fuzz campaign: $name found a problem; reproducer in $out/ (replay: $bin FILE)" >&2
    return 1
  }
  grep -E "stat::number_of_executed_units|stat::new_units_added" "$out/log" | sed "s/^/  $name: /"
}

if [ "${1:-}" = "--run" ]; then
  run_one "$2" "$3" "$4"
  exit $?
fi
secs=60 keep=0
for a in "$@"; do
  case $a in
    --keep) keep=1 ;;
    *) secs=$a ;;
  esac
done
if ! command -v clang >/dev/null; then
  echo "fuzz/campaign.sh: needs clang with libFuzzer (apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi
build=${TP_FUZZ_BUILD:-$root/build-fuzz}
mkdir -p "$build"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DTP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTP_BUILD_BENCH=OFF -DTP_BUILD_EXAMPLES=OFF -DTP_BUILD_CUDA=OFF >"$build/campaign-configure.log" 2>&1 ||
  { tail -20 "$build/campaign-configure.log" >&2; exit 2; }
targets=$(cd "$root/fuzz" && ls fuzz_*.c | sed 's/\.c$/_libfuzzer/')
cmake --build "$build" -j"${TP_JOBS:-2}" --target $targets >"$build/campaign-build.log" 2>&1 ||
  { grep -E "error" "$build/campaign-build.log" | head -20 >&2; exit 2; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rc=0
for t in $targets; do
  name=${t#fuzz_}; name=${name%_libfuzzer}
  bin=$build/fuzz/$t
  run_one "$bin" "$name" "$secs" "$build/fuzz" || rc=1
  if [ "$keep" = 1 ]; then
    "$bin" -merge=1 "$root/fuzz/corpus/$name" "$build/fuzz/campaign/$name/new" 2>/dev/null
    echo "  $name: corpus now $(ls "$root/fuzz/corpus/$name" | wc -l) files"
  fi
done
exit $rc
