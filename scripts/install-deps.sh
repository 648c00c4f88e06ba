#!/usr/bin/env bash
# Installs the Debian packages trainprof needs to build and test, if missing.
# Safe to run repeatedly; needs root (or sudo) only when something is missing.
set -euo pipefail

PACKAGES=(
  cmake make gcc g++ pkg-config   # build
  libyaml-dev zlib1g-dev          # YAML config, gzip traces
  python3                         # integration tests parse every output with Python's json
  protobuf-compiler               # independent protobuf wire-format check of Perfetto/TensorBoard output
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# A python3 on PATH (e.g. pyenv) is as good as Debian's.
if command -v python3 >/dev/null 2>&1; then
  missing=("${missing[@]/python3}")
fi
read -r -a missing <<< "${missing[*]:-}"

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
