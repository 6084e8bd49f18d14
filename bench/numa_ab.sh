#!/usr/bin/env bash
# On the GPU: does the CPU (NUMA node) the evaluation runs on move the reference's device figure?
# Prints the GPU's NUMA node and the CPUs this process may use per node, then runs `kjudge eval` of
# QuantVLA (worker exec'd, no pool) KJ_NUMA_RUNS times pinned with taskset to each node's CPUs, the
# nodes alternating, and once more unpinned. Needs build/kjudge. Logs under $OUT/logs (session_lib).
set -u
source "$(dirname "$0")/session_lib.sh"
bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | tr 'A-Z' 'a-z' | sed 's/^0000//')
echo "GPU $bus: NUMA node $(cat /sys/bus/pci/devices/$bus/numa_node 2>/dev/null || echo '?'), local CPUs $(cat /sys/bus/pci/devices/$bus/local_cpulist 2>/dev/null || echo '?')"
nodes=$(python3 - <<'PY'
import glob, os
allowed = os.sched_getaffinity(0)
for n in sorted(glob.glob("/sys/devices/system/node/node[0-9]*")):
    cpus = set()
    for part in open(n + "/cpulist").read().strip().split(","):
        if part:
            a, _, b = part.partition("-")
            cpus.update(range(int(a), int(b or a) + 1))
    mine = sorted(cpus & allowed)
    if mine:
        print(os.path.basename(n) + ":" + ",".join(map(str, mine)))
PY
)
echo "allowed CPUs by node: $nodes"
P=problems/level2/quantvla_selective_layout_fusion.py
for i in $(seq ${KJ_NUMA_RUNS:-3}); do
  for entry in $nodes; do
    node=${entry%%:*}
    timed numa_${node}_$i taskset -c ${entry#*:} build/kjudge eval $P examples/quantvla/fused.cu \
      --no-pool --json $L/numa_${node}_$i.json
  done
done
eval_run numa_unpinned $P examples/quantvla/fused.cu --no-pool
python3 bench/summarize_evals.py $L/numa_*.json | grep -v start-up
