#!/usr/bin/env python3
"""Prints, one per line, the Nsight Compute metrics bench/ncu_capture.sh asks for: a fixed list of
the counters kjudge's profile model reads (kjudge/profile/kernel_metrics.hpp) plus every pipe,
tensor-path, stall-reason and FP instruction counter the device offers, each kept only when its
base name appears in `ncu --query-metrics` output (argv[1]), so one unknown name cannot fail the
whole capture. Names it drops go to stderr."""
import re
import sys

FIXED = """
gpu__time_duration.sum
sm__cycles_elapsed.max sm__cycles_elapsed.avg.per_second sm__cycles_active.sum
sm__warps_active.sum sm__warps_active.avg.pct_of_peak_sustained_active
sm__maximum_warps_per_active_cycle_pct
launch__grid_size launch__block_size launch__registers_per_thread
launch__shared_mem_per_block_static launch__shared_mem_per_block_dynamic
launch__waves_per_multiprocessor launch__occupancy_limit_registers launch__occupancy_limit_shared_mem
launch__occupancy_limit_warps launch__occupancy_limit_blocks
device__attribute_multiprocessor_count device__attribute_max_warps_per_multiprocessor
dram__bytes_read.sum dram__bytes_write.sum dram__throughput.avg.pct_of_peak_sustained_elapsed
l1tex__t_sectors.sum l1tex__t_sectors_lookup_hit.sum l1tex__t_sector_hit_rate.pct
lts__t_sectors.sum lts__t_sectors_lookup_hit.sum lts__t_sector_hit_rate.pct
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
l1tex__t_requests_pipe_lsu_mem_global_op_st.sum l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
sm__throughput.avg.pct_of_peak_sustained_elapsed
gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
smsp__inst_issued.sum
""".split()

PATTERNS = [
    re.compile(r"^sm__inst_executed_pipe_[a-z0-9_]+$"),
    re.compile(r"^sm__ops_path_tensor_[a-z0-9_]+$"),
    re.compile(r"^smsp__warps_issue_stalled_[a-z0-9_]+$"),
    re.compile(r"^smsp__sass_thread_inst_executed_op_[dfh](add|mul|fma)_pred_on$"),
]


def main():
    available = set()
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            tok = line.split()
            if tok and re.match(r"^[a-z0-9_]+__[a-z0-9_]+$", tok[0]):
                available.add(tok[0])
    out = []
    for m in FIXED:
        if m.split(".")[0] in available:
            out.append(m)
        else:
            print(f"dropped: {m}", file=sys.stderr)
    for base in sorted(available):
        if any(p.match(base) for p in PATTERNS) and not base.endswith("_not_issued"):
            out.append(base + ".sum")
    print("\n".join(out))


if __name__ == "__main__":
    main()
