#!/usr/bin/python3
"""Every torch.nn module that computes a GEMM is offloaded or listed (docs/networks.md).

Walks every Module class in torch.nn, builds and runs each once in plain PyTorch under PyTorch's
profiler, which says, independently of offload, how many GEMM-shaped ATen calls it makes (calls
not nested in another one: aten::linear, aten::conv2d, aten::bmm, aten::lstm, ...). Then runs it
under systolic.torch.offload and requires that the layer calls reported plus the fallbacks listed
equal that count, that every reported call ran GEMMs on the model (systolic.matmul counted) and
passed, and that the output is PyTorch's (close in fp32). A class the walk cannot build or run
must be in SKIP with its reason, so a new PyTorch's new module fails here until it is looked at.

  offload_coverage_check.py [walk|compose|strict]

Needs PYTHONPATH with the built package. Exit 0 on pass, 1 on failure.
"""

import inspect
import sys
import warnings

import torch
import torch.nn as nn
from torch.nn.functional import conv1d as conv1d_bound_before  # bound before any `with`

import systolic
import systolic.torch as st

warnings.filterwarnings("ignore")
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


# ATen calls that are GEMMs (or contain one at the top of their call); counted when not nested in
# another of these.
GEMM_OPS = {"aten::" + n for n in (
    "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv", "addmv", "dot",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "_convolution", "einsum", "bilinear", "lstm", "gru", "rnn_tanh", "rnn_relu",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "_native_multi_head_attention",
    "_transformer_encoder_layer_fwd", "mkldnn_convolution", "tensordot")}

R = lambda *s: torch.randn(*s, generator=torch.Generator().manual_seed(len(s) * 7 + s[-1]))

