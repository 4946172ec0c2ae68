#!/usr/bin/python3
"""The figures docs/networks.md quotes for ResNet-18 are what its documented commands give now.

    networks_doc_check.py SOURCE_DIR BUILD_DIR [--update-picture]

Runs the three commands of the "ResNet-18 from import to the plot" section (scripts/import at
224x224, systolic-run --expect, scripts/draw --run), as the doc writes them, in a scratch directory
(about 15 s on two cores), and compares what the section says with the report.json they write:
the utilization range, the table of utilization per layer group (M, P, utilization), the whole
network's utilization, how many layers pass and are exact, and the error ranking (the largest
relative error with its layer, K and absolute error, the second, the smallest, and the band most
layers fall in). A figure must match to the digits it is quoted with, except the errors against
PyTorch, which move with the CPU's kernels (ERROR_SPREAD). The picture the section shows,
docs/networks-resnet18.png, must be the one the commands draw now: its Description (the summary line
scripts/draw writes into the PNG, read with PIL) must equal the one drawn here. --update-picture
copies the picture drawn here over it. Each difference is one line; exit status 0 when all match,
1 otherwise.
"""
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from PIL import Image

SECTION = "## ResNet-18 from import to the plot"
PICTURE = "networks-resnet18.png"
NUM = r"\d+(?:\.\d+)?(?:e-?\d+)?"  # a figure as the doc writes it


def section(doc):
    text = open(doc, encoding="utf-8").read()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:end if end >= 0 else len(text)]


def commands(sec):
    """The ```sh block's commands, continuation lines joined."""
    m = re.search(r"```sh\n(.*?)```", sec, re.S)
    return [shlex.split(c) for c in m.group(1).replace("\\\n", " ").strip().split("\n")]


def agrees(quoted, value):
    """value, rounded to the significant digits of the quoted figure, is the quoted figure."""
    digits = len(quoted.split("e")[0].replace(".", "").lstrip("0")) or 1
    return float(f"{value:.{digits}g}") == float(quoted)


# The errors are taken against PyTorch's fp32 C, which scripts/import computes with torch.matmul, that
# is OpenBLAS's sgemm, whose kernel (and so summation order) OpenBLAS picks for the CPU: on Intel's
# AVX-512 CPUs its SkylakeX kernel gives errors up to twice or half the section's, ranked otherwise.
# The section's figures are those of its Haswell kernel, which it picks on AMD's CPUs and Intel's
# without AVX-512; the commands run with that kernel pinned (OPENBLAS_CORETYPE, read when OpenBLAS
# loads), so that they give the same C on every x86-64 CPU with AVX2 and FMA. On a CPU without them
# the error figures are not checked (a line says so). An error figure must be within ERROR_SPREAD of
# the report's, and a layer quoted at a rank must have an error within ERROR_SPREAD of that rank's (a
# near tie may swap). Everything else, the model's own counts, must match exactly.
ERROR_SPREAD = 0.35
PINNED_KERNEL = {"OPENBLAS_CORETYPE": "Haswell"}


def cpu_has(*flags):
    try:
        with open("/proc/cpuinfo") as f:
            words = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return all(flag in words for flag in flags)


def near(quoted, value):
    return abs(float(quoted) - value) <= ERROR_SPREAD * max(abs(value), 1e-30)


def at_rank(name, rank, ranked, rel):
    return name in rel and near(rel[name], rel[ranked[rank]])


