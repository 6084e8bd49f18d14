# Shared by the device-call scripts (bench/h200_*.sh): logs under $L, tarred into $OUT on exit
# (the device tool returns at most 8 files), a source build, and timed runs with a summary line.
OUT=${OUT:-/tmp/kjudge-out}
L=$OUT/logs
mkdir -p "$L"
export PYTHONUNBUFFERED=1 KJUDGE_CACHE_DIR=${KJUDGE_CACHE_DIR:-/tmp/kjcache}
# Evaluations exec their worker, as in the sessions before the pool was the default, so wall
# clocks stay comparable; `--pool` on a command (h200_verify.sh's pool runs) still asks for it.
export KJUDGE_POOL=${KJUDGE_POOL:-0}
PY=$(command -v python3)
stamp() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$1" "$(stamp)"; }
finish() { tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs; rm -rf "$OUT/logs"; }
# Only the outermost script packs the logs, so scripts can call one another in one device call.
if [ -z "${KJ_LOGS_OWNER:-}" ]; then
  export KJ_LOGS_OWNER=$$
  trap finish EXIT
fi

build_kjudge() {
  nvidia-smi > $L/nvidia-smi.txt 2>&1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >> $L/nvidia-smi.txt 2>&1
  local t0=$(stamp)
  if ! { cmake -S . -B build -G Ninja -DKJ_PYTHON="$PY" -DCMAKE_CUDA_ARCHITECTURES=90 \
           -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build -j16; } > $L/build.log 2>&1; then
    echo "BUILD FAILED"; tail -40 $L/build.log; exit 1
  fi
  echo "build: $(elapsed $t0) s"
}

timed() {  # name, then a command; output to $L/name.txt
  local name=$1; shift
  local s=$(stamp)
  "$@" > $L/$name.txt 2>&1
  local rc=$?
  printf '%-28s rc=%d wall=%ss\n' "$name" $rc "$(elapsed $s)" | tee -a $L/summary.txt
}

eval_run() {  # name, then kjudge eval arguments; the result JSON goes to $L/name.json
  local name=$1; shift
  timed "$name" build/kjudge eval "$@" --json $L/$name.json
}