# Classes whose constructor needs arguments: (constructor, inputs).
TABLE = {
    "Linear": (lambda: nn.Linear(6, 5), lambda: (R(2, 3, 6),)),
    "LazyLinear": (lambda: nn.LazyLinear(5), lambda: (R(2, 6),)),
    "Bilinear": (lambda: nn.Bilinear(4, 3, 5), lambda: (R(2, 4), R(2, 3))),
    "Conv1d": (lambda: nn.Conv1d(4, 6, 3, padding="same", padding_mode="reflect", groups=2),
               lambda: (R(2, 4, 9),)),
    "Conv2d": (lambda: nn.Conv2d(4, 4, 3, stride=2, dilation=2, padding=1, groups=4),
               lambda: (R(2, 4, 9, 8),)),
    "Conv3d": (lambda: nn.Conv3d(2, 3, 2, padding=1), lambda: (R(1, 2, 4, 5, 3),)),
    "LazyConv1d": (lambda: nn.LazyConv1d(3, 3), lambda: (R(2, 4, 9),)),
    "LazyConv2d": (lambda: nn.LazyConv2d(3, 3, padding="valid"), lambda: (R(2, 4, 7, 6),)),
    "LazyConv3d": (lambda: nn.LazyConv3d(3, 2), lambda: (R(1, 2, 4, 5, 3),)),
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1, groups=2),
                        lambda: (R(2, 4, 7),)),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(4, 3, (3, 2), stride=(2, 1), padding=1,
                                                   dilation=(1, 2)),
                        lambda: (R(2, 4, 5, 6),)),
    "ConvTranspose3d": (lambda: nn.ConvTranspose3d(2, 3, 2), lambda: (R(1, 2, 3, 3, 3),)),
    "LazyConvTranspose1d": (lambda: nn.LazyConvTranspose1d(3, 3), lambda: (R(2, 4, 7),)),
    "LazyConvTranspose2d": (lambda: nn.LazyConvTranspose2d(3, 3), lambda: (R(2, 4, 5, 6),)),
    "LazyConvTranspose3d": (lambda: nn.LazyConvTranspose3d(3, 2), lambda: (R(1, 2, 3, 3, 3),)),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2, batch_first=True).eval(),
                           lambda: (R(2, 5, 8),) * 3),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                   batch_first=True).eval(),
                                lambda: (R(2, 5, 8),)),
    "TransformerDecoderLayer": (lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0).eval(),
                                lambda: (R(5, 2, 8), R(4, 2, 8))),
    "TransformerEncoder": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True), 2).eval(), lambda: (R(2, 5, 8),)),
    "TransformerDecoder": (lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(
        8, 2, 16, dropout=0.0), 1).eval(), lambda: (R(5, 2, 8), R(4, 2, 8))),
    "Transformer": (lambda: nn.Transformer(8, 2, 1, 1, 16, dropout=0.0).eval(),
                    lambda: (R(5, 2, 8), R(4, 2, 8))),
    "RNN": (lambda: nn.RNN(4, 3), lambda: (R(5, 2, 4),)),
    "LSTM": (lambda: nn.LSTM(4, 3), lambda: (R(5, 2, 4),)),
    "GRU": (lambda: nn.GRU(4, 3), lambda: (R(5, 2, 4),)),
    "RNNCell": (lambda: nn.RNNCell(4, 3), lambda: (R(2, 4),)),
    "LSTMCell": (lambda: nn.LSTMCell(4, 3), lambda: (R(2, 4),)),
    "GRUCell": (lambda: nn.GRUCell(4, 3), lambda: (R(2, 4),)),
    "AdaptiveLogSoftmaxWithLoss": (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]),
                                   lambda: (R(3, 8), torch.tensor([1, 5, 9]))),
    "Embedding": (lambda: nn.Embedding(10, 4), lambda: (torch.tensor([[1, 2], [3, 9]]),)),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(10, 4), lambda: (torch.tensor([[1, 2], [3, 9]]),)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4), lambda: (R(2, 4, 6),)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(4), lambda: (R(2, 4, 3, 3),)),
    "BatchNorm3d": (lambda: nn.BatchNorm3d(4), lambda: (R(2, 4, 2, 3, 3),)),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(4), lambda: (R(2, 4, 6),)),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(4), lambda: (R(2, 4, 3, 3),)),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(4), lambda: (R(2, 4, 2, 3, 3),)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: (R(2, 4, 6),)),
    "LayerNorm": (lambda: nn.LayerNorm(6), lambda: (R(2, 4, 6),)),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(2), lambda: (R(2, 4, 6),)),
    "CrossMapLRN2d": (lambda: nn.CrossMapLRN2d(3), lambda: (R(2, 4, 3, 3),)),
    "Upsample": (lambda: nn.Upsample(scale_factor=2), lambda: (R(2, 4, 3, 3),)),
    "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d(scale_factor=2),
                             lambda: (R(2, 4, 3, 3),)),
    "UpsamplingNearest2d": (lambda: nn.UpsamplingNearest2d(scale_factor=2),
                            lambda: (R(2, 4, 3, 3),)),
    "Threshold": (lambda: nn.Threshold(0.1, 2.0), lambda: (R(2, 4, 6),)),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 2)), lambda: (R(2, 4, 6),)),
    "Fold": (lambda: nn.Fold((4, 5), 2), lambda: (R(2, 12, 12),)),
    "Unfold": (lambda: nn.Unfold(2), lambda: (R(2, 3, 4, 5),)),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), lambda: (R(2, 4, 3, 3),)),
    "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), lambda: (R(2, 1, 4, 4),)),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), lambda: (R(2, 4, 3, 3),)),
    "FractionalMaxPool2d": (lambda: nn.FractionalMaxPool2d(2, output_size=2),
                            lambda: (R(2, 4, 5, 5),)),
    "FractionalMaxPool3d": (lambda: nn.FractionalMaxPool3d(2, output_size=2),
                            lambda: (R(2, 4, 5, 5, 5),)),
    "MaxUnpool1d": (lambda: nn.MaxUnpool1d(2),
                    lambda: (R(1, 1, 3), torch.tensor([[[0, 3, 5]]]))),
    "MaxUnpool2d": (lambda: nn.MaxUnpool2d(2),
                    lambda: (R(1, 1, 1, 2), torch.tensor([[[[0, 3]]]]))),
    "MaxUnpool3d": (lambda: nn.MaxUnpool3d(2),
                    lambda: (R(1, 1, 1, 1, 2), torch.tensor([[[[[0, 3]]]]]))),
}
# Constructors taking one size or kernel argument, run on a 4-D or 5-D input.
for _n in ("AvgPool1d", "MaxPool1d", "LPPool1d", "AdaptiveMaxPool1d", "AdaptiveAvgPool1d",
           "ReflectionPad1d", "ReplicationPad1d"):
    TABLE[_n] = (lambda n=_n: (getattr(nn, n)(2, 2) if n == "LPPool1d" else getattr(nn, n)(2)),
                 lambda: (R(2, 4, 6),))
for _n in ("AvgPool2d", "MaxPool2d", "LPPool2d", "AdaptiveMaxPool2d", "AdaptiveAvgPool2d",
           "ReflectionPad2d", "ReplicationPad2d", "ZeroPad2d"):
    TABLE[_n] = (lambda n=_n: (getattr(nn, n)(2, 2) if n == "LPPool2d" else getattr(nn, n)(2)),
                 lambda: (R(2, 4, 6, 5),))
