#!/usr/bin/env bash
# Installs what trainprof needs, if missing, for one of two purposes:
#
#   scripts/install-deps.sh example   what scripts/run-example.sh needs: a C
#       compiler, CMake, libyaml, zlib, libdeflate, Python's headers, and a
#       virtual environment .venv with torch (CPU build) and numpy
#       (requirements-example.txt). About a minute and 1 GB the first time.
#   scripts/install-deps.sh [test]    everything the test suite uses besides:
#       Open MPI, chromium, valgrind, protobuf, and the full .venv of
#       requirements.txt (Lightning, JAX, W&B, playwright, ...). Several
#       minutes and ~2 GB the first time.
#
# Debian packages come from apt-get: that needs root, or sudo, and only when
# something is missing. Quiet: one line per thing installed; apt's and pip's
# full output goes to build-logs/install-deps.log, whose tail is shown when
# a step fails. Safe to run repeatedly: a second run installs nothing and
# takes a second. TP_NO_VENV=1: Debian packages only (C-only work).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-test}

EXAMPLE_PACKAGES=(
  cmake make gcc g++ pkg-config   # build
  libyaml-dev zlib1g-dev          # YAML config, gzip traces
  libdeflate-dev                  # fast gzip inflate for the analyzer
  python3 python3-venv python3-dev  # the venv; Python.h for the trainprof extension
)
TEST_PACKAGES=(
  binutils                        # readelf: the TLS check of every shared object
  protobuf-compiler               # independent protobuf wire-format check of Perfetto/TensorBoard output
  openmpi-bin libopenmpi-dev      # multi-rank example (mpirun) and mpi4py
  chromium                        # headless browser tests (HTML report, speedscope)
  clang libclang-rt-14-dev        # the libFuzzer campaign (fuzz/campaign.sh, scripts/test.sh)
  valgrind                        # callgrind instruction budgets of the recorder (core_instructions)
  tmux                            # the terminal view of `trainprof top`, driven in a pane (top_tmux)
)
case "$what" in
  example) packages=("${EXAMPLE_PACKAGES[@]}"); requirements=requirements-example.txt ;;
  test) packages=("${EXAMPLE_PACKAGES[@]}" "${TEST_PACKAGES[@]}"); requirements=requirements.txt ;;
  *) echo "usage: $0 [example|test]" >&2; exit 2 ;;
esac

mkdir -p build-logs
log=$(pwd)/build-logs/install-deps.log

. scripts/quiet.sh
run() { quiet "$log" "install-deps: $1" "${@:2}"; }

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "install-deps: missing Debian packages: ${missing[*]}" >&2
      echo "install-deps: installing them needs root: run this as root, or install them first" >&2
      exit 1
    fi
    SUDO=(sudo)
    echo "install-deps: installing Debian packages with sudo (it may ask for your password)" >&2
  fi
  echo "install-deps: installing ${missing[*]} (log: $log)" >&2
  export DEBIAN_FRONTEND=noninteractive
  run "apt-get update" "${SUDO[@]}" apt-get update -qq
  run "apt-get install" "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ "${TP_NO_VENV:-0}" = "1" ] && exit 0

# The virtual environment: (re)filled only when its requirements file changed.
# A venv made for the tests (requirements.txt) serves the example too.
venv=.venv
stamp() { echo "$venv/.${1%.txt}.sha256"; }   # .requirements.sha256, .requirements-example.sha256
up_to_date() { [ "$(cat "$(stamp "$1")" 2>/dev/null)" = "$(sha256sum "$1" | cut -d' ' -f1)" ]; }
if [ -x "$venv/bin/python" ] && { up_to_date "$requirements" || up_to_date requirements.txt; }; then
  exit 0
fi
echo "install-deps: filling $venv from $requirements (first time: a few minutes; log: $log)" >&2
[ -x "$venv/bin/python" ] || run "python3 -m venv" python3 -m venv "$venv"
pip_install() {
  run "pip install $*" "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"
}
pip_install "$(grep -E '^torch==' "$requirements")"   # the CPU build first: nothing can pull CUDA's
pip_install -r "$requirements"
sha256sum "$requirements" | cut -d' ' -f1 >"$(stamp "$requirements")"
