#!/usr/bin/python3
"""End-to-end networks through systolic.torch.offload (docs/networks.md).

  offload_check.py resnet18|mobilenet_v2|transformer   fp32 and int8 against PyTorch's run
  offload_check.py coverage    every conv, linear and attention matmul went through the model
  offload_check.py fallback    the model's results are the ones used (no silent PyTorch)
  offload_check.py layers      conv variants (padding modes, same, stride, dilation, groups)

Needs PYTHONPATH with the built package (build/python). Exit 0 on pass, 1 on failure.
"""

import sys

import numpy as np
import torch
import torchvision

import systolic
import systolic.torch as st

# What the docs promise (docs/networks.md#what-the-three-networks-give).
FP32_MAX_REL = 1e-4
INT8_MIN_AGREEMENT = 0.75
INT8_MAX_REL = {"resnet18": 0.15, "mobilenet_v2": 0.35, "transformer": 0.1}

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def network(name):
    torch.manual_seed(1)
    if name == "resnet18":
        return torchvision.models.resnet18(weights=None).eval(), (3, 32, 32), 1
    if name == "mobilenet_v2":
        # width 0.25 keeps every depthwise layer with about a third of the channels (and GEMMs).
        model = torchvision.models.mobilenet_v2(weights=None, width_mult=0.25)
        return model.eval(), (3, 32, 32), 1
    if name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        return layer.eval(), (8, 32), -1
    raise SystemExit("offload_check: unknown network %r" % name)


def inputs(shape, n, seed):
    return torch.randn((n,) + shape, generator=torch.Generator().manual_seed(seed))


def compare(y, ref, axis):
    agree = (y.argmax(axis) == ref.argmax(axis)).float().mean().item()
    n = ref.shape[0]
    rel = ((y - ref).abs().reshape(n, -1).amax(1)
           / ref.abs().reshape(n, -1).amax(1).clamp_min(1e-30)).max().item()
    return agree, rel


def expected_layers(model):
    """The layer calls and GEMMs one forward must make, counted from the module tree."""
    calls, gemms = {}, 0
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.Conv2d):
            calls[name] = "conv2d"
        elif isinstance(m, torch.nn.Linear):
            calls[name] = "linear"
        elif isinstance(m, torch.nn.MultiheadAttention):
            calls[name + ".in_proj"] = "linear"
            calls[name + ".bmm0"] = "bmm"
            calls[name + ".bmm1"] = "bmm"
    return calls


def run_network(name):
    model, shape, axis = network(name)
    x = inputs(shape, 2, 1)
    with torch.no_grad():
        ref = model(x)
    for dtype in ("fp32", "int8"):
        n = 2 if dtype == "fp32" else 4
        x = inputs(shape, n, 1)
        with torch.no_grad():
            ref = model(x)
            h = st.offload(model, array=16, dtype=dtype,
                           calibration=inputs(shape, 4, 2) if dtype == "int8" else None)
            with h:
                y = model(x)
        agree, rel = compare(y, ref, axis)
        print("%s %s: top-1 agreement %.1f%%, max relative error %.3g, %d layer calls, %d GEMMs"
              % (name, dtype, 100 * agree, rel, len(h.reports),
                 sum(r["gemms"] for r in h.reports)))
        check(not h.fallbacks,
              "%s %s: nothing ran in PyTorch instead (%s)" % (name, dtype, h.fallbacks))
        check(all(r["passed"] for r in h.reports),
              "%s %s: every job passed its scoreboard" % (name, dtype))
        check({r["name"] for r in h.reports} == set(expected_layers(model)),
              "%s %s: one report per conv/linear/attention matmul" % (name, dtype))
        if dtype == "fp32":
            check(agree == 1.0,
                  "%s fp32: top-1 agreement 100%% (got %.1f%%)" % (name, 100 * agree))
            check(rel < FP32_MAX_REL,
                  "%s fp32: max relative error %.3g < %g" % (name, rel, FP32_MAX_REL))
        else:
            check(agree >= INT8_MIN_AGREEMENT, "%s int8: top-1 agreement %.1f%% >= %.0f%%"
                  % (name, 100 * agree, 100 * INT8_MIN_AGREEMENT))
            check(rel < INT8_MAX_REL[name], "%s int8: max relative error %.3g < %g"
                  % (name, rel, INT8_MAX_REL[name]))
            check(all(r["scale_source"] == "calibrated" for r in h.reports if "scale_source" in r),
                  "%s int8: every activation scale came from the calibration" % name)
            check(all(r["overflow_wraps"] == 0 for r in h.reports),
                  "%s int8: no int32 accumulator wrapped" % name)


