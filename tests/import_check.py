#!/usr/bin/python3
"""scripts/import as a user runs it, then systolic-run --expect on what it wrote.

    import_check.py SYSTOLIC_RUN IMPORT CASE

CASE is one of:
  resnet18-fp32  torchvision's resnet18 at 32x32 in fp32: every layer's C within the tolerance;
  resnet18-int8  the same in int8: every layer's int32 C exact, and the scales map the codes back
                 to the fp32 import's C;
  onnx           a small module exported with torch.onnx.export (strides, padding, dilation, groups,
                 depthwise, pooling, Gemm and a MatMul of two activations) imported in fp32 and int8,
                 and resnet18 exported and imported: the same GEMM shapes and names as from
                 torchvision;
  bad-input      a corrupt file, a wrong input shape, an unsupported operator, a too new opset and a
                 non-empty --out: exit 2, one line on stderr, nothing written.
Exit status 0 when the case passes, 1 otherwise.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

RUN, IMPORT = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def run(cmd, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def do_import(args, out):
    r = run([IMPORT] + args + ["--out", out])
    check(r.returncode == 0, f"import {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def topology(d):
    with open(os.path.join(d, "topology.csv")) as f:
        rows = [[x.strip() for x in line.split(",")] for line in f.read().splitlines()]
    check(rows[0][:4] == ["Layer", "M", "N", "K"], f"{d}: header {rows[0]}")
    return [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows[1:]]


def run_expect(d, dtype, tmp, name):
    """systolic-run on the import with --expect; every layer must pass, its C compared."""
    out = os.path.join(tmp, name)
    r = run([RUN, "--topology", os.path.join(d, "topology.csv"), "--data", os.path.join(d, "data"),
             "--expect", os.path.join(d, "expected"), "--dtype", dtype, "--array", "16",
             "--engine", "functional", "--no-progress", "--out", out])
    check(r.returncode == 0, f"systolic-run on {d}: exit {r.returncode}: {r.stderr.strip()} "
                             f"{r.stdout[-2000:]}")
    if r.returncode not in (0, 1):
        return []
    with open(os.path.join(out, "COMPUTE_REPORT.csv")) as f:
        rows = [{k.strip(): v.strip() for k, v in row.items() if k} for row in csv.DictReader(f)]
    layers = topology(d)
    check(len(rows) == len(layers), f"{name}: {len(rows)} report rows for {len(layers)} layers")
    for row, (layer, m, n, k) in zip(rows, layers):
        check(row["Layer"] == layer and (int(row["M"]), int(row["P"]), int(row["K"])) == (m, n, k),
              f"{name}: row {row['Layer']} is not {layer}")
        check(row["Pass"] == "PASS" and row["Expect"] == "pass" and row["Expect Failures"] == "0",
              f"{name}: layer {layer}: Pass {row['Pass']}, Expect {row['Expect']}, "
              f"{row['Expect Failures']} failures")
        if dtype == "int8":
            check(float(row["Max Abs Error"]) == 0, f"{name}: layer {layer}: int8 error {row['Max Abs Error']}")
    return rows


def check_files(d, dtype):
    """Every layer's files: the dtypes and shapes systolic-run reads, and C = A B recomputed here."""
    for layer, m, n, k in topology(d):
        a = np.load(os.path.join(d, "data", layer + ".a.npy"))
        b = np.load(os.path.join(d, "data", layer + ".b.npy"))
        c = np.load(os.path.join(d, "expected", layer + ".c.npy"))
        want = np.int8 if dtype == "int8" else np.float32
        check(a.dtype == want and b.dtype == want, f"{layer}: operand dtypes {a.dtype}, {b.dtype}")
        check(c.dtype == (np.int32 if dtype == "int8" else np.float32), f"{layer}: C dtype {c.dtype}")
        check(a.shape == (m, k) and b.shape == (k, n) and c.shape == (m, n),
              f"{layer}: shapes {a.shape} {b.shape} {c.shape} for M={m} N={n} K={k}")
        if dtype == "int8":
            check(np.array_equal(a.astype(np.int64) @ b.astype(np.int64), c.astype(np.int64)),
                  f"{layer}: C is not the exact product of the codes")
            check(a.min() >= -127 and b.min() >= -127, f"{layer}: a code below -127")
            with open(os.path.join(d, "data", layer + ".scales.json")) as f:
                s = json.load(f)
            check(len(s["b_scales"]) == n and len(s["c_scales"]) == n, f"{layer}: {len(s['b_scales'])} scales")
        else:
            ref = a.astype(np.float64) @ b.astype(np.float64)
            check(np.allclose(c, ref, rtol=1e-4, atol=1e-4 * (np.abs(ref).max() + 1)),
                  f"{layer}: C is not A B")


