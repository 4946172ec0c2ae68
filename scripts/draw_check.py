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
    # The network's utilization, real over padded MACs, from the layers' shapes on the 8x8 array.
    real = sum(m * p * k for _, m, p, k in layers)
    padded = sum(-(-m // 8) * 8 * -(-p // 8) * 8 * k for _, m, p, k in layers)
    assert r.stdout.startswith(os.path.join(pics, "network.png") + ": 3 layers, 1 series,") and "3 checked, 1 exact" in r.stdout \
        and f", network 8x8 os {100 * real / padded:.1f}%, " in r.stdout \
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
    del rep["arrays"][0]["network_layers"][1]["macs_padded"]
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


def green_bands(im):
    """The bit rows of waveform.png as a person sees them: bands of the green trace (advance, c_write,
    prefetch, preload), top to bottom, each as (first pixel row, pixel rows tall). A row that toggles
    is as tall as a pulse; a row that never leaves 0 is one flat line."""
    import numpy as np
    px = np.asarray(im.convert("RGB")).astype(int)
    green = (px[:, :, 1] > 90) & (px[:, :, 0] < 80) & (px[:, :, 2] < 80) & (px[:, :, 1] - px[:, :, 0] > 60)
    ys = [y for y in range(px.shape[0]) if green[y].sum() >= 3]
    bands = []
    for y in ys:
        if bands and y - (bands[-1][0] + bands[-1][1]) <= 2:
            bands[-1][1] = y - bands[-1][0] + 1
        else:
            bands.append([y, 1])
    return [tuple(b) for b in bands]


def c_write_phases(vcd):
    """The phases (by name) in which the VCD's C writes start, read from the VCD here, not by scripts/draw."""
    codes, changes, time, body = {}, {}, 0, False
    names = ["idle", "clear", "load", "advance", "drain", "stall", "preload"]
    for line in open(vcd, encoding="ascii"):
        tok = line.split()
        if not tok:
            continue
        if not body:
            if tok[0] == "$var" and tok[4] in ("phase", "c_write"):
                codes[tok[3]] = tok[4]
            body = tok[0] == "$enddefinitions"
            continue
        if tok[0].startswith("#"):
            time = int(tok[0][1:])
        elif tok[0][0] in "bB" and len(tok) == 2 and tok[1] in codes:
            changes.setdefault(codes[tok[1]], []).append((time, int(tok[0][1:], 2)))
        elif tok[0][0] in "01" and tok[0][1:] in codes:
            changes.setdefault(codes[tok[0][1:]], []).append((time, int(tok[0][0])))
    phase = changes["phase"]
    out, last = set(), 0
    for t, v in changes.get("c_write", []):
        if v == 1 and last == 0:
            out.add(names[[p for pt, p in phase if pt <= t][-1]])
        last = v
    return out


def check_buffers_waveform(tb, out):
    """waveform.png in each buffer mode. Under --buffers double the DRAM channel prefetches the next tile's
    operands while this one advances: the picture has a third green bit row, prefetch, that goes high. Its
    title (the PNG's Title, as PIL reads it) says in which phases the C writes start, as the VCD has them:
    in drain without scratchpads; with them, C leaves the C scratchpad for DRAM while later tiles run."""
    for mode, bits in (("none", 2), ("double", 3)):
        d = fresh_dir(out, "buffers-" + mode)
        vcd, rep = os.path.join(d, "run.vcd"), os.path.join(d, "run.json")
        subprocess.run([tb, "--array", "4", "--m", "8", "--k", "12", "--p", "16", "--seed", "3", "--buffers", mode,
                        "--dram-bandwidth", "4", "--vcd", vcd, "--json", rep], check=True, stdout=subprocess.DEVNULL)
        pics = os.path.join(d, "pics")
        r = subprocess.run([sys.executable, DRAW, "--json", rep, "--vcd", vcd, "--out-dir", pics, "--only", "waveform",
                            "--waveform-tiles", "99"], capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", (mode, r.returncode, r.stderr)
        with Image.open(os.path.join(pics, "waveform.png")) as im:
            bands = green_bands(im)
            title = im.text.get("Title", "")
        assert len(bands) == bits, f"--buffers {mode}: waveform.png has {len(bands)} green bit rows {bands}, " \
            f"not {bits} (advance, c_write{', prefetch' if bits == 3 else ''})"
        # Every bit row pulses here, the prefetch row too: each band is taller than a flat line.
        assert all(h > 10 for _, h in bands), f"--buffers {mode}: a bit row never goes high: {bands}"
        phases = c_write_phases(vcd)
        said = title.split("C writes")[-1] if "C writes" in title else ""
        assert phases and all(p in said for p in phases) and \
            not any(p in said for p in {"clear", "load", "advance", "drain", "stall"} - phases), \
            f"--buffers {mode}: the VCD's C writes start in {sorted(phases)}, the title says {title!r}"
        if mode == "double":
            assert "prefetch" in title and "scratchpad" in title, title
        print(f"ok: --buffers {mode}: waveform.png has {bits} bit rows; title {title!r}")


def check_out_dir(tb, out):
    """--out-dir is created with its parents when missing, and only once the input is good; one that exists
    and is not a directory is refused with one line, and nothing is made. On success draw prints one line
    per picture written, its path, on stdout."""
    d = fresh_dir(out, "out-dir")
    vcd, rep = os.path.join(d, "run.vcd"), os.path.join(d, "run.json")
    subprocess.run([tb, "--array", "4", "--m", "10", "--k", "7", "--p", "9", "--vcd", vcd, "--json", rep],
                   check=True, stdout=subprocess.DEVNULL)
    pics = os.path.join(d, "new", "deeper", "pics")
    r = subprocess.run([sys.executable, DRAW, "--json", rep, "--vcd", vcd, "--out-dir", pics],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr)
    names = ["tile_map.png", "macs.png", "wavefront.gif", "waveform.png"]
    assert sorted(os.listdir(pics)) == sorted(names), os.listdir(pics)
    assert r.stdout.splitlines() == [os.path.join(pics, n) for n in names], r.stdout
    # Bad input with a missing --out-dir: nothing is created.
    missing = os.path.join(d, "never", "made")
    r = subprocess.run([sys.executable, DRAW, "--json", rep, "--vcd", vcd, "--out-dir", missing, "--tile", "99"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stdout == "", (r.returncode, r.stderr)
    assert not os.path.exists(os.path.join(d, "never")), "a failed draw left its --out-dir behind"
    # An --out-dir that is a file, or under one: one line, exit 2, the file as it was.
    plain = os.path.join(d, "plain")
    with open(plain, "w", encoding="ascii") as f:
        f.write("keep\n")
    for target in (plain, os.path.join(plain, "sub")):
        for source in (["--json", rep, "--vcd", vcd], ["--json", rep], ["--run", os.path.join(out, "network",
                                                                                           "run", "report.json")]):
            r = subprocess.run([sys.executable, DRAW, *source, "--out-dir", target], capture_output=True, text=True)
            assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stdout == "" and "--out-dir" in r.stderr, \
                (target, source, r.returncode, r.stderr)
    with open(plain, encoding="ascii") as f:
        assert f.read() == "keep\n"
    # --run: a missing --out-dir is made too, and the one line starts with the picture's path.
    pics = os.path.join(d, "net", "pics")
    r = subprocess.run([sys.executable, DRAW, "--run", os.path.join(out, "network", "run", "report.json"),
                        "--out-dir", pics], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith(os.path.join(pics, "network.png") + ": ") and \
        r.stdout.count("\n") == 1, (r.returncode, r.stdout, r.stderr)
    print("ok: --out-dir made with its parents, refused when not a directory; one line per picture")


def check_edges_count_from_zero():
    """The wavefront's frames are numbered as everything else numbers edges: from 0."""
    from importlib.machinery import SourceFileLoader
    draw = SourceFileLoader("draw", DRAW).load_module()
    assert draw.edge_label(0, 5) == "edge 0 of 0-4", draw.edge_label(0, 5)
    assert draw.edge_label(4, 5) == "edge 4 of 0-4", draw.edge_label(4, 5)


def check_network_energy(run, out):
    """scripts/draw --run on a run priced with --energy: network.png gets a middle panel of each layer's
    energy with bars in it, taller than the picture of the same run without --energy, and the summary
    gives each series' energy, the sum of the layers' Total pJ in ENERGY_REPORT.csv."""
    import csv
    import numpy as np
    d = fresh_dir(out, "network-energy")
    res, plain, pics, plain_pics = (fresh_dir(d, n) for n in ("run", "plain", "pics", "plain-pics"))
    with open(os.path.join(d, "topology.csv"), "w", encoding="ascii") as f:
        f.write("Layer, M, N, K,\nfirst, 20, 9, 13,\nsecond, 7, 5, 11,\nthird, 33, 17, 6,\n")
    for where, extra in ((res, ["--energy", "horowitz45"]), (plain, [])):
        subprocess.run([run, "--topology", os.path.join(d, "topology.csv"), "--array", "8", "--engine", "functional",
                        *extra, "--out", where, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    r = subprocess.run([sys.executable, DRAW, "--run", os.path.join(res, "report.json"), "--out-dir", pics],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr)
    with open(os.path.join(res, "ENERGY_REPORT.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f, skipinitialspace=True))
    total = sum(float(row["Total pJ"]) for row in rows)
    assert len(rows) == 3 and f", energy 8x8 os {total:.4g} pJ\n" in r.stdout, r.stdout
    with Image.open(os.path.join(pics, "network.png")) as im:
        size = im.size
        px = np.asarray(im.convert("RGB")).astype(int)
    blue = (abs(px - np.array([31, 119, 180])).sum(axis=2) < 40)
    third = px.shape[0] // 3
    middle = int(blue[third:2 * third].sum())
    assert middle > 2000, f"network.png: bars of {middle} pixels in the energy panel"
    # The same jobs without --energy: the two panels, a shorter picture.
    r = subprocess.run([sys.executable, DRAW, "--run", os.path.join(plain, "report.json"), "--out-dir", plain_pics],
                       capture_output=True, text=True)
    assert r.returncode == 0 and ", energy " not in r.stdout, (r.returncode, r.stdout, r.stderr)
    with Image.open(os.path.join(plain_pics, "network.png")) as im:
        assert im.size[1] < size[1], (im.size, size)
    print(f"ok: network.png {size[0]}x{size[1]} with the energy per layer of a run priced with --energy")


def check_network_layers(run, out):
    """A network layer's GEMMs are one bar: a grouped convolution's (.g<i>), a batched MatMul's (.b<i>)
    and SCALE-Sim's depth-wise copies (<layer>Channel_<c>) each give one layer in the summary, with the
    GEMMs counted beside, and its utilization is its GEMMs' real over padded MACs."""
    d = fresh_dir(out, "network-layers")
    res, pics = fresh_dir(d, "run"), fresh_dir(d, "pics")
    with open(os.path.join(d, "topology.csv"), "w", encoding="ascii") as f:
        f.write("Layer, M, N, K,\nstem, 20, 9, 13,\n" + "".join(f"dw.g{i}, 9, 1, 9,\n" for i in range(6)) +
                "".join(f"attn.qk.b{i}, 5, 5, 3,\n" for i in range(4)) + "fc, 1, 17, 33,\n")
    subprocess.run([run, "--topology", os.path.join(d, "topology.csv"), "--array", "8", "--engine", "functional",
                    "--out", res, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    r = subprocess.run([sys.executable, DRAW, "--run", os.path.join(res, "report.json"), "--out-dir", pics],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr)
    # dw's six GEMMs of one column: 1 of the 8 columns each; the lowest layer utilization.
    lo = 100 * (9 * 1 * 9) / (16 * 8 * 9)
    assert r.stdout.startswith(os.path.join(pics, "network.png") + f": 4 layers (12 GEMMs), 1 series, utilization "
                               f"{lo:.1f}-"), r.stdout
    print("ok: network.png gathers a network layer's GEMMs into one bar")


def check_sweep_energy(run, out):
    """scripts/draw_sweep.py on a sweep priced with --energy: a third panel of the network's energy and
    energy-delay product against array size, with the os line in it; a sweep without --energy keeps
    its two panels."""
    import numpy as np
    sweep = os.path.join(os.path.dirname(DRAW), "draw_sweep.py")
    d = fresh_dir(out, "sweep-energy")
    with open(os.path.join(d, "topology.csv"), "w", encoding="ascii") as f:
        f.write("Layer, M, N, K,\nfirst, 20, 9, 13,\nsecond, 7, 5, 11,\n")
    sizes = {}
    for name, extra in (("priced", ["--energy", "horowitz45"]), ("plain", [])):
        res = os.path.join(d, name)
        subprocess.run([run, "--topology", os.path.join(d, "topology.csv"), "--array", "2,4,8", "--engine",
                        "functional", "--out", res, "--no-progress", *extra], check=True, stdout=subprocess.DEVNULL)
        png = os.path.join(d, name + ".png")
        r = subprocess.run([sys.executable, sweep, res, "--out", png], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout == png + "\n", (r.returncode, r.stdout, r.stderr)
        with Image.open(png) as im:
            sizes[name] = im.size
            px = np.asarray(im.convert("RGB")).astype(int)
        if name == "priced":
            blue = (abs(px - np.array([31, 119, 180])).sum(axis=2) < 40)
            third = px.shape[1] // 3
            right = int(blue[:, 2 * third:].sum())
            assert right > 500, f"sweep.png: {right} pixels of the os energy line in the third panel"
    assert sizes["priced"][0] > 1.4 * sizes["plain"][0], sizes
    print(f"ok: sweep.png {sizes['priced'][0]}x{sizes['priced'][1]} with the energy of a sweep priced with --energy")


def main():
    tb = sys.argv[1]
    # systolic-run: the second argument, or next to systolic-tb in the same build tree.
    run = sys.argv[2] if len(sys.argv) > 2 else \
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(tb))), "tools", "run", "systolic-run")
    check_edges_count_from_zero()
    with tempfile.TemporaryDirectory() as out:
        check_network(run, out)
        check_network_energy(run, out)
        check_network_layers(run, out)
        check_sweep_energy(run, out)
        check_partial_and_errors(tb, out)
        check_buffers_waveform(tb, out)
        check_out_dir(tb, out)
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
