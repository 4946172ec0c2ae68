#!/usr/bin/python3
"""Draw index_space.gif: the matmul index space cut into blocks, with the wavefront sweeping it.

Seed 000's picture, from the counts of systolic-partition (not computed here): every point
(i, j, k) coloured by its block, the block boundaries as boxes, the wavefront plane i+j+k = t in
bright white, and the crossing dependence edges into the wavefront's points: green for halos,
orange for long-range edges, red for collectives. One frame per wavefront step.

Run it with Debian's Python, which has matplotlib and PIL:

    /usr/bin/python3 scripts/draw_index_space.py                  # docs/index_space.gif, 15^3, T = 5
    /usr/bin/python3 scripts/draw_index_space.py --dep sum:reduce-k --out /tmp/reduce_k.gif
    /usr/bin/python3 scripts/draw_index_space.py --json report.json --out picture.gif

Without --json it runs systolic-partition (--tool, default build/tools/partition/) with --edges.
It prints one line: the file, its frames, and the edges drawn by class.
"""

import argparse
import json
import math
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.animation import FuncAnimation, PillowWriter  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BACKGROUND = "#101418"
EDGE_COLOURS = {"halo": "#39ff6a", "long-range": "#ffa630", "collective": "#ff3030"}
EDGE_WIDTHS = {"halo": 2.4, "long-range": 2.0, "collective": 1.1}  # collectives are many: thinner
BOX_COLOUR = "#c8d0d8"


def load_report(args):
    """The systolic-partition JSON report, with its list of crossing edges."""
    if args.json:
        with open(args.json, encoding="utf-8") as f:
            report = json.load(f)
    else:
        cmd = [args.tool, "--m", str(args.m), "--k", str(args.k), "--p", str(args.p),
               "--block", args.block, "--edges", "--json", "-"]
        for dep in args.dep:
            cmd += ["--dep", dep]
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            sys.exit("draw_index_space: " + (run.stderr.strip() or " ".join(cmd) + " failed"))
        report = json.loads(run.stdout)
    if "crossing_edge_list" not in report:
        sys.exit("draw_index_space: the report has no crossing_edge_list (run systolic-partition with --edges)")
    return report


def block_colours(grid):
    """One colour per block: its (I, J, K) position read as a point in a soft RGB cube."""
    # Channels stay within [0.4, 0.88], so no block reads as a pure red or green edge.
    def level(x, n):
        return 0.4 + 0.48 * (x / (n - 1) if n > 1 else 0.5)
    return {(bi, bj, bk): (level(bj, grid["j"]), level(bk, grid["k"]), level(bi, grid["i"]))
            for bi in range(grid["i"]) for bj in range(grid["j"]) for bk in range(grid["k"])}


