#!/usr/bin/env bash
# clang-format over kjudge's own C++/CUDA sources: `check` fails on any difference, `fix` rewrites.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
# Tracked files and new ones not yet added (not ignored), so a check before `git add` sees them.
files=$(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' \
          2>/dev/null | while read -r f; do [ -f "$f" ] && echo "$f"; done | sort -u || true)
[ -z "$files" ] && exit 0
if ! command -v clang-format >/dev/null; then echo "format: clang-format not installed" >&2; exit 1; fi
if [ "$mode" = fix ]; then
  echo "$files" | xargs clang-format -i
else
  echo "$files" | xargs clang-format --dry-run --Werror
fi
