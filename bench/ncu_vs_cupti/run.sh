#!/usr/bin/env bash
# On the GPU: spin kernels of known cycle counts timed by CUPTI (spin.cu run plainly) and by
# Nsight Compute (gpu__time_duration.sum and the elapsed-cycle counters, --clock-control none,
# default cache control). Usage: bash bench/ncu_vs_cupti/run.sh. Needs nvcc, ncu and a GPU.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${TMPDIR:-/tmp}/ncu_vs_cupti
mkdir -p "$out"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
nvcc -O2 -std=c++17 -arch=sm_$arch -o "$out/spin" "$here/spin.cu" -lcupti -L"$cuda/lib64" \
  -L"$cuda/extras/CUPTI/lib64"
"$out/spin"
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
KJ_SPIN_NO_CUPTI=1 "$NCU" --clock-control none --csv --page raw --print-units base \
  --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,gpc__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second \
  "$out/spin" > "$out/ncu.csv"
python3 - "$out/ncu.csv" <<'PY'
import csv, re, statistics, sys
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
rows = list(csv.DictReader(lines))
units = rows[0]  # the row under the header names each metric's unit
rows = [r for r in rows[1:] if re.search(r"spin<(\d+)>", r.get("Kernel Name", ""))]
print("ncu units:", {m: units[m] for m in ("gpu__time_duration.sum", "sm__cycles_elapsed.max",
                                          "sm__cycles_elapsed.avg.per_second")})
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0}[units["gpu__time_duration.sum"]]
hz = {"hz": 1.0, "cycle/second": 1.0, "cycle/nsecond": 1e9, "cycle/usecond": 1e6}.get(
    units["sm__cycles_elapsed.avg.per_second"], float("nan"))
by = {}
for r in rows:
    key = (int(re.search(r"spin<(\d+)>", r["Kernel Name"]).group(1)), r["Grid Size"])
    by.setdefault(key, []).append(r)
print("ncu: cycles  grid          gpu__time_duration_us  sm_cycles_elapsed_max  sm_clock_MHz")
for (n, grid), rs in sorted(by.items()):
    med = lambda m: statistics.median(float(r[m].replace(",", "")) for r in rs)
    print(f"     {n:>6}  {grid:>12}  {med('gpu__time_duration.sum') * scale:21.3f}"
          f"  {med('sm__cycles_elapsed.max'):21.0f}"
          f"  {med('sm__cycles_elapsed.avg.per_second') * hz / 1e6:12.0f}")
PY
