"""Turn a real network into systolic-run's inputs: one GEMM per Conv2d / Linear / MatMul layer.
    systolic-import MODEL.onnx --input-shape 1,3,224,224 --dtype fp32 --out DIR [--seed S]
    systolic-import --torchvision resnet18 --input-shape 1,3,224,224 --dtype int8 --out DIR
The package's command systolic-import; scripts/import runs the same code in a clone, with no build.
writes into DIR (created; it must not exist or be empty, its parent must exist):
  topology.csv            SCALE-Sim GEMM rows "Layer, M, N, K," with the layers' real names;
  data/<layer>.a.npy      A (M x K): the layer's input as captured while a seeded input runs
                          through the network, im2col applied for convolutions;
  data/<layer>.b.npy      B (K x N): the layer's weights (or its second operand);
  data/<layer>.scales.json  (int8) the scales that map the codes back to real numbers;
  expected/<layer>.c.npy  C = A B as PyTorch computes it: float32 for fp32, the exact int32
                          accumulators for int8 (summed in int64, checked to fit int32);
  import.json             what was imported: source, input shape, dtype, seed, each layer's op.
A convolution with groups > 1 is one GEMM per group, named <layer>.g<i>; a batched MatMul is one GEMM
per batch index, named <layer>.b<i>. Biases, Gemm's alpha and beta and everything between layers run
in float32 outside the GEMMs. docs/networks.md says how each is lowered and quantized.
torchvision models are built with seeded random weights (never downloaded); an ONNX graph is run by
a small interpreter over torch.nn.functional (onnx 1.12 has no evaluator). The output is written into
a temporary directory .import-XXXXXXXX next to DIR and renamed into place at the end: DIR is
complete or absent. --input-shape is the model input's shape with its batch first (1,3,224,224);
one dimension fewer (3,224,224) means batch 1; "," or "x" separate them, as in scripts/infer.
A layer name longer than 243 bytes is shortened to fit file names (see file_name_of).
Exit status 0; 2 with one line on stderr for bad input; 3 with one line when the model names a file
outside its own directory (external data); 1 with one line for an internal error. Nothing is
written in any of these. SIGINT, SIGTERM and SIGHUP remove the temporary, print one line, and the
process ends by the signal (the shell's 130, 143, 129); a signal ignored at start stays ignored.
"""
import argparse
import inspect
import json
import math
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import warnings
from contextlib import contextmanager

import numpy as np

# The name in messages and in --help's usage: the command's (scripts/import sets its own).
PROG = "systolic-import"
COMMAND = "systolic-import"
INT8_MAX = 127  # symmetric codes in [-127, 127], as PyTorch's qint8 per-channel weights and QLinearConv
NAME_MAX = 255  # bytes in a file name (Linux, every common file system)
# The longest layer name: <layer>.scales.json, the longest file named after a layer, fits NAME_MAX.
LAYER_NAME_MAX = NAME_MAX - len(".scales.json")
MODEL_MAX_BYTES = (2 << 30) - 1  # protobuf parses no message of 2 GiB or more
EXTERNAL_MAX_BYTES = 16 << 30  # all external data of one model, read into memory
MAX_ELEMENTS = 1 << 28  # the largest tensor a shape in the graph or --input-shape may ask for (1 GiB of fp32)


class BadInput(Exception):
    """Bad input: one line on stderr, exit status 2, nothing written."""
    status = 2


class OutsideModel(BadInput):
    """The model names a file outside its own directory: one line, exit status 3, nothing read."""
    status = 3


# ---------------------------------------------------------------------------------------------
# Signals: SIGINT, SIGTERM and SIGHUP remove every temporary, print one line and end the process
# by the same signal, as the C++ tools do (docs/reliability.md).

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
TEMPORARIES = []  # directories to remove unless the import completes


class _Deferral:
    depth = 0  # > 0: inside deferred_signals(), a signal is held until it ends
    pending = None


def remove_temporaries():
    # Removed, then forgotten: a signal handler that interrupts the removal removes it again.
    while TEMPORARIES:
        shutil.rmtree(TEMPORARIES[-1], ignore_errors=True)
        TEMPORARIES.pop()


