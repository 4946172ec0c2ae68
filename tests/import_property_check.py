#!/usr/bin/python3
"""scripts/import on malformed ONNX graphs, drawn by Hypothesis (Debian's python3-hypothesis).

    import_property_check.py IMPORT [MAX_EXAMPLES]

A valid small graph (Conv, Relu, GlobalAveragePool, Flatten, Reshape, Gemm, MatMul) is mutated:
wrong or huge dims, missing initializers, attributes of the wrong type, unknown operators and
domains, inputs that nothing computes, opsets, external data (inside the model's directory,
escaping it by "..", an absolute path or a symlink, missing, short, a directory, a FIFO), huge
shape values; then its bytes may be truncated or flipped. For every example, scripts/import must
either succeed (exit 0, nothing on stderr, DIR complete and nothing else beside it) or exit with a
documented status (2 bad input, 3 a file outside the model's directory) and exactly one line on
stderr: never a traceback, a crash or a hang, and nothing left in or beside the destination or
beside the model. A graph whose external data leaves its directory is exit 3 unless its bytes were
damaged; a file outside is never read into DIR.

Each example runs the script's main() in a forked child of this process (torch and onnx are
imported once, before any fork), its stdout and stderr on files: output written at the descriptor
level, a crash and a hang (SIGALRM after 120 s, a guard, not a measure) show as they would from a
separate process. derandomize=True and no example database: the same examples on every run.
Exit status 0 when every example holds, 1 otherwise.
"""
import collections
import importlib
import importlib.machinery
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
import traceback

import numpy as np
import onnx
import onnx.numpy_helper
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

IMPORT = os.path.abspath(sys.argv[1])
MAX_EXAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 300
SECRET = b"SECRET!!" * 512  # beside the model's directory; its bytes must never reach DIR
ESCAPES = ("/proc/self/environ", "../secret.bin", "sub/../../secret.bin", "link.bin", "/etc/passwd")
INSIDE = ("w.bin", "sub/../w.bin", "sub", "fifo", "missing.bin", "")
statuses = collections.Counter()


