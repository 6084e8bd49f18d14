#!/usr/bin/env bash
# Records Nsight Compute CSVs of bench/ncu_probe.py (QuantVLA reference, native candidate, a bf16
# GEMM, each in an NVTX range) for kjudge's ncu parser fixtures. Usage: bench/ncu_capture.sh DIR
set -u
D=${1:?output dir}
mkdir -p "$D"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
[ -n "$NCU" ] || { echo "ncu not found" > "$D/ncu_missing.txt"; exit 1; }
echo "$NCU" > "$D/ncu_version.txt"; "$NCU" --version >> "$D/ncu_version.txt" 2>&1
"$NCU" --help > "$D/ncu_help.txt" 2>&1
"$NCU" --query-metrics > "$D/ncu_query_metrics.txt" 2>&1
python3 bench/ncu_metric_list.py "$D/ncu_query_metrics.txt" > "$D/metrics.txt" 2> "$D/metrics_dropped.txt"
M=$(paste -sd, "$D/metrics.txt")
BD=$(mktemp -d)
NV=(--nvtx --nvtx-include "kjudge_reference/" --nvtx-include "kjudge_candidate/" --nvtx-include "kjudge_extra/")
run() {  # name, then ncu options
  local name=$1; shift
  local s=$(date +%s.%N)
  timeout 150 "$NCU" --clock-control none --target-processes application-only "$@" \
    python3 bench/ncu_probe.py --build-dir "$BD" > "$D/$name.csv" 2> "$D/$name.err"
  echo "$name rc=$? $(python3 -c "import sys,time; print(round(time.time()-float(sys.argv[1]),1))" $s)s" >> "$D/runs.txt"
}
run raw "${NV[@]}" --csv --page raw --print-units base --metrics "$M"
run raw_rename "${NV[@]}" --csv --page raw --print-units base --print-nvtx-rename kernel --metrics gpu__time_duration.sum,launch__grid_size
run details "${NV[@]}" --csv --page details --print-units base --section SpeedOfLight --section Occupancy --section LaunchStats
run details_text "${NV[@]}" --page details --print-details all --section SpeedOfLight
cat "$D/runs.txt"