class Spy:
    """Wraps systolic.matmul: counts the GEMMs and can change the result of chosen ones."""

    def __init__(self, perturb=None):
        self.calls = 0
        self.shapes = []
        self.perturb = perturb
        self.real = systolic.matmul

    def __call__(self, a, b, **kw):
        self.calls += 1
        self.shapes.append((a.shape[0], a.shape[1], b.shape[1]))
        c, rep = self.real(a, b, **kw)
        if self.perturb and self.perturb(a, b):
            c = c * 2 + 1
        return c, rep

    def __enter__(self):
        systolic.matmul = self
        return self

    def __exit__(self, *exc):
        systolic.matmul = self.real


def coverage():
    for name in ("resnet18", "mobilenet_v2", "transformer"):
        model, shape, _ = network(name)
        x = inputs(shape, 2, 1)
        want = expected_layers(model)
        groups = sum(m.groups for m in model.modules() if isinstance(m, torch.nn.Conv2d))
        linears = sum(1 for k in want.values() if k == "linear")
        heads = sum(m.num_heads for m in model.modules()
                    if isinstance(m, torch.nn.MultiheadAttention))
        with torch.no_grad(), Spy() as spy, st.offload(model, array=16) as h:
            model(x)
        kinds = {}
        for r in h.reports:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        want_kinds = {}
        for k in want.values():
            want_kinds[k] = want_kinds.get(k, 0) + 1
        check(kinds == want_kinds, "%s: reports per kind %s == layers per kind %s"
              % (name, kinds, want_kinds))
        # One GEMM per conv group, one per linear, one per (image, head) per attention matmul.
        gemms = groups + linears + 2 * heads * x.shape[0]
        check(spy.calls == gemms, "%s: systolic.matmul ran %d GEMMs, the module tree needs %d"
              % (name, spy.calls, gemms))
        check(sum(r["gemms"] for r in h.reports) == spy.calls,
              "%s: the reports count the GEMMs that ran" % name)
        macs = sum(m * k * p for m, k, p in spy.shapes)
        check(sum(r["macs_real"] for r in h.reports) == macs,
              "%s: the reports' real MACs are the GEMMs' M*K*P" % name)


