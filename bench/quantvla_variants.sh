#!/usr/bin/env bash
# On the GPU: the shipped QuantVLA kernel evaluated by kjudge under several ways of running the
# evaluation (options, environment), round after round in turn (A B C, A B C, ...), so that what
# moves kjudge's default figure (graph replay) and its --no-graph figure can be told from the
# machine's drift. quantvla_ab.sh compares kernel sources; this compares how one is run.
# A variant is "name|kjudge eval options|environment assignments" (the last two may be empty);
# without variants, the forty-second session's set runs: the pool (the default), --no-pool, the
# candidate linked to the shared CUDA runtime, lazy module loading off (--no-pool: a pool's
# worker keeps the pool's environment), --no-graph. Usage:
#   bash bench/quantvla_variants.sh [rounds] ['name|options|env' ...]
# Logs (each evaluation's JSON and output, the summary): $OUT/logs.tar.gz.
set -u
source "$(dirname "$0")/session_lib.sh"
rounds=${1:-3}
shift || true
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(
  "pool|--pool|"
  "nopool|--no-pool|"
  "cudart_shared|--pool --nvcc-flag=-cudart=shared|"
  "eager_loading|--no-pool|CUDA_MODULE_LOADING=EAGER"
  "nograph|--pool --no-graph|")
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
C=examples/quantvla/fused.cu
eval_run warm_up $P $C --pool  # starts the pool and fills the build cache; not counted
for r in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    IFS='|' read -r name options environment <<< "$v"
    # Word splitting of the options and assignments is wanted here.
    # shellcheck disable=SC2086
    env $environment build/kjudge eval $P $C $options --json "$L/v_${name}_r$r.json" \
      > "$L/v_${name}_r$r.txt" 2>&1
    echo "v_${name}_r$r rc=$?" >> "$L/summary.txt"
  done
done
python3 bench/summarize_evals.py "$L"/v_*.json | grep -v "start-up" | tee "$L/variants.txt"
# Each variant's candidate device medians over the rounds, with the method that took them.
python3 - "$L" "${variants[@]}" <<'PY'
import glob, json, os, sys
logs, variants = sys.argv[1], sys.argv[2:]
for v in variants:
    name = v.split("|")[0]
    med, methods = [], set()
    for f in sorted(glob.glob(os.path.join(logs, "v_%s_r*.json" % name))):
        d = (((json.load(open(f)).get("timing") or {}).get("candidate") or {}).get("device") or {})
        if d.get("median_us") is not None:
            med.append(d["median_us"])
            methods.add(d.get("method", "?"))
    s = sorted(med)
    print("%-16s n=%d  median of medians %s  range %s  (%s)" % (
        name, len(s), "%.3f us" % s[len(s) // 2] if s else "n/a",
        "%.3f-%.3f us" % (s[0], s[-1]) if s else "n/a", ", ".join(sorted(methods))))
PY
