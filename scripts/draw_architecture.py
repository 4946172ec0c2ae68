#!/usr/bin/python3
"""Draw docs/architecture.svg: the model, the accelerator, the verification
environment, the observers and the executables, and how data flows.

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
VERIFY = "#fbe3c8"  # verify/ (systolic::verify)
OBSERVE = "#e3f1dc"  # observe/ (systolic::observe)
APP = "#eeeeee"  # the executables and io/
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


def applications(ax):
    """The executables on top; below them the platform kit and io/, which
    every executable shares."""
    apps = (("systolic-tb  (tb/)",
             "one job: command line,\nreport, summary, progress"),
            ("systolic-run  (tools/run/)",
             "SCALE-Sim topologies,\none job per layer"),
            ("systolic-vp  (vp/)",
             "bus map: a CPU running\njob scripts, RAM"),
            ("systolic-soc  (soc/)",
             "bus map: a RISC-V hart\nrunning firmware, RAM"))
    for i, (title, body) in enumerate(apps):
        box(ax, 0.3 + 3.5 * i, 9.85, 3.3, 0.95, title, body, face=APP,
            size=9.5)
    box(ax, 0.3, 8.55, 4.4, 0.95, "cli/  (systolic::cli)",
        "strict numbers, sizes, times; choices, option rules,\n"
        "progress; observer_outputs: --vcd --trace --log-level",
        face=APP, size=9.5, body_size=8)
    box(ax, 4.95, 8.55, 4.4, 0.95, "components/  (systolic::components)",
        "router, mmio_device, hart, ELF loader, UART, timer,\n"
        "finisher; checked_accelerator (regs, dma, irq)",
        face=APP, size=9.5, body_size=8)
    box(ax, 9.6, 8.55, 4.5, 0.95, "io/  (systolic::io)",
        ".npy in and out, input opening, outputs all or none,\n"
        "signals, a failed stdout: every executable", face=APP, size=9.5)


def verification(ax):
    """systolic::verify: the environment around any DUT."""
    box(ax, 0.3, 0.3, 6.35, 7.9, "verify/  (systolic::verify)", face=VERIFY,
        size=11)
    box(ax, 0.55, 5.95, 3.45, 1.8, "testbench<F>",
        "the sc_main-side wrapper: lays out,\nruns sc_start and checks a job\n"
        "(systolic-tb, systolic-run); the\nthread-side API checks one job\n"
        "in a running platform (systolic-vp)", face=CORE, size=9)
    box(ax, 0.55, 5.1, 3.45, 0.6, "fault_policy<F>",
        "", face=CORE, size=9, dashed=True)
    ax.text(2.1, 5.3, "--inject: one known defect", fontsize=7.5)
    box(ax, 4.2, 5.1, 2.2, 2.65, "DUT adapter",
        "start a job, an event\nwhen it ends, its result", face=CORE,
        size=9, body_size=7.5)
    box(ax, 4.35, 6.25, 1.9, 0.5, "register_dut", face=CORE, size=8.5)
    box(ax, 4.35, 5.25, 1.9, 0.5, "controller_dut", face=CORE, size=8.5)
    arrow(ax, (4.0, 6.85), (4.2, 6.85), color=CALL)

    box(ax, 0.55, 3.45, 1.8, 1.35, "planner",
        "A, B, C, partial\nsums, guard bands,\npattern fill",
        face=CORE, size=9)
    box(ax, 2.6, 3.45, 1.8, 1.35, "protocol_\nchecker",
        "\n\nTLM-2.0 base\nprotocol", face=VERIFY, size=9)
    box(ax, 4.6, 3.45, 1.8, 1.35, "bus_monitor",
        "shows every write;\nDMI for reads only", face=VERIFY, size=9)
    box(ax, 4.6, 1.85, 1.8, 1.1, "memory",
        "TLM target over\nmemory_core", face=MODEL, size=9)
    box(ax, 0.55, 1.85, 3.85, 1.1, "scoreboard",
        "every element of C once, bit for bit, by global\n"
        "coordinates; write ranges, memory outside C,\n"
        "edge counts, protocol violations", face=CORE, size=9)
    box(ax, 0.55, 0.5, 5.85, 1.0, "reference_gemm<F>",
        "its own arithmetic, beside the simulation: the expected C",
        face=CORE, size=9)

    arrow(ax, (4.4, 4.1), (4.6, 4.1), both=True)
    arrow(ax, (5.5, 3.45), (5.5, 2.95), both=True)
    ax.text(5.6, 3.2, "TLM", fontsize=7.5, va="center")
    arrow(ax, (4.75, 3.45), (4.4, 2.75), "on_write", at=(4.5, 3.2),
          ha="right", va="center")
    arrow(ax, (2.475, 1.5), (2.475, 1.85), "expected C", at=(2.575, 1.67),
          ha="left", va="center")
    arrow(ax, (1.45, 3.45), (1.45, 2.95), "layout, shadow", at=(1.55, 3.2),
          ha="left", va="center", color=CALL)


def model(ax):
    """systolic::model: the controller, the array, the accelerator."""
    box(ax, 7.0, 2.45, 7.1, 5.75, "model/  (systolic::model)", face=MODEL,
        size=11)
    box(ax, 7.25, 5.05, 3.9, 2.45, "tile_controller<F>",
        "one SC_THREAD walks the tile_plan:\n"
        "clear, load, advance x (kc + R + C - 2),\n"
        "drain; watchdog; quantum keeper", size=9.5)
    box(ax, 7.4, 5.15, 1.75, 0.5, "dma_port", face=CORE, size=8)
    box(ax, 9.25, 5.15, 0.85, 0.5, "feeder", face=CORE, size=7.5)
    box(ax, 10.15, 5.15, 0.9, 0.5, "output_\nstage", face=CORE, size=7)
    box(ax, 7.4, 5.75, 3.65, 0.45, "fault_hooks<F>: where fault_policy plants",
        face=CORE, size=7.5, dashed=True)

    box(ax, 7.25, 2.65, 3.9, 2.0, "systolic_array<F> or fabric",
        "engines: cycle (steps array_core,\none edge at a time) or "
        "functional\n(a loop nest, the same bits)", size=9.5)
    for j in range(3):
        box(ax, 7.45 + 1.2 * j, 2.8, 1.05, 0.42, f"pe_0_{j}" if j < 2
            else "...", face=PE, size=7.5)
    arrow(ax, (9.6, 5.05), (9.6, 4.65), "tokens", at=(9.7, 4.85),
          ha="left", va="center")
    arrow(ax, (10.6, 4.65), (10.6, 5.05), "", color=EDGE)

    box(ax, 11.45, 2.65, 2.45, 4.85, "accelerator",
        "[regs] target socket:\nregister_block decodes\nthe job "
        "(accelerator_map.h)\n\none lane per number\nformat: a "
        "systolic_array\nand a tile_controller\n\nlanes' sockets -> "
        "funnel\n-> [dma] initiator\n\n[irq] level interrupt", size=9.5)


def observers(ax):
    box(ax, 7.0, 0.3, 7.1, 1.75, "observe/  (systolic::observe)",
        "vcd_writer, vcd_observer: the VCD for GTKWave (--vcd)\n"
        "trace_observer: the Chrome/Perfetto timeline (--trace)\n"
        "pe_selection, observer_fanout", face=OBSERVE, size=11, body_size=8.5)


def path(ax, points, color=EDGE, dashed=False):
    """A polyline whose last segment ends in an arrowhead."""
    xs, ys = zip(*points[:-1])
    ax.plot(xs, ys, color=color, linewidth=1.3,
            linestyle="--" if dashed else "-")
    arrow(ax, points[-2], points[-1], color=color, dashed=dashed)


def flows(ax):
    # The applications stand on the kit and io/; tb and run use the
    # environment's testbench, the platforms its passive checker inside
    # checked_accelerator.
    arrow(ax, (5.5, 8.55), (5.5, 8.2), "passive checker", at=(5.6, 8.37),
          ha="left", va="center", color=CALL)
    arrow(ax, (8.9, 8.55), (8.9, 8.2), "accelerator", at=(9.0, 8.37),
          ha="left", va="center", color=CALL)
    # The adapters drive their DUTs.
    arrow(ax, (6.25, 5.5), (7.25, 6.6), color=CALL)
    ax.text(6.72, 6.2, "start,\ndone", fontsize=7, color=CALL, ha="center")
    path(ax, [(6.25, 6.5), (6.85, 6.5), (6.85, 7.72), (12.6, 7.72),
              (12.6, 7.5)], color=CALL)
    ax.text(9.75, 7.76, "driver over TLM: program, start, wait for irq",
            fontsize=8, color=CALL, ha="left", va="bottom")
    # Both DUTs' DMA goes through the checker and the monitor to memory.
    ax.plot([7.4, 6.78], [5.4, 4.95], color=EDGE, linewidth=1.3)
    ax.plot([12.6, 12.6, 6.78, 6.78], [2.65, 2.25, 2.25, 4.95], color=EDGE,
            linewidth=1.3)
    arrow(ax, (6.78, 4.95), (4.0, 4.8))
    ax.text(6.9, 2.3, "accelerator's [dma]", fontsize=7.5, va="bottom")
    ax.text(5.35, 4.98, "DUT's DMA", fontsize=7.5, ha="center", va="bottom")
    # Every edge to the observers.
    arrow(ax, (8.2, 2.65), (8.2, 2.05), "edge_observer: every edge",
          at=(8.3, 2.35), ha="left", va="center", dashed=True, color=CALL)


def legend(ax):
    items = ((MODEL, "model: SystemC module"), (CORE, "plain C++ part"),
             (VERIFY, "verification"), (OBSERVE, "observers"),
             (APP, "executables, io"))
    for i, (face, label) in enumerate(items):
        x = 0.35 + 2.3 * i
        ax.add_patch(FancyBboxPatch((x, 0.02), 0.25, 0.16, facecolor=face,
                                    edgecolor=EDGE,
                                    boxstyle="round,pad=0.02"))
        ax.text(x + 0.35, 0.1, label, va="center", fontsize=7.5)
    ax.text(11.9, 0.1, "black: data   grey: calls   dashed: optional",
            va="center", fontsize=7.5, style="italic")


def draw():
    fig, ax = plt.subplots(figsize=(14.4, 11.0))
    ax.set_xlim(0, 14.4)
    ax.set_ylim(-0.1, 10.9)
    ax.axis("off")
    applications(ax)
    verification(ax)
    model(ax)
    observers(ax)
    flows(ax)
    legend(ax)
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
