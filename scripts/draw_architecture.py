#!/usr/bin/python3
"""Draw docs/architecture.svg: the parts of a systolic-tb run and how data flows between them.

Run it with Debian's Python, which has matplotlib:

    /usr/bin/python3 scripts/draw_architecture.py [--png FILE]

The SVG is deterministic (no date, fixed ids, text kept as text), so
re-running the script changes the file only when the drawing changes.
--png also writes a PNG, to look at the drawing; it is not committed.
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

MODEL = "#dbe8f6"  # model/ (systolic::model), SystemC modules
PE = "#b9d2ee"  # pe_i_j: named sc_modules without a process
TB = "#fbe3c8"  # tb/ (systolic::tb)
CORE = "#ffffff"  # plain C++ parts inside a SystemC shell
EDGE = "#333333"
CALL = "#777777"  # calls and hooks, as opposed to data

plt.rcParams["svg.fonttype"] = "none"
plt.rcParams["svg.hashsalt"] = "systolic-architecture"
plt.rcParams["font.family"] = "DejaVu Sans"


def box(ax, x, y, w, h, title, body="", face=MODEL, dashed=False, size=10,
        body_size=8):
    """A rounded box with a bold title at its top left and optional text."""
    ax.add_patch(FancyBboxPatch(
        (x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.1",
        facecolor=face, edgecolor=EDGE, linewidth=1.2,
        linestyle="--" if dashed else "-"))
    ax.text(x + 0.1, y + h - 0.1, title, ha="left", va="top",
            fontsize=size, fontweight="bold")
    if body:
        ax.text(x + 0.1, y + h - 0.1 - 0.026 * size - 0.1, body, ha="left",
                va="top", fontsize=body_size, linespacing=1.35)


def arrow(ax, start, end, label="", at=None, ha="center", va="bottom",
          dashed=False, color=EDGE, both=False):
    """An arrow from start to end; the label goes at `at` (default: just
    above the middle)."""
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(
        arrowstyle="<|-|>" if both else "-|>", color=color, linewidth=1.3,
        shrinkA=0, shrinkB=0, linestyle="--" if dashed else "-"))
    if label:
        if at is None:
            at = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.04)
        ax.text(at[0], at[1], label, ha=ha, va=va, fontsize=8, color=color,
                linespacing=1.3)


def draw():
    fig, ax = plt.subplots(figsize=(14.3, 9.6))
    ax.set_xlim(0, 14.3)
    ax.set_ylim(0, 9.6)
    ax.axis("off")

    box(ax, 0.05, 0.05, 14.2, 9.5, "tb : testbench<Format>", face="none",
        dashed=True, size=11)

    # ---- the controller: a thin SystemC shell around plain C++ parts ----
    box(ax, 0.3, 4.0, 8.9, 5.15, "controller : tile_controller<F>",
        face=MODEL, size=11)
    box(ax, 0.55, 7.45, 3.0, 1.2, "tile_plan",
        "tiles in the job's order x K chunks:\n"
        "clear, load, advance x (kc + 2(N-1)),\n"
        "drain; operand ranges, output mask", face=CORE)
    box(ax, 4.2, 7.45, 4.75, 1.2, "SC_THREAD run()",
        "walks the plan, hands each step to a part:\n"
        "clear, advance -> engine; load -> dma_port, feeder;\n"
        "drain -> output_stage; quantum keeper; watchdog")
    box(ax, 4.2, 5.75, 4.75, 1.3, "dma_port",
        "DMI cache of several granted ranges (A, B, C\n"
        "may sit in different memories); b_transport\n"
        "otherwise; errors returned as values",
        face=CORE)
    box(ax, 4.2, 4.2, 2.2, 1.15, "feeder",
        "skewed west / north\nstreams; padding = valid\nzero, bubbles outside",
        face=CORE)
    box(ax, 6.75, 4.2, 2.2, 1.15, "output_stage",
        "mask, partial sums,\nrequantize; every NaN\nleaves as 0x7FC00000",
        face=CORE)
    box(ax, 0.55, 4.2, 3.0, 2.85, "fault_hooks<F>",
        "feed(tile, tables)\nedges(step, planned)\n"
        "continue_chunk(step, engine)\ndrain_block(step, n, rows, cols)\n\n"
        "default: no change; tb::fault_policy\n"
        "(testbench) plants one known\ndefect; none on the per-edge path",
        face=CORE, dashed=True)

    arrow(ax, (3.55, 8.05), (4.2, 8.05), "plan_step", at=(3.875, 8.1))
    arrow(ax, (6.575, 7.45), (6.575, 7.05), "load, drain",
          at=(6.7, 7.17), ha="left", va="center", color=CALL)
    arrow(ax, (4.2, 7.6), (3.4, 7.05), "asks", at=(3.62, 7.3), ha="right",
          va="center", dashed=True, color=CALL)
    arrow(ax, (5.3, 5.75), (5.3, 5.35), "A rows, B columns",
          at=(5.4, 5.55), ha="left", va="center")
    arrow(ax, (7.85, 5.35), (7.85, 5.75), "C rows, partials",
          at=(7.95, 5.55), ha="left", va="center")

    # ---- the TLM path: socket -> monitor -> memory ----
    ax.text(8.9, 5.84, "[initiator_socket]", ha="right", va="center",
            fontsize=7.5, style="italic")
    box(ax, 10.05, 5.5, 1.85, 1.75, "monitor",
        "bus_monitor\n[target_socket]\n[initiator_socket]\n"
        "DMI for reads only", face=TB, size=9.5)
    box(ax, 12.35, 5.5, 1.7, 1.75, "memory",
        "[target_socket]\nb_transport,\nDMI, latency;\nmemory_core", size=9.5)
    for x0, x1 in ((8.95, 10.05), (11.9, 12.35)):
        arrow(ax, (x0, 6.6), (x1, 6.6), both=True)
        arrow(ax, (x1, 5.9), (x0, 5.9), dashed=True)
    ax.text(9.5, 6.65, "b_transport,\nDMI", ha="center", va="bottom",
            fontsize=7.5)
    ax.text(9.5, 5.85, "invalidate", ha="center", va="top", fontsize=7.5)

    # ---- the scoreboard, fed by the monitor; the reference on its thread ----
    box(ax, 10.05, 2.95, 4.0, 2.05, "scoreboard",
        "records every write to C, compares at the end:\n"
        "values (bit for bit), write ranges, shadow image,\n"
        "edges = tiles x (K + chunks x 2(N-1)), completion",
        face=TB, size=9.5)
    box(ax, 10.25, 3.05, 3.6, 0.6, "reference_gemm<F>",
        "", face=CORE, size=8.5)
    ax.text(10.35, 3.17, "own thread (std::async), beside the simulation",
            fontsize=7, style="italic")
    arrow(ax, (10.975, 5.5), (10.975, 5.0), "on_write", at=(11.08, 5.25),
          ha="left", va="center")

    # ---- the array: engines and the named PE rows ----
    box(ax, 0.3, 0.3, 8.9, 3.25, "array : systolic_array<F>  (no process)",
        size=11)
    box(ax, 4.2, 1.75, 4.75, 1.45, "engine<F>  (job.engine, --engine)",
        face=CORE, size=9.5)
    box(ax, 4.35, 1.85, 2.1, 0.85, "cycle_engine",
        "steps the array one\nedge at a time", face=CORE, size=8.5,
        body_size=7.5)
    box(ax, 6.7, 1.85, 2.1, 0.85, "functional_engine",
        "gemm_accumulate per\nchunk (made on first use)", face=CORE,
        size=8.5, body_size=7.5)
    box(ax, 4.2, 0.5, 4.75, 0.85, "array_core<F>",
        "PE state, structure of arrays: tokens, valid bits,\n"
        "accumulators, term counts", face=CORE, size=9, body_size=7.5)
    arrow(ax, (5.3, 1.85), (5.3, 1.35), "steps", at=(5.4, 1.6), ha="left",
          va="center", color=CALL)

    arrow(ax, (5.3, 4.2), (5.3, 3.2), "west, north tokens", at=(5.4, 3.78),
          ha="left", va="center")
    arrow(ax, (7.85, 3.2), (7.85, 4.2), "accumulators", at=(7.95, 3.72),
          ha="left", va="center")

    for i in range(2):
        y = 2.35 - 0.95 * i
        box(ax, 0.55, y, 3.0, 0.8, f"row_{i}", face=MODEL, size=8.5)
        for j in range(2):
            box(ax, 0.7 + 0.95 * j, y + 0.08, 0.85, 0.38, f"pe_{i}_{j}",
                face=PE, size=7.5)
        ax.text(2.7, y + 0.2, "...", fontsize=11)
    ax.text(0.6, 0.72, "...  row_<N-1>", fontsize=8.5)
    ax.text(0.6, 0.42, "PEs are named views of array_core", fontsize=7.5,
            style="italic")
    arrow(ax, (3.55, 1.0), (4.2, 1.0), "view", at=(3.875, 1.05),
          dashed=True, color=CALL)

    # ---- the edge observer (optional) ----
    box(ax, 10.05, 1.2, 4.0, 1.4, "edge_observer<F>  (optional)",
        "after every edge of the cycle engine: every PE,\n"
        "tile, chunk, edge, time (kernel + quantum\n"
        "keeper offset); set_observer(); not owned",
        face=CORE, dashed=True, size=9.5)
    arrow(ax, (8.95, 2.3), (10.05, 2.3), "edge_event", at=(9.5, 2.35))

    legend = ((MODEL, "SystemC module"),
              (CORE, "plain C++ part"),
              (TB, "testbench only"))
    for row, (face, label) in enumerate(legend):
        y = 0.78 - 0.3 * row
        ax.add_patch(FancyBboxPatch((10.15, y), 0.25, 0.18, facecolor=face,
                                    edgecolor=EDGE,
                                    boxstyle="round,pad=0.02"))
        ax.text(10.5, y + 0.09, label, va="center", fontsize=7.5)
    for row, label in enumerate(("solid arrow: data", "grey arrow: call",
                                 "dashed: optional")):
        ax.text(12.2, 0.87 - 0.3 * row, label, va="center", fontsize=7.5,
                style="italic")
    return fig


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--png", help="also write a PNG here, to look at")
    args = parser.parse_args()
    fig = draw()
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.normpath(os.path.join(here, "..", "docs",
                                        "architecture.svg"))
    fig.savefig(out, format="svg", bbox_inches="tight",
                metadata={"Date": None, "Creator": None})
    print(out)
    if args.png:
        fig.savefig(args.png, format="png", dpi=110, bbox_inches="tight")
        print(args.png)


if __name__ == "__main__":
    main()