for _n in ("AvgPool3d", "MaxPool3d", "AdaptiveMaxPool3d", "AdaptiveAvgPool3d",
           "ReflectionPad3d", "ReplicationPad3d"):
    TABLE[_n] = (lambda n=_n: getattr(nn, n)(2), lambda: (R(2, 4, 4, 4, 4),))
for _n, _d in (("ConstantPad1d", 3), ("ConstantPad2d", 4), ("ConstantPad3d", 5)):
    TABLE[_n] = (lambda n=_n: getattr(nn, n)(1, 0.5), lambda d=_d: (R(*([2, 3, 4, 3, 4][:d])),))

# What the walk does not run, and why.
SKIP = {
    "Module": "the base class", "Container": "deprecated base", "Sequential": "a container",
    "ModuleList": "a container", "ModuleDict": "a container", "ParameterList": "a container",
    "ParameterDict": "a container", "DataParallel": "wraps a module for several devices",
    "SyncBatchNorm": "needs a process group (distributed)", "RNNBase": "the base of RNN, LSTM, GRU",
    "RNNCellBase": "the base of the cells", "MultiLabelMarginLoss": "needs int64 targets",
    "Identity": None, "Flatten": None,
}

# Inputs tried, in turn, on a class built without arguments (activations, losses, ...).
GENERIC = [lambda: (R(2, 4, 6),), lambda: (R(2, 4, 6), R(2, 4, 6).sigmoid()),
           lambda: (R(2, 4, 6).sigmoid(), R(2, 4, 6).sigmoid()), lambda: (R(2, 4, 3, 3),),
           lambda: (R(2, 4, 2, 3, 3),),
           lambda: (R(3, 5), torch.tensor([1, 0, 4])), lambda: (R(3, 5), R(3, 5), R(3, 5)),
           lambda: (R(3, 5), R(3, 5), torch.tensor([1.0, -1.0, 1.0])),
           lambda: (R(3, 5), R(3, 5), torch.ones(3)),
           lambda: (R(5, 2, 6).log_softmax(2), torch.tensor([[1, 2], [1, 1]]),
                    torch.tensor([5, 5]), torch.tensor([2, 2]))]


# A fused kernel PyTorch takes without offload counts as the layer calls it does in one: the
# attention's projection, two products and output projection; the encoder layer's two more.
FUSED = {"aten::_native_multi_head_attention": 4, "aten::_transformer_encoder_layer_fwd": 6}


def top_level_gemms(module, inputs):
    """The GEMM-shaped ATen calls of one forward in plain PyTorch, not nested in another. The
    profiler's own parent links miss some nestings (its clock has microseconds, and a child can
    seem to start as its parent ends), so a call is nested when an earlier GEMM-shaped call's
    interval holds it to within a microsecond."""
    with torch.autograd.profiler.profile() as prof:
        module(*inputs)
    events = sorted((e for e in prof.function_events if e.name in GEMM_OPS), key=lambda e: e.id)
    n = []
    for i, e in enumerate(events):
        if not any(p.time_range.start <= e.time_range.start <= p.time_range.end
                   and e.time_range.end <= p.time_range.end + 1 for p in events[:i]):
            n += [e.name] * FUSED.get(e.name, 1)
    return n


class Spy:
    """Counts systolic.matmul calls."""

    def __init__(self):
        self.calls = 0
        self.real = systolic.matmul

    def __call__(self, a, b, **kw):
        self.calls += 1
        return self.real(a, b, **kw)

    def __enter__(self):
        systolic.matmul = self
        return self

    def __exit__(self, *exc):
        systolic.matmul = self.real


def flat(y):
    if torch.is_tensor(y):
        return [y]
    if isinstance(y, (tuple, list)):
        return [t for v in y for t in flat(v)]
    if hasattr(y, "_fields"):
        return flat(tuple(y))
    return []


def build(name):
    cls = getattr(nn, name)
    torch.manual_seed(0)
    if name in TABLE:
        ctor, inp = TABLE[name]
        mod = ctor()
        inputs = inp()
        mod(*inputs)  # lazy modules take their shapes here
        return mod, inputs
    mod = cls()
    for inp in GENERIC:
        try:
            with torch.no_grad():
                mod(*inp())
            return mod, inp()
        except Exception:
            continue
    return None, None


