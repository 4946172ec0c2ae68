"""CTest check of scripts/draw: runs systolic-tb on the seed example and on a larger job, draws, and
reads every picture back with PIL: PNGs that open with a sane size, a GIF with one frame per advance
edge of the chosen tile (the report's count), and fabric.png of a run on a fabric of arrays. Bad
input exits 2 with one line.

    /usr/bin/python3 scripts/draw_check.py build/tb/systolic-tb
"""

import json
import os
import subprocess
import sys
import tempfile

from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRAW = os.path.join(ROOT, "scripts", "draw")


def check(tb, args, tile, out):
    vcd, rep_path = os.path.join(out, "run.vcd"), os.path.join(out, "run.json")
    subprocess.run([tb, *args, "--vcd", vcd, "--json", rep_path], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, DRAW, "--json", rep_path, "--vcd", vcd, "--out-dir", out, "--tile", str(tile)],
                   check=True)
    with open(rep_path, encoding="utf-8") as f:
        rep = json.load(f)
    for name in ("tile_map.png", "macs.png", "waveform.png"):
        with Image.open(os.path.join(out, name)) as im:
            assert im.format == "PNG", (name, im.format)
            assert im.size[0] >= 300 and im.size[1] >= 200, (name, im.size)
    with Image.open(os.path.join(out, "wavefront.gif")) as im:
        assert im.format == "GIF", im.format
        edges = rep["tiles_detail"][tile]["advance_edges"]
        assert im.n_frames == edges, f"{args}: {im.n_frames} frames for {edges} edges of tile {tile}"
    print(f"ok: {' '.join(args) or 'seed example'}: 3 PNGs, GIF of {edges} frames")


def check_fabric(report_path, out_dir):
    """Draws fabric.png alone from a report with a `fabric` object (systolic-tb on a fabric of arrays) and
    reads it back: a PNG at least as big as the picture of a 1x1x1 fabric. Returns its size."""
    subprocess.run([sys.executable, DRAW, "--json", report_path, "--out-dir", out_dir, "--only", "fabric"],
                   check=True)
    with Image.open(os.path.join(out_dir, "fabric.png")) as im:
        assert im.format == "PNG", ("fabric.png", im.format)
        assert im.size[0] >= 600 and im.size[1] >= 400, ("fabric.png", im.size)
        size = im.size
    with open(report_path, encoding="utf-8") as f:
        shape = json.load(f)["fabric"].get("shape", "?")
    print(f"ok: fabric {shape}: fabric.png {size[0]}x{size[1]}")
    return size


def main():
    tb = sys.argv[1]
    with tempfile.TemporaryDirectory() as out:
        check(tb, [], 0, out)
        check(tb, ["--array", "4", "--m", "10", "--k", "7", "--p", "9", "--k-tile", "3"], 4, out)
        check(tb, ["--array", "2x5", "--m", "5", "--k", "4", "--p", "9"], 3, out)  # 2 rows of 5 PEs
        bad = subprocess.run([sys.executable, DRAW, "--json", os.path.join(out, "missing.json")],
                             capture_output=True, text=True)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1, (bad.returncode, bad.stderr)
        bad = subprocess.run([sys.executable, DRAW, "--json", os.path.join(out, "run.json"), "--vcd",
                              os.path.join(out, "run.vcd"), "--tile", "99", "--out-dir", out],
                             capture_output=True, text=True)
        assert bad.returncode == 2 and "--tile 99" in bad.stderr, (bad.returncode, bad.stderr)
        # --only fabric on a single array's report is bad input.
        bad = subprocess.run([sys.executable, DRAW, "--json", os.path.join(out, "run.json"), "--only", "fabric",
                              "--out-dir", out], capture_output=True, text=True)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1, (bad.returncode, bad.stderr)
        # The seed's case on a 3x3x3 fabric of 5x5 arrays (docs/fabric.png).
        fab = os.path.join(out, "fabric.json")
        subprocess.run([tb, "--array", "5", "--fabric", "3x3x3", "--m", "15", "--k", "15", "--p", "15", "--json", fab],
                       check=True, stdout=subprocess.DEVNULL)
        check_fabric(fab, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