def case_resnet18(dtype):
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "r18")
        do_import(["--torchvision", "resnet18", "--input-shape", "1,3,32,32", "--dtype", dtype], d)
        if failures:
            return
        layers = topology(d)
        names = [x[0] for x in layers]
        check(len(layers) == 21, f"{len(layers)} GEMMs, resnet18 has 20 convolutions and fc")
        check(names[:3] == ["conv1", "layer1.0.conv1", "layer1.0.conv2"] and names[-1] == "fc",
              f"names {names[:3]} ... {names[-1]}")
        check("layer2.0.downsample.0" in names, "no layer2.0.downsample.0")
        check(layers[0][1:] == (16 * 16, 64, 3 * 7 * 7), f"conv1 is {layers[0]}")
        check(layers[-1][1:] == (1, 1000, 512), f"fc is {layers[-1]}")
        check_files(d, dtype)
        rows = run_expect(d, dtype, tmp, "run")
        check(len(rows) == 21, "not every layer ran")
        if dtype == "int8":
            # The scales give back the fp32 import's C (the same seeded weights and input).
            f = os.path.join(tmp, "f")
            do_import(["--torchvision", "resnet18", "--input-shape", "1,3,32,32", "--dtype", "fp32"], f)
            for layer, *_ in layers:
                with open(os.path.join(d, "data", layer + ".scales.json")) as fh:
                    s = json.load(fh)
                c = np.load(os.path.join(d, "expected", layer + ".c.npy")) * np.asarray(s["c_scales"])[None, :]
                ref = np.load(os.path.join(f, "expected", layer + ".c.npy")).astype(np.float64)
                err = np.linalg.norm(c - ref) / np.linalg.norm(ref)
                check(err < 0.05, f"{layer}: dequantized C is {err:.3f} off the fp32 C")


class Tiny:
    """A small network with every convolution parameter the lowering handles."""

    @staticmethod
    def model(torch):
        nn = torch.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 8, 3, stride=(2, 1), padding=(1, 2), bias=True)
                self.bn = nn.BatchNorm2d(8)
                self.grouped = nn.Conv2d(8, 12, 3, padding=2, dilation=2, groups=2, bias=False)
                self.depthwise = nn.Conv2d(12, 12, 3, padding=1, groups=12)
                self.pool = nn.MaxPool2d(2)
                self.proj = nn.Linear(12, 10)
                self.head = nn.Linear(10, 5)

            def forward(self, x):
                x = torch.relu(self.bn(self.stem(x)))
                x = torch.clamp(self.grouped(x), 0, 6)
                x = self.pool(self.depthwise(x) + x)
                t = x.flatten(2).transpose(1, 2)  # tokens: N, L, C
                q = self.proj(t)
                att = torch.softmax(torch.matmul(q, q.transpose(1, 2)) / 3.0, dim=-1)
                y = torch.matmul(att, q).mean(dim=1)
                return self.head(y)

        torch.manual_seed(3)
        return Net().eval()


def export(torch, model, shape, path, **kw):
    torch.onnx.export(model, torch.randn(shape), path, opset_version=13, **kw)


