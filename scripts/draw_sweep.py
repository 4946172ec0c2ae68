#!/usr/bin/python3
"""Cycles and utilization against array size, from a systolic-run sweep's report.json.

usage: scripts/draw_sweep.py REPORT_DIR [--out sweep.png]

Left: the network's counted array edges (advance edges, and for ws and is the preloads; all layers,
log scale) and its simulated time in clocks, which adds the clear, load and drain phases. Right:
the utilization (real MACs / (edges x PEs)) of the whole network and, for a sweep of one dataflow,
of each layer. A sweep over dataflows (--dataflow os,ws,is) has one line per dataflow. A sweep priced
with --energy (report.json's arrays carry "energy") gets a third panel: the network's energy and its
energy-delay product (total pJ x simulated time) against array size, both log scale. Debian's
matplotlib (python3-matplotlib).
"""
import argparse
import json
import os
import sys
import tempfile
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
    dataflows = rep.get("dataflows", ["os"])
    totals = {(a["array"], a.get("dataflow", "os")): a for a in rep["arrays"]}
    sizes = {a["array"]: a["array_rows"] * a["array_cols"] for a in rep["arrays"]}
    names = sorted(sizes, key=lambda n: sizes[n])
    if len(names) < 2:
        print(f"draw_sweep.py: error: {path} holds {len(names)} array size; a sweep needs two or more",
              file=sys.stderr)
        return 2
    x = range(len(names))
    priced = all("energy" in a for a in rep["arrays"])
    if priced:
        fig, (left, right, power) = plt.subplots(1, 3, figsize=(18, 4.8))
    else:
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))

    def edges_of(r):  # the array's edges: the advance edges and, for ws and is, the preloads
        return r["advance_edges"] + r.get("preload_edges", 0)

    # One line per dataflow; os alone keeps the original colours.
    colors = {"os": "tab:blue", "ws": "tab:red", "is": "tab:purple"}
    clock_ps = rep["layers"][0]["clock_ps"] or 1
    lowest, highest = None, None
    for df in dataflows:
        runs = [totals.get((n, df)) for n in names]
        edges = [edges_of(r) if r else None for r in runs]
        clocks = [r["sim_time_ps"] / clock_ps if r else None for r in runs]
        tag = f"{df}: " if len(dataflows) > 1 else ""
        left.plot(x, edges, "o-", color=colors[df],
                  label=f"{tag}array edges (SCALE-Sim's cycles + 1 per layer)")
        left.plot(x, clocks, "s--", color="tab:orange" if len(dataflows) == 1 else colors[df], alpha=0.7,
                  label=f"{tag}simulated time in clocks (with clear, load, drain)")
        for i, e in zip(x, edges):
            if e is not None and len(dataflows) == 1:  # several dataflows' figures would overlap
                left.annotate(f"{e:,}", (i, e), textcoords="offset points", xytext=(0, -14), ha="center",
                              fontsize=8, color=colors[df])
        got = [v for v in edges + clocks if v]
        lowest = min([lowest] + got) if lowest else min(got)
        highest = max([highest] + got) if highest else max(got)
        right.plot(x, [r["utilization_percent"] if r else None for r in runs], "o-", color=colors[df],
                   linewidth=2, label=f"{tag}whole network" if tag else "whole network")
    if priced:
        # Energy on the left axis, energy-delay product (pJ x s of simulated time) on the right.
        edp_axis = power.twinx()
        for df in dataflows:
            runs = [totals.get((n, df)) for n in names]
            tag = f"{df}: " if len(dataflows) > 1 else ""
            pj = [r["energy"]["total_pj"] if r else None for r in runs]
            edp = [r["energy"]["total_pj"] * r["sim_time_ps"] * 1e-12 if r else None for r in runs]
            power.plot(x, pj, "o-", color=colors[df], label=f"{tag}energy (pJ)")
            edp_axis.plot(x, edp, "s--", color=colors[df], alpha=0.6, label=f"{tag}energy x delay (pJ s)")
        power.set_yscale("log")
        edp_axis.set_yscale("log")
        power.set_ylabel("energy, all layers (pJ)")
        edp_axis.set_ylabel("energy-delay product (pJ x simulated s)")
        lines = power.get_legend_handles_labels()
        more = edp_axis.get_legend_handles_labels()
        power.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left", fontsize=8)
        table = rep.get("energy", {})
        power.set_title(f"energy ({table.get('table', '?')}, {table.get('node_nm', 0):g} nm) against array size")
    left.set_yscale("log")
    left.set_ylim(lowest / 2, highest * 3)
    left.set_ylabel("cycles, all layers")
    left.legend(loc="upper right", fontsize=8)
    left.set_title(f"{rep['topology']}: cycles against array size")

    if len(dataflows) == 1:  # each layer's own line, when one dataflow leaves room for them
        by_layer = {}
        for layer in rep["layers"]:
            by_layer.setdefault((layer["layer_id"], layer["layer"]), {})[layer["array"]] = layer
        for (lid, name), runs in sorted(by_layer.items()):
            util = [100.0 * runs[n]["macs_real"] / (edges_of(runs[n]) * runs[n]["array_rows"] *
                                                    runs[n]["array_cols"]) if n in runs else None for n in names]
            right.plot(x, util, "-", color="0.75", linewidth=0.8, zorder=1)
        right.plot([], [], "-", color="0.75", linewidth=0.8, label="each layer")
    right.set_ylim(0, 100)
    right.set_ylabel("utilization, % (real MACs / (edges x PEs))")
    right.legend(loc="upper right", fontsize=8)
    right.set_title("utilization against array size")
    for ax in (left, right, power) if priced else (left, right):
        ax.set_xticks(list(x))
        ax.set_xticklabels(names)
        ax.set_xlabel("array")
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"systolic-run sweep: {rep['topology']}, {rep['dtype']}, {rep['engine']} engine, "
                 f"{'all layers checked' if rep['pass'] else 'SOME LAYERS FAILED'}", fontsize=10)
    fig.tight_layout()
    out = Path(args.out) if args.out else Path(args.report_dir) / "sweep.png"
    # Drawn into a temporary beside it and renamed into place: an error leaves no partial picture.
    fd, temp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=out.suffix)
    os.close(fd)
    try:
        fig.savefig(temp, dpi=110)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, out)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