def load_script():
    loader = importlib.machinery.SourceFileLoader("systolic_import", IMPORT)
    spec = importlib.util.spec_from_loader("systolic_import", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


SCRIPT = load_script()
importlib.import_module("torch")  # before any fork: the script imports it late


def base_model():
    rng = np.random.default_rng(7)

    def init(name, shape, dtype=np.float32):
        return onnx.numpy_helper.from_array(rng.standard_normal(shape).astype(dtype), name)

    inits = [init("wc", (4, 3, 3, 3)), init("bc", (4,)), init("wg", (5, 4)), init("bg", (5,)),
             init("wm", (5, 3)), onnx.numpy_helper.from_array(np.array([1, 4], dtype=np.int64), "shp")]
    nodes = [
        helper.make_node("Conv", ["x", "wc", "bc"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Reshape", ["f", "shp"], ["h"], name="reshape"),
        helper.make_node("Gemm", ["h", "wg", "bg"], ["g"], name="fc", transB=1, alpha=1.0),
        helper.make_node("MatMul", ["g", "wm"], ["y"], name="head"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


BASE = base_model().SerializeToString()
HUGE = [0, 1, 2, 7, -1, 2 ** 31, 2 ** 40, 2 ** 62]
WRONG_ATTRS = [1.5, "s", [1.0, 2.0], b"x", -5, 2 ** 40, [2 ** 40, 1], ["a", "b"],
               helper.make_tensor("t", TensorProto.FLOAT, [1], [1.0])]


def mutate(draw, model):
    """One structural mutation of `model`, in place."""
    g = model.graph
    kind = draw(st.sampled_from(["dims", "drop_init", "attr", "op", "input", "external", "external",
                                 "huge_shape", "opset", "domain", "input_dims", "constant_of_shape"]))
    if kind == "dims" and g.initializer:
        t = g.initializer[draw(st.integers(0, len(g.initializer) - 1))]
        if t.dims:
            t.dims[draw(st.integers(0, len(t.dims) - 1))] = draw(st.sampled_from(HUGE))
    elif kind == "drop_init" and g.initializer:
        del g.initializer[draw(st.integers(0, len(g.initializer) - 1))]
    elif kind == "attr":
        node = g.node[draw(st.integers(0, len(g.node) - 1))]
        name = draw(st.sampled_from(["pads", "strides", "kernel_shape", "axis", "transB", "alpha", "group",
                                     "dilations", "auto_pad"]))
        value = draw(st.sampled_from(WRONG_ATTRS))
        kept = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend(kept + [helper.make_attribute(name, value)])
    elif kind == "op":
        node = g.node[draw(st.integers(0, len(g.node) - 1))]
        node.op_type = draw(st.sampled_from(["Unknown", "", "Conv", "MatMul", "Hardmax", "Loop", "Gemm",
                                             "ConstantOfShape", "Range", "Expand", "Pad"]) | st.text(max_size=8))
    elif kind == "input":
        node = g.node[draw(st.integers(0, len(g.node) - 1))]
        if node.input:
            i = draw(st.integers(0, len(node.input) - 1))
            node.input[i] = draw(st.sampled_from(["nothing", "", "y", "x"]))
    elif kind == "external" and g.initializer:
        t = g.initializer[draw(st.integers(0, len(g.initializer) - 1))]
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.ClearField("int64_data")
        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        entries = {"location": draw(st.sampled_from(ESCAPES + INSIDE))}
        for key in ("offset", "length"):
            v = draw(st.sampled_from([None, 0, 4, 64, 4096, 2 ** 40, -1, "abc"]))
            if v is not None:
                entries[key] = v
        for k, v in entries.items():
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    elif kind == "huge_shape":
        for t in g.initializer:
            if t.name == "shp":
                t.CopyFrom(onnx.numpy_helper.from_array(
                    np.array([draw(st.sampled_from(HUGE)), draw(st.sampled_from(HUGE))], dtype=np.int64), "shp"))
    elif kind == "opset":
        model.opset_import[0].version = draw(st.sampled_from([1, 7, 11, 13, 17, 18, 99]))
    elif kind == "domain":
        g.node[draw(st.integers(0, len(g.node) - 1))].domain = draw(st.sampled_from(["com.microsoft", "ai.onnx",
                                                                                     "x"]))
    elif kind == "input_dims":
        dims = g.input[0].type.tensor_type.shape.dim
        dims[draw(st.integers(0, len(dims) - 1))].dim_value = draw(st.sampled_from(HUGE[1:]))
    elif kind == "constant_of_shape":
        g.node.insert(0, helper.make_node("ConstantOfShape", ["shp"], ["junk"], name="cos"))
        g.node.insert(1, helper.make_node("Expand", ["x", "shp"], ["junk2"], name="expand"))
        for t in g.initializer:
            if t.name == "shp":
                t.CopyFrom(onnx.numpy_helper.from_array(
                    np.array([draw(st.sampled_from(HUGE)), draw(st.sampled_from(HUGE))], dtype=np.int64), "shp"))


def escapes(model):
    """The graph names external data outside the model's directory."""
    for t in model.graph.initializer:  # the only tensors mutate() makes external
        if t.data_location == TensorProto.EXTERNAL:
            loc = {e.key: e.value for e in t.external_data}.get("location", "")
            if loc in ESCAPES:
                return True
    return False


@st.composite
def cases(draw):
    model = onnx.ModelProto()
    model.ParseFromString(BASE)
    for _ in range(draw(st.integers(0, 3))):
        mutate(draw, model)
    raw = model.SerializeToString()
    damaged = False
    if draw(st.booleans()) and draw(st.booleans()):  # a quarter of the cases: damaged bytes
        damaged = True
        if draw(st.booleans()):
            raw = raw[:draw(st.integers(0, max(0, len(raw) - 1)))]
        else:
            b = bytearray(raw)
            for _ in range(draw(st.integers(1, 8))):
                if b:
                    b[draw(st.integers(0, len(b) - 1))] ^= draw(st.integers(1, 255))
            raw = bytes(b)
    shape = draw(st.sampled_from(["1,3,6,6"] * 4 + ["3,6,6", "3x6x6", "1,3,6", "0,3,6,6", "a", "1,3,6,6,1",
                                                    "99999,99999,9999"]))
    dtype = draw(st.sampled_from(["fp32", "int8"]))
    spelled = shape not in ("0,3,6,6", "a", "99999,99999,9999")  # refused before the model is read
    return raw, escapes(model) and not damaged and spelled, shape, dtype


def scratch(root, raw):
    model_dir, work = os.path.join(root, "model"), os.path.join(root, "work")
    os.makedirs(os.path.join(model_dir, "sub"))
    os.mkdir(work)
    with open(os.path.join(root, "secret.bin"), "wb") as f:
        f.write(SECRET)
    with open(os.path.join(model_dir, "w.bin"), "wb") as f:
        f.write(np.arange(1024, dtype="<f4").tobytes())
    os.symlink(os.path.join(root, "secret.bin"), os.path.join(model_dir, "link.bin"))
    os.mkfifo(os.path.join(model_dir, "fifo"))
    path = os.path.join(model_dir, "m.onnx")
    with open(path, "wb") as f:
        f.write(raw)
    return path, model_dir, work


def run_in_child(argv, cwd, out_path, err_path):
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 98
        try:
            os.chdir(cwd)
            for fd, path in ((1, out_path), (2, err_path)):
                f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(f, fd)
                os.close(f)
            signal.alarm(120)
            status = SCRIPT.main(argv)
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
        except BaseException:
            traceback.print_exc()
            status = 99
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    _, wstatus = os.waitpid(pid, 0)
    return wstatus


def listing(d):
    return sorted(os.path.relpath(os.path.join(p, f), d) for p, ds, fs in os.walk(d) for f in fs + ds)


@settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None, print_blob=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(cases())
def test_import_never_misbehaves(case):
    raw, must_escape, shape, dtype = case
    root = tempfile.mkdtemp(prefix="import-property-")
    try:
        path, model_dir, work = scratch(root, raw)
        before = listing(model_dir)
        out = os.path.join(work, "out")
        out_txt, err_txt = os.path.join(root, "stdout.txt"), os.path.join(root, "stderr.txt")
        wstatus = run_in_child([path, "--input-shape", shape, "--dtype", dtype, "--out", out], root,
                               out_txt, err_txt)
        with open(err_txt, errors="replace") as f:
            err = f.read()
        with open(out_txt, errors="replace") as f:
            stdout = f.read()
        assert os.WIFEXITED(wstatus), f"ended by signal {os.WTERMSIG(wstatus)}; stderr {err!r}"
        status = os.WEXITSTATUS(wstatus)
        statuses[status] += 1
        assert "Traceback" not in err, err
        assert status in (0, 2, 3), f"exit {status}: {err!r}"
        assert listing(model_dir) == before, f"beside the model: {set(listing(model_dir)) - set(before)}"
        if must_escape:
            assert status == 3, f"external data outside the model's directory: exit {status}: {err!r}"
        if status == 0:
            assert err == "", f"exit 0 with stderr {err!r}"
            assert stdout.count("\n") == 1, f"stdout {stdout!r}"
            assert os.listdir(work) == ["out"], f"beside the destination: {os.listdir(work)}"
            for name in ("topology.csv", "import.json", "data", "expected"):
                assert os.path.exists(os.path.join(out, name)), f"no {name} in DIR"
            for p, _, fs in os.walk(out):
                for f in fs:
                    with open(os.path.join(p, f), "rb") as fh:
                        assert b"SECR" not in fh.read(), f"{f} holds bytes of a file outside the model"
        else:
            assert err.count("\n") == 1 and err.endswith("\n"), f"stderr is not one line: {err!r}"
            assert err.startswith("import: error: "), err
            assert stdout == "", f"stdout {stdout!r}"
            assert os.listdir(work) == [], f"left {os.listdir(work)}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    failed = False
    try:
        test_import_never_misbehaves()
    except Exception:
        traceback.print_exc()
        failed = True
    print(f"{sum(statuses.values())} examples, exit statuses {dict(sorted(statuses.items()))}")
    # The generator must reach each outcome, or the property holds of nothing.
    for status in (0, 2, 3):
        if not statuses[status]:
            print(f"FAIL: no example ended with exit {status}", file=sys.stderr)
            failed = True
    print(f"import_property: {'FAIL' if failed else 'PASS'}")
    sys.exit(1 if failed else 0)
