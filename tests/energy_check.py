#!/usr/bin/python3
"""The energy account (docs/energy.md) checked from first principles, outside the model: systolic-tb
runs jobs on operands numpy wrote (a share of them zeros) with --energy and --json, and this script
computes what the counts must be without the model's code:

  - mac_random: the (i, j, k) with A(i, k) != 0 and B(k, j) != 0, counted by numpy;
  - every PE does one action per edge: the actions sum to R x C x (advance + preload edges), on a
    fabric times its arrays, and the valid MACs (random + gated) are the MACs with padding;
  - a fabric's link words: the words its links carried, as the report's halo counts give them, and
    for a job of one tile and one K chunk as the skew rule gives them: every A token of an active
    array row crosses each link east of it, every B token each link south, every PE's partial sum
    the C link at each of the ceil(K / N) - 1 block boundaries;
  - the register toggles: the Hamming distances between successive values of each PE's registers
    in the job's VCD (--vcd), at the format's width;
  - the scratchpads' and DRAM's bytes: the memory report's and the traffic's;
  - the energy: each count times the table's entry, read here from the table's JSON file, summed;
  - --action-counts' action_counts.yaml holds the same counts (read with PyYAML);
  - a counter defect planted with --inject miscount-gated fails both the run and these checks.

usage: tests/energy_check.py PATH/TO/systolic-tb PATH/TO/energy/tables
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

CASES = [  # (dtype, array RxC, M, K, P, dataflow, extra options)
    ("int8", "4", 9, 13, 6, "os", []),
    ("int8", "3x5", 7, 11, 9, "ws", []),
    ("int8", "5x3", 8, 10, 7, "is", []),
    ("int8", "4", 9, 20, 6, "os", ["--k-tile", "6"]),
    ("int8", "4", 9, 20, 6, "os", ["--k-tile", "6", "--k-policy", "partials"]),
    ("int32", "3", 5, 9, 7, "os", []),
    ("fp32", "4", 6, 9, 5, "os", []),
    ("bf16", "4x2", 6, 9, 5, "ws", []),
    ("int8", "4", 9, 13, 6, "os", ["--buffers", "double", "--a-sram", "1k", "--b-sram", "1k", "--c-sram", "1k"]),
    ("int8", "4", 9, 13, 6, "ws", ["--buffers", "double"]),
    ("int8", "4", 9, 13, 6, "os", ["--engine", "functional"]),
    ("int8", "3x5", 7, 11, 9, "is", ["--engine", "functional", "--buffers", "double"]),
    ("int8", "3", 5, 10, 6, "os", ["--fabric", "2x2"]),
    ("int8", "3", 6, 11, 4, "os", ["--fabric", "2x2x2", "--link-latency", "2", "--threads", "2"]),
    ("int32", "2", 3, 9, 4, "os", ["--fabric", "2x2x3"]),
    ("fp32", "2", 4, 7, 3, "os", ["--fabric", "1x2x2"]),
    ("int8", "2", 9, 12, 7, "os", ["--fabric", "2x2x2", "--k-tile", "5"]),
    ("int8", "1", 2, 6, 3, "os", ["--fabric", "2x3x2"]),
]
BITS = {"int8": (8, 32), "int32": (32, 64), "fp32": (32, 32), "bf16": (16, 32)}
NPY = {"int8": np.int8, "int32": np.int32, "fp32": np.float32, "bf16": np.float32}
# The VCD's PE registers that each toggle count covers, by dataflow (action_counts.h).
REGISTERS = {"os": {"a_toggles": "a", "b_toggles": "b", "acc_toggles": "acc"},
             "ws": {"a_toggles": "stream", "b_toggles": "stationary", "acc_toggles": "psum"},
             "is": {"a_toggles": "stationary", "b_toggles": "stream", "acc_toggles": "psum"}}


def operands(rng, dtype, m, k, p):
    """A and B with about a third of their values zero (of both signs for the float formats)."""
    def one(shape):
        if dtype in ("int8", "int32"):
            lo, hi = (-128, 128) if dtype == "int8" else (-1000, 1000)
            x = rng.integers(lo, hi, size=shape).astype(NPY[dtype])
        else:
            x = rng.standard_normal(shape).astype(np.float32)
        zero = rng.random(shape) < 0.35
        x[zero] = 0
        if dtype in ("fp32", "bf16"):
            x[zero & (rng.random(shape) < 0.5)] = np.float32(-0.0)
        return x
    return one((m, k)), one((k, p))


def nonzero(x, dtype):
    """What gates a MAC: an integer 0, a float zero of either sign; bf16 after rounding to 16 bits."""
    if dtype == "bf16":
        u = x.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
        x = u.astype(np.uint32).view(np.float32)
    return x != 0


def vcd_toggles(path, width_of):
    """{register name: toggles summed over the PEs} from a VCD: each PE register's successive values
    (its first value against 0), XORed at its declared width."""
    ids, scope, values, totals = {}, [], {}, {}
    in_defs = True
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            if in_defs:
                if words[0] == "$scope":
                    scope.append(words[2])
                elif words[0] == "$upscope":
                    scope.pop()
                elif words[0] == "$var" and scope and scope[-1].startswith("pe_"):
                    ids.setdefault(words[3], []).append(words[4])
                elif words[0] == "$enddefinitions":
                    in_defs = False
                continue
            word = words[0]
            if word[0] in "br" and len(words) == 2:
                value, ident = word[1:], words[1]
            elif word[0] in "01xz" and not word.startswith("#"):
                value, ident = word[0], word[1:]
            else:
                continue
            for name in ids.get(ident, []):
                if name not in width_of:
                    continue
                bits = width_of[name]
                if word[0] == "r":  # fp32 and bf16 values, exact as float32; bf16 is its top half
                    new = int(np.array(float(value), dtype=np.float32).view(np.uint32)) >> (32 - bits)
                else:
                    new = int(value.replace("x", "0").replace("z", "0"), 2)
                old = values.get((ident, name), 0)
                totals[name] = totals.get(name, 0) + bin((old ^ new) & ((1 << bits) - 1)).count("1")
                values[(ident, name)] = new
    return totals


def sram_entry(table, size):
    entries = table["energy_pj"]["sram"]
    for e in entries:
        if e["capacity_bytes"] >= size:
            return e
    return entries[-1]


def each_bit(v):
    return v["value"] / (v.get("bits") or 1)


def energy_of(report, table, dtype, sizes):
    """The report's counts priced here, from the table's JSON file: {component: pJ}."""
    ob, ab = BITS[dtype]
    c = report["energy"]["components"]
    count = lambda comp, action: c[comp]["actions"][action]["count"]
    pj = {}
    pe = table["energy_pj"]["pe"][dtype]
    pj["pe"] = sum(count("pe", a) * pe[a]["value"] for a in pe if pe[a]["value"] is not None)
    tog = table["energy_pj"]["register_toggle_bit"]["value"]
    pj["registers"] = tog * sum(count("registers", a) for a in ("a_toggles", "b_toggles", "acc_toggles"))
    for comp, size in zip(("a_sram", "b_sram", "c_sram"), sizes):
        e = sram_entry(table, size) if size else None
        pj[comp] = 0 if e is None else 8 * (count(comp, "read_bytes") * each_bit(e["read"]) +
                                            count(comp, "write_bytes") * each_bit(e["write"]))
    dram = table["energy_pj"]["dram"]
    pj["dram"] = 8 * (sum(count("dram", a) for a in ("a_read_bytes", "b_read_bytes", "c_read_bytes")) *
                      each_bit(dram["read"]) + count("dram", "c_write_bytes") * each_bit(dram["write"]))
    link = table["energy_pj"]["link_word"]["value"]
    pj["links"] = 0 if link is None else count("links", "link_words") * link
    return pj


def option(extra, name, default):
    return extra[extra.index(name) + 1] if name in extra else default


def fabric_link_words(extra, n, m, k, p):
    """The words a fabric's links carry on a job of one tile and one K chunk, from the skew rule;
    None for other jobs."""
    fr, fc, fd = (int(x) for x in (option(extra, "--fabric", "1x1").split("x") + ["1"])[:3])
    if "--k-tile" in extra or m > fr * n or p > fc * n:
        return None
    ra, ca = -(-m // n), -(-p // n)  # the arrays that hold rows and columns of C
    blocks = -(-k // n)
    a = ra * (ca - 1) * n * k
    b = (ra - 1) * ca * n * k
    c = ra * ca * n * n * (blocks - 1) if fd > 1 else 0
    return a + b + c


def check(tb, tables, case, rng, workdir, inject=None):
    """The case's run and its checks: a list of failures, one line each."""
    dtype, array, m, k, p, dataflow, extra = case
    rows, cols = (int(x) for x in (array.split("x") * 2)[:2])
    arrays = 1
    for x in option(extra, "--fabric", "1").split("x"):
        arrays *= int(x)
    a, b = operands(rng, dtype, m, k, p)
    np.save(workdir / "a.npy", a)
    np.save(workdir / "b.npy", b)
    vcd = workdir / "job.vcd"
    counts_file = workdir / "counts.yaml"
    cycle = "functional" not in extra
    cmd = [tb, "--dtype", dtype, "--array", array, "--a", str(workdir / "a.npy"), "--b",
           str(workdir / "b.npy"), "--dataflow", dataflow, "--energy", "horowitz45", "--json", "-",
           "--action-counts", str(counts_file)] + extra
    if cycle:
        cmd += ["--vcd", str(vcd)]
    if inject:
        cmd += ["--inject", inject]
    run = subprocess.run(cmd, capture_output=True, text=True)
    what = f"{dtype} {array} {m}x{k}x{p} {dataflow} {' '.join(extra)}"
    failures = []
    if run.returncode != 0:
        failures.append(f"{what}: systolic-tb exited {run.returncode}: {run.stderr.strip()[:300]}")
        if not run.stdout:
            return failures
    report = json.loads(run.stdout)
    comps = report["energy"]["components"]
    count = lambda comp, action: comps[comp]["actions"][action]["count"]

    def expect(name, want, got):
        if want != got:
            failures.append(f"{what}: {name}: expected {want}, counted {got}")

    pairs = int((nonzero(a, dtype).astype(np.int64) @ nonzero(b, dtype).astype(np.int64)).sum())
    expect("mac_random (numpy's nonzero pairs)", pairs, count("pe", "mac_random"))
    actions = sum(count("pe", x) for x in ("mac_random", "mac_gated", "idle", "preload"))
    expect("PE actions (R x C x arrays x edges)",
           rows * cols * arrays * (report["advance_edges"] + report["preload_edges"]), actions)
    expect("valid MACs", report["macs_padded"], count("pe", "mac_random") + count("pe", "mac_gated"))
    expect("real MACs (energy per MAC's)", m * k * p, report["energy"]["macs"])

    if cycle:
        ob, ab = BITS[dtype]
        names = REGISTERS[dataflow]
        width = {names["a_toggles"]: ob, names["b_toggles"]: ob, names["acc_toggles"]: ab}
        seen = vcd_toggles(vcd, width)
        for key, register in names.items():
            expect(f"{key} (the VCD's {register} registers)", seen.get(register, 0), count("registers", key))

    fabric = report.get("fabric")
    halo = sum(fabric[key][kind] for key in ("halo_words", "padding_halo_words") for kind in "abc") if fabric else 0
    expect("link words (the fabric's halo words)", halo, count("links", "link_words"))
    rule = fabric_link_words(extra, rows, m, k, p)
    if rule is not None:
        expect("link words (the skew rule's)", rule, count("links", "link_words"))
    expect("PE area units (the PEs of every array)", rows * cols * arrays,
           report["area"]["components"]["pe"]["units"])

    memory = report.get("memory")
    buffered = "--buffers" in extra
    for s, comp in (("a", "a_sram"), ("b", "b_sram"), ("c", "c_sram")):
        stream = memory["bytes"][s] if buffered else {"dram": 0, "array": 0}
        into_array, from_dram = (stream["array"], stream["dram"]) if s != "c" else (stream["dram"], stream["array"])
        expect(f"{comp} read bytes (the memory report's)", into_array, count(comp, "read_bytes"))
        expect(f"{comp} write bytes (the memory report's)", from_dram, count(comp, "write_bytes"))
    traffic = report["memory_bytes"]
    expect("DRAM A bytes (the traffic's)", traffic["a_read"], count("dram", "a_read_bytes"))
    expect("DRAM B bytes (the traffic's)", traffic["b_read"], count("dram", "b_read_bytes"))
    expect("DRAM C and partial-sum bytes (the traffic's)", traffic["c_written"] + traffic["partials"],
           count("dram", "c_write_bytes") + count("dram", "c_read_bytes"))

    table = json.loads((Path(tables) / "horowitz45.json").read_text())
    sizes = [report["energy"]["scratchpad_bytes"][s] for s in ("a", "b", "c")]
    pj = energy_of(report, table, dtype, sizes)
    for comp, want in pj.items():
        got = comps[comp]["pj"]
        if abs(want - got) > 1e-9 * max(1.0, abs(want)):
            failures.append(f"{what}: {comp}: {got} pJ, the table's entries give {want}")
    total = sum(pj.values())
    if abs(report["energy"]["total_pj"] - total) > 1e-9 * total:
        failures.append(f"{what}: total {report['energy']['total_pj']} pJ, the table's entries give {total}")

    doc = yaml.safe_load(counts_file.read_text())
    yaml_counts = {(comp["name"], a["name"]): a["counts"] for comp in doc["action_counts"]["local"]
                   for a in comp["action_counts"]}
    expect("action_counts.yaml's mac_random", count("pe", "mac_random"),
           next((v for (c, a), v in yaml_counts.items() if a == "mac_random"), None))
    return failures


def main():
    tb, tables = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(38)
    failures = []
    with tempfile.TemporaryDirectory() as d:
        workdir = Path(d)
        for case in CASES:
            failures += check(tb, tables, case, rng, workdir)
        # The planted defect: the run fails on its own check, and this script's checks see it too.
        planted = check(tb, tables, CASES[0], rng, workdir, inject="miscount-gated")
        if not any("exited 1" in f for f in planted) or not any("numpy" in f for f in planted):
            failures.append("--inject miscount-gated was not caught: " + "; ".join(planted))
    for f in failures:
        print(f)
    print(f"energy_check: {len(CASES)} jobs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
