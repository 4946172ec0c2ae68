#!/usr/bin/python3
"""scripts/import as a user runs it, then systolic-run --expect on what it wrote.

    import_check.py SYSTOLIC_RUN IMPORT CASE

CASE is one of:
  resnet18-fp32  torchvision's resnet18 at 32x32 in fp32: every layer's C within the tolerance;
  resnet18-int8  the same in int8: every layer's int32 C exact, and the scales map the codes back
                 to the fp32 import's C;
  vit            torchvision's vit_b_32 in int8, whose nn.MultiheadAttention layers (called with
                 keyword arguments) become their GEMMs: one input projection, Q.K^T and
                 softmax(Q.K^T).V per head, the output projection; the import checks that they
                 reproduce each attention's output, and every layer's int32 C is exact;
  onnx           a small module exported with torch.onnx.export (strides, padding, dilation, groups,
                 depthwise, pooling, Gemm and a MatMul of two activations) imported in fp32 and int8,
                 and resnet18 exported and imported: the same GEMM shapes and names as from
                 torchvision;
  bad-input      a corrupt file, a wrong input shape, an unsupported operator, a too new opset and a
                 non-empty --out: exit 2, one line on stderr, nothing written.
  external-data  ONNX weights in external files: read from the model's own directory, and refused
                 (exit 3) when they name a file outside it, by ".." or an absolute path (onnx 1.12
                 strips the "/") or a symlink, however the import is started;
  signals        SIGINT, SIGTERM and SIGHUP during the writing: the temporary removed, nothing
                 written, one line, the process ended by the signal; an ignored SIGHUP stays ignored;
  special-files  a FIFO, /dev/zero, a directory, an empty file and one over protobuf's 2 GiB as
                 the model: one line at once, exit 2, nothing read;
  long-names     a 240-byte --out and 250-byte node names import (file names fit NAME_MAX), and
                 systolic-run reads what they wrote; a 256-byte --out is one line;
  input-shape    --input-shape with or without the batch, with "," or "x", the same in
                 scripts/import and scripts/infer; a wrong rank says the form it wants.
Exit status 0 when the case passes, 1 otherwise.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

RUN, IMPORT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
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
    # systolic-run gathers the GEMMs into network layers by their names alone; they must be the
    # layers the import took them from (import.json's source of each GEMM).
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    with open(os.path.join(d, "import.json")) as f:
        sources = {}
        for e in json.load(f)["layers"]:
            sources.setdefault(e["source"], set()).add(e["layer"])
    names = {r["layer_id"]: r["layer"] for r in rep["layers"]}
    gathered = {frozenset(names[i] for i in lay["layer_ids"]) for lay in rep["arrays"][0]["network_layers"]}
    check(gathered == {frozenset(v) for v in sources.values()},
          f"{name}: systolic-run's network layers are not the import's: "
          f"{sorted(map(sorted, gathered ^ {frozenset(v) for v in sources.values()}))[:4]}")
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


def case_vit():
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "vit")
        do_import(["--torchvision", "vit_b_32", "--input-shape", "1,3,224,224", "--dtype", "int8"], d)
        if failures:
            return
        layers = topology(d)
        shapes = {name: (m, n, k) for name, m, n, k in layers}
        tokens, width, heads, head = 50, 768, 12, 64  # 7 x 7 patches and the class token
        for block in range(12):
            attn = f"encoder.layers.encoder_layer_{block}.self_attention"
            names = [x[0] for x in layers if x[0].startswith(attn + ".")]
            want = ([f"{attn}.in_proj"] + [f"{attn}.{p}.b{i}" for i in range(heads) for p in ("qk", "av")]
                    + [f"{attn}.out_proj"])
            check(names == want, f"{attn}: GEMMs {names[:4]} ..., not {want[:4]} ...")
            check(shapes.get(f"{attn}.in_proj") == (tokens, 3 * width, width), f"{attn}.in_proj")
            check(shapes.get(f"{attn}.qk.b0") == (tokens, tokens, head), f"{attn}.qk.b0")
            check(shapes.get(f"{attn}.av.b11") == (tokens, head, tokens), f"{attn}.av.b11")
            check(shapes.get(f"{attn}.out_proj") == (tokens, width, width), f"{attn}.out_proj")
        check(len(layers) == 1 + 12 * (2 + 2 * heads + 2) + 1, f"{len(layers)} GEMMs")
        check_files(d, "int8")
        rows = run_expect(d, "int8", tmp, "run")
        check(len(rows) == len(layers), "not every layer ran")


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


def expect_bad(args, out, words, status=2, cwd=None, timeout=600):
    parent = os.path.dirname(out)
    while not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    before = sorted(os.listdir(parent))
    what = " ".join(args)
    try:
        r = subprocess.run([IMPORT] + args + ["--out", out], capture_output=True, text=True,
                           timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:  # a guard against a hang, not a measure of speed
        check(False, f"{what}: still running after {timeout} s")
        return
    check(r.returncode == status, f"{what}: exit {r.returncode}, wanted {status} ({r.stderr.strip()})")
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


# ---------------------------------------------------------------------------------------------
# Hostile input (issue 36): each case failed before its fix.

def matmul_model(path, names=("fc",), weights=None):
    """x (1x4) through MatMuls with 4x4 weights, named `names`; `weights` maps a weight's name to a
    TensorProto to use instead of the identity."""
    import onnx
    from onnx import TensorProto, helper
    weights = weights or {}
    nodes, inits, prev = [], [], "x"
    for i, name in enumerate(names):
        w = weights.get(f"w{i}") or helper.make_tensor(f"w{i}", TensorProto.FLOAT, [4, 4],
                                                       (np.eye(4, dtype=np.float32) * (i + 2)).ravel().tolist())
        inits.append(w)
        out = "y" if i == len(names) - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out], name=name))
        prev = out
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def external_weight(location, offset=None, length=None):
    """A 4x4 float32 weight w0 whose data is in the file `location` (as onnx writes it)."""
    from onnx import TensorProto
    t = TensorProto(name="w0", data_type=TensorProto.FLOAT, dims=[4, 4])
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            e = t.external_data.add()
            e.key, e.value = key, str(value)
    return t


def case_external_data():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = os.path.realpath(tmp)
        model_dir, work = os.path.join(tmp, "model"), os.path.join(tmp, "work")
        os.mkdir(model_dir)
        os.mkdir(work)
        out = os.path.join(work, "out")
        weight = np.arange(16, dtype="<f4").reshape(4, 4)
        secret = (np.arange(16, dtype="<f4") + 1000).tobytes()  # the size of w0, so a read would succeed
        with open(os.path.join(tmp, "secret.bin"), "wb") as f:
            f.write(secret)
        with open(os.path.join(model_dir, "w.bin"), "wb") as f:
            f.write(b"\0" * 8 + weight.tobytes())
        os.symlink(os.path.join(tmp, "secret.bin"), os.path.join(model_dir, "link.bin"))
        os.mkdir(os.path.join(model_dir, "sub"))
        # Inside the model's directory: read from there, not from the current directory.
        path = os.path.join(model_dir, "inside.onnx")
        matmul_model(path, weights={"w0": external_weight("w.bin", offset=8, length=64)})
        r = subprocess.run([IMPORT, path, "--input-shape", "1,4", "--dtype", "fp32", "--out", out],
                           capture_output=True, text=True, timeout=600, cwd="/")
        check(r.returncode == 0, f"external data inside the model's directory: exit {r.returncode}: "
                                 f"{r.stderr.strip()}")
        if r.returncode == 0:
            check(np.array_equal(np.load(os.path.join(out, "data", "fc.b.npy")), weight),
                  "the external weight is not the one in w.bin")
            shutil.rmtree(out)
        # Outside it: refused with exit 3, from any current directory, nothing written or read.
        for location, cwd in (("/proc/self/environ", "/"), ("../secret.bin", model_dir),
                              ("sub/../../secret.bin", work), ("link.bin", model_dir),
                              (os.path.join(tmp, "secret.bin"), tmp)):
            path = os.path.join(model_dir, "escape.onnx")
            matmul_model(path, weights={"w0": external_weight(location)})
            expect_bad([path, "--input-shape", "1,4", "--dtype", "fp32"], out,
                       ["escape.onnx", "w0", "outside the model's directory"], status=3, cwd=cwd)
        # Inside, but not what the tensor needs: exit 2, naming the file.
        for location, offset, length, words in (("w.bin", 40, None, ["w.bin", "bytes"]),
                                                ("w.bin", None, 32, ["w.bin", "32"]),
                                                ("sub", None, None, ["sub", "directory"]),
                                                ("missing.bin", None, None, ["missing.bin"])):
            path = os.path.join(model_dir, "short.onnx")
            matmul_model(path, weights={"w0": external_weight(location, offset, length)})
            expect_bad([path, "--input-shape", "1,4", "--dtype", "fp32"], out, words, cwd=model_dir)


# The real script with its writer held after the first GEMM's files, until a signal ends it: the
# signal then always comes while the temporary holds partial data, whatever the machine's speed.
HELD_IMPORT = r"""
import importlib.machinery, importlib.util, sys, time
loader = importlib.machinery.SourceFileLoader("systolic_import", sys.argv[1])
spec = importlib.util.spec_from_loader("systolic_import", loader)
mod = importlib.util.module_from_spec(spec)
loader.exec_module(mod)
write = mod.Writer.__call__
def held(self, g):
    write(self, g)
    while True:
        time.sleep(3600)
