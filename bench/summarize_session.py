#!/usr/bin/env python3
"""Prints the summary table of a bench/h200_session.sh run from the JSON files in a log folder."""
import glob
import json
import os
import sys


def fig(side, kind):
    f = side[kind]
    if not f.get("valid"):
        return "-"
    rse = f.get("rse_pct")  # null with a single sample
    return "%.2f±%s(n=%d)" % (f["median_us"], "-" if rse is None else "%.2f%%" % rse, f["n"])


def speedup(sp):
    """A valid speedup with its interval (null when a side had one sample); "-" otherwise."""
    if not sp or not sp.get("valid") or sp.get("ratio") is None:
        return "-"
    if sp.get("ci_lo") is None or sp.get("ci_hi") is None:
        return "%.2fx" % sp["ratio"]
    return "%.2fx [%.2f, %.2f]" % (sp["ratio"], sp["ci_lo"], sp["ci_hi"])


def main(folder):
    print("%-16s %-8s %7s  %-24s %-24s %-22s %-22s %s" % (
        "run", "status", "wall_s", "ref device us", "cand device us", "ref stream us",
        "cand stream us", "speedup(device)"))
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            r = json.load(open(path))
        except Exception:
            continue
        if r.get("schema") != "kjudge.eval/1":
            continue
        t = r.get("timing") or {}
        sp = next((s for s in t.get("speedups", []) if s["kind"] == "device"), None)
        sp_s = speedup(sp)
        if t:
            row = (fig(t["reference"], "device"), fig(t["candidate"], "device"),
                   fig(t["reference"], "stream"), fig(t["candidate"], "stream"))
        else:
            row = ("-",) * 4
        print("%-16s %-8s %7.2f  %-24s %-24s %-22s %-22s %s" % (
            os.path.basename(path)[:-5], r["status"][:8], r["wall_s"], *row, sp_s))
        for f in r.get("flags", []):
            print("    flag %s: %s" % (f["code"], f["message"][:140]))
    for name in ("dobench_quantvla.json", "dobench_vadd.json"):
        p = os.path.join(folder, name)
        if os.path.exists(p):
            print(name, json.dumps(json.load(open(p))))


if __name__ == "__main__":
    main(sys.argv[1])
