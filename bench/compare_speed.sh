#!/usr/bin/env bash
# Times kjudge's output comparison on a large float32 output (bench/compare_speed.cpp) against
# the kjudge build in $1 (default build/, which must have been built: it links its static
# libraries). Usage: bash bench/compare_speed.sh [build dir] [elements]
set -eu
build=${1:-build}
out=$(mktemp -d)
g++ -std=c++20 -O2 -I. -I"$build/generated" -o "$out/compare_speed" bench/compare_speed.cpp \
  "$build/lib/check/libkjudge_check.a" "$build/lib/core/libkjudge_core.a" -lfmt -pthread
"$out/compare_speed" "${2:-125000000}"
rm -rf "$out"
