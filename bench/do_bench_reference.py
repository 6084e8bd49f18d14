#!/usr/bin/env python3
"""Times a problem's reference with triton.testing.do_bench on the shapes kjudge timed.

Reads a kjudge result (--json from `kjudge eval`), rebuilds the reference Model with the same
jitter draws (result.options.timing_inputs.jitter), and reports do_bench's median (its L2 flush:
a 256 MB buffer zeroed before every call) next to kjudge's device, stream and host-wall medians.
For memory-bound problems it also reports achieved bandwidth from the minimum bytes moved.

    python3 bench/do_bench_reference.py --result out.json [--out compare.json]
"""
import argparse
import importlib.util
import json
import sys

import torch
import triton.testing


class FixedJitter:
    """popcorn_pri stand-in that returns the sizes kjudge drew for its timing inputs."""

    def __init__(self, table):
        self.table = {int(k): int(v) for k, v in table.items()}

    def jitter_int(self, n):
        return self.table.get(int(n), int(n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--result", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    with open(args.result) as f:
        res = json.load(f)
    timing_inputs = res["options"].get("timing_inputs", {})
    spec = importlib.util.spec_from_file_location("problem", res["problem"]["path"])
    mod = importlib.util.module_from_spec(spec)
    mod.__dict__["popcorn_pri"] = FixedJitter(timing_inputs.get("jitter", {}))
    spec.loader.exec_module(mod)
    torch.manual_seed(res["provenance"]["base_seed"])
    model = mod.Model(*mod.get_init_inputs()).cuda().eval()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
    with torch.no_grad():
        out = model(*inputs)
    outs = out if isinstance(out, (tuple, list)) else [out]
    min_bytes = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
    min_bytes += sum(o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor))

    def fn():
        with torch.no_grad():
            model(*inputs)

    ms = triton.testing.do_bench(fn, warmup=100, rep=1000, return_mode="median")
    t = res["timing"]["reference"]
    row = {
        "problem": res["problem"]["path"],
        "shapes": timing_inputs.get("shapes"),
        "min_bytes": min_bytes,
        "do_bench_median_us": ms * 1e3,
        "kjudge_device_median_us": t["device"]["median_us"] if t["device"]["valid"] else None,
        "kjudge_stream_median_us": t["stream"]["median_us"] if t["stream"]["valid"] else None,
        "kjudge_host_wall_median_us": t["host_wall"]["median_us"],
        "gpu": res["provenance"]["gpu"]["name"],
    }
    dev = row["kjudge_device_median_us"]
    row["do_bench_gbps"] = min_bytes / (ms * 1e-3) / 1e9
    if dev:
        row["kjudge_device_gbps"] = min_bytes / (dev * 1e-6) / 1e9
        row["kjudge_device_over_do_bench"] = dev / (ms * 1e3)
    if row["kjudge_stream_median_us"]:
        row["kjudge_stream_over_do_bench"] = row["kjudge_stream_median_us"] / (ms * 1e3)
    print(json.dumps(row, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(row, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
