#!/usr/bin/env bash
# One device call on the H200 (the `device` tool): build kjudge from source, run the GPU tests,
# then the measurements behind docs/benchmarks.md. Logs go to $OUT (tarred: the tool returns at
# most 8 files); the last lines printed are a summary table.
set -u
source "$(dirname "$0")/session_lib.sh"
build_kjudge

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
eval_run fused_verbose $P examples/quantvla/fused.cu -v
cat $L/fused_warm1.txt
python3 -X importtime -c "import torch" 2> $L/importtime.txt
python3 -c "import time; t=time.time(); import torch; t1=time.time(); torch.zeros(1, device='cuda'); t2=time.time(); print('import', round(t1-t, 3), 'cuda init', round(t2-t1, 3))" > $L/torch_init.txt 2>&1
cat $L/torch_init.txt

timed specs build/kjudge specs --all --json $L/specs.json
timed roofline_first build/kjudge roofline --refresh --json $L/roofline.json
timed roofline_cached build/kjudge roofline
(cd build && timeout 420 ctest -L gpu --output-on-failure -V --timeout 200) > $L/gpu_tests.log 2>&1
echo "gpu tests rc=$?"
grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)" $L/gpu_tests.log | tail -20
if [ "${KJ_SESSION_NCU:-1}" = 1 ]; then
  timeout 400 bash bench/ncu_capture.sh $L/ncu
  python3 -c "import torch; torch.zeros(1, device='cuda'); print([l.split()[-1] for l in open('/proc/self/maps') if 'cupti' in l])" > $L/torch_cupti.txt 2>&1
  ldd build/kjudge | grep -i cupti >> $L/torch_cupti.txt
fi
python3 bench/do_bench_reference.py --result $L/fused_warm1.json --out $L/dobench_quantvla.json > $L/dobench_quantvla.txt 2>&1
python3 bench/do_bench_reference.py --result $L/vadd.json --out $L/dobench_vadd.json > $L/dobench_vadd.txt 2>&1
if [ "${KJ_SESSION_NATIVE:-0}" = 1 ]; then
  timeout 240 python3 bench/quantvla_native.py --skip-inline --out $L/quantvla_native.json > $L/quantvla_native.txt 2>&1
fi
python3 bench/summarize_session.py $L | tee $L/table.txt
