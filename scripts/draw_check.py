"""CTest check of scripts/draw: runs systolic-tb on the seed example and on a larger job, draws, and
reads every picture back with PIL: PNGs that open with a sane size, a GIF with one frame per advance
edge of the chosen tile (the report's count; under ws and is per edge of the chosen fold), and fabric.png of a run on a fabric of arrays. Bad
input exits 2 with one line and writes nothing; a VCD of some PEs draws all but the wavefront. And
network.png of scripts/draw --run on a systolic-run report of a tiny topology run with --data and --expect.

    /usr/bin/python3 scripts/draw_check.py build/tb/systolic-tb [build/tools/run/systolic-run]
"""

import json
import os
import subprocess
import sys
import tempfile

from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRAW = os.path.join(ROOT, "scripts", "draw")


def check(tb, args, tile, out, fold=None):
    vcd, rep_path = os.path.join(out, "run.vcd"), os.path.join(out, "run.json")
    subprocess.run([tb, *args, "--vcd", vcd, "--json", rep_path], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, DRAW, "--json", rep_path, "--vcd", vcd, "--out-dir", out, "--tile", str(tile)] +
                   ([] if fold is None else ["--fold", str(fold)]), check=True)
    with open(rep_path, encoding="utf-8") as f:
        rep = json.load(f)
    for name in ("tile_map.png", "macs.png", "waveform.png"):
        with Image.open(os.path.join(out, name)) as im:
            assert im.format == "PNG", (name, im.format)
            assert im.size[0] >= 300 and im.size[1] >= 200, (name, im.size)
    with Image.open(os.path.join(out, "wavefront.gif")) as im:
        assert im.format == "GIF", im.format
        t = rep["tiles_detail"][tile]
        # ws and is: the fold's preload edges (R a fold), then its stream edges.
        edges = t["advance_edges"] if fold is None else \
            t["advance_edges_per_chunk"][fold] + t["preload_edges"] // len(t["advance_edges_per_chunk"])
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


def fresh_dir(parent, name):
    d = os.path.join(parent, name)
    os.mkdir(d)
    return d


def check_partial_and_errors(tb, out):
    """A VCD of some PEs draws everything but the wavefront and says so; a real error writes nothing."""
    d = fresh_dir(out, "partial")
    vcd, rep = os.path.join(d, "run.vcd"), os.path.join(d, "run.json")
    subprocess.run([tb, "--array", "4", "--m", "10", "--k", "7", "--p", "9", "--vcd", vcd, "--vcd-pes", "0:1,0:1",
                    "--json", rep], check=True, stdout=subprocess.DEVNULL)
    r = subprocess.run([sys.executable, DRAW, "--json", rep, "--vcd", vcd, "--out-dir", d],
                       capture_output=True, text=True)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert "skipped wavefront.gif" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert sorted(os.listdir(d)) == ["macs.png", "run.json", "run.vcd", "tile_map.png", "waveform.png"], \
        os.listdir(d)
    # Asked for by name, the wavefront it cannot draw is an error, and then nothing is written.
    for args, says in ((["--only", "tile_map", "--only", "wavefront"], "every PE"), (["--tile", "99"], "--tile 99")):
        e = fresh_dir(out, "error" + str(len(os.listdir(out))))
        r = subprocess.run([sys.executable, DRAW, "--json", rep, "--vcd", vcd, "--out-dir", e, *args],
                           capture_output=True, text=True)
        assert r.returncode == 2 and says in r.stderr and r.stderr.count("\n") == 1, (args, r.returncode, r.stderr)
        assert os.listdir(e) == [], (args, os.listdir(e))
    print("ok: a partial VCD draws all but the wavefront; an error writes nothing")


def blue_pixels(im):
    """Pixels of the first series' colour (tab10 blue, the bars) in the top and the bottom half."""
    import numpy as np
    px = np.asarray(im.convert("RGB")).astype(int)
    blue = (abs(px - np.array([31, 119, 180])).sum(axis=2) < 40)
    h = px.shape[0] // 2
    return int(blue[:h].sum()), int(blue[h:].sum())