def on_signal(sig, _frame):
    """Python runs this in the main thread between two bytecodes, so nothing else of the import
    runs while it does; it does not return."""
    if _Deferral.depth:
        _Deferral.pending = _Deferral.pending or sig
        return
    for s in SIGNALS:
        if signal.getsignal(s) is on_signal:
            signal.signal(s, signal.SIG_IGN)  # a second signal does not cut the clean-up short
    remove_temporaries()
    try:
        print(f"{PROG}: stopped by {signal.Signals(sig).name}; nothing written", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    signal.raise_signal(sig)  # ends the process: the shell sees 128 + sig
    os._exit(128 + sig)  # not reached


def install_signal_handlers():
    for s in SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:  # nohup's SIGHUP stays ignored
            signal.signal(s, on_signal)


@contextmanager
def deferred_signals():
    """A temporary's creation and registration, or the final rename and its deregistration, happen
    whole: a signal in between is handled when the block ends."""
    _Deferral.depth += 1
    try:
        yield
    finally:
        _Deferral.depth -= 1
        if not _Deferral.depth and _Deferral.pending:
            on_signal(_Deferral.pending, None)


# ---------------------------------------------------------------------------------------------
# Input files: regular files only, sizes bounded before anything is read

def file_kind(mode):
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a file"


def open_regular(path, extra_flags=0):
    """A descriptor on a regular file and its stat. Anything else (a FIFO, a device, a directory) is
    refused by its stat before it is opened, and again by fstat on the descriptor, which is opened
    without blocking: a FIFO put in its place meanwhile cannot hang the import."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{path} is {file_kind(st.st_mode)}, not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | extra_flags)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}")
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise BadInput(f"{path} is {file_kind(st.st_mode)}, not a regular file")
    return fd, st


def read_at(fd, offset, size, path):
    """Exactly `size` bytes from `offset`."""
    parts, done = [], 0
    try:
        while done < size:
            chunk = os.pread(fd, min(size - done, 64 << 20), offset + done)
            if not chunk:
                break
            parts.append(chunk)
            done += len(chunk)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}")
    if done < size:
        raise BadInput(f"{path} ended after {offset + done} bytes, {size - done} short of what it held "
                       "when opened")
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# GEMMs of a layer

def sanitize(name):
    """A layer name systolic-run takes as a topology field and a file name: readable, one token."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip("._")
    return name or "layer"


def file_name_of(layer):
    """A layer's name in topology.csv and its file names. A name of at most LAYER_NAME_MAX (243)
    bytes is kept; a longer one becomes its first bytes, '-', 16 hex digits of the SHA-256 of the
    whole name and its group or batch suffix (.g<i>, .b<i>), 243 bytes in all, so that
    <layer>.scales.json fits NAME_MAX (255). The same name always gives the same file name, and two
    names that differ anywhere differ in the digest (a collision is refused as a layer named twice).
    import.json keeps each GEMM's full source name."""
    if len(layer.encode()) <= LAYER_NAME_MAX:
        return layer
    import hashlib
    suffix = re.search(r"(\.[gb]\d+)*$", layer).group(0)
    digest = "-" + hashlib.sha256(layer.encode()).hexdigest()[:16]
    return layer[:LAYER_NAME_MAX - len(digest) - len(suffix)] + digest + suffix


class Gemm:
    """One GEMM: A (M x K) times B (K x N), both float32 torch tensors."""

    def __init__(self, name, op, a, b, b_constant, source):
        self.name, self.op, self.a, self.b = name, op, a, b
        self.b_constant = b_constant  # weights: per-output-channel scales for int8
        self.source = source  # the layer (module or node) the GEMM came from


def conv_gemms(torch, name, x, weight, stride, pads, dilation, groups):
    """im2col of a 2-D convolution, by the lowering systolic.torch.offload uses (systolic._lowering):
    pads (top, left, bottom, right) with zeros first, then one GEMM per group. A's rows are (batch,
    output row, output column), its columns (channel, kernel row, kernel column), as
    weight.reshape(out, -1) orders B's rows: C is the output as NHWC."""
    from . import _lowering

    top, left, bottom, right = pads
    c = x.shape[1]
    out_ch, cg, kh, kw = weight.shape
    if c != cg * groups:
        raise BadInput(f"{name}: the input has {c} channels, the weights want {cg} x {groups} groups")
    gemms = []

    def record(a, b):  # the GEMMs are run later, on the model; the lowering only needs their shape
        gemms.append((f"{name}.g{len(gemms)}" if groups > 1 else name, a.contiguous(), b.contiguous()))
        return a.new_zeros(a.shape[0], b.shape[1])

    xp = _lowering.pad_zeros(x, [(top, bottom), (left, right)])
    _lowering.conv(record, xp, weight, None, stride, 0, dilation, groups)
    return gemms


def check_conv_lowering(torch, name, gemms, y_nobias):
    """The GEMMs reproduce the convolution (a check on the lowering, not on the model)."""
    n, o, h, w = y_nobias.shape
    c = torch.cat([torch.matmul(a, b) for _, a, b in gemms], dim=1)
    c = c.reshape(n, h, w, o).permute(0, 3, 1, 2)
    tol = 1e-4 * (float(y_nobias.abs().max()) + 1.0)
    if c.shape != y_nobias.shape or float((c - y_nobias).abs().max()) > tol:
        raise RuntimeError(f"{name}: the im2col GEMMs do not reproduce the convolution")


def matmul_gemms(torch, name, a, b):
    """MatMul: a 2-D B is one GEMM over A's rows (leading dimensions flattened); batched operands are
    one GEMM per batch index, broadcast as torch.matmul broadcasts."""
    if b.dim() == 1 or a.dim() == 1:
        raise BadInput(f"{name}: MatMul of a vector is not a GEMM")
    if b.dim() == 2:
        return [(name, a.reshape(-1, a.shape[-1]).contiguous(), b.contiguous())]
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = a.expand(*batch, *a.shape[-2:]).reshape(-1, *a.shape[-2:])
    b = b.expand(*batch, *b.shape[-2:]).reshape(-1, *b.shape[-2:])
    return [(f"{name}.b{i}", a[i].contiguous(), b[i].contiguous()) for i in range(a.shape[0])]


# ---------------------------------------------------------------------------------------------
# torchvision models: forward hooks on Conv2d and Linear

def torchvision_model(torch, torchvision, name, seed):
    lister = getattr(torchvision.models, "list_models", None)
    names = lister() if lister else [n for n in dir(torchvision.models) if n.islower()]
    builder = getattr(torchvision.models, name, None) if name in names else None
    if builder is None or not callable(builder):
        raise BadInput(f"--torchvision {name}: not a torchvision model (e.g. resnet18, mobilenet_v2)")
    torch.manual_seed(seed)
    try:
        model = builder(weights=None)
    except TypeError:
        model = builder(pretrained=False)
    model.eval()
    unsupported = (torch.nn.Conv1d, torch.nn.Conv3d, torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d,
                   torch.nn.ConvTranspose3d, torch.nn.Bilinear)
    for mname, m in model.named_modules():
        if isinstance(m, unsupported):
            raise BadInput(f"module '{mname}' ({type(m).__name__}) is not supported")
        if isinstance(m, torch.nn.MultiheadAttention) and (
                not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn):
            raise BadInput(f"module '{mname}' (MultiheadAttention): only query, key and value of the "
                           "embedding's size, without bias_k/bias_v or add_zero_attn, are supported")
    return model


def attention_gemms(torch, name, m, query, key, value):
    """nn.MultiheadAttention (inputs given, eval mode, no mask) as its GEMMs, in the order it computes
    them, each (gemm name, op, A, B, B is a weight, source), and the output they give: the input
    projection (one GEMM for self-attention, where query, key and value are one tensor), then per
    batch entry and head i Q.K^T (`<name>.qk.b<i>`, Q already scaled by 1/sqrt(head size), as
    PyTorch scales it) and softmax(Q.K^T).V (`<name>.av.b<i>`), then the output projection. Biases,
    the scaling and the softmax stay in float32 outside the GEMMs."""
    F = torch.nn.functional
    if not m.batch_first:
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))
    n, l, e = query.shape
    s, h = key.shape[1], m.num_heads
    hd = e // h
    w, bias = m.in_proj_weight.detach(), m.in_proj_bias
    bias = bias.detach() if bias is not None else torch.zeros(3 * e)
    gemms = []
    if query is key and key is value:
        a = query.reshape(-1, e)
        gemms.append((f"{name}.in_proj", "Linear", a, w.t(), True, f"{name}.in_proj"))
        qkv = torch.matmul(a, w.t()) + bias
        q, k, v = qkv[:, :e], qkv[:, e:2 * e], qkv[:, 2 * e:]
    else:
        parts = []
        for i, (what, x) in enumerate((("q_proj", query), ("k_proj", key), ("v_proj", value))):
            a, wi = x.reshape(-1, e), w[i * e:(i + 1) * e].t()
            gemms.append((f"{name}.{what}", "Linear", a, wi, True, f"{name}.{what}"))
            parts.append(torch.matmul(a, wi) + bias[i * e:(i + 1) * e])
        q, k, v = parts
    heads = lambda t, rows: t.reshape(n, rows, h, hd).permute(0, 2, 1, 3).reshape(n * h, rows, hd)
    q, k, v = heads(q, l) / (hd ** 0.5), heads(k, s), heads(v, s)
    outs = []
    for i in range(n * h):
        kt = k[i].t()
        gemms.append((f"{name}.qk.b{i}", "MatMul", q[i], kt, False, f"{name}.qk"))
        p = F.softmax(torch.matmul(q[i], kt), dim=-1)
        gemms.append((f"{name}.av.b{i}", "MatMul", p, v[i], False, f"{name}.av"))
        outs.append(torch.matmul(p, v[i]))
    a = torch.stack(outs).reshape(n, h, l, hd).permute(0, 2, 1, 3).reshape(n * l, e)
    wo = m.out_proj.weight.detach().t()
    gemms.append((f"{name}.out_proj", "Linear", a, wo, True, f"{name}.out_proj"))
    y = torch.matmul(a, wo)
    if m.out_proj.bias is not None:
        y = y + m.out_proj.bias.detach()
    y = y.reshape(n, l, e)
    return [(g, op, a_.contiguous(), b_.contiguous(), const, src) for g, op, a_, b_, const, src in gemms], \
        (y if m.batch_first else y.transpose(0, 1))


