#!/usr/bin/python3
"""A network's energy on its own operands beside the same layers on random operands of the same
shapes: the figures of docs/energy.md, "Real operands against random ones".

scripts/import lowers the network (int8, torchvision's seeded initial weights, nothing downloaded,
the activations a seeded input gives), then systolic-run prices every layer twice with --energy:
once with --data (the network's operands), once without (systolic-run's seeded random operands).
The script sums ENERGY_REPORT.csv's columns over the layers and prints the markdown table the docs
quote, then each layer's PE and register energy side by side. With --check DOC it also compares
them with what DOC's section quotes (the table's lines, and the first layer's PE energies), as the
energy_doc_real_vs_random test does.

usage: scripts/energy_real_vs_random.py [--model resnet18] [--array 32] [--engine functional]
                                        [--table horowitz45] [--build build] [--keep DIR] [--check DOC]
--keep DIR keeps the import and both runs in DIR (created; it must not exist); otherwise they go
into a temporary directory that is removed. Exit status 0; 2 with one line on stderr for bad
input; 1 when a step fails (its own message above) or, with --check, when a figure differs.
"""
import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Real operands against random ones"


def run(cmd):
    done = subprocess.run([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"energy_real_vs_random: {Path(str(cmd[0])).name} exited {done.returncode}")


def energy_rows(out):
    with open(out / "ENERGY_REPORT.csv", newline="") as f:
        return [{k.strip(): v.strip() for k, v in r.items()} for r in csv.DictReader(f)]


def total(rows, column):
    return sum(float(r[column]) for r in rows)


def joules(pj):
    """pJ as the docs write energies: µJ below a millijoule, mJ above."""
    return f"{pj / 1e6:.3g} µJ" if pj < 1e9 else f"{pj / 1e9:.3g} mJ"


def tables(model, array, engine, table, real, rand, macs):
    """The markdown table the docs quote, and one line per layer."""
    lines = [f"{model}, int8, {array} x {array}, {engine} engine, {table}", "",
             "| | the network's operands | random operands | random over real |", "|---|---|---|---|"]
    for label, column in (("PEs", "pe pJ"), ("PE registers", "registers pJ")):
        a, b = total(real, column), total(rand, column)
        lines.append(f"| {label} | {joules(a)} | {joules(b)} | {b / a:.2f} |")
    a, b = total(real, "Total pJ"), total(rand, "Total pJ")
    lines.append(f"| whole run | {joules(a)}, {a / macs['real']:.3g} pJ per MAC | "
                 f"{joules(b)}, {b / macs['random']:.3g} pJ per MAC | {b / a:.2f} |")
    layers = ["per layer: PEs and registers on the network's operands, on random ones"]
    for r, q in zip(real, rand):
        layers.append(f"  {r['Layer']:<24} PEs {joules(float(r['pe pJ'])):>9} {joules(float(q['pe pJ'])):>9}"
                      f"   registers {joules(float(r['registers pJ'])):>9} {joules(float(q['registers pJ'])):>9}")
    return lines, layers


def check(doc, lines, real, rand):
    """The section of doc quotes these figures: its table's lines, and the first layer's PE energies.
    A list of differences, one line each."""
    text = Path(doc).read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    sec = text[start:end if end >= 0 else len(text)]
    bad = [f"{doc}: the section has no line '{line}'" for line in lines[2:] if line not in sec.splitlines()]
    first = real[0]["Layer"]
    quoted = re.search(r"`" + re.escape(first) + r"`.*?its PEs take (\S+) against (\S+) µJ", " ".join(sec.split()))
    want = (joules(float(real[0]["pe pJ"])).split()[0], joules(float(rand[0]["pe pJ"])).split()[0])
    if not quoted or quoted.groups() != want:
        bad.append(f"{doc}: `{first}`'s PEs should be quoted as 'its PEs take {want[0]} against {want[1]} µJ'")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet18", help="a torchvision model [resnet18]")
    ap.add_argument("--array", default="32", help="systolic-run's --array [32]")
    ap.add_argument("--engine", default="functional", help="systolic-run's --engine [functional]")
    ap.add_argument("--table", default="horowitz45", help="systolic-run's --energy [horowitz45]")
    ap.add_argument("--build", default=str(ROOT / "build"), help="the build directory [build]")
    ap.add_argument("--keep", help="keep the import and both runs in this new directory")
    ap.add_argument("--check", metavar="DOC", help="compare the figures with those DOC quotes (docs/energy.md)")
    args = ap.parse_args()
    runner = Path(args.build) / "tools" / "run" / "systolic-run"
    if not runner.is_file():
        ap.exit(2, f"energy_real_vs_random: no {runner}: build the project first (scripts/setup)\n")
    if args.keep and Path(args.keep).exists():
        ap.exit(2, f"energy_real_vs_random: --keep {args.keep} exists; name a new directory\n")
    if args.check and SECTION not in Path(args.check).read_text(encoding="utf-8"):
        ap.exit(2, f"energy_real_vs_random: {args.check} has no section '{SECTION}'\n")

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        net = work / args.model
        run([ROOT / "scripts" / "import", "--torchvision", args.model, "--input-shape", "1,3,224,224",
             "--dtype", "int8", "--out", net])
        common = ["--topology", net / "topology.csv", "--dtype", "int8", "--array", args.array, "--engine",
                  args.engine, "--energy", args.table]
        run([runner] + common + ["--data", net / "data", "--out", work / "real"])
        run([runner] + common + ["--out", work / "random"])
        real, rand = energy_rows(work / "real"), energy_rows(work / "random")
        macs = {}
        for name in ("real", "random"):
            report = json.loads((work / name / "report.json").read_text())
            macs[name] = sum(layer["macs_real"] for layer in report["layers"])

    if [r["Layer"] for r in real] != [r["Layer"] for r in rand]:
        raise SystemExit("energy_real_vs_random: the two runs' layers differ")
    lines, layers = tables(args.model, args.array, args.engine, args.table, real, rand, macs)
    print("\n".join(lines + [""] + layers))
    if args.check:
        bad = check(args.check, lines, real, rand)
        for b in bad:
            print(b)
        print(f"energy_real_vs_random: {args.check}: {len(bad)} differences")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