def case_onnx():
    import torch
    import torchvision
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tiny.onnx")
        export(torch, Tiny.model(torch), (1, 3, 16, 12), path)
        for dtype in ("fp32", "int8"):
            d = os.path.join(tmp, "tiny-" + dtype)
            do_import([path, "--input-shape", "1,3,16,12", "--dtype", dtype], d)
            if failures:
                return
            layers = topology(d)
            names = [x[0] for x in layers]
            want = ["stem", "grouped.g0", "grouped.g1"] + [f"depthwise.g{i}" for i in range(12)]
            check(names[:15] == want, f"{dtype}: names {names[:15]}")
            check(layers[0][1:] == (8 * 14, 8, 27), f"stem is {layers[0]}")  # 16x12 -> 8x14 (stride 2, 1; pads 1, 2)
            check(layers[1][1:] == (8 * 14, 6, 4 * 9), f"grouped.g0 is {layers[1]}")
            check(layers[3][1:] == (8 * 14, 1, 9), f"depthwise.g0 is {layers[3]}")
            check("proj" in names and "head" in names, f"no proj or head in {names}")
            check(sum(1 for n in names if n.startswith("MatMul")) == 2 or
                  sum(1 for _, m, n_, k in layers if (m, n_, k) in ((32, 32, 10), (32, 10, 32))) == 2,
                  f"the attention MatMuls are not GEMMs: {layers}")
            check_files(d, dtype)
            run_expect(d, dtype, tmp, "run-" + dtype)
        # The interpreter against torch: the network's output from the ONNX file equals torch's.
        import importlib.machinery
        import importlib.util
        loader = importlib.machinery.SourceFileLoader("systolic_import", IMPORT)
        spec = importlib.util.spec_from_loader("systolic_import", loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        import onnx
        runner = mod.OnnxRunner(torch, onnx, mod.load_onnx(onnx, path))
        x = torch.randn(1, 3, 16, 12)
        got = runner.run(x, None, {})[0]
        with torch.no_grad():
            ref = Tiny.model(torch)(x)
        check(torch.allclose(got, ref, rtol=1e-4, atol=1e-5), f"interpreter output {got} is not torch's {ref}")
        # resnet18 exported: the same GEMMs, by the same names, as torchvision gives.
        torch.manual_seed(1)
        r18 = torchvision.models.resnet18(weights=None).eval()
        path = os.path.join(tmp, "r18.onnx")
        export(torch, r18, (1, 3, 32, 32), path)
        d, t = os.path.join(tmp, "r18-onnx"), os.path.join(tmp, "r18-tv")
        do_import([path, "--input-shape", "1,3,32,32", "--dtype", "fp32"], d)
        do_import(["--torchvision", "resnet18", "--input-shape", "1,3,32,32", "--dtype", "fp32"], t)
        if not failures:
            check(topology(d) == topology(t), f"onnx {topology(d)[:3]} vs torchvision {topology(t)[:3]}")
            run_expect(d, "fp32", tmp, "run-r18")


def expect_bad(args, out, words):
    parent = os.path.dirname(out)
    while not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    before = sorted(os.listdir(parent))
    r = run([IMPORT] + args + ["--out", out])
    what = " ".join(args)
    check(r.returncode == 2, f"{what}: exit {r.returncode}, wanted 2 ({r.stderr.strip()})")
    check(r.stderr.count("\n") == 1 and r.stderr.startswith("import: error: "),
          f"{what}: stderr is not one line: {r.stderr!r}")
    for w in words:
        check(w in r.stderr, f"{what}: {w!r} not in {r.stderr!r}")
    check(r.stdout == "", f"{what}: stdout {r.stdout!r}")
    check(sorted(os.listdir(parent)) == before, f"{what}: wrote {set(os.listdir(parent)) - set(before)}")


def case_bad_input():
    import onnx
    import torch
    from onnx import TensorProto, helper
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        out = os.path.join(work, "out")
        corrupt = os.path.join(tmp, "corrupt.onnx")
        with open(corrupt, "wb") as f:
            f.write(b"\x08\x07\x12\x04junk" + bytes(range(256)) * 4)
        expect_bad([corrupt, "--input-shape", "1,3,8,8", "--dtype", "fp32"], out, ["corrupt.onnx", "not an ONNX"])
        good = os.path.join(tmp, "tiny.onnx")
        export(torch, Tiny.model(torch), (1, 3, 16, 12), good)
        # A truncated file is corrupt too.
        with open(good, "rb") as f:
            raw = f.read()
        with open(corrupt, "wb") as f:
            f.write(raw[:len(raw) // 2])
        expect_bad([corrupt, "--input-shape", "1,3,16,12", "--dtype", "fp32"], out, ["corrupt.onnx"])
        expect_bad([good, "--input-shape", "1,3,16,13", "--dtype", "fp32"], out,
                   ["--input-shape 1,3,16,13", "does not fit", "1,3,16,12"])
        expect_bad(["--torchvision", "resnet18", "--input-shape", "1,4,32,32", "--dtype", "int8"], out,
                   ["--input-shape 1,4,32,32 does not fit the model"])
        expect_bad(["--torchvision", "resnet18", "--input-shape", "1,3,x", "--dtype", "fp32"], out,
                   ["--input-shape"])
        expect_bad(["--torchvision", "no_such_net", "--input-shape", "1,3,8,8", "--dtype", "fp32"], out,
                   ["no_such_net"])
        # An operator the interpreter does not have, named by its node.
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
        w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], np.eye(4, dtype=np.float32).ravel().tolist())
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
                                   helper.make_node("Hardmax", ["h"], ["y"], name="head/hardmax")],
                                  "g", [x], [y], [w])
        unsupported = os.path.join(tmp, "hardmax.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), unsupported)
        expect_bad([unsupported, "--input-shape", "1,4", "--dtype", "fp32"], out, ["'head/hardmax'", "Hardmax"])
        # An opset newer than onnx 1.12 reads.
        newest = onnx.defs.onnx_opset_version()
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], "g", [x], [y], [w])
        new = os.path.join(tmp, "new.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", newest + 1)]), new)
        expect_bad([new, "--input-shape", "1,4", "--dtype", "fp32"], out,
                   [f"opset {newest + 1}", f"up to {newest}"])
        # The same graph at a readable opset imports (the bad cases fail for their reason alone).
        ok = os.path.join(tmp, "ok.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), ok)
        r = run([IMPORT, ok, "--input-shape", "1,4", "--dtype", "fp32", "--out", out])
        check(r.returncode == 0 and topology(out) == [("fc", 1, 4, 4)], f"ok.onnx: {r.stderr.strip()}")
        # A non-empty --out is refused and left as it was.
        with open(os.path.join(out, "topology.csv")) as f:
            kept = f.read()
        expect_bad([ok, "--input-shape", "1,4", "--dtype", "int8"], out, ["is not empty"])
        with open(os.path.join(out, "topology.csv")) as f:
            check(f.read() == kept, "a refused import changed --out")
        expect_bad([ok, "--input-shape", "1,4", "--dtype", "fp32"], os.path.join(work, "no", "out"),
                   ["does not exist"])


CASES = {"resnet18-fp32": lambda: case_resnet18("fp32"), "resnet18-int8": lambda: case_resnet18("int8"),
         "onnx": case_onnx, "bad-input": case_bad_input}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        print(f"usage: import_check.py SYSTOLIC_RUN IMPORT {{{'|'.join(CASES)}}}", file=sys.stderr)
        sys.exit(2)
    CASES[sys.argv[3]]()
    print(f"{sys.argv[3]}: {'FAIL' if failures else 'PASS'} ({len(failures)} failures)")
    sys.exit(1 if failures else 0)
