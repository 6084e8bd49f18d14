#!/usr/bin/env bash
# pyflakes over kjudge's own Python (the harness, benchmarks, scripts, tests): a name defined twice
# (a second `def _digest` once replaced the first, silently changing the trials' input check), an
# undefined name, an unused import. Not over problems/ and examples/: problems use popcorn_pri,
# which kjudge injects, and some examples are broken on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files --cached --others --exclude-standard -- 'kjudge/*.py' 'bench/*.py' \
          'scripts/*.py' 'tests/*.py' 2>/dev/null | while read -r f; do [ -f "$f" ] && echo "$f"; done || true)
# Outside a git checkout (a tarball), or where git refuses the folder: every such file there is.
[ -z "$files" ] && files=$(find kjudge bench scripts tests -name '*.py' -type f 2>/dev/null | sort)
if [ -z "$files" ]; then echo "lint: no Python files found under kjudge/ bench/ scripts/ tests/" >&2; exit 1; fi
if ! /usr/bin/python3 -m pyflakes --version >/dev/null 2>&1; then
  echo "lint: pyflakes not installed for /usr/bin/python3 (Debian: python3-pyflakes)" >&2
  exit 1
fi
# shellcheck disable=SC2086
/usr/bin/python3 -m pyflakes $files
