#!/usr/bin/env bash
# clang-format over kjudge's own C++/CUDA sources: `check` fails on any difference, `fix` rewrites.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
files=$(git ls-files -- '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' 2>/dev/null || true)
[ -z "$files" ] && exit 0
if ! command -v clang-format >/dev/null; then echo "format: clang-format not installed" >&2; exit 1; fi
if [ "$mode" = fix ]; then
  echo "$files" | xargs clang-format -i
else
  echo "$files" | xargs clang-format --dry-run --Werror
fi