mod.Writer.__call__ = held
sys.exit(mod.main(sys.argv[2:]))
"""


def signal_mask(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1], 16)
    return 0


def case_signals():
    import signal
    import time
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "two.onnx")
        matmul_model(model, names=("fc1", "fc2"))
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        for sig, ignore_hup in ((signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGHUP, False),
                                (signal.SIGTERM, True)):
            name = signal.Signals(sig).name + (" with SIGHUP ignored" if ignore_hup else "")
            err_path = os.path.join(tmp, "stderr.txt")
            with open(err_path, "w") as err:
                p = subprocess.Popen(
                    [sys.executable, "-c", HELD_IMPORT, IMPORT, model, "--input-shape", "1,4", "--dtype",
                     "fp32", "--out", os.path.join(work, "out")], stdout=subprocess.DEVNULL, stderr=err,
                    preexec_fn=(lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)) if ignore_hup else None)
            # Wait for the temporary to hold the first GEMM's files (polling, no time limit asserted).
            held = False
            while p.poll() is None and not held:
                for d in os.listdir(work):
                    data = os.path.join(work, d, "data")
                    held = held or (os.path.isdir(data) and any(f.endswith(".b.npy") for f in os.listdir(data)))
                time.sleep(0.02)
            check(held, f"{name}: the import ended (exit {p.returncode}) before its temporary held data")
            if not held:
                continue
            if ignore_hup:
                hup = 1 << (signal.SIGHUP - 1)
                check(signal_mask(p.pid, "SigIgn") & hup, f"{name}: SIGHUP is no longer ignored (nohup)")
                check(not signal_mask(p.pid, "SigCgt") & hup, f"{name}: SIGHUP is caught")
            p.send_signal(sig)
            p.wait()
            with open(err_path) as f:
                err = f.read()
            check(p.returncode == -sig, f"{name}: ended with {p.returncode}, not by the signal "
                                        f"(the shell's {128 + sig})")
            check(err.count("\n") == 1 and err.startswith("import: ") and signal.Signals(sig).name in err,
                  f"{name}: stderr is not one line naming the signal: {err!r}")
            check(os.listdir(work) == [], f"{name}: left {os.listdir(work)}")


def case_special_files():
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        out = os.path.join(work, "out")
        shape = ["--input-shape", "1,4", "--dtype", "fp32"]
        fifo = os.path.join(tmp, "fifo.onnx")
        os.mkfifo(fifo)
        # A writer holds the FIFO open without writing: a reader would wait forever.
        held = os.open(fifo, os.O_RDWR)
        try:
            expect_bad([fifo] + shape, out, ["fifo.onnx", "FIFO", "not a regular file"], timeout=120)
        finally:
            os.close(held)
        expect_bad(["/dev/zero"] + shape, out, ["/dev/zero", "character device", "not a regular file"])
        expect_bad([tmp] + shape, out, ["directory", "not a regular file"])
        empty = os.path.join(tmp, "empty.onnx")
        open(empty, "wb").close()
        expect_bad([empty] + shape, out, ["empty.onnx", "empty"])
        huge = os.path.join(tmp, "huge.onnx")
        with open(huge, "wb") as f:
            f.truncate(3 << 30)  # sparse: 3 GiB, over protobuf's 2 GiB limit on a message
        expect_bad([huge] + shape, out, ["huge.onnx", "3221225472 bytes", "2 GiB"])


def case_long_names():
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        model = os.path.join(tmp, "m.onnx")
        matmul_model(model)
        out = os.path.join(work, "o" * 240)  # legal: NAME_MAX is 255
        r = run([IMPORT, model, "--input-shape", "1,4", "--dtype", "fp32", "--out", out])
        check(r.returncode == 0, f"a 240-byte --out: exit {r.returncode}: {r.stderr.strip()}")
        check(os.listdir(work) == ["o" * 240], f"a 240-byte --out left {os.listdir(work)}")
        shutil.rmtree(out, ignore_errors=True)
        expect_bad([model, "--input-shape", "1,4", "--dtype", "fp32"], os.path.join(work, "o" * 256),
                   ["256 bytes", "255"])
        # Node names of 250 bytes and more, alike in their first 240: file names that fit and differ.
        long = "n" * 240
        names = (long + "_first_layer", long + "_second_layer", "short")
        model = os.path.join(tmp, "long.onnx")
        matmul_model(model, names=names)
        for dtype in ("fp32", "int8"):
            d = os.path.join(work, dtype)
            r = run([IMPORT, model, "--input-shape", "1,4", "--dtype", dtype, "--out", d])
            check(r.returncode == 0, f"250-byte node names, {dtype}: exit {r.returncode}: {r.stderr.strip()}")
            if r.returncode:
                continue
            layers = [x[0] for x in topology(d)]
            check(len(set(layers)) == 3 and layers[2] == "short", f"{dtype}: layers {layers}")
            check(all(x.startswith("n" * 200) for x in layers[:2]), f"{dtype}: layers {layers}")
            for sub in ("data", "expected"):
                for f in os.listdir(os.path.join(d, sub)):
                    check(len(f.encode()) <= 255, f"{dtype}: {sub}/{f} is {len(f)} bytes")
            with open(os.path.join(d, "import.json")) as f:
                manifest = json.load(f)
            check([e["source"] for e in manifest["layers"]][:2] == list(names[:2]),
                  f"{dtype}: import.json does not keep the full node names")
            check_files(d, dtype)
            run_expect(d, dtype, tmp, "run-" + dtype)
        # The rule is stable: the same names again give the same file names.
        again = os.path.join(work, "again")
        run([IMPORT, model, "--input-shape", "1,4", "--dtype", "fp32", "--out", again])
        check(os.path.isdir(again) and topology(again) == topology(os.path.join(work, "fp32")),
              "the shortened names differ between two imports")


def case_input_shape():
    import contextlib
    import importlib.machinery
    import importlib.util
    import io
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        tops = {}
        for spelling in ("1,3,32,32", "3,32,32", "3x32x32", "1x3x32x32"):
            d = os.path.join(work, "r18-" + spelling)
            r = run([IMPORT, "--torchvision", "resnet18", "--input-shape", spelling, "--dtype", "fp32",
                     "--out", d])
            check(r.returncode == 0, f"--input-shape {spelling}: exit {r.returncode}: {r.stderr.strip()}")
            if r.returncode == 0:
                tops[spelling] = topology(d)
                with open(os.path.join(d, "import.json")) as f:
                    check(json.load(f)["input_shape"] == [1, 3, 32, 32], f"{spelling}: input_shape")
        check(len(tops) == 4 and all(t == tops["1,3,32,32"] for t in tops.values()),
              "the spellings of one shape import differently")
        for bad in ("32,32", "1,1,3,32,32"):
            expect_bad(["--torchvision", "resnet18", "--input-shape", bad, "--dtype", "fp32"],
                       os.path.join(work, "bad"), [f"--input-shape {bad}", "N,C,H,W or C,H,W"])
        model = os.path.join(tmp, "tiny.onnx")
        export(torch, Tiny.model(torch), (1, 3, 16, 12), model)
        for spelling in ("3,16,12", "1x3x16x12"):
            d = os.path.join(work, "tiny-" + spelling)
            r = run([IMPORT, model, "--input-shape", spelling, "--dtype", "fp32", "--out", d])
            check(r.returncode == 0, f"onnx --input-shape {spelling}: exit {r.returncode}: {r.stderr.strip()}")
        expect_bad([model, "--input-shape", "16,12", "--dtype", "fp32"], os.path.join(work, "bad"),
                   ["--input-shape 16,12", "N,C,H,W or C,H,W"])
    # scripts/infer: the same spellings, one input (its batch is --inputs).
    infer_path = os.path.join(os.path.dirname(IMPORT), "infer")
    loader = importlib.machinery.SourceFileLoader("systolic_infer", infer_path)
    spec = importlib.util.spec_from_loader("systolic_infer", loader)
    infer = importlib.util.module_from_spec(spec)
    loader.exec_module(infer)
    import torchvision
    for spelling in ("1,3,32,32", "3,32,32", "3x32x32", "1x3x32x32"):
        args = infer.parse(["--torchvision", "resnet18", "--input-shape", spelling])
        check(tuple(infer.build(args, torch, torchvision)[1]) == (3, 32, 32),
              f"infer --input-shape {spelling} is not one 3x32x32 input")
    for bad, words in (("32,32", ["--input-shape 32,32", "N,C,H,W or C,H,W"]),
                       ("2,3,32,32", ["--input-shape 2,3,32,32", "--inputs"])):
        err = io.StringIO()
        status = None
        with contextlib.redirect_stderr(err):
            try:
                args = infer.parse(["--torchvision", "resnet18", "--input-shape", bad])
                infer.build(args, torch, torchvision)
            except SystemExit as e:
                status = e.code
        check(status == 2 and err.getvalue().count("\n") == 1 and all(w in err.getvalue() for w in words),
              f"infer --input-shape {bad}: exit {status}, {err.getvalue()!r}")


CASES = {"resnet18-fp32": lambda: case_resnet18("fp32"), "resnet18-int8": lambda: case_resnet18("int8"),
         "vit": case_vit, "onnx": case_onnx, "bad-input": case_bad_input, "external-data": case_external_data,
         "signals": case_signals, "special-files": case_special_files, "long-names": case_long_names,
         "input-shape": case_input_shape}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        print(f"usage: import_check.py SYSTOLIC_RUN IMPORT {{{'|'.join(CASES)}}}", file=sys.stderr)
        sys.exit(2)
    CASES[sys.argv[3]]()
    print(f"{sys.argv[3]}: {'FAIL' if failures else 'PASS'} ({len(failures)} failures)")
    sys.exit(1 if failures else 0)
