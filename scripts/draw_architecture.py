#!/usr/bin/python3
"""Draw docs/architecture.svg: the modules of a systolic-tb run.

Run it with Debian's Python, which has matplotlib:

    /usr/bin/python3 scripts/draw_architecture.py

The SVG is deterministic (no date, fixed ids, text kept as text), so
re-running the script changes the file only when the drawing changes.
"""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

MODEL = "#dbe8f6"  # model/ (systolic::model)
PE = "#b9d2ee"  # pe_i_j: named sc_modules without a process
TB = "#fbe3c8"  # tb/ (systolic::tb)
CORE = "#ffffff"  # plain C++ cores inside a SystemC shell
EDGE = "#333333"

plt.rcParams["svg.fonttype"] = "none"
plt.rcParams["svg.hashsalt"] = "systolic-architecture"
plt.rcParams["font.family"] = "DejaVu Sans"


def box(ax, x, y, w, h, title, body="", face=MODEL, dashed=False, size=10):
    """A rounded box with a bold title at its top left and optional text."""
    ax.add_patch(FancyBboxPatch(
        (x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
        facecolor=face, edgecolor=EDGE, linewidth=1.2,
        linestyle="--" if dashed else "-"))
    ax.text(x + 0.12, y + h - 0.12, title, ha="left", va="top",
            fontsize=size, fontweight="bold")
    if body:
        ax.text(x + 0.12, y + h - 0.45, body, ha="left", va="top",
                fontsize=8, linespacing=1.4)


def arrow(ax, start, end, label="", offset=(0.0, 0.04), dashed=False):
    """An arrow from start to end, labelled above its middle."""
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(
        arrowstyle="-|>", color=EDGE, linewidth=1.3, shrinkA=0, shrinkB=0,
        linestyle="--" if dashed else "-"))
    if label:
        x = (start[0] + end[0]) / 2 + offset[0]
        y = (start[1] + end[1]) / 2 + offset[1]
        ax.text(x, y, label, ha="center", va="bottom", fontsize=8)


def main():
    fig, ax = plt.subplots(figsize=(12, 6.2))
    ax.set_xlim(0, 12)
    ax.set_ylim(0, 6.2)
    ax.axis("off")

    box(ax, 0.1, 0.1, 11.8, 6.0, "tb : testbench<Format>",
        face="none", dashed=True, size=11)

    # Top row: the TLM path, left to right; DMI invalidation comes back.
    box(ax, 0.4, 3.3, 3.3, 2.2, "controller : tile_controller",
        "one SC_THREAD (run): plan_tiles;\nper K chunk: clear, load, feed,\n"
        "advance, check_complete, drain\ntlm_quantumkeeper\n"
        "[initiator_socket]\ninject(fault): testbench only")
    box(ax, 4.8, 3.3, 2.5, 2.2, "monitor : bus_monitor",
        "testbench only\n[target_socket]\n[initiator_socket]\n"
        "DMI for reads only", face=TB)
    box(ax, 8.3, 3.3, 3.3, 2.2, "memory : memory",
        "[target_socket]\nb_transport (+latency),\ntransport_dbg, DMI\n"
        "A, B, C, partial sums")
    box(ax, 8.5, 3.45, 2.9, 0.5, "memory_core", face=CORE, size=9)

    for x0, x1, dmi in ((3.7, 4.8, "DMI (reads)"), (7.3, 8.3, "DMI")):
        arrow(ax, (x0, 4.95), (x1, 4.95), "b_transport")
        arrow(ax, (x0, 4.4), (x1, 4.4), dmi)
        arrow(ax, (x1, 3.85), (x0, 3.85), "invalidate", dashed=True)

    # Bottom row: the array the controller steps, the checker the monitor
    # feeds, and the legend.
    box(ax, 0.4, 0.35, 3.3, 2.45, "array : systolic_array", "no process")
    for i in range(2):
        for j in range(2):
            box(ax, 0.75 + 1.05 * j, 1.75 - 0.5 * i, 0.95, 0.4,
                f"pe_{i}_{j}", face=PE, size=8)
    ax.text(2.95, 1.6, "...", fontsize=12)
    box(ax, 0.6, 0.5, 2.9, 0.62, "array_core", face=CORE, size=9)
    ax.text(0.72, 0.6, "(structure of arrays; PEs are views)",
            fontsize=7.5, style="italic")
    arrow(ax, (2.1, 3.3), (2.1, 2.8), "clear(), advance(west, north)",
          offset=(1.05, -0.12))

    box(ax, 4.8, 0.35, 2.5, 2.45, "scoreboard",
        "keyed by global\n(row, col) of C;\nreference_gemm\n(same chunks, policy,\nrounding);\n"
        "shadow image of\nthe whole memory", face=TB)
    arrow(ax, (6.05, 3.3), (6.05, 2.8), "on_write", offset=(0.45, -0.12))

    legend = ((MODEL, "model/  (systolic::model)"),
              (TB, "tb/  (systolic::tb)"),
              (CORE, "plain C++ core"))
    for row, (face, label) in enumerate(legend):
        y = 1.9 - 0.5 * row
        ax.add_patch(FancyBboxPatch((8.45, y), 0.4, 0.3, facecolor=face,
                                    edgecolor=EDGE,
                                    boxstyle="round,pad=0.02"))
        ax.text(9.0, y + 0.15, label, va="center", fontsize=9)
    ax.text(8.45, 0.5, "tb/ depends on model/, never the reverse",
            fontsize=8, style="italic")

    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.normpath(os.path.join(here, "..", "docs",
                                        "architecture.svg"))
    fig.savefig(out, format="svg", bbox_inches="tight",
                metadata={"Date": None})
    print(out)


if __name__ == "__main__":
    main()
