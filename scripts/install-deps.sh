#!/usr/bin/env bash
# Installs what trainprof needs to build, test and run its examples, if missing:
#   1. Debian packages (apt-get; needs root or sudo only when something is missing)
#   2. the project's virtual environment .venv (git-ignored), with the pinned
#      versions of requirements.txt; torch==2.13.0 (CPU build) goes in first so
#      nothing can pull a multi-GB CUDA build.
# Safe to run repeatedly: a second run installs nothing and takes a second.
#
#   scripts/install-deps.sh            both
#   TP_NO_VENV=1 scripts/install-deps.sh   Debian packages only (C-only work)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake make gcc g++ pkg-config   # build
  binutils                        # readelf: the TLS check of every shared object
  libyaml-dev zlib1g-dev          # YAML config, gzip traces
  libdeflate-dev                  # fast gzip inflate for the analyzer
  python3 python3-venv            # tests parse every output with Python; the venv
  protobuf-compiler               # independent protobuf wire-format check of Perfetto/TensorBoard output
  openmpi-bin libopenmpi-dev      # multi-rank example (mpirun) and mpi4py
  chromium                        # headless browser tests (HTML report, speedscope)
  valgrind                        # callgrind instruction budgets of the recorder (core_instructions)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# A python3 on PATH with venv (e.g. pyenv) is as good as Debian's.
if command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' 2>/dev/null; then
  missing=("${missing[@]/python3-venv}")
  missing=("${missing[@]/python3}")
fi
read -r -a missing <<< "${missing[*]:-}"

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ "${TP_NO_VENV:-0}" = "1" ] && exit 0

# The virtual environment: rebuilt only when requirements.txt changed.
venv=.venv
stamp=$venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
echo "install-deps: setting up $venv from requirements.txt (first time: a few minutes)" >&2
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# (this machine's pip config names local indexes that may not exist: pip warns
# once per package about them; those lines are dropped, everything else shows)
pip_install() {
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" \
    2> >(grep -v "^WARNING: Location 'file:" >&2)
}
pip_install "$(grep -E '^torch==' requirements.txt)"   # the CPU build first
pip_install -r requirements.txt
echo "$want" > "$stamp"