class TorchRunner:
    """Runs a torch model, handing each Conv2d / Linear's GEMMs to `sink` (None: only the input's
    largest magnitude is recorded, for calibration)."""

    def __init__(self, torch, model):
        self.torch, self.model = torch, model
        # MultiheadAttention computes with its out_proj's weights, never calling it: its GEMMs are
        # the attention's (attention_gemms), not a Linear's.
        inner = {n + ".out_proj" for n, m in model.named_modules() if isinstance(m, torch.nn.MultiheadAttention)}
        self.layers = [(n, m) for n, m in model.named_modules()
                       if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear, torch.nn.MultiheadAttention))
                       and n not in inner]
        self.names = unique_names([n for n, _ in self.layers])

    def run(self, x, sink, amax):
        torch = self.torch
        handles = []

        def record(source, t):
            amax[source] = max(amax.get(source, 0.0), float(t.abs().max()) if t.numel() else 0.0)

        def attention(lname, m):
            """m's forward, wrapped for this run: torchvision calls attention with keyword arguments,
            which a forward hook does not see (PyTorch 1.13)."""
            forward = m.forward
            signature = inspect.signature(forward)

            def wrapped(*args, **kwargs):
                given = signature.bind(*args, **kwargs)
                given.apply_defaults()
                arg = given.arguments
                if arg.get("key_padding_mask") is not None or arg.get("attn_mask") is not None:
                    raise BadInput(f"module '{lname}' (MultiheadAttention): masks are not supported")
                output = forward(*args, **kwargs)
                # Self-attention (one tensor for query, key and value) is one input projection.
                q = arg["query"].detach()
                k = q if arg["key"] is arg["query"] else arg["key"].detach()
                v = k if arg["value"] is arg["key"] else arg["value"].detach()
                gemms, y = attention_gemms(torch, lname, m, q, k, v)
                out = (output[0] if isinstance(output, tuple) else output).detach()
                tol = 1e-4 * (float(out.abs().max()) + 1.0)
                if y.shape != out.shape or float((y - out).abs().max()) > tol:
                    raise BadInput(f"module '{lname}' (MultiheadAttention): its GEMMs do not reproduce its "
                                   "output")
                for _, _, a, b, const, source in gemms:
                    record(source, a)
                    if not const:
                        record(source + ".B", b)
                if sink is not None:
                    for gname, op, a, b, const, source in gemms:
                        sink(Gemm(gname, op, a, b, const, source))
                return output
            m.forward = wrapped

        def hook(lname, m):
            def f(_module, inputs, output):
                xin = inputs[0].detach()
                record(lname, xin)
                if sink is None:
                    return
                if isinstance(m, torch.nn.Conv2d):
                    if m.padding_mode != "zeros":
                        raise BadInput(f"module '{lname}': padding_mode {m.padding_mode} is not supported")
                    ph, pw = m._reversed_padding_repeated_twice[2], m._reversed_padding_repeated_twice[0]
                    gemms = conv_gemms(torch, lname, xin, m.weight.detach(), m.stride, (ph, pw, ph, pw),
                                       m.dilation, m.groups)
                    y = output.detach()
                    if m.bias is not None:
                        y = y - m.bias.detach().reshape(1, -1, 1, 1)
                    check_conv_lowering(torch, lname, gemms, y)
                    op = "Conv2d"
                else:
                    gemms = [(lname, xin.reshape(-1, xin.shape[-1]).contiguous(),
                              m.weight.detach().t().contiguous())]
                    op = "Linear"
                for gname, a, b in gemms:
                    sink(Gemm(gname, op, a, b, True, lname))
            return f

        wrapped = []
        for (mname, m), lname in zip(self.layers, self.names):
            if isinstance(m, torch.nn.MultiheadAttention):
                attention(lname, m)
                wrapped.append(m)
            else:
                handles.append(m.register_forward_hook(hook(lname, m)))
        try:
            with torch.no_grad():
                self.model(x)
        except BadInput:
            raise
        except (RuntimeError, ValueError, IndexError) as e:
            raise BadInput(f"--input-shape {shape_text(x.shape)} does not fit the model: {first_line(e)}")
        finally:
            for h in handles:
                h.remove()
            for m in wrapped:
                del m.forward  # the class's own again


# ---------------------------------------------------------------------------------------------
# ONNX graphs: a small interpreter over torch.nn.functional