def fallback():
    """If offload fell back to PyTorch for any kind, changing the model's C would not show."""
    for name, kind in (("resnet18", "conv"), ("resnet18", "linear"),
                       ("transformer", "bmm"), ("transformer", "linear")):
        model, shape, _ = network(name)
        x = inputs(shape, 2, 1)
        with torch.no_grad():
            ref = model(x)
            # perturb only GEMMs of one kind: attention GEMMs are 8x8 (K = head dim 8),
            # the classifier's P is 1000, the transformer's linears have K or P of 32/64/96.
            if kind == "bmm":
                pick = lambda a, b: a.shape[1] == 8 and b.shape[1] == 8
            elif kind == "linear" and name == "resnet18":
                pick = lambda a, b: b.shape[1] == 1000
            elif kind == "linear":
                pick = lambda a, b: not (a.shape[1] == 8 and b.shape[1] == 8)
            else:
                pick = lambda a, b: b.shape[1] != 1000
            with Spy(pick) as spy, st.offload(model, array=16) as h:
                y = model(x)
        rel = ((y - ref).abs().max() / ref.abs().max()).item()
        check(rel > 1e-2,
              "%s: a wrong C in the %s GEMMs shows in the output (relative change %.3g)"
              % (name, kind, rel))
        check(any(r["max_rel_error"] > 1e-2 for r in h.reports),
              "%s: the per-layer error names the wrong %s GEMMs" % (name, kind))
    # The unchanged model agrees, so the change above is the model's C and nothing else.
    model, shape, _ = network("resnet18")
    x = inputs(shape, 2, 1)
    with torch.no_grad():
        ref = model(x)
        with Spy() as spy, st.offload(model, array=16) as h:
            y = model(x)
    check(spy.calls > 0 and torch.allclose(y, ref, rtol=1e-4, atol=1e-5),
          "resnet18: unperturbed, the model's C gives PyTorch's output")
    # A failed scoreboard (a planted defect) raises out of the forward, and PyTorch is restored.
    model, shape, _ = network("transformer")
    saved = (torch.bmm, torch.matmul, torch.nn.functional.linear, torch.nn.functional.conv2d)
    raised = None
    with torch.no_grad():
        try:
            with st.offload(model, array=16, inject="clear-between-k", k_tile=4):
                model(inputs(shape, 2, 1))
        except systolic.CheckError as e:
            raised = e
        grad_after = torch.is_grad_enabled()
    check(raised is not None and raised.report is not None and not raised.report["pass"],
          "transformer: a failed scoreboard raises systolic.CheckError with its report")
    check(not grad_after and saved == (torch.bmm, torch.matmul, torch.nn.functional.linear,
                                        torch.nn.functional.conv2d)
          and not any(p.requires_grad is False for p in model.parameters()),
          "transformer: after the error, PyTorch's functions and grad mode are restored")


class Variants(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.zeros = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.reflect = torch.nn.Conv2d(8, 8, 3, padding=2, padding_mode="reflect", dilation=2)
        self.replicate = torch.nn.Conv2d(8, 6, (3, 2), padding=(1, 2), padding_mode="replicate",
                                         stride=(2, 1))
        self.circular = torch.nn.Conv2d(6, 6, 3, padding=1, padding_mode="circular", groups=3,
                                        bias=False)
        self.same = torch.nn.Conv2d(6, 6, 4, padding="same", groups=6)
        self.valid = torch.nn.Conv2d(6, 12, 1, stride=2, padding="valid", groups=2)
        self.fc = torch.nn.Linear(12, 5)

    def forward(self, x):
        x = self.same(self.circular(self.replicate(self.reflect(self.zeros(x)))))
        x = self.valid(x)
        y = self.fc(x.permute(0, 2, 3, 1))          # Linear on a 4-D input
        return torch.matmul(y, y.transpose(-1, -2)) + (y[0] @ y[0].transpose(-1, -2))


def layers():
    torch.manual_seed(3)
    model = Variants().eval()
    x = inputs((4, 11, 9), 2, 5)
    with torch.no_grad():
        ref = model(x)
        for dtype in ("fp32", "int8"):
            with st.offload(model, array=(4, 3), dtype=dtype) as h:
                y = model(x)
            rel = ((y - ref).abs().max() / ref.abs().max()).item()
            limit = 1e-5 if dtype == "fp32" else 0.05
            check(y.shape == ref.shape and rel < limit,
                  "conv variants %s: relative error %.3g < %g" % (dtype, rel, limit))
            names = [r["name"] for r in h.reports]
            check(names[:7] == ["zeros", "reflect", "replicate", "circular", "same", "valid", "fc"]
                  and len(names) == 9 and not h.fallbacks,
                  "conv variants %s: every layer and both matmuls on the model (%s)"
                  % (dtype, names))
            worst = max(r["max_rel_error"] for r in h.reports)
            check(worst < limit,
                  "conv variants %s: worst layer error %.3g < %g" % (dtype, worst, limit))


def main():
    what = sys.argv[1:] or ["layers"]
    for w in what:
        if w in ("resnet18", "mobilenet_v2", "transformer"):
            run_network(w)
        elif w in ("coverage", "fallback", "layers"):
            globals()[w]()
        else:
            raise SystemExit("offload_check: unknown check %r" % w)
    print("%d failed" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
