#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds a consumer against it
# twice: with CMake's find_package(trainprof) and with pkg-config.
set -euo pipefail
build_dir=$1
src_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/trainprof.h"
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -n 1)
ls "$libdir"libtrainprof.so.0 >/dev/null   # SONAME link
ls "$libdir"libtrainprof.a >/dev/null

cmake -S "$src_dir/tests/api/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/consumer"

PKG_CONFIG_PATH="${libdir}pkgconfig" pkg-config --exists trainprof
cc $(PKG_CONFIG_PATH="${libdir}pkgconfig" pkg-config --cflags trainprof) \
   "$src_dir/tests/api/consumer/main.c" -o "$tmp/pc_consumer" \
   $(PKG_CONFIG_PATH="${libdir}pkgconfig" pkg-config --libs trainprof)
LD_LIBRARY_PATH="$libdir" "$tmp/pc_consumer"
echo "1 passed, 0 failed"