def attrs_of(onnx, node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def onnx_pads(attrs, spatial, in_shape, kernel, strides, dilations):
    """ONNX pads as (top, left, bottom, right), auto_pad resolved."""
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for i in range(spatial):
            out = -(-in_shape[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_shape[i])
            small, big = total // 2, total - total // 2
            pads.append((small, big) if auto == "SAME_UPPER" else (big, small))
        return tuple(p[0] for p in pads) + tuple(p[1] for p in pads)
    if auto == "VALID":
        return (0,) * (2 * spatial)
    return tuple(attrs.get("pads", [0] * (2 * spatial)))


class OnnxRunner:
    """Evaluates an ONNX graph on torch tensors (float32 arithmetic, int64 shapes)."""

    SUPPORTED = {
        "Conv", "Gemm", "MatMul", "Relu", "LeakyRelu", "Clip", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt",
        "Neg", "Exp", "Erf", "Tanh", "Sigmoid", "HardSigmoid", "HardSwish", "MaxPool", "AveragePool",
        "GlobalAveragePool", "Flatten", "Reshape", "BatchNormalization", "Concat", "Transpose", "Softmax",
        "Constant", "Identity", "Dropout", "Shape", "Gather", "Unsqueeze", "Squeeze", "Slice", "Cast",
        "ReduceMean", "Pad", "Split", "LayerNormalization", "ConstantOfShape", "Equal", "Where", "Expand",
        "Range",
    }

    def __init__(self, torch, onnx, model):
        import onnx.numpy_helper  # noqa: F401 (onnx 1.12 does not import it itself)
        self.torch, self.onnx, self.model = torch, onnx, model
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        g = model.graph
        for node in g.node:
            if node.domain not in ("", "ai.onnx") or node.op_type not in self.SUPPORTED:
                what = f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
                raise BadInput(f"node '{node.name or '(unnamed)'}' has operator {what}, which scripts/import "
                               "does not support")
        self.consts = {}
        for init in g.initializer:
            self.consts[init.name] = torch.from_numpy(np.array(onnx.numpy_helper.to_array(init)))
        self.inputs = [i for i in g.input if i.name not in self.consts]
        if len(self.inputs) != 1:
            raise BadInput(f"the graph has {len(self.inputs)} inputs; scripts/import feeds exactly one")
        # By the node's place in the graph: protobuf hands out a new wrapper object at each access.
        self.nodes = list(g.node)
        gemm_nodes = [i for i, n in enumerate(self.nodes) if n.op_type in ("Conv", "Gemm", "MatMul")]
        names = [node_layer_name(self.nodes[i], j) for j, i in enumerate(gemm_nodes)]
        self.gemm_names = dict(zip(gemm_nodes, unique_names(names)))

    def input_rank(self):
        """The input's rank as the graph declares it, batch included (None: not declared)."""
        t = self.inputs[0].type
        if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
            return None
        return len(t.tensor_type.shape.dim)

    def check_shape(self, shape):
        t = self.inputs[0].type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if len(dims) != len(shape) or any(d is not None and d != s for d, s in zip(dims, shape)):
            want = ",".join("?" if d is None else str(d) for d in dims)
            raise BadInput(f"--input-shape {shape_text(shape)} does not fit the model's input "
                           f"'{self.inputs[0].name}' ({want})")

    def run(self, x, sink, amax):
        env = dict(self.consts)
        env[self.inputs[0].name] = x
        for index, node in enumerate(self.nodes):
            self.index = index
            try:
                outs = self.eval(node, [env[i] if i else None for i in node.input], sink, amax)
            except BadInput:
                raise
            except KeyError as e:
                raise BadInput(f"node '{node.name}' ({node.op_type}) reads {e}, which nothing computes")
            except (RuntimeError, ValueError, IndexError, TypeError) as e:
                raise BadInput(f"node '{node.name}' ({node.op_type}) fails on input shape "
                               f"{shape_text(x.shape)}: {first_line(e)}")
            for name, v in zip(node.output, outs):
                if name:
                    env[name] = v
        return [env[o.name] for o in self.model.graph.output]

    def capture(self, node, gemms, op, b_constant, sink):
        if sink is None:
            return
        for gname, a, b in gemms:
            sink(Gemm(gname, op, a.float(), b.float(), b_constant, self.gemm_names[self.index]))

    def eval(self, node, ins, sink, amax):
        torch, F = self.torch, self.torch.nn.functional
        op, at = node.op_type, attrs_of(self.onnx, node)
        ints = lambda t: [int(v) for v in t.reshape(-1).tolist()]  # noqa: E731
        if op == "Conv":
            x, w = ins[0], ins[1]
            lname = self.gemm_names[self.index]
            if x.dim() != 4:
                raise BadInput(f"node '{node.name}' (Conv): only 2-D convolutions are supported")
            amax[lname] = max(amax.get(lname, 0.0), float(x.abs().max()))
            kernel = list(w.shape[2:])
            strides = at.get("strides", [1, 1])
            dil = at.get("dilations", [1, 1])
            pads = onnx_pads(at, 2, list(x.shape[2:]), kernel, strides, dil)
            groups = at.get("group", 1)
            xp = F.pad(x, (pads[1], pads[3], pads[0], pads[2]))
            y = F.conv2d(xp, w, None, strides, 0, dil, groups)
            if sink is not None:
                gemms = conv_gemms(torch, lname, x, w, strides, pads, dil, groups)
                check_conv_lowering(torch, lname, gemms, y)
                self.capture(node, gemms, "Conv", node.input[1] in self.consts, sink)
            if len(ins) > 2 and ins[2] is not None:
                y = y + ins[2].reshape(1, -1, 1, 1)
            return [y]
        if op in ("Gemm", "MatMul"):
            a, b = ins[0], ins[1]
            if op == "Gemm":
                a = a.t() if at.get("transA", 0) else a
                b = b.t() if at.get("transB", 0) else b
            lname = self.gemm_names[self.index]
            amax[lname] = max(amax.get(lname, 0.0), float(a.abs().max()))
            amax[lname + ".B"] = max(amax.get(lname + ".B", 0.0), float(b.abs().max()))
            if sink is not None:
                self.capture(node, matmul_gemms(torch, lname, a, b), op, node.input[1] in self.consts, sink)
            y = torch.matmul(a, b)
            if op == "Gemm":
                y = y * at.get("alpha", 1.0)
                if len(ins) > 2 and ins[2] is not None:
                    y = y + at.get("beta", 1.0) * ins[2]
            return [y]
        if op == "Relu":
            return [F.relu(ins[0])]
        if op == "LeakyRelu":
            return [F.leaky_relu(ins[0], at.get("alpha", 0.01))]
        if op == "Clip":
            lo = ins[1] if len(ins) > 1 and ins[1] is not None else at.get("min")
            hi = ins[2] if len(ins) > 2 and ins[2] is not None else at.get("max")
            lo = float(lo) if lo is not None else None
            hi = float(hi) if hi is not None else None
            return [torch.clamp(ins[0], lo, hi)]
        binary = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Pow": torch.pow, "Equal": torch.eq}
        if op in binary:
            return [binary[op](ins[0], ins[1])]
        if op == "Div":
            if not ins[0].is_floating_point() and not ins[1].is_floating_point():
                return [torch.div(ins[0], ins[1], rounding_mode="trunc")]
            return [torch.div(ins[0], ins[1])]
        unary = {"Sqrt": torch.sqrt, "Neg": torch.neg, "Exp": torch.exp, "Erf": torch.erf, "Tanh": torch.tanh,
                 "Sigmoid": torch.sigmoid, "HardSwish": F.hardswish}
        if op in unary:
            return [unary[op](ins[0])]
        if op == "HardSigmoid":
            return [torch.clamp(at.get("alpha", 0.2) * ins[0] + at.get("beta", 0.5), 0, 1)]
        if op in ("MaxPool", "AveragePool"):
            x = ins[0]
            kernel = at["kernel_shape"]
            strides = at.get("strides", [1] * len(kernel))
            dil = at.get("dilations", [1] * len(kernel))
            pads = onnx_pads(at, 2, list(x.shape[2:]), kernel, strides, dil)
            ceil = bool(at.get("ceil_mode", 0))
            if op == "MaxPool":
                xp = F.pad(x, (pads[1], pads[3], pads[0], pads[2]), value=-math.inf)
                return [F.max_pool2d(xp, kernel, strides, 0, dil, ceil_mode=ceil)]
            if pads[0] == pads[2] and pads[1] == pads[3]:
                return [F.avg_pool2d(x, kernel, strides, (pads[0], pads[1]), ceil_mode=ceil,
                                     count_include_pad=bool(at.get("count_include_pad", 0)))]
            xp = F.pad(x, (pads[1], pads[3], pads[0], pads[2]))
            return [F.avg_pool2d(xp, kernel, strides, 0, ceil_mode=ceil)]
        if op == "GlobalAveragePool":
            return [ins[0].mean(dim=tuple(range(2, ins[0].dim())), keepdim=True)]
        if op == "Flatten":
            axis = at.get("axis", 1) % max(ins[0].dim(), 1)
            return [ins[0].reshape(int(np.prod(ins[0].shape[:axis])), -1)]
        if op == "Reshape":
            shape = ints(ins[1]) if len(ins) > 1 else list(at["shape"])
            if not at.get("allowzero", 0):
                shape = [ins[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
            return [ins[0].reshape(shape)]
        if op == "BatchNormalization":
            x, scale, bias, mean, var = ins[:5]
            return [F.batch_norm(x, mean, var, scale, bias, False, 0.0, at.get("epsilon", 1e-5))]
        if op == "LayerNormalization":
            axis = at.get("axis", -1) % ins[0].dim()
            shape = ins[0].shape[axis:]
            bias = ins[2] if len(ins) > 2 else None
            return [F.layer_norm(ins[0], shape, ins[1], bias, at.get("epsilon", 1e-5))]
        if op == "Concat":
            return [torch.cat(ins, dim=at["axis"])]
        if op == "Transpose":
            perm = at.get("perm", list(reversed(range(ins[0].dim()))))
            return [ins[0].permute(*perm)]
        if op == "Softmax":
            if self.opset >= 13:
                return [F.softmax(ins[0], dim=at.get("axis", -1))]
            axis = at.get("axis", 1) % ins[0].dim()
            flat = ins[0].reshape(int(np.prod(ins[0].shape[:axis])), -1)
            return [F.softmax(flat, dim=1).reshape(ins[0].shape)]
        if op == "Constant":
            if "value" in at:
                return [torch.from_numpy(np.array(self.onnx.numpy_helper.to_array(at["value"])))]
            for k in ("value_float", "value_int", "value_floats", "value_ints"):
                if k in at:
                    return [torch.tensor(at[k], dtype=torch.float32 if "float" in k else torch.int64)]
            raise BadInput(f"node '{node.name}' (Constant): only tensor and number values are supported")
        if op in ("Identity", "Dropout"):
            return [ins[0]]
        if op == "Shape":
            return [torch.tensor(list(ins[0].shape), dtype=torch.int64)]
        if op == "Gather":
            axis = at.get("axis", 0) % ins[0].dim()
            idx = ins[1].long()
            idx = torch.where(idx < 0, idx + ins[0].shape[axis], idx)
            out = torch.index_select(ins[0], axis, idx.reshape(-1))
            return [out.reshape(*ins[0].shape[:axis], *idx.shape, *ins[0].shape[axis + 1:])]
        if op in ("Unsqueeze", "Squeeze"):
            axes = ints(ins[1]) if len(ins) > 1 and ins[1] is not None else list(at.get("axes", []))
            x = ins[0]
            if op == "Squeeze":
                if not axes:
                    return [x.squeeze()]
                for a in sorted((a % x.dim() for a in axes), reverse=True):
                    x = x.squeeze(a)
                return [x]
            rank = x.dim() + len(axes)
            for a in sorted(a % rank for a in axes):
                x = x.unsqueeze(a)
            return [x]
        if op == "Slice":
            if self.opset >= 10:
                starts, ends = ints(ins[1]), ints(ins[2])
                axes = ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
                steps = ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
            else:
                starts, ends = at["starts"], at["ends"]
                axes = at.get("axes", list(range(len(starts))))
                steps = [1] * len(starts)
            x = ins[0]
            index = [slice(None)] * x.dim()
            for s, e, a, st in zip(starts, ends, axes, steps):
                if st != 1:
                    raise BadInput(f"node '{node.name}' (Slice): only step 1 is supported")
                n = x.shape[a]
                index[a] = slice(max(-n, min(s, n)), max(-n - 1, min(e, n)))
            return [x[tuple(index)]]
        if op == "Cast":
            to = at["to"]
            dtype = {1: torch.float32, 6: torch.int32, 7: torch.int64, 9: torch.bool, 11: torch.float64}.get(to)
            if dtype is None:
                raise BadInput(f"node '{node.name}' (Cast): element type {to} is not supported")
            return [ins[0].to(dtype)]
        if op == "ReduceMean":
            axes = at.get("axes")
            if axes is None and len(ins) > 1 and ins[1] is not None:
                axes = ints(ins[1])
            keep = bool(at.get("keepdims", 1))
            axes = tuple(axes) if axes else tuple(range(ins[0].dim()))
            return [ins[0].mean(dim=axes, keepdim=keep)]
        if op == "Pad":
            mode = at.get("mode", b"constant")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            pads = ints(ins[1]) if len(ins) > 1 else list(at["pads"])
            value = float(ins[2]) if len(ins) > 2 and ins[2] is not None else at.get("value", 0.0)
            r = ins[0].dim()
            torch_pads = []
            for i in reversed(range(r)):
                torch_pads += [pads[i], pads[i + r]]
            if mode != "constant":
                raise BadInput(f"node '{node.name}' (Pad): mode {mode} is not supported")
            check_elements(node, [n + pads[i] + pads[i + r] for i, n in enumerate(ins[0].shape)])
            return [F.pad(ins[0], torch_pads, value=value)]
        if op == "Split":
            axis = at.get("axis", 0)
            split = ints(ins[1]) if len(ins) > 1 and ins[1] is not None else at.get("split")
            if split is None:
                n = len(node.output)
                split = [ins[0].shape[axis] // n] * n
            return list(torch.split(ins[0], list(split), dim=axis))
        if op == "ConstantOfShape":
            check_elements(node, ints(ins[0]))
            value = at.get("value")
            v = torch.from_numpy(np.array(self.onnx.numpy_helper.to_array(value))) if value is not None \
                else torch.zeros(1)
            return [v.reshape(-1)[0].expand(*ints(ins[0])).clone()]
        if op == "Where":
            return [torch.where(ins[0].bool(), ins[1], ins[2])]
        if op == "Expand":
            shape = ints(ins[1])
            check_elements(node, torch.broadcast_shapes(tuple(ins[0].shape), tuple(shape)))
            return [ins[0] * torch.ones(shape, dtype=ins[0].dtype)]
        if op == "Range":
            start, limit, delta = (float(v.item()) for v in ins[:3])
            if delta == 0 or not all(map(math.isfinite, (start, limit, delta))):
                raise BadInput(f"node '{node.name}' (Range): a delta of 0 or a bound that is not finite")
            check_elements(node, [max(0, math.ceil((limit - start) / delta))])
            return [torch.arange(ins[0].item(), ins[1].item(), ins[2].item())]
        raise BadInput(f"node '{node.name}' has operator {op}, which scripts/import does not support")


def check_elements(node, shape):
    """Refuses a tensor a graph's shape values make larger than MAX_ELEMENTS, before it is made."""
    count = math.prod(max(0, int(d)) for d in shape)
    if count > MAX_ELEMENTS:
        raise BadInput(f"node '{node.name}' ({node.op_type}) would make a tensor of {count} elements, "
                       f"over the {MAX_ELEMENTS} scripts/import takes")


def node_layer_name(node, index):
    """An exporter's scoped node name ("/layer1/layer1.0/conv1/Conv") as the module's dotted name
    ("layer1.0.conv1"); an unnamed node is <op>_<index among the GEMM nodes>."""
    parts = [p for p in node.name.split("/") if p]
    if len(parts) > 1 and re.fullmatch(re.escape(node.op_type) + r"(_\d+)?", parts[-1]):
        parts = parts[:-1]
    # A child of a Sequential or ModuleList is scoped as "<parent>.<i>" after "<parent>".
    scopes = []
    for p in parts:
        if scopes and p.startswith(scopes[-1] + "."):
            scopes[-1] = p
        else:
            scopes.append(p)
    return sanitize(".".join(scopes)) if scopes else f"{node.op_type}_{index}"


def unique_names(names):
    """Sanitized, with _2, _3, ... after a name already taken."""
    seen, out = set(), []
    for n in names:
        base = sanitize(n)
        name, i = base, 2
        while name in seen:
            name, i = f"{base}_{i}", i + 1
        seen.add(name)
        out.append(name)
    return out


def graph_tensors(onnx, graph):
    """Every TensorProto of a graph: initializers (sparse ones too) and node attributes, subgraphs
    included."""
    A = onnx.AttributeProto
    for t in graph.initializer:
        yield t
    for sp in graph.sparse_initializer:
        yield sp.values
        yield sp.indices
    for node in graph.node:
        for a in node.attribute:
            if a.type == A.TENSOR:
                yield a.t
            elif a.type == A.TENSORS:
                yield from a.tensors
            elif a.type == A.SPARSE_TENSOR:
                yield a.sparse_tensor.values
                yield a.sparse_tensor.indices
            elif a.type == A.SPARSE_TENSORS:
                for sp in a.sparse_tensors:
                    yield sp.values
                    yield sp.indices
            elif a.type == A.GRAPH:
                yield from graph_tensors(onnx, a.g)
            elif a.type == A.GRAPHS:
                for g in a.graphs:
                    yield from graph_tensors(onnx, g)


def inline_external_data(onnx, model, path):
    """Reads each tensor's external data into the model, from files inside the model file's own
    directory only: an absolute location, '..' or a symlink that leads out of it is refused (exit
    3), whatever the current directory. Each file must be a regular file holding exactly the bytes
    the tensor's type and dims need at its offset. Nothing else reads files: onnx's own loader
    would take the location relative to the current directory."""
    import onnx.mapping  # noqa: F401 (onnx 1.12 does not import it itself)
    base = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    external = [t for t in graph_tensors(onnx, model.graph) if t.data_location == onnx.TensorProto.EXTERNAL]
    targets = []
    for t in external:  # every location first: one outside refuses the model before any file is read
        loc = next((e.value for e in t.external_data if e.key == "location"), "")
        target = os.path.realpath(os.path.join(base, loc)) if "\0" not in loc else base
        if os.path.isabs(loc) or os.path.commonpath([base, target]) != base:
            raise OutsideModel(f"{path}: tensor '{t.name}' has its data in '{loc}', outside the model's "
                               f"directory {base}; refused")
        targets.append(target)
    total = 0
    for t, target in zip(external, targets):
        info = {e.key: e.value for e in t.external_data}
        loc = info.get("location", "")
        who = f"{path}: tensor '{t.name}'"
        if target == base:
            raise BadInput(f"{who} has external data without a file name")
        np_type = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE.get(t.data_type)
        if np_type is None or t.data_type == onnx.TensorProto.STRING:
            raise BadInput(f"{who}: external data of element type {t.data_type} is not supported")
        if any(d < 0 for d in t.dims):
            raise BadInput(f"{who} has a negative dimension {list(t.dims)}")
        need = math.prod(t.dims) * np.dtype(np_type).itemsize
        try:
            offset = int(info.get("offset") or 0)
            length = int(info["length"]) if info.get("length") else None
        except ValueError:
            raise BadInput(f"{who}: external data offset or length is not an integer")
        if offset < 0 or (length is not None and length != need):
            raise BadInput(f"{who} needs {need} bytes of {loc}, not {length} from offset {offset}")
        total += need
        if total > EXTERNAL_MAX_BYTES:
            raise BadInput(f"{path}: its external data is over {EXTERNAL_MAX_BYTES >> 30} GiB")
        fd, st = open_regular(target, os.O_NOFOLLOW)
        try:
            if offset + need > st.st_size:
                raise BadInput(f"{who} needs {need} bytes of {loc} from offset {offset}; the file has "
                               f"{st.st_size} bytes")
            raw = read_at(fd, offset, need, target)
        finally:
            os.close(fd)
        t.raw_data = raw
        t.data_location = onnx.TensorProto.DEFAULT
        del t.external_data[:]


def load_onnx(onnx, path):
    fd, st = open_regular(path)
    try:
        if st.st_size == 0:
            raise BadInput(f"{path} is empty, not an ONNX model")
        if st.st_size > MODEL_MAX_BYTES:
            raise BadInput(f"{path} is {st.st_size} bytes; protobuf reads a model under 2 GiB (onnx "
                           "keeps larger weights in external data files)")
        raw = read_at(fd, 0, st.st_size, path)
    finally:
        os.close(fd)
    try:
        model = onnx.load_model_from_string(raw)
    except Exception as e:  # protobuf's DecodeError and friends
        raise BadInput(f"{path} is not an ONNX model ({type(e).__name__}: {first_line(e)})")
    inline_external_data(onnx, model, path)
    if not model.graph.node:
        raise BadInput(f"{path} is not an ONNX model (no graph nodes)")
    newest = onnx.defs.onnx_opset_version()
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and o.version > newest:
            raise BadInput(f"{path} uses ONNX opset {o.version}; onnx {onnx.__version__} reads opsets up to "
                           f"{newest}")
    if model.ir_version > onnx.IR_VERSION:
        raise BadInput(f"{path} has IR version {model.ir_version}; onnx {onnx.__version__} reads up to "
                       f"{onnx.IR_VERSION}")
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise BadInput(f"{path} is not a valid ONNX model: {first_line(e)}")
    return model


# ---------------------------------------------------------------------------------------------
# int8: symmetric per-tensor activation scales, per-output-channel weight scales

def quantize(t, scale):
    """Codes round(t / scale) clamped to [-127, 127]; scale broadcasts (per column for weights)."""
    q = np.rint(t / scale)
    return np.clip(q, -INT8_MAX, INT8_MAX).astype(np.int8)


def scale_of(amax):
    return float(amax) / INT8_MAX if amax > 0 else 1.0


# ---------------------------------------------------------------------------------------------
# Output

def printable(text):
    """Control characters as \\xNN, so that a message stays one line (as io::printable)."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def first_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def shape_text(shape):
    return ",".join(str(int(s)) for s in shape)


SHAPE_FORMS = {2: "N,D", 3: "N,L,D", 4: "N,C,H,W", 5: "N,C,D,H,W"}


def parse_shape(text):
    """--input-shape's spelling, in scripts/import and scripts/infer alike: positive integers
    separated by ',' or 'x' (1,3,224,224, 3x224x224). Raises ValueError with one line."""
    try:
        dims = [int(s) for s in re.split(r"[,x]", text.strip().lower())]
    except ValueError:
        dims = []
    if not dims or any(d <= 0 for d in dims):
        raise ValueError(f"--input-shape '{text}' is not a list of positive integers separated by ',' or "
                         "'x' (e.g. 3,224,224 or 1,3,224,224)")
    if math.prod(dims) > MAX_ELEMENTS:
        raise ValueError(f"--input-shape {text} is {math.prod(dims)} elements, over the {MAX_ELEMENTS} "
                         "scripts/import and scripts/infer take")
    return dims


def batched_shape(text, rank):
    """--input-shape's meaning, in scripts/import and scripts/infer alike: the model input's shape,
    its batch N first; with one dimension fewer, the batch is left out and is 1 (3,224,224 is
    1,3,224,224 for an image model). rank: the model input's, batch included (None: unknown, the
    shape as given). Returns the shape with its batch. Raises ValueError with one line, which says
    the form a wrong rank should have."""
    dims = parse_shape(text)
    if rank is None or len(dims) == rank:
        return dims
    if len(dims) == rank - 1:
        return [1] + dims
    if rank < 2:
        raise ValueError(f"--input-shape {text} has {len(dims)} dimensions; the model's input has {rank}")
    form = SHAPE_FORMS.get(rank, "N" + ",d" * (rank - 1))
    example = " (e.g. 1,3,224,224 or 3,224,224)" if rank == 4 else ""
    raise ValueError(f"--input-shape {text} has {len(dims)} dimensions; the model's input is {form} or "
                     f"{form.split(',', 1)[1]} (batch 1){example}")


def check_out(out):
    """Refuses an --out that exists and is not an empty directory, or has no parent."""
    out = os.path.normpath(out)
    parent = os.path.dirname(out) or "."
    try:
        name_max = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = NAME_MAX
    length = len(os.fsencode(os.path.basename(out)))
    if length > name_max:
        raise BadInput(f"--out {out}: its name is {length} bytes, over the {name_max} bytes a file name "
                       "may have")
    if not os.path.isdir(parent):
        raise BadInput(f"--out {out}: its parent directory {parent} does not exist")
    if os.path.lexists(out):
        if not os.path.isdir(out) or os.path.islink(out):
            raise BadInput(f"--out {out} exists and is not a directory")
        if os.listdir(out):
            raise BadInput(f"--out {out} is not empty; give a new directory")
    return out, parent


def prepare_out(out):
    """The temporary directory next to --out that becomes it, .import-XXXXXXXX: short whatever
    --out's name, so every name the file system takes works."""
    out, parent = check_out(out)
    try:
        with deferred_signals():
            tmp = tempfile.mkdtemp(prefix=".import-", dir=parent)
            TEMPORARIES.append(tmp)
    except OSError as e:
        raise BadInput(f"--out {out}: cannot create a directory in {parent}: {e.strerror}")
    os.mkdir(os.path.join(tmp, "data"))
    os.mkdir(os.path.join(tmp, "expected"))
    return out, tmp


class Writer:
    """Writes each GEMM's files into the temporary directory as it is captured."""

    def __init__(self, torch, tmp, dtype, amax):
        self.torch, self.tmp, self.dtype, self.amax = torch, tmp, dtype, amax
        self.rows, self.layers = [], []

    def __call__(self, g):
        torch = self.torch
        m, k = g.a.shape
        n = g.b.shape[1]
        name = file_name_of(g.name)
        if any(name == row[0] for row in self.rows):
            raise BadInput(f"layer {name} appears twice (a module called twice); scripts/import names "
                           "files by layer")
        data, expected = os.path.join(self.tmp, "data"), os.path.join(self.tmp, "expected")
        a = g.a.detach().float().contiguous().numpy()
        b = g.b.detach().float().contiguous().numpy()
        entry = {"layer": name, "source": g.source, "op": g.op, "M": m, "N": n, "K": k}
        if self.dtype == "fp32":
            c = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
            np.save(os.path.join(data, name + ".a.npy"), a.astype("<f4"))
            np.save(os.path.join(data, name + ".b.npy"), b.astype("<f4"))
            np.save(os.path.join(expected, name + ".c.npy"), c.astype("<f4"))
        else:
            a_scale = scale_of(self.amax[g.source])
            if g.b_constant:
                b_scales = [scale_of(v) for v in np.abs(b).max(axis=0)] if k else [1.0] * n
            else:  # an activation as B: one calibrated scale, as for A
                b_scales = [scale_of(self.amax.get(g.source + ".B", float(np.abs(b).max())))] * n
            qa = quantize(a, np.float32(a_scale))
            qb = quantize(b, np.asarray(b_scales, dtype=np.float32)[None, :])
            c = torch.matmul(torch.from_numpy(qa.astype(np.int64)), torch.from_numpy(qb.astype(np.int64)))
            c = c.numpy()
            if c.size and (c.max() > np.iinfo(np.int32).max or c.min() < np.iinfo(np.int32).min):
                raise BadInput(f"layer {name}: its int8 sums do not fit int32")
            np.save(os.path.join(data, name + ".a.npy"), qa)
            np.save(os.path.join(data, name + ".b.npy"), qb)
            np.save(os.path.join(expected, name + ".c.npy"), c.astype("<i4"))
            scales = {
                "layer": name,
                "a_scale": a_scale,
                "a_scheme": "per-tensor symmetric: a_real = a_scale x a_code",
                "b_scales": b_scales,
                "b_scheme": ("per-output-channel symmetric (one per column of B): b_real[:, n] = "
                             "b_scales[n] x b_code[:, n]") if g.b_constant else "per-tensor symmetric",
                "c_scales": [a_scale * s for s in b_scales],
                "c_scheme": "c_real[:, n] = c_scales[n] x c_int32[:, n]",
                "code_range": [-INT8_MAX, INT8_MAX],
            }
            with open(os.path.join(data, name + ".scales.json"), "w") as f:
                json.dump(scales, f, indent=1)
                f.write("\n")
        self.rows.append((name, m, n, k))
        self.layers.append(entry)


def import_network(args):
    check_out(args.out)
    try:
        parse_shape(args.input_shape)  # its spelling, before anything is loaded
    except ValueError as e:
        raise BadInput(str(e))
    import torch  # late: a usage error needs no torch
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    if args.calibration < 1:
        raise BadInput("--calibration must be at least 1")
    if args.torchvision:
        import torchvision
        runner = TorchRunner(torch, torchvision_model(torch, torchvision, args.torchvision, args.seed))
        source = {"torchvision": args.torchvision}
        rank = 4  # torchvision's image models (video and 3-D ones are refused by their modules)
    else:
        import onnx
        runner = OnnxRunner(torch, onnx, load_onnx(onnx, args.model))
        source = {"onnx": os.path.basename(args.model)}
        rank = runner.input_rank()
    try:
        shape = batched_shape(args.input_shape, rank)
    except ValueError as e:
        raise BadInput(str(e))
    if not args.torchvision:
        runner.check_shape(shape)
    gen = torch.Generator().manual_seed(args.seed)
    inputs = [torch.randn(shape, generator=gen) for _ in range(args.calibration if args.dtype == "int8" else 1)]
    amax = {}
    if args.dtype == "int8":
        for x in inputs:
            runner.run(x, None, amax)
    out, tmp = prepare_out(args.out)
    try:
        writer = Writer(torch, tmp, args.dtype, amax)
        runner.run(inputs[0], writer, amax)
        if not writer.rows:
            raise BadInput("the model has no Conv, Gemm, MatMul, Conv2d or Linear layer")
        with open(os.path.join(tmp, "topology.csv"), "w") as f:
            f.write("Layer, M, N, K,\n")
            for name, m, n, k in writer.rows:
                f.write(f"{name}, {m}, {n}, {k},\n")
        manifest = dict(source, input_shape=shape, dtype=args.dtype, seed=args.seed,
                        calibration_inputs=len(inputs) if args.dtype == "int8" else 0, layers=writer.layers)
        with open(os.path.join(tmp, "import.json"), "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's directory is private; DIR is an ordinary one
        with deferred_signals():
            if os.path.isdir(out):
                os.rmdir(out)  # empty, checked above
            os.rename(tmp, out)
            TEMPORARIES.remove(tmp)
    except BaseException:
        remove_temporaries()
        raise
    print(f"{out}: {len(writer.rows)} GEMMs from {len(set(e['source'] for e in writer.layers))} layers, "
          f"{args.dtype}")
    return 0


def main(argv=None):
    """The command: argv without the program's name (None: sys.argv's); returns the exit status."""
    if argv is None:
        argv = sys.argv[1:]
    warnings.filterwarnings("ignore")  # protobuf's and torch's: stderr is one line or nothing
    p = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    p.add_argument("model", nargs="?", help="an ONNX file")
    p.add_argument("--torchvision", metavar="NAME", help="a torchvision model, seeded random weights")
    p.add_argument("--input-shape", required=True,
                   help="the seeded input's shape, N,C,H,W or C,H,W with batch 1 ('x' separates too; "
                        "e.g. 3,224,224)")
    p.add_argument("--dtype", required=True, choices=["fp32", "int8"])
    p.add_argument("--out", required=True, metavar="DIR", help="a new (or empty) directory")
    p.add_argument("--seed", type=int, default=1, help="seed of the input and the torchvision weights")
    p.add_argument("--calibration", type=int, default=4, metavar="N",
                   help="int8: seeded inputs the activation scales are calibrated on (default 4)")

    def error(message):
        print(f"{PROG}: error: {message}", file=sys.stderr)
        sys.exit(2)
    p.error = error
    install_signal_handlers()
    args = p.parse_args(argv)
    if bool(args.model) == bool(args.torchvision):
        error("give an ONNX file or --torchvision NAME (one of them)")
    try:
        return import_network(args)
    except BadInput as e:
        print(f"{PROG}: error: {printable(str(e).strip())}", file=sys.stderr)
        return e.status
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, ArithmeticError, MemoryError) as e:
        print(f"{PROG}: error: {type(e).__name__}: {printable(first_line(e))}", file=sys.stderr)
        return 2
    except Exception as e:  # a defect of the script: still one line, and nothing written
        print(f"{PROG}: internal error: {type(e).__name__}: {printable(first_line(e))}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
