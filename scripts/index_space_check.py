#!/usr/bin/python3
"""Checks the index-space picture: systolic-partition's JSON for matmul at 15^3, T = 5 holds no
collective (or long-range) edge, and draw_index_space.py turns it into a GIF with one frame per
wavefront step and no red edge in any frame; with a reduce-k dependence the JSON holds collectives and
the frames show red. Exit status 0 when all hold.

usage: scripts/index_space_check.py PATH/TO/systolic-partition
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent


def partition(tool, out, *args):
    subprocess.run([tool, *args, "--edges", "--json", str(out)], check=True, capture_output=True, timeout=120)
    return json.loads(out.read_text())


def draw(report_path, gif):
    run = subprocess.run([sys.executable, str(HERE / "draw_index_space.py"), "--json", str(report_path),
                          "--out", str(gif), "--dpi", "40"], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(run.stderr)
    return run.stdout


def frames(gif):
    with Image.open(gif) as im:
        for f in range(im.n_frames):
            im.seek(f)
            yield np.asarray(im.convert("RGB"), dtype=np.int32)


def red_pixels(frame):
    """Pixels of a collective edge (#ff3030, drawn nearly opaque): strong red, little green or blue."""
    r, g, b = frame[..., 0], frame[..., 1], frame[..., 2]
    return int(np.count_nonzero((r > 200) & (g < 80) & (b < 80)))


def main() -> int:
    tool = sys.argv[1]
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        report = partition(tool, tmp / "matmul.json", "--m", "15", "--k", "15", "--p", "15", "--block", "5")
        check(report["collective_edges"] == 0, "matmul 15^3, T=5: zero collective edges")
        check(report["long_range_edges"] == 0, "matmul 15^3, T=5: zero long-range edges")
        check(report["halo_words"] == {"a": 450, "b": 450, "c": 450}, "halo words a, b, c are 450 each")
        steps = report["schedule"]["cube_wavefront_steps"]
        check(steps == 15 + 15 + 15 - 2, "43 wavefront steps")
        printed = draw(tmp / "matmul.json", tmp / "matmul.gif")
        images = list(frames(tmp / "matmul.gif"))
        check(len(images) == steps, f"one frame per wavefront step ({len(images)} frames, {steps} steps)")
        check("1350 halo, 0 long-range, 0 collective" in printed, "every crossing edge drawn, all halos: " +
              printed.strip())
        # The legend's "collective" swatch is red in every frame; frame 0 (the single point (0,0,0),
        # no crossing edge) holds only that, so every other frame must hold no more.
        legend_red = red_pixels(images[0])
        check(all(red_pixels(f) == legend_red for f in images), "no red in any matmul frame but the legend's")

        contrast = partition(tool, tmp / "reduce.json", "--m", "6", "--k", "6", "--p", "6", "--block", "2",
                             "--dep", "sum:reduce-k")
        check(contrast["collective_edges"] == 6 * 6 * 6 * 4, "reduce-k 6^3, T=2: 864 collective edges")
        printed = draw(tmp / "reduce.json", tmp / "reduce.gif")
        images = list(frames(tmp / "reduce.gif"))
        check(len(images) == contrast["schedule"]["cube_wavefront_steps"] == 16, "reduce-k: 16 frames")
        check(max(red_pixels(f) for f in images) > legend_red + 100, "reduce-k frames show red edges")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