def run_one(name, mod, inputs):
    with torch.no_grad():
        mod = mod.eval() if name.startswith(("Transformer", "MultiheadAttention")) else mod
        torch.manual_seed(5)
        ref = mod(*inputs)
        ops = top_level_gemms(mod, inputs)
        with Spy() as spy, st.offload(mod, array=8) as h:
            torch.manual_seed(5)
            y = mod(*inputs)
    calls = [r for r in h.reports if r["phase"] == "forward"]
    accounted = len(calls) + len(h.fallbacks)
    ok = accounted == len(ops)
    ok = ok and all(r["passed"] and r["gemms"] > 0 for r in calls)
    ok = ok and (spy.calls > 0) == bool(calls) and spy.calls == sum(r["gemms"] for r in calls)
    ys, rs = flat(y), flat(ref)
    close = len(ys) == len(rs) and all(
        a.shape == b.shape and (not a.is_floating_point()
                                or torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True))
        for a, b in zip(ys, rs))
    what = ("offloaded %d layer calls (%d GEMMs)" % (len(calls), spy.calls) if calls else "")
    if h.fallbacks:
        what += ("; " if what else "") + "listed %s" % [f.op for f in h.fallbacks]
    if not ops:
        what = "no GEMM"
    check(ok and close, "%s: %d GEMM-shaped ATen calls (%s): %s%s" % (
        name, len(ops), ", ".join(sorted(set(o[6:] for o in ops))) or "-", what,
        "" if close else "; output differs from PyTorch's"))
    return bool(ops), bool(calls), bool(h.fallbacks)


def walk():
    names = sorted(n for n, c in vars(nn).items()
                   if inspect.isclass(c) and issubclass(c, nn.Module))
    gemm, offloaded, listed, skipped = [], [], [], []
    for name in names:
        if name in SKIP:
            skipped.append(name)
            continue
        try:
            mod, inputs = build(name)
        except Exception as e:
            mod, inputs = None, None
            print("      %s: %s" % (name, e))
        if mod is None:
            check(False, "%s: not built or run by the walk: add it to TABLE or SKIP" % name)
            continue
        g, o, f = run_one(name, mod, inputs)
        if g:
            gemm.append(name)
            (offloaded if o else listed).append(name)
    print("%d classes in torch.nn, %d skipped (%s); %d compute a GEMM: %d offloaded, %d listed "
          "as fallbacks (%s)" % (len(names), len(skipped), ", ".join(skipped), len(gemm),
                                 len(offloaded), len(listed), ", ".join(listed)))
    check(len(gemm) >= 28, "the walk found the GEMM modules (%d >= 28)" % len(gemm))


class Conv1dLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 4, 3)
        self.fc = nn.Linear(4 * 6, 5)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


class Products(nn.Module):
    """The free-function GEMMs, one name bound before offload's `with`."""

    def forward(self, x, w):
        a = torch.mm(x, w) + torch.addmm(x[:, :1], x, w) + x.matmul(w) + x @ w
        b = torch.bmm(x[None], w[None])[0] + torch.baddbmm(x[None], x[None], w[None])[0]
        c = torch.einsum("ij,jk->ik", x, w) + torch.einsum("bi,bj,ij->b", x, x, w)[:, None]
        d = conv1d_bound_before(x[None], w.t()[:, :, None])[0].t()
        e = torch.addbmm(x, x[None].expand(3, -1, -1), w[None].expand(3, -1, -1))
        return a + b + c + d + e + torch.mv(x, w[:, 0])[:, None] + torch.dot(x[0], w[:, 1])


def compose():
    torch.manual_seed(2)
    m = Conv1dLinear()
    x = torch.randn(2, 3, 8)
    with torch.no_grad():
        ref = m(x)
        with st.offload(m, array=8) as h:
            y = m(x)
    names = [r["name"] for r in h.reports]
    check(names == ["conv", "fc"] and not h.fallbacks and torch.allclose(y, ref, atol=1e-5),
          "nn.Conv1d -> nn.Linear reports both layers (%s), fallbacks %s" % (names, h.fallbacks))
    x, w = torch.randn(5, 5), torch.randn(5, 5)
    p = Products()
    with torch.no_grad():
        ref = p(x, w)
        with Spy() as spy, st.offload(p, array=4) as h:
            y = p(x, w)
    kinds = sorted(r["kind"] for r in h.reports)
    want = sorted(["mm", "addmm", "matmul", "matmul", "bmm", "baddbmm", "einsum", "einsum",
                   "conv1d", "addbmm", "mv", "dot"])
    check(kinds == want and not h.fallbacks,
          "mm, addmm, Tensor.matmul, @, bmm, baddbmm, einsum (2 and 3 operands), a conv1d bound "
          "before the with, addbmm, mv, dot: all on the model (%s)" % kinds)
    check(torch.allclose(y, ref, rtol=1e-4, atol=1e-4),
          "and the result is PyTorch's (max difference %.3g)" % (y - ref).abs().max())
    # Outside the with, nothing is intercepted.
    with Spy() as spy:
        p(x, w)
    check(spy.calls == 0, "outside the with, no GEMM runs on the model")


