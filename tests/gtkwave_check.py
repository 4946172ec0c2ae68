#!/usr/bin/python3
"""systolic-tb --gtkw, opened in GTKWave itself (headless, under xvfb-run, driven by its Tcl API).

    gtkwave_check.py SYSTOLIC_TB SEED_GTKW

For each job it writes the VCD and the save file, loads both in GTKWave and reads back the rows as
GTKWave names them and the markers. Every row must have a name of its own (no two PEs shown as
"acc[63:0]"), each PE's rows must name the PE, the primary marker and marker A must sit on the first
tile's first advance edge and marker B on its last (where GTKWave shows advance = 1 and that tile),
and the zoom must leave a clock at least 8 pixels wide, with the first edge in the window. The save
file written for the seed example must equal docs/seed.gtkw.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

TCL = r"""
proc rows {} {
    set n [gtkwave::getTotalNumTraces]
    for {set i 0} {$i < $n} {incr i} {
        puts "ROW\t[gtkwave::getTraceFlagsFromIndex $i]\t[gtkwave::getTraceNameFromIndex $i]\t[gtkwave::getTraceValueAtMarkerFromIndex $i]"
    }
}
puts "MARKER\t[gtkwave::getMarker]\t[gtkwave::getNamedMarker A]\t[gtkwave::getNamedMarker B]"
rows
gtkwave::setMarker [gtkwave::getNamedMarker B]
puts "AT_B"
rows
gtkwave::/File/Quit
"""

JOBS = [
    ("seed example", []),
    ("K split, 9 tiles", ["--array", "4", "--m", "10", "--k", "7", "--p", "9", "--k-tile", "3"]),
    ("fabric", ["--array", "2", "--fabric", "2x2", "--m", "4", "--k", "4", "--p", "4"]),
    ("fp32, some PEs", ["--dtype", "fp32", "--array", "4", "--m", "6", "--k", "5", "--p", "6",
                        "--vcd-pes", "0:1,1:2"]),
]
GROUP_BEGIN, GROUP_END = 1 << 23, 1 << 24


def advance_edges(vcd_text):
    """Times at which tb.controller.advance rises while tb.controller.tile is the first tile's."""
    scope, names = [], {}
    for line in vcd_text.split("$enddefinitions")[0].split("\n"):
        t = line.split()
        if t[:1] == ["$scope"]:
            scope.append(t[2])
        elif t[:1] == ["$upscope"]:
            scope.pop()
        elif t[:1] == ["$var"]:
            names[".".join(scope + [t[4]])] = t[3]
    adv, tile = names["tb.controller.advance"], names["tb.controller.tile"]
    now, tiles, edges = 0, [], []
    value = {}
    for line in vcd_text.split("$enddefinitions")[1].split("\n"):
        if line.startswith("#"):
            now = int(line[1:])
        elif line[:1] in "01" and line[1:] == adv:
            if line[0] == "1":
                edges.append((now, value.get(tile, 0)))
        elif line.startswith("b") and line.split()[1] == tile:
            value[tile] = int(line.split()[0][1:], 2)
            tiles.append(value[tile])
    first = tiles[0] if tiles else 0
    return [t for t, k in edges if k == first], first


def main():
    if len(sys.argv) != 3:
        print("usage: gtkwave_check.py SYSTOLIC_TB SEED_GTKW", file=sys.stderr)
        return 2
    tb, seed_gtkw = (os.path.abspath(a) for a in sys.argv[1:])
    for tool in ("gtkwave", "xvfb-run"):
        if not shutil.which(tool):
            print(f"{tool} not found: install gtkwave and xvfb (scripts/setup)", file=sys.stderr)
            return 1
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
        return ok

    with tempfile.TemporaryDirectory() as work:
        tcl = os.path.join(work, "show.tcl")
        with open(tcl, "w") as f:
            f.write(TCL)
        for label, args in JOBS:
            run = subprocess.run([tb, *args, "--vcd", "w.vcd", "--gtkw", "w.gtkw", "--no-progress"],
                                 cwd=work, capture_output=True, text=True)
            if not check(run.returncode == 0, f"{label}: systolic-tb exit {run.returncode}: {run.stderr}"):
                continue
            if label == "seed example":
                subprocess.run([tb, "--vcd", "seed.vcd", "--gtkw", "seed.gtkw"], cwd=work, check=True,
                               capture_output=True)
                check(open(os.path.join(work, "seed.gtkw")).read() == open(seed_gtkw).read(),
                      "docs/seed.gtkw is not the save file systolic-tb writes for the seed example: "
                      "regenerate it (docs/waveforms.md)")
            shown = subprocess.run(["xvfb-run", "-a", "gtkwave", "-S", tcl, "w.vcd", "w.gtkw"], cwd=work,
                                   capture_output=True, text=True, timeout=120).stdout
            parts = shown.split("AT_B")
            rows = [line.split("\t")[1:] for line in parts[0].split("\n") if line.startswith("ROW\t")]
            rows_b = [line.split("\t")[1:] for line in parts[-1].split("\n") if line.startswith("ROW\t")]
            marker = next((line.split("\t")[1:] for line in shown.split("\n") if line.startswith("MARKER")), None)
            if not check(rows and marker and len(parts) == 2, f"{label}: GTKWave showed nothing:\n{shown}"):
                continue
            signals = [r for r in rows if not int(r[0]) & (GROUP_BEGIN | GROUP_END)]
            names = [r[1] for r in signals]
            dup = sorted({n for n in names if names.count(n) > 1})
            check(not dup, f"{label}: GTKWave shows several rows named {dup}")
            pe_rows = [n for n in names if re.search(r"(^|_)(acc|terms|a|a_valid|b|b_valid)$", n)]
            check(pe_rows and all(re.search(r"pe_\d+_\d+_", n) for n in pe_rows),
                  f"{label}: PE rows that do not name their PE: {pe_rows[:6]}")
            edges, first_tile = advance_edges(open(os.path.join(work, "w.vcd")).read())
            check([int(x) for x in marker] == [edges[0], edges[0], edges[-1]],
                  f"{label}: markers {marker}, the first tile's edges are at {edges[0]} .. {edges[-1]}")
            value_b = {r[1]: r[2] for r in rows_b}
            check(value_b.get("advance") == "1" and value_b.get("tile[31:0]") == str(first_tile),
                  f"{label}: at marker B GTKWave shows advance={value_b.get('advance')} "
                  f"tile={value_b.get('tile[31:0]')}")
            text = open(os.path.join(work, "w.gtkw")).read()
            zoom = float(re.search(r"^\*(-?[\d.]+) ", text, re.M).group(1))
            start = int(re.search(r"^\[timestart\] (\d+)", text, re.M).group(1))
            per_pixel = 2.0 ** -zoom
            check(1000 / per_pixel >= 8, f"{label}: a clock is {1000 / per_pixel:.1f} pixels wide")
            check(start <= edges[0] < start + 900 * per_pixel,
                  f"{label}: the window from {start} misses the first edge at {edges[0]}")
            print(f"{label}: {len(names)} rows, markers {marker}, {1000 / per_pixel:.1f} pixels a clock")
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
