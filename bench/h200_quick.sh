#!/usr/bin/env bash
# A short device call: build only kjudge and the timing GPU test, then a few evaluations of the
# QuantVLA native kernel. Writes results to $OUT as it goes (a cut-off run keeps what it has).
set -u
OUT=${OUT:-/tmp/kjudge-out}
export PYTHONUNBUFFERED=1 KJUDGE_CACHE_DIR=/tmp/kjcache
cmake -S . -B build -G Ninja -DKJ_PYTHON="$(command -v python3)" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > $OUT/build.log 2>&1 &&
  cmake --build build -j16 --target kjudge kj_gpu_timing_test >> $OUT/build.log 2>&1 ||
  { tail -30 $OUT/build.log; exit 1; }
P=problems/level2/quantvla_selective_layout_fusion.py
for i in 1 2 3; do
  s=$(date +%s.%N)
  build/kjudge eval $P examples/quantvla/fused.cu --json $OUT/fused$i.json > $OUT/fused$i.txt 2>&1
  echo "fused$i rc=$? wall=$(python3 -c "import sys,time; print(round(time.time()-float(sys.argv[1]),2))" $s)" | tee -a $OUT/summary.txt
done
build/tests/gpu/kj_gpu_timing_test > $OUT/timing_test.log 2>&1; echo "timing test rc=$?" | tee -a $OUT/summary.txt
tail -3 $OUT/timing_test.log
python3 bench/summarize_session.py $OUT
cat $OUT/fused3.txt | sed -n '/^timing/,/first call/p'