def strict():
    lstm = nn.LSTM(4, 3)
    # A packed sequence (lengths 5 and 3) runs in PyTorch: listed with its call site.
    x = nn.utils.rnn.pack_padded_sequence(torch.randn(5, 2, 4), [5, 3])
    with st.offload(lstm, array=8) as h:
        lstm(x)
    fb = h.fallbacks
    check(len(fb) == 1 and fb[0].op == "torch.lstm" and fb[0].reason.startswith("a packed sequence")
          and fb[0].site.startswith(__file__) and not h.reports,
          "an LSTM on a packed sequence is listed with its call site in this file (%s)" % fb)
    raised = None
    try:
        with st.offload(lstm, array=8, strict=True):
            lstm(x)
    except st.FallbackError as e:
        raised = e
    check(raised is not None and raised.fallback.op == "torch.lstm",
          "strict=True raises FallbackError at the first fallback (%s)" % raised)
    with st.offload(None, array=8, strict=True) as h:
        torch.mm(torch.eye(3), torch.eye(3))
    check(len(h.reports) == 1 and not h.fallbacks, "strict=True passes what it offloads")
    with st.offload(None, array=8) as h:
        torch.einsum("ii,ij->j", torch.eye(3), torch.ones(3, 2))
        torch.mm(torch.ones(2, 2, dtype=torch.int64), torch.ones(2, 2, dtype=torch.int64))
    check([f.reason.split(":")[0] for f in h.fallbacks]
          == ["einsum 'ii,ij->j'", "operands of dtype int64, not floating point"],
          "a diagonal einsum and an integer mm are listed with their reasons (%s)"
          % [f.reason for f in h.fallbacks])


def recurrent():
    """RNN, LSTM (projections too), GRU and the cells: their GEMMs on the model, as many as the
    lowering says (per layer and direction, one of the whole input and one per step, two with a
    projection), the outputs and final states PyTorch's, and gradients through them."""
    cases = [
        ("LSTM 2 layers, bidirectional, proj_size 2", nn.LSTM(4, 3, num_layers=2, bidirectional=True,
                                                             proj_size=2), R(5, 2, 4), 2 * 2 * (1 + 5 * 2)),
        ("GRU 2 layers, batch_first", nn.GRU(4, 3, num_layers=2, batch_first=True), R(2, 5, 4), 2 * (1 + 5)),
        ("RNN relu, no bias, unbatched", nn.RNN(4, 3, nonlinearity="relu", bias=False), R(6, 4), 1 + 6),
        ("LSTMCell", nn.LSTMCell(4, 3), R(2, 4), 2),
        ("GRUCell, unbatched", nn.GRUCell(4, 3), R(4), 2),
        ("RNNCell", nn.RNNCell(4, 3), R(2, 4), 2),
    ]
    for what, mod, x, gemms in cases:
        ref = mod(x)
        with Spy() as spy, st.offload(mod, array=4, strict=True) as h:
            y = mod(x)
        ys, rs = flat(y), flat(ref)
        close = len(ys) == len(rs) and all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(ys, rs))
        check(close and len(h.reports) == 1 and h.reports[0]["gemms"] == gemms == spy.calls
              and h.reports[0]["passed"],
              "%s: %d GEMMs on the model (%s), output and states PyTorch's" % (what, spy.calls, gemms))
        # Gradients through the model's GEMMs, as PyTorch's (computed by PyTorch from them).
        mod.zero_grad()
        sum(t.sum() for t in rs).backward()
        want = [p.grad.clone() for p in mod.parameters()]
        mod.zero_grad()
        sum(t.sum() for t in ys).backward()
        got = [p.grad for p in mod.parameters()]
        check(all(g is not None and torch.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want)),
              "%s: every parameter's gradient is PyTorch's" % what)
    # int8 and dropout between layers in training are refused, with their reasons.
    with st.offload(nn.GRU(4, 3), array=4, dtype="int8") as h:
        h.module(R(5, 2, 4))
    gru = nn.GRU(4, 3, num_layers=2, dropout=0.5).train()
    with st.offload(gru, array=4) as h2:
        gru(R(5, 2, 4))
    check([f.reason.split(":")[0] for f in h.fallbacks + h2.fallbacks]
          == ["int8", "dropout between layers in training"],
          "int8 and training dropout are listed with their reasons (%s)" % (h.fallbacks + h2.fallbacks))


def main():
    what = sys.argv[1:] or ["walk", "compose", "strict", "recurrent"]
    for w in what:
        globals()[w]()
    print("%d failed" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
