#!/usr/bin/python3
"""Our counted advance edges against SCALE-Sim's Total Cycles, on the shipped topologies.

SCALE-Sim's output-stationary model (scalesim/compute/systolic_compute_os.py) gives every fold
K + R + C - 2 demand rows, and its memory model reports the 0-based cycle of the last OFMAP line
(double_buffered_scratchpad_mem.py: total_cycles = int(ofmap_serviced_cycles[-1][0])). With no
stalls, Total Cycles = folds x (K + R + C - 2) - 1. This script lowers the topologies itself, as
SCALE-Sim's topology_utils.py does, and works that figure out on its own; the edges come from
systolic-run's reports, stepped by the cycle engine.

With a memory system (systolic-run --config FILE.cfg), the script also runs SCALE-Sim itself
from a checkout of its source (v2 or v3: https://github.com/scalesim-project) on the same
configuration and topology, and sets its COMPUTE_REPORT.csv and BANDWIDTH_REPORT.csv beside ours.

usage:
  scale_sim_check.py check SYSTOLIC_RUN WORKLOADS_DIR   run the shipped topologies and check
  scale_sim_check.py table WORKLOADS_DIR REPORT_DIR...  markdown tables for docs/scale-sim.md
  scale_sim_check.py scalesim SRC CFG TOPOLOGY OUT      run SCALE-Sim (checkout SRC) into OUT/<run_name>
  scale_sim_check.py compare SCALESIM_DIR OUR_DIR       both runs' reports side by side (markdown)
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


def scale_sim_total(m, k, p, r, c):
    return math.ceil(m / r) * math.ceil(p / c) * (k + r + c - 2) - 1


def read_report(directory):
    with open(Path(directory) / "COMPUTE_REPORT.csv") as f:
        rows = list(csv.reader(f, skipinitialspace=True))
    head = rows[0]
    return [dict(zip(head, r)) for r in rows[1:]]


def array_shape(name):
    """'12x14' -> (12, 14): R rows of C PEs."""
    r, c = name.split("x")
    return int(r), int(c)


def run(tool, topology, arrays, out, engine="cycle"):
    cmd = [tool, "--topology", str(topology), "--array", arrays, "--engine", engine, "--out", str(out),
           "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return read_report(out), json.load(open(Path(out) / "report.json"))


def check(tool, workloads):
    failures = []
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # ResNet-18 whole: every layer stepped by the cycle engine.
        layers = read_topology(workloads / "resnet18.csv")
        rows, _ = run(tool, workloads / "resnet18.csv", "32", tmp / "resnet")
        for row in rows:
            r, c = array_shape(row["Array"])
            lid, name, m, k, p = layers[int(row["LayerID"])]
            want = scale_sim_total(m, k, p, r, c)
            checked += 1
            if int(row["Total Cycles"]) != want or int(row["Advance Edges"]) != want + 1 or row["Pass"] != "PASS":
                failures.append(f"resnet18 {name} on {row['Array']}: Total Cycles {row['Total Cycles']}, "
                                f"edges {row['Advance Edges']}, SCALE-Sim {want}, {row['Pass']}")
        # GPT-2's layers are 21 G MACs, too many to step in a test. Every fold kind of every layer
        # is stepped instead: a layer cut to two fold rows and two fold columns keeps K and the
        # shapes of its full, right-edge, bottom-edge and corner folds. The whole layer then has
        # SCALE-Sim's cycles when each of its folds has K + R + C - 2 edges. 12x14 is SCALE-Sim's
        # Eyeriss preset (R rows of C PEs).
        gpt2 = read_topology(workloads / "gpt2.csv")
        for r, c in ((32, 32), (128, 128), (12, 14)):
            cut = tmp / f"gpt2_folds_{r}x{c}.csv"
            with open(cut, "w") as f:
                f.write("Layer, M, N, K,\n")
                for lid, name, m, k, p in gpt2:
                    f.write(f"{name}, {min(m, r + (m % r or r))}, {min(p, c + (p % c or c))}, {k},\n")
            _, report = run(tool, cut, f"{r}x{c}", tmp / f"gpt2_{r}x{c}")
            for layer, (lid, name, m, k, p) in zip(report["layers"], gpt2):
                checked += 1
                per_fold = {g["edges"] for g in layer["folds"]}
                if per_fold != {k + r + c - 2} or not layer["pass"]:
                    failures.append(f"gpt2 {name} on {r}x{c}: fold edges {sorted(per_fold)}, "
                                    f"SCALE-Sim {k + r + c - 2} per fold")
                    continue
                folds = math.ceil(m / r) * math.ceil(p / c)
                if folds * per_fold.pop() - 1 != scale_sim_total(m, k, p, r, c):
                    failures.append(f"gpt2 {name} on {r}x{c}: {folds} folds do not give SCALE-Sim's total")
    for f in failures:
        print("MISMATCH", f)
    print(f"{checked} layer runs checked, {len(failures)} mismatches")
    return 1 if failures or checked == 0 else 0


def table(workloads, report_dirs):
    """One markdown table per (topology, array) found in the report directories."""
    for d in report_dirs:
        rep = json.load(open(Path(d) / "report.json"))
        layers = read_topology(workloads / (rep["topology"] + ".csv"))
        rows = read_report(d)
        for array in rep["sweep"]:
            r, c = array_shape(array)
            print(f"\n**{rep['topology']} on {array}** ({rep['dtype']}, {rep['engine']} engine)\n")
            print("| LayerID | Layer | M | K | P | Folds | Counted edges | SCALE-Sim Total Cycles | Holds |")
            print("|---:|---|---:|---:|---:|---:|---:|---:|:---:|")
            for row in rows:
                if row["Array"] != array:
                    continue
                lid, name, m, k, p = layers[int(row["LayerID"])]
                folds = math.ceil(m / r) * math.ceil(p / c)
                ss = scale_sim_total(m, k, p, r, c)
                edges = int(row["Advance Edges"])
                print(f"| {lid} | {name} | {m} | {k} | {p} | {folds} | {edges} | {ss} | "
                      f"{'yes' if edges == ss + 1 else 'NO'} |")


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
        print(f"| {u['LayerID']} | {u['Layer']} | {int(u['Advance Edges']) - 1} | {ss_total} / {ours_total} | "
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
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
