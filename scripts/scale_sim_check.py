#!/usr/bin/python3
"""Our counted edges against SCALE-Sim's Total Cycles, on the shipped topologies, in each dataflow.

SCALE-Sim's output-stationary model (scalesim/compute/systolic_compute_os.py) gives every fold
K + R + C - 2 demand rows, and its memory model reports the 0-based cycle of the last OFMAP line
(double_buffered_scratchpad_mem.py: total_cycles = int(ofmap_serviced_cycles[-1][0])). With no
stalls, Total Cycles = folds x (K + R + C - 2) - 1. Its weight- and input-stationary models
(systolic_compute_ws.py, systolic_compute_is.py) give every fold R rows to load the stationary
block, then T + R + C - 2 to stream: 2R + C + T - 2, over ceil(Sr/R) x ceil(Sc/C) folds, with
Sr = K, Sc = P, T = M for ws and Sr = K, Sc = M, T = P for is. Our preload and advance edges are
R + (T + R + C - 2) a fold. This script lowers the topologies itself, as SCALE-Sim's
topology_utils.py does, and works those figures out on its own; the edges come from systolic-run's
reports, stepped by the cycle engine.

With a memory system (systolic-run --config FILE.cfg), the script also runs SCALE-Sim itself
from a checkout of its source (v2 or v3: https://github.com/scalesim-project) on the same
configuration and topology, and sets its COMPUTE_REPORT.csv and BANDWIDTH_REPORT.csv beside ours.

usage:
  scale_sim_check.py check SYSTOLIC_RUN WORKLOADS_DIR   run the shipped topologies and check
  scale_sim_check.py table WORKLOADS_DIR REPORT_DIR...  markdown tables for docs/scale-sim.md
  scale_sim_check.py scalesim SRC CFG TOPOLOGY OUT      run SCALE-Sim (checkout SRC) into OUT/<run_name>
  scale_sim_check.py compare SCALESIM_DIR OUR_DIR       both runs' reports side by side (markdown)
  scale_sim_check.py folds DF RxC OUR_DIR SCALESIM_DIR...
                                   SCALE-Sim's ws or is runs (v3, v2) beside ours: folds and cycles
"""
import csv
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path


def read_topology(path):
    """(layer id, name, M, K, P) for every row, lowered as SCALE-Sim lowers it."""
    rows = [r for r in csv.reader(open(path)) if any(f.strip() for f in r)]
    header = [f.strip() for f in rows[0]]
    layers = []
    for row in rows[1:]:
        f = [x.strip() for x in row]
        if f and f[-1] == "":
            f = f[:-1]
        if header[1] == "M":
            name, m, n, k = f[0], int(f[1]), int(f[2]), int(f[3])
            layers.append((len(layers), name, m, k, n))
        else:
            name = f[0]
            ih, iw, fh, fw, ch, nf, s = (int(x) for x in f[1:8])
            oh = math.ceil((ih - fh + s) / s)
            ow = math.ceil((iw - fw + s) / s)
            layers.append((len(layers), name, oh * ow, fh * fw * ch, nf))
    return layers


DATAFLOWS = ("os", "ws", "is")


def scale_sim_fold(m, k, p, df):
    """SCALE-Sim's (Sr, Sc, T) for a dataflow: the operand matrix's rows and columns that fold onto
    the array's R rows and C columns, and the length of the stream through each fold."""
    return {"os": (m, p, k), "ws": (k, p, m), "is": (k, m, p)}[df]


def scale_sim_fold_cycles(m, k, p, r, c, df):
    """A fold's cycles in SCALE-Sim: os K + R + C - 2; ws and is R to load the stationary block,
    then T + R + C - 2."""
    t = scale_sim_fold(m, k, p, df)[2]
    return (r if df != "os" else 0) + t + r + c - 2


def scale_sim_folds(m, k, p, r, c, df):
    sr, sc, _ = scale_sim_fold(m, k, p, df)
    return math.ceil(sr / r) * math.ceil(sc / c)


