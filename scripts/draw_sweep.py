#!/usr/bin/python3
"""Cycles and utilization against array size, from a systolic-run sweep's report.json.

usage: scripts/draw_sweep.py REPORT_DIR [--out sweep.png]

Left: the network's counted advance edges (all layers, log scale) and its simulated time in clocks,
which adds the clear, load and drain phases. Right:
the utilization (real MACs / (edges x PEs)) of the whole network and of each layer. Debian's
matplotlib (python3-matplotlib).
"""
import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report_dir")
    ap.add_argument("--out", default=None, help="PNG file (default: REPORT_DIR/sweep.png)")
    args = ap.parse_args()
    path = Path(args.report_dir) / "report.json"
    try:
        rep = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"draw_sweep.py: error: {path}: {e}", file=sys.stderr)
        return 2
    arrays = sorted(rep["arrays"], key=lambda a: a["array_rows"] * a["array_cols"])
    if len(arrays) < 2:
        print(f"draw_sweep.py: error: {path} holds {len(arrays)} array size; a sweep needs two or more",
              file=sys.stderr)
        return 2
    names = [a["array"] for a in arrays]
    x = range(len(arrays))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))

    edges = [a["advance_edges"] for a in arrays]
    clock_ps = rep["layers"][0]["clock_ps"] or 1
    clocks = [a["sim_time_ps"] / clock_ps for a in arrays]
    left.plot(x, edges, "o-", color="tab:blue", label="advance edges (SCALE-Sim's cycles + 1 per layer)")
    left.plot(x, clocks, "s--", color="tab:orange", label="simulated time in clocks (with clear, load, drain)")
    left.set_yscale("log")
    left.set_ylim(min(edges) / 2, max(clocks) * 3)
    left.set_ylabel("cycles, all layers")
    for i, e in zip(x, edges):
        left.annotate(f"{e:,}", (i, e), textcoords="offset points", xytext=(0, -14), ha="center", fontsize=8)
    left.legend(loc="upper right", fontsize=8)
    left.set_title(f"{rep['topology']}: cycles against array size")

    by_layer = {}
    for layer in rep["layers"]:
        by_layer.setdefault((layer["layer_id"], layer["layer"]), {})[layer["array"]] = layer
    for (lid, name), runs in sorted(by_layer.items()):
        util = [100.0 * runs[n]["macs_real"] / (runs[n]["advance_edges"] * runs[n]["array_rows"] *
                                                runs[n]["array_cols"]) if n in runs else None for n in names]
        right.plot(x, util, "-", color="0.75", linewidth=0.8)
    right.plot([], [], "-", color="0.75", linewidth=0.8, label="each layer")
    right.plot(x, [a["utilization_percent"] for a in arrays], "o-", color="tab:green", linewidth=2,
               label="whole network")
    right.set_ylim(0, 100)
    right.set_ylabel("utilization, % (real MACs / (edges x PEs))")
    right.legend(loc="upper right", fontsize=8)
    right.set_title("utilization against array size")
    for ax in (left, right):
        ax.set_xticks(list(x))
        ax.set_xticklabels(names)
        ax.set_xlabel("array")
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"systolic-run sweep: {rep['topology']}, {rep['dtype']}, {rep['engine']} engine, "
                 f"{'all layers checked' if rep['pass'] else 'SOME LAYERS FAILED'}", fontsize=10)
    fig.tight_layout()
    out = Path(args.out) if args.out else Path(args.report_dir) / "sweep.png"
    fig.savefig(out, dpi=110)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