def box_segments(block):
    """The 12 edges of a block's box, in plot coordinates (x = j, y = i, z = k)."""
    (i0, i1), (j0, j1), (k0, k1) = block["i"], block["j"], block["k"]
    lo = (j0 - 0.5, i0 - 0.5, k0 - 0.5)
    hi = (j1 - 0.5, i1 - 0.5, k1 - 0.5)
    corners = [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    segments = []
    for a in range(8):
        for b in range(a + 1, 8):
            if sum(corners[a][d] != corners[b][d] for d in range(3)) == 1:
                segments.append((corners[a], corners[b]))
    return segments


def plane_polygon(t, m, p, k):
    """The wavefront plane i+j+k = t cut by the cube's box, in plot coordinates (x = j, y = i, z = k)."""
    lo, hi = -0.5, (p - 0.5, m - 0.5, k - 0.5)
    level = t  # x + y + z = t on the box around the points
    corners = [(x, y, z) for x in (lo, hi[0]) for y in (lo, hi[1]) for z in (lo, hi[2])]
    found = []
    for a in range(8):
        for b in range(a + 1, 8):
            ca, cb = corners[a], corners[b]
            if sum(ca[d] != cb[d] for d in range(3)) != 1:
                continue
            sa, sb = sum(ca) - level, sum(cb) - level
            if sa == sb or sa * sb > 0:
                continue
            f = sa / (sa - sb)
            found.append(tuple(ca[d] + f * (cb[d] - ca[d]) for d in range(3)))
    if len(found) < 3:
        return []
    cx, cy, cz = (sum(q[d] for q in found) / len(found) for d in range(3))
    # Order around the centre, in the plane's own basis u = (1,-1,0), v = (1,1,-2).
    found.sort(key=lambda q: math.atan2((q[0] - cx) + (q[1] - cy) - 2 * (q[2] - cz), (q[0] - cx) - (q[1] - cy)))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="a systolic-partition --edges --json report (else run the tool)")
    parser.add_argument("--tool", default=os.path.join(ROOT, "build", "tools", "partition", "systolic-partition"))
    parser.add_argument("--m", type=int, default=15)
    parser.add_argument("--k", type=int, default=15)
    parser.add_argument("--p", type=int, default=15)
    parser.add_argument("--block", default="5")
    parser.add_argument("--dep", action="append", default=[], help="passed on to systolic-partition")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "index_space.gif"))
    parser.add_argument("--dpi", type=int, default=80)
    parser.add_argument("--fps", type=float, default=4)
    parser.add_argument("--frame", type=int, help="write only the frame of step T, as a PNG to --out")
    args = parser.parse_args()

    report = load_report(args)
    m, k, p = report["m"], report["k"], report["p"]
    steps = report["schedule"]["cube_wavefront_steps"]
    if len(report["blocks"]) != report["grid"]["blocks"]:
        sys.exit("draw_index_space: the report lists only some of the blocks; draw a smaller space")

    colours = block_colours(report["grid"])
    points_by_step = [[] for _ in range(steps)]  # (i, j, k, colour) on the plane i+j+k = t
    for b in report["blocks"]:
        colour = colours[tuple(b["index"])]
        for i in range(*b["i"]):
            for j in range(*b["j"]):
                for kk in range(*b["k"]):
                    points_by_step[i + j + kk].append((i, j, kk, colour))
    all_points = [pt for step in points_by_step for pt in step]
    edges_by_step = [[] for _ in range(steps)]  # crossing edges into the wavefront's points
    for to, frm, kind, _dep in report["crossing_edge_list"]:
        edges_by_step[sum(to)].append((to, frm, kind))
    boxes = [seg for b in report["blocks"] for seg in box_segments(b)]

    fig = plt.figure(figsize=(6.4, 6.4), facecolor=BACKGROUND)
    ax = fig.add_axes([0.02, 0.07, 0.94, 0.83], projection="3d")
    drawn = {kind: 0 for kind in EDGE_COLOURS}
    deps = ", ".join(d["name"] + (" " + str(tuple(d["offset"])) if "offset" in d else " reduce-" + d["axis"])
                     for d in report["dependences"])
    title = (f"matmul index space {m}x{p}x{k} (i x j x k), blocks {report['block']['i']}x"
             f"{report['block']['j']}x{report['block']['k']}: {report['grid']['blocks']} blocks\n"
             f"dependences {deps}\n"
             f"halo words {sum(report['halo_words'].values())}, long-range {report['long_range_edges']}, "
             f"collective {report['collective_edges']}")

    def draw(t):
        ax.cla()
        ax.set_facecolor(BACKGROUND)
        for pane in (ax.xaxis, ax.yaxis, ax.zaxis):
            pane.set_pane_color((0, 0, 0, 0))
            pane.line.set_color("#556")
            pane.label.set_color("#ccd")
            pane.set_tick_params(colors="#889", labelsize=6)
        ax.set_xlim(-0.5, p - 0.5)
        ax.set_ylim(m - 0.5, -0.5)  # i grows away from the viewer, as rows of C go down
        ax.set_zlim(-0.5, k - 0.5)
        ax.set_box_aspect((p, m, k))
        ax.view_init(elev=22, azim=-58)
        ax.set_xlabel("j  (A flows +j)", fontsize=7)
        ax.set_ylabel("i  (B flows +i)", fontsize=7)
        ax.set_zlabel("k  (C accumulates +k)", fontsize=7)
        ax.grid(False)
        for a, b in boxes:
            ax.plot(*zip(a, b), color=BOX_COLOUR, linewidth=0.6, alpha=0.55)
        behind = [pt for pt in all_points if pt[0] + pt[1] + pt[2] != t]
        ax.scatter([q[1] for q in behind], [q[0] for q in behind], [q[2] for q in behind],
                   c=[q[3] for q in behind], s=9, alpha=0.55, depthshade=False, linewidths=0)
        polygon = plane_polygon(t, m, p, k)
        if polygon:
            ax.add_collection3d(Poly3DCollection([[(q[0], q[1], q[2]) for q in polygon]], facecolors="white",
                                                 edgecolors="white", alpha=0.16, linewidths=1.0))
        front = points_by_step[t]
        ax.scatter([q[1] for q in front], [q[0] for q in front], [q[2] for q in front],
                   c=[q[3] for q in front], s=40, alpha=1.0, depthshade=False,
                   edgecolors="white", linewidths=1.4)
        counts = {kind: 0 for kind in EDGE_COLOURS}
        for to, frm, kind in edges_by_step[t]:
            ax.plot([frm[1], to[1]], [frm[0], to[0]], [frm[2], to[2]], color=EDGE_COLOURS[kind],
                    linewidth=EDGE_WIDTHS[kind], alpha=0.9)
            counts[kind] += 1
        for kind, n in counts.items():
            drawn[kind] += n
        fig.texts.clear()
        fig.text(0.5, 0.975, title, ha="center", va="top", color="#e8eef4", fontsize=7.5)
        fig.text(0.5, 0.035, f"wavefront i+j+k = {t}  (step {t + 1} of {steps}):  {len(front)} points,  "
                 f"{counts['halo']} halo, {counts['long-range']} long-range, "
                 f"{counts['collective']} collective edges in", ha="center", color="white", fontsize=8)
        legend = [Line2D([], [], color=c, linewidth=2, label=kind) for kind, c in EDGE_COLOURS.items()]
        legend.append(Line2D([], [], marker="o", linestyle="", markerfacecolor="#888", markeredgecolor="white",
                             label="wavefront"))
        ax.legend(handles=legend, loc="upper left", fontsize=7, facecolor=BACKGROUND, edgecolor="#556",
                  labelcolor="#e8eef4")

    if args.frame is not None:
        draw(args.frame)
        fig.savefig(args.out, dpi=args.dpi, facecolor=BACKGROUND)
        print(f"{args.out}: step {args.frame}")
        return
    # init_func keeps FuncAnimation from drawing frame 0 twice (the edge totals count each frame once).
    animation = FuncAnimation(fig, draw, frames=steps, init_func=lambda: None)
    animation.save(args.out, writer=PillowWriter(fps=args.fps), dpi=args.dpi,
                   savefig_kwargs={"facecolor": BACKGROUND})
    print(f"{args.out}: {steps} frames; edges drawn: {drawn['halo']} halo, {drawn['long-range']} long-range, "
          f"{drawn['collective']} collective")


if __name__ == "__main__":
    main()