def scale_sim_total(m, k, p, r, c, df="os"):
    return scale_sim_folds(m, k, p, r, c, df) * scale_sim_fold_cycles(m, k, p, r, c, df) - 1


def read_report(directory):
    with open(Path(directory) / "COMPUTE_REPORT.csv") as f:
        rows = list(csv.reader(f, skipinitialspace=True))
    head = rows[0]
    return [dict(zip(head, r)) for r in rows[1:]]


def array_shape(name):
    """'12x14' -> (12, 14): R rows of C PEs."""
    r, c = name.split("x")
    return int(r), int(c)


def run(tool, topology, arrays, out, engine="cycle", dataflows="os"):
    cmd = [tool, "--topology", str(topology), "--array", arrays, "--dataflow", dataflows, "--engine", engine,
           "--out", str(out), "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return read_report(out), json.load(open(Path(out) / "report.json"))


def edges_of(row):
    """A COMPUTE_REPORT row's array edges: the advance edges and, for ws and is, the preloads."""
    return int(row["Advance Edges"]) + int(row["Preload Edges"])


def fold_cut(m, k, p, r, c, df):
    """The layer cut to two folds along each dimension that SCALE-Sim folds (Sr onto the R rows, Sc
    onto the C columns), each keeping its last fold's length; the stream T stays whole."""
    def cut(n, side):
        return min(n, side + (n % side or side))
    if df == "os":
        return cut(m, r), k, cut(p, c)
    if df == "ws":
        return m, cut(k, r), cut(p, c)
    return cut(m, c), cut(k, r), p


def check(tool, workloads):
    failures = []
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # ResNet-18 whole: every layer stepped by the cycle engine, in every dataflow.
        layers = read_topology(workloads / "resnet18.csv")
        rows, _ = run(tool, workloads / "resnet18.csv", "32", tmp / "resnet", dataflows=",".join(DATAFLOWS))
        for row in rows:
            r, c = array_shape(row["Array"])
            lid, name, m, k, p = layers[int(row["LayerID"])]
            want = scale_sim_total(m, k, p, r, c, row["Dataflow"])
            checked += 1
            if int(row["Total Cycles"]) != want or edges_of(row) != want + 1 or row["Pass"] != "PASS":
                failures.append(f"resnet18 {name} on {row['Array']} {row['Dataflow']}: Total Cycles "
                                f"{row['Total Cycles']}, edges {edges_of(row)}, SCALE-Sim {want}, {row['Pass']}")
        # GPT-2's layers are 21 G MACs, too many to step in a test. Every fold kind of every layer
        # is stepped instead: a layer cut to two folds along each folded dimension keeps the stream
        # and the shapes of its full, edge and corner folds. The whole layer then has SCALE-Sim's
        # cycles when each of its folds has SCALE-Sim's cycles per fold. 12x14 is SCALE-Sim's
        # Eyeriss preset (R rows of C PEs).
        gpt2 = read_topology(workloads / "gpt2.csv")
        for r, c in ((32, 32), (128, 128), (12, 14)):
            for df in DATAFLOWS:
                cut = tmp / f"gpt2_folds_{r}x{c}_{df}.csv"
                with open(cut, "w") as f:
                    f.write("Layer, M, N, K,\n")
                    for lid, name, m, k, p in gpt2:
                        cm, ck, cp = fold_cut(m, k, p, r, c, df)
                        f.write(f"{name}, {cm}, {cp}, {ck},\n")
                _, report = run(tool, cut, f"{r}x{c}", tmp / f"gpt2_{r}x{c}_{df}", dataflows=df)
                for layer, (lid, name, m, k, p) in zip(report["layers"], gpt2):
                    checked += 1
                    per_fold = {g["edges"] for g in layer["folds"]}
                    want = scale_sim_fold_cycles(m, k, p, r, c, df)
                    if per_fold != {want} or not layer["pass"]:
                        failures.append(f"gpt2 {name} on {r}x{c} {df}: fold edges {sorted(per_fold)}, "
                                        f"SCALE-Sim {want} per fold, {'PASS' if layer['pass'] else 'FAIL'}")
                        continue
                    if scale_sim_folds(m, k, p, r, c, df) * want - 1 != scale_sim_total(m, k, p, r, c, df):
                        failures.append(f"gpt2 {name} on {r}x{c} {df}: the folds do not give "
                                        "SCALE-Sim's total")
    for f in failures:
        print("MISMATCH", f)
    print(f"{checked} layer runs checked, {len(failures)} mismatches")
    return 1 if failures or checked == 0 else 0


def table(workloads, report_dirs):
    """One markdown table per (topology, array, dataflow) found in the report directories."""
    for d in report_dirs:
        rep = json.load(open(Path(d) / "report.json"))
        layers = read_topology(workloads / (rep["topology"] + ".csv"))
        rows = read_report(d)
        for array in rep["sweep"]:
            for df in rep["dataflows"]:
                r, c = array_shape(array)
                title = array if rep["dataflows"] == ["os"] else f"{array} {df}"
                print(f"\n**{rep['topology']} on {title}** ({rep['dtype']}, {rep['engine']} engine)\n")
                print("| LayerID | Layer | M | K | P | Folds | Counted edges | SCALE-Sim Total Cycles | Holds |")
                print("|---:|---|---:|---:|---:|---:|---:|---:|:---:|")
                for row in rows:
                    if row["Array"] != array or row["Dataflow"] != df:
                        continue
                    lid, name, m, k, p = layers[int(row["LayerID"])]
                    ss = scale_sim_total(m, k, p, r, c, df)
                    edges = edges_of(row)
                    folded = scale_sim_folds(m, k, p, r, c, df)
                    print(f"| {lid} | {name} | {m} | {k} | {p} | {folded} | {edges} | {ss} | "
                          f"{'yes' if edges == ss + 1 else 'NO'} |")


def folds(df, array, ours_dir, scalesim_dirs):
    """SCALE-Sim's ws or is runs of one array (v3 first, then v2) beside ours, layer by layer: its
    folds (Sr/R x Sc/C) and ours (tiles x folds), its Total Cycles and our preload + advance edges
    - 1, and the mapping efficiency and compute utilization. SCALE-Sim's compute utilization divides
    by its cycles_this_fold, the fold's demand rows plus the array's width - 1 (2R + 2C + T - 3), C - 1
    more than the fold's own 2R + C + T - 2 cycles, by which ours divides: the last column checks
    that this is the only difference."""
    r, c = array_shape(array)
    ours = [row for row in read_report(ours_dir) if row["Array"] == array and row["Dataflow"] == df]
    rep = json.load(open(Path(ours_dir) / "report.json"))
    figures = [la["scale_sim"] for la in rep["layers"] if la["array"] == array and la["dataflow"] == df]
    runs = [read_csv(Path(d) / "COMPUTE_REPORT.csv") for d in scalesim_dirs]
    names = ["v3", "v2"][:len(runs)]
    totals = " | ".join(f"Total Cycles {n}" for n in names)
    print(f"| LayerID | Layer | M | K | P | SCALE-Sim folds | T | Ours: tiles × folds | "
          f"Preload + advance − 1 | {totals} | Holds | Mapping % ours / SCALE-Sim | "
          f"Compute % ours / SCALE-Sim | ours × (2R + C + T − 2) / (2R + 2C + T − 3) |")
    print("|---:|---|" + "---:|" * (7 + len(runs)) + ":---:|---:|---:|---:|")
    for i, row in enumerate(ours):
        m, k, p = int(row["M"]), int(row["K"]), int(row["P"])
        sr, sc, t = scale_sim_fold(m, k, p, df)
        tiles = int(row["Tiles"])
        cycles = edges_of(row) - 1
        ss = [int(run[i]["Total Cycles"]) for run in runs]
        holds = all(x == cycles for x in ss) and cycles == scale_sim_total(m, k, p, r, c, df) and \
            row["Pass"] == "PASS"
        ss_cu = float(runs[0][i]["Compute Util %"])
        ours_cu = figures[i]["compute_util_percent"]
        scaled = ours_cu * (2 * r + c + t - 2) / (2 * r + 2 * c + t - 3)
        print(f"| {row['LayerID']} | {row['Layer']} | {m} | {k} | {p} | "
              f"{math.ceil(sr / r)} × {math.ceil(sc / c)} | {t} | {tiles} × {math.ceil(k / min(k, r))} | "
              f"{cycles} | " + " | ".join(str(x) for x in ss) +
              f" | {'yes' if holds else 'NO'} | {float(row['Mapping Efficiency %']):.4f} / "
              f"{float(runs[0][i]['Mapping Efficiency %']):.4f} | {ours_cu:.4f} / {ss_cu:.4f} | "
              f"{scaled:.4f} {'=' if abs(scaled - ss_cu) < 1e-9 * max(1.0, ss_cu) else '≠'} |")


def run_scalesim(src, cfg, topology, out):
    """Runs SCALE-Sim from its source tree without writing its (huge) traces. v3 also wants a
    layout file, which it reads but does not use without custom layouts: one neutral row per layer."""
    sys.path.insert(0, str(Path(src).resolve()))
    from scalesim.scale_sim import scalesim  # noqa: E402 (found only once SRC is on the path)
    gemm = read_header(topology)[1] == "M"
    kw = dict(save_disk_space=True, verbose=False, config=str(cfg), topology=str(topology),
              input_type_gemm=gemm)
    Path(out).mkdir(parents=True, exist_ok=True)
    if (Path(src) / "scalesim" / "layout_utils.py").exists():
        layout = Path(out) / "layout.csv"
        with open(layout, "w") as f:
            f.write("Layer name," + ",".join(["x"] * 20) + ",\n")
            for lid, *_ in read_topology(topology):
                f.write(f"L{lid}," + ",".join(["1"] * 20) + ",\n")
        kw["layout"] = str(layout)
    scalesim(**kw).run_scale(top_path=str(out))


def read_header(path):
    with open(path) as f:
        return [x.strip() for x in f.readline().split(",")]


def read_csv(path):
    with open(path) as f:
        rows = [[x.strip() for x in r] for r in csv.reader(f, skipinitialspace=True) if r]
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def compare(scalesim_dir, ours_dir):
    """Two markdown tables, SCALE-Sim's figure beside ours: cycles with the reason they differ,
    then DRAM traffic and bandwidth. The reasons are worked out from both runs' own counts."""
    ss_c = read_csv(Path(scalesim_dir) / "COMPUTE_REPORT.csv")
    ss_b = read_csv(Path(scalesim_dir) / "BANDWIDTH_REPORT.csv")
    detail = read_csv(Path(scalesim_dir) / "DETAILED_ACCESS_REPORT.csv")
    us_c = read_csv(Path(ours_dir) / "COMPUTE_REPORT.csv")
    us_b = read_csv(Path(ours_dir) / "BANDWIDTH_REPORT.csv")
    rep = json.load(open(Path(ours_dir) / "report.json"))
    bw = rep["memory"]["dram_bandwidth"]  # bytes per cycle; 0 with CALC
    incl = "Total Cycles (incl. prefetch)"
    print("| LayerID | Layer | Edges − 1 | Total SCALE-Sim / ours | Stall SCALE-Sim / ours | "
          "incl. prefetch SCALE-Sim / ours | Why they differ |")
    print("|---:|---|---:|---:|---:|---:|---|")
    for s, u, d, layer in zip(ss_c, us_c, detail, rep["layers"]):
        use = layer["memory_use"]
        ss_total, ss_stall = int(s["Total Cycles"]), int(s["Stall Cycles"])
        lead = -int(min(float(d["DRAM IFMAP Start Cycle"]), float(d["DRAM Filter Start Cycle"])))
        tail = int(float(d["DRAM OFMAP Stop Cycle"])) - ss_total
        ours_total = int(u["Total Cycles"])
        # incl. prefetch = prefetch + a clear per tile + edges + stalls + last drain, and Total
        # Cycles = edges + stalls - 1 (SCALE-Sim's count), so the rest is the last drain.
        tiles = int(u["Tiles"])
        ours_drain = int(u[incl]) - use["prefetch_cycles"] - tiles - ours_total - 1
        if not bw:
            why = (f"same edges and no stalls; SCALE-Sim prefetches {lead} cycles before its cycle 0 and "
                   f"drains {tail} after, ours loads the first tile in {use['prefetch_cycles']}, clears each "
                   f"of its {tiles} tiles in a cycle and drains the last in {ours_drain}")
            if ss_stall or int(u["Stall Cycles"]):
                why = "stalls: " + why
        else:
            a_b = use["a"]["dram"] + use["b"]["dram"]
            c = use["c"]["dram"]
            ours_channel = (a_b + c) / bw
            # SCALE-Sim v3 gives each of its ports its own bandwidth (the shipped file: all 10, as ours).
            ss_port = max(float(d["DRAM IFMAP Reads"]), float(d["DRAM Filter Reads"]),
                          float(d["DRAM OFMAP Writes"])) / (bw / layer["operand_bytes"])
            why = (f"ours: one channel moves {a_b + c} B ({c} of them int32 C) at {bw} B/cycle, "
                   f"≥ {ours_channel:.0f} cycles; SCALE-Sim: its busiest port moves "
                   f"{ss_port * bw / layer['operand_bytes']:.0f} words at {bw // layer['operand_bytes']}"
                   f"/cycle, ≥ {ss_port:.0f} cycles")
        print(f"| {u['LayerID']} | {u['Layer']} | {edges_of(u) - 1} | {ss_total} / {ours_total} | "
              f"{ss_stall} / {u['Stall Cycles']} | {s.get(incl, '–')} / {u[incl]} | {why} |")
    print()
    print("| LayerID | Layer | DRAM words A+B SCALE-Sim / ours | C words | IFMAP DRAM BW | FILTER DRAM BW | "
          "OFMAP DRAM BW | ours zero-stall B/cycle | streamed tiles |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for s, u, d, layer in zip(ss_b, us_b, detail, rep["layers"]):
        use = layer["memory_use"]
        ss_words = float(d["DRAM IFMAP Reads"]) + float(d["DRAM Filter Reads"])
        our_words = (use["a"]["dram"] + use["b"]["dram"]) // layer["operand_bytes"]
        print(f"| {u['LayerID']} | {u['Layer']} | {ss_words:.0f} / {our_words} | "
              f"{float(d['DRAM OFMAP Writes']):.0f} / {use['c']['dram'] // layer['output_bytes']} | "
              f"{float(s['Avg IFMAP DRAM BW']):.3f} / {float(u['Avg IFMAP DRAM BW']):.3f} | "
              f"{float(s['Avg FILTER DRAM BW']):.3f} / {float(u['Avg FILTER DRAM BW']):.3f} | "
              f"{float(s['Avg OFMAP DRAM BW']):.3f} / {float(u['Avg OFMAP DRAM BW']):.3f} | "
              f"{u['Zero-Stall DRAM Bytes/Cycle']} | {u['Streamed Tiles']} |")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        return check(sys.argv[2], Path(sys.argv[3]))
    if len(sys.argv) >= 4 and sys.argv[1] == "table":
        table(Path(sys.argv[2]), sys.argv[3:])
        return 0
    if len(sys.argv) == 6 and sys.argv[1] == "scalesim":
        run_scalesim(*sys.argv[2:6])
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) >= 6 and sys.argv[1] == "folds" and sys.argv[2] in ("ws", "is"):
        folds(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:7])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
