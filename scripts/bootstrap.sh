#!/usr/bin/env bash
# Installs what kjudge needs to build and test, then writes the python3 to embed into $1.
# Debian/Ubuntu packages through apt-get when headers are missing; torch from PyPI into .venv when
# no suitable interpreter has it. Safe to run again: it installs nothing that is already there.
set -euo pipefail
out=${1:-build/python-path}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p "$(dirname "$out")"

say() { echo "bootstrap: $*" >&2; }

# --- system packages ---------------------------------------------------------------------------
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/local/include/$1" ]; }
apt_install() {  # installs the Debian/Ubuntu packages named, or says what is missing
  [ $# -eq 0 ] && return 0
  if command -v apt-get >/dev/null; then
    say "installing $*"
    local sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq && \
      DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "$@" >&2 && return 0
  fi
  say "missing $* and could not install them: install them by hand"; exit 1
}
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
have_header nlohmann/json.hpp || need+=(nlohmann-json3-dev)
have_header CLI/CLI.hpp || need+=(libcli11-dev)
have_header fmt/format.h || need+=(libfmt-dev)
have_header gtest/gtest.h || need+=(libgtest-dev)
if ! have_header pybind11/pybind11.h; then
  python3 -c 'import pybind11' 2>/dev/null || need+=(pybind11-dev)
fi
# `make test` checks formatting and lints the Python; `make demo` needs neither tool.
if [ "${KJ_BOOTSTRAP_TEST:-0}" = 1 ]; then
  command -v clang-format >/dev/null || need+=(clang-format)
  /usr/bin/python3 -m pyflakes --version >/dev/null 2>&1 || need+=(python3-pyflakes)
fi
apt_install "${need[@]}"
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  say "nvcc not found: kjudge needs the CUDA toolkit (13.x) to build"; exit 1
fi

# --- the interpreter to embed ------------------------------------------------------------------
# Usable: has torch, a shared libpython and Python.h. Explicit choice first, then probing.
usable() {
  "$1" - <<'PY' 2>/dev/null
import os, sys, sysconfig
import torch  # noqa: F401
assert sysconfig.get_config_var("Py_ENABLE_SHARED") == 1
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
PY
}
pick=""
if [ -n "${KJUDGE_PYTHON:-}" ]; then
  usable "$KJUDGE_PYTHON" || { say "KJUDGE_PYTHON=$KJUDGE_PYTHON lacks torch, a shared libpython or Python.h"; exit 1; }
  pick=$KJUDGE_PYTHON
else
  for c in "$root/.venv/bin/python3" "$(command -v python3 || true)" /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    [ -n "$c" ] && [ -x "$c" ] && usable "$c" && { pick=$c; break; }
  done
fi
if [ -z "$pick" ]; then
  # Only now does the system python matter: the project venv is made from it and embeds its
  # shared libpython, so it needs venv support and its headers.
  pyneed=()
  [ -x /usr/bin/python3 ] || pyneed+=(python3)
  /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || pyneed+=(python3-venv)
  sysinc=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null || true)
  { [ -n "$sysinc" ] && [ -e "$sysinc/Python.h" ]; } || pyneed+=(python3-dev)
  apt_install "${pyneed[@]}"
  say "no python3 with torch found: creating .venv from /usr/bin/python3 and installing torch from PyPI"
  # PyPI's Linux torch is the CUDA build: about 7 GB installed, and pip unpacks each wheel in
  # $TMPDIR on the way. Say so plainly up front rather than fail halfway with ENOSPC.
  free_gb() { df -Pk "$1" 2>/dev/null | awk 'NR == 2 { printf "%d", $4 / 1048576 }'; }
  venv_free=$(free_gb "$root"); tmp_free=$(free_gb "${TMPDIR:-/tmp}")
  if [ -n "$venv_free" ] && [ "$venv_free" -lt 8 ]; then
    say "only ${venv_free} GB free under $root: torch from PyPI and the build need about 8 GB (set KJUDGE_PYTHON to an interpreter that has torch instead)"
    exit 1
  fi
  if [ -n "$tmp_free" ] && [ "$tmp_free" -lt 3 ]; then
    say "only ${tmp_free} GB free in ${TMPDIR:-/tmp}, where pip unpacks torch: point TMPDIR at a roomier folder"
    exit 1
  fi
  [ -x "$root/.venv/bin/python3" ] || /usr/bin/python3 -m venv "$root/.venv"
  # No pip cache: it would hold a second copy of every wheel (about 3 GB more).
  "$root/.venv/bin/python3" -m pip install -q --no-cache-dir --upgrade pip >&2
  "$root/.venv/bin/python3" -m pip install -q --no-cache-dir torch numpy >&2
  usable "$root/.venv/bin/python3" || { say ".venv was made but is not usable"; exit 1; }
  pick="$root/.venv/bin/python3"
fi
# A venv's python3 is a symlink: keep the venv path (its pyvenv.cfg selects site-packages).
printf '%s\n' "$pick" > "$out.tmp"
if ! cmp -s "$out.tmp" "$out" 2>/dev/null; then mv "$out.tmp" "$out"; else rm -f "$out.tmp"; fi
say "embedding $(cat "$out")"