def without_error(description):
    """A picture's summary without its error part (see ERROR_SPREAD), and that part."""
    head, _, error = (description or "").partition(", largest relative error ")
    return head, error


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--update-picture"):
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    src, build = (os.path.abspath(a) for a in sys.argv[1:3])
    doc = os.path.join(src, "docs", "networks.md")
    sec = section(doc)
    bad = []
    pinned = cpu_has("avx2", "fma")
    env = dict(os.environ, **PINNED_KERNEL) if pinned else None
    if not pinned:
        print("networks_doc_check: no AVX2 and FMA here, so OpenBLAS's Haswell kernel cannot be pinned: "
              "the errors against PyTorch are not checked")
    with tempfile.TemporaryDirectory() as work:
        summary = None
        for argv in commands(sec):
            exe = argv[0]
            exe = os.path.join(build, exe[len("build/"):]) if exe.startswith("build/") else os.path.join(src, exe)
            r = subprocess.run([exe, *argv[1:]], cwd=work, capture_output=True, text=True, env=env)
            if r.returncode != 0:
                print(f"{doc}: '{' '.join(argv)}' exited {r.returncode}: {r.stderr.strip()[-300:]}")
                return 1
            if argv[0] == "scripts/draw":
                summary = r.stdout.strip()
        run_dir = next(a[i + 1] for a in commands(sec) if "--run" in a for i, w in enumerate(a) if w == "--run")
        rep = json.load(open(os.path.join(work, run_dir), encoding="utf-8"))
        out_dir = next(a[i + 1] for a in commands(sec) if "--run" in a for i, w in enumerate(a) if w == "--out-dir")
        drawn = os.path.join(work, out_dir, "network.png")
        with Image.open(drawn) as im:
            described = im.text.get("Description")
        if summary != f"{os.path.join(out_dir, 'network.png')}: {described}":
            bad.append(f"scripts/draw printed {summary!r}, its picture's Description is {described!r}")
        picture = os.path.join(src, "docs", PICTURE)
        if len(sys.argv) == 4:
            shutil.copyfile(drawn, picture)
            print(f"networks_doc_check: {picture} updated")
        with Image.open(picture) as im:
            shown = im.text.get("Description")
        (shown_head, shown_error), (drawn_head, drawn_error) = without_error(shown), without_error(described)
        shown_value, _, shown_layer = shown_error.partition(" in ")
        drawn_value, _, drawn_layer = drawn_error.partition(" in ")
        if shown_head != drawn_head or not shown_value or not drawn_value or \
                (pinned and not near(shown_value, float(drawn_value))):
            bad.append(f"docs/{PICTURE} shows {shown!r}, the commands draw {described!r} now: "
                       f"rerun with --update-picture")

    layers = rep["layers"]
    util = {r["layer"]: 100 * r["macs_real"] / r["macs_padded"] for r in layers}
    rel = {r["layer"]: r["expect"]["max_rel_error"] for r in layers}

    prose = " ".join(sec.split())  # a sentence may break anywhere

    def need(pattern, what):
        m = re.search(pattern, prose)
        if not m:
            bad.append(f"{doc}: no {what} ({pattern!r}) in the ResNet-18 section")
        return m

    if m := need(r"utilization runs from ([\d.]+)% to ([\d.]+)%", "utilization range"):
        for q, v in zip(m.groups(), (min(util.values()), max(util.values()))):
            if not agrees(q, v):
                bad.append(f"{doc}: the utilization range quotes {q}%, the report gives {v:.1f}%")
    rows = re.findall(r"^\| `([^`]+)` \| (\d+) \| (\d+) \| ([\d.]+)% \|$", sec, re.M)
    if not rows:
        bad.append(f"{doc}: no utilization table in the ResNet-18 section")
    covered = set()
    for pattern, m_, p_, u in rows:
        recs = [r for r in layers if fnmatch.fnmatchcase(r["layer"], pattern)]
        covered.update(r["layer"] for r in recs)
        if not recs:
            bad.append(f"{doc}: the table's `{pattern}` names no layer of the report")
        for r in recs:
            if (str(r["m"]), str(r["p"])) != (m_, p_) or not agrees(u, util[r["layer"]]):
                bad.append(f"{doc}: the table gives `{pattern}` M {m_}, P {p_}, {u}%; {r['layer']} has M {r['m']}, "
                           f"P {r['p']}, {util[r['layer']]:.1f}%")
    if rows and covered != set(util):
        bad.append(f"{doc}: the table leaves out {sorted(set(util) - covered)}")
    if m := need(r"Over the whole network it is ([\d.]+)%", "whole-network utilization"):
        whole = 100 * sum(r["macs_real"] for r in layers) / sum(r["macs_padded"] for r in layers)
        if not agrees(m.group(1), whole):
            bad.append(f"{doc}: the whole network's utilization is quoted {m.group(1)}%, the report gives {whole:.1f}%")
    if m := need(r"All (\d+) layers pass `--expect`", "pass count"):
        passed = sum(1 for r in layers if r["expect"]["result"] == "pass")
        if int(m.group(1)) != len(layers) or passed != len(layers):
            bad.append(f"{doc}: 'All {m.group(1)} layers pass'; {passed} of {len(layers)} pass")
    if need(r"None is exact in fp32", "exactness") and any(v == 0 for v in rel.values()):
        bad.append(f"{doc}: 'None is exact'; exact: {sorted(k for k, v in rel.items() if v == 0)}")
    ranked = sorted(rel, key=rel.get, reverse=True)
    if pinned and (m := need(r"the largest, (" + NUM + r") in `([^`]+)` \(K = (\d+)\), comes with a largest absolute error of "
                 r"(" + NUM + r")", "largest error")):
        top = next(r for r in layers if r["layer"] == ranked[0])
        quoted = next((r for r in layers if r["layer"] == m.group(2)), top)
        if not at_rank(m.group(2), 0, ranked, rel) or not near(m.group(1), rel[ranked[0]]) \
                or int(m.group(3)) != quoted["k"] or not near(m.group(4), quoted["expect"]["max_abs_error"]):
            bad.append(f"{doc}: the largest error is quoted {m.group(1)} in {m.group(2)} (K = {m.group(3)}, absolute "
                       f"{m.group(4)}); the report gives {rel[ranked[0]]:.3g} in {ranked[0]} (K = {top['k']}, absolute "
                       f"{top['expect']['max_abs_error']:.3g})")
    if pinned and (m := need(r"Second is `([^`]+)` at (" + NUM + r")", "second error")):
        if not at_rank(m.group(1), 1, ranked, rel) or not near(m.group(2), rel[ranked[1]]):
            bad.append(f"{doc}: the second error is quoted {m.group(2)} in {m.group(1)}; the report gives "
                       f"{rel[ranked[1]]:.3g} in {ranked[1]}")
    if pinned and (m := need(r"the smallest `([^`]+)` at (" + NUM + r")", "smallest error")):
        if not at_rank(m.group(1), -1, ranked, rel) or not near(m.group(2), rel[ranked[-1]]):
            bad.append(f"{doc}: the smallest error is quoted {m.group(2)} in {m.group(1)}; the report gives "
                       f"{rel[ranked[-1]]:.3g} in {ranked[-1]}")
    if pinned and (m := need(r"most layers fall between (" + NUM + r") and (" + NUM + r")", "error band")):
        lo, hi = float(m.group(1)), float(m.group(2))
        inside = sum(1 for v in rel.values() if lo <= v <= hi)
        if 2 * inside <= len(rel):
            bad.append(f"{doc}: 'most layers fall between {m.group(1)} and {m.group(2)}': {inside} of {len(rel)} do")
    for b in bad:
        print(b)
    print(f"networks_doc_check: {len(layers)} layers, ranking {', '.join(f'{n} {rel[n]:.3g}' for n in ranked[:3])} ... "
          f"{ranked[-1]} {rel[ranked[-1]]:.3g}; {len(bad)} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
