#!/usr/bin/env bash
# One device call on the H200 (the `device` tool): build kjudge from source, run the GPU tests,
# then the measurements behind docs/benchmarks.md. Logs go to $OUT (tarred: the tool returns at
# most 8 files); the last lines printed are a summary table.
set -u
OUT=${OUT:-/tmp/kjudge-out}
mkdir -p "$OUT/logs"
L=$OUT/logs
export PYTHONUNBUFFERED=1 KJUDGE_CACHE_DIR=/tmp/kjcache
PY=$(command -v python3)
stamp() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$1" "$(stamp)"; }
finish() { tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs; rm -rf "$OUT/logs"; }
trap finish EXIT

nvidia-smi > $L/nvidia-smi.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >> $L/nvidia-smi.txt 2>&1
t0=$(stamp)
if ! { cmake -S . -B build -G Ninja -DKJ_PYTHON="$PY" -DCMAKE_CUDA_ARCHITECTURES=90 \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build -j16; } > $L/build.log 2>&1; then
  echo "BUILD FAILED"; tail -40 $L/build.log; exit 1
fi
echo "build: $(elapsed $t0) s"

eval_run() {  # name, then kjudge eval arguments
  local name=$1; shift
  local s=$(stamp)
  build/kjudge eval "$@" --json $L/$name.json > $L/$name.txt 2>&1
  local rc=$?
  printf '%-28s rc=%d wall=%ss\n' "$name" $rc "$(elapsed $s)" | tee -a $L/summary.txt
}
P=problems/level2/quantvla_selective_layout_fusion.py
eval_run fused_cold $P examples/quantvla/fused.cu
eval_run fused_warm1 $P examples/quantvla/fused.cu
eval_run fused_warm2 $P examples/quantvla/fused.cu
eval_run fused_warm3 $P examples/quantvla/fused.cu
eval_run fused_l2warm1 $P examples/quantvla/fused.cu --warm
eval_run fused_l2warm2 $P examples/quantvla/fused.cu --warm
eval_run fused_precise $P examples/quantvla/fused.cu --precise
if [ "${KJ_SESSION_INLINE:-0}" = 1 ]; then
  eval_run inline_cold $P examples/quantvla/load_inline.py
  eval_run inline_warm $P examples/quantvla/load_inline.py
fi
eval_run vadd $PWD/problems/level1/vector_add_large.py examples/vector_add_large/naive.py
eval_run softmax_triton problems/level1/softmax.py examples/softmax/triton_rowwise.py
cat $L/fused_warm1.txt

python3 bench/do_bench_reference.py --result $L/fused_warm1.json --out $L/dobench_quantvla.json > $L/dobench_quantvla.txt 2>&1
python3 bench/do_bench_reference.py --result $L/vadd.json --out $L/dobench_vadd.json > $L/dobench_vadd.txt 2>&1
timeout 240 python3 bench/quantvla_native.py --skip-inline --out $L/quantvla_native.json > $L/quantvla_native.txt 2>&1
(cd build && timeout 420 ctest -L gpu --output-on-failure -V --timeout 200) > $L/gpu_tests.log 2>&1
echo "gpu tests rc=$?"
grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)" $L/gpu_tests.log | tail -20
python3 bench/summarize_session.py $L | tee $L/table.txt