def check_network(run, out):
    """scripts/draw --run on a systolic-run report of a tiny 3-layer fp32 topology with --data and --expect:
    one layer of integer-valued operands (exact), two of random ones (a nonzero error). network.png opens,
    has bars in both panels, and the summary line counts the layers, the checked and the exact ones. Bad
    input exits 2 with one line and writes nothing."""
    import numpy as np
    d = fresh_dir(out, "network")
    data, expect, res, pics = (fresh_dir(d, n) for n in ("data", "expected", "run", "pics"))
    layers = [("first", 20, 9, 13), ("exact", 7, 5, 11), ("last", 33, 17, 6)]  # name, M, P, K
    with open(os.path.join(d, "topology.csv"), "w", encoding="ascii") as f:
        f.write("Layer, M, N, K,\n" + "".join(f"{n}, {m}, {p}, {k},\n" for n, m, p, k in layers))
    rng = np.random.default_rng(3)
    for n, m, p, k in layers:
        if n == "exact":
            a, b = rng.integers(-4, 5, (m, k)).astype(np.float32), rng.integers(-4, 5, (k, p)).astype(np.float32)
        else:
            a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, p)).astype(np.float32)
        np.save(os.path.join(data, n + ".a.npy"), a)
        np.save(os.path.join(data, n + ".b.npy"), b)
        np.save(os.path.join(expect, n + ".c.npy"), (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))
    subprocess.run([run, "--topology", os.path.join(d, "topology.csv"), "--data", data, "--expect", expect,
                    "--dtype", "fp32", "--array", "8", "--engine", "functional", "--out", res, "--no-progress"],
                   check=True, stdout=subprocess.DEVNULL)
    report = os.path.join(res, "report.json")
    r = subprocess.run([sys.executable, DRAW, "--run", report, "--out-dir", pics], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr)
    assert r.stdout.startswith("network.png: 3 layers, 1 series,") and "3 checked, 1 exact" in r.stdout \
        and "largest relative error" in r.stdout and r.stdout.count("\n") == 1, r.stdout
    assert os.listdir(pics) == ["network.png"], os.listdir(pics)
    with Image.open(os.path.join(pics, "network.png")) as im:
        assert im.format == "PNG", im.format
        assert im.size[0] >= 500 and im.size[1] >= 400, im.size
        top, bottom = blue_pixels(im)
    assert top > 2000 and bottom > 1000, f"network.png: bars of {top} pixels on top, {bottom} below"
    # Bad input: not a systolic-run report (a systolic-tb one, {}), a record without a key, no file.
    with open(report, encoding="utf-8") as f:
        rep = json.load(f)
    del rep["layers"][1]["macs_padded"]
    cases = {"tb.json": {"array": 4, "m": 1}, "empty.json": {}, "nokey.json": rep}
    for name, body in cases.items():
        with open(os.path.join(d, name), "w", encoding="utf-8") as f:
            json.dump(body, f)
    for name in (*cases, "missing.json"):
        e = fresh_dir(out, "network-bad-" + name)
        r = subprocess.run([sys.executable, DRAW, "--run", os.path.join(d, name), "--out-dir", e],
                           capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stdout == "", (name, r.returncode, r.stderr)
        assert os.listdir(e) == [], (name, os.listdir(e))
    r = subprocess.run([sys.executable, DRAW, "--run", report, "--json", report, "--out-dir", pics],
                       capture_output=True, text=True)
    assert r.returncode == 2, (r.returncode, r.stderr)
    print(f"ok: network.png {im.size[0]}x{im.size[1]} of a 3-layer systolic-run report; bad input writes nothing")


def check_edges_count_from_zero():
    """The wavefront's frames are numbered as everything else numbers edges: from 0."""
    from importlib.machinery import SourceFileLoader
    draw = SourceFileLoader("draw", DRAW).load_module()
    assert draw.edge_label(0, 5) == "edge 0 of 0-4", draw.edge_label(0, 5)
    assert draw.edge_label(4, 5) == "edge 4 of 0-4", draw.edge_label(4, 5)


def main():
    tb = sys.argv[1]
    # systolic-run: the second argument, or next to systolic-tb in the same build tree.
    run = sys.argv[2] if len(sys.argv) > 2 else \
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(tb))), "tools", "run", "systolic-run")
    check_edges_count_from_zero()
    with tempfile.TemporaryDirectory() as out:
        check_network(run, out)
        check_partial_and_errors(tb, out)
        check(tb, [], 0, out)
        check(tb, ["--array", "4", "--m", "10", "--k", "7", "--p", "9", "--k-tile", "3"], 4, out)
        check(tb, ["--array", "2x5", "--m", "5", "--k", "4", "--p", "9"], 3, out)  # 2 rows of 5 PEs
        # Weight and input stationary: one frame per edge of the chosen fold (preload, then stream).
        check(tb, ["--array", "4", "--m", "6", "--k", "7", "--p", "9", "--dataflow", "ws"], 1, out, fold=1)
        check(tb, ["--array", "3x4", "--m", "6", "--k", "7", "--p", "9", "--dataflow", "is", "--dtype", "fp32"],
              0, out, fold=2)
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
