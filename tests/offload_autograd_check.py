#!/usr/bin/python3
"""Autograd through systolic.torch.offload (docs/networks.md, "Gradients").

One fp32 SGD step of a small CNN (conv 1->4, 3x3, with bias; flatten; linear 144->3), loss
sum(y * G) for a fixed G, on 4 images of 8x8: once in plain PyTorch, once with
offload(backward=True), where the forward GEMMs and the gradient GEMMs (dX = dY.W^T,
dW = X^T.dY) run on the model. The new weights must agree within the summation bound below,
every parameter must have a gradient, and the reports must hold the backward GEMMs. The default
(backward=False) must give PyTorch's gradients computed by PyTorch from the offloaded forward.

The bound. Any order of summing n products in fp32 (u = 2^-24) is within gamma_n |A||B|
elementwise of the exact product, gamma_n = n u / (1 - n u) (Higham, Accuracy and Stability of
Numerical Algorithms, 2nd ed., eq. 3.13), so two such results differ by at most 2 gamma_n |A||B|
on the same operands. Carried through this network to first order (a loss linear in y makes
dY = G exact in both runs), elementwise, with |.| taken of PyTorch's values in float64:
  H = conv + b1:   E_H   = 2 gamma_9 |A1||W1^T| + 2u |H|            (A1 = im2col(x), K = 9)
  dW2 = G^T H:     E_dW2 = 2 gamma_4 |G|^T|H| + |G|^T E_H            (K = the batch, 4)
  dH = G W2:       E_dH  = 2 gamma_3 |G||W2|                         (K = 3)
  dW1 = A1^T dH:   E_dW1 = 2 gamma_144 |A1|^T|dH| + |A1|^T E_dH     (K = 4 x 6 x 6 = 144)
  db1 = sum dH:    E_db1 = sum E_dH + 2 gamma_144 sum |dH|;  db2 = sum G: the same in both
  W' = W - lr g:   |W'_model - W'_torch| <= lr E_g (1 + 3u) + 2u (|W'| + lr |g|)
with 1% added for the neglected O(u^2) terms.

  offload_autograd_check.py [step|default]
"""

import sys

import torch
import torch.nn as nn

import systolic
import systolic.torch as st

failures = []
U = 2.0 ** -24


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def gamma(n):
    return n * U / (1 - n * U)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 3)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


def setup():
    torch.manual_seed(4)
    model = CNN()
    g = torch.Generator().manual_seed(9)
    x = torch.randn(4, 1, 8, 8, generator=g)
    G = torch.randn(4, 3, generator=g)
    return model, x, G


def sgd_step(model, x, G, lr, handle=None):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    opt.zero_grad()
    if handle is None:
        (model(x) * G).sum().backward()
    else:
        with handle:
            (model(x) * G).sum().backward()
    grads = {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()}
    opt.step()
    return grads


def bounds(model, x, G, lr, grads, new):
    """The elementwise bound on |W'_model - W'_torch| for every parameter (see the top)."""
    d = lambda t: t.detach().double()
    w1, b1, w2 = d(model.conv.weight), d(model.conv.bias), d(model.fc.weight)
    a1 = torch.nn.functional.unfold(d(x), 3).transpose(1, 2).reshape(-1, 9)      # (144, 9)
    h = (a1 @ w1.reshape(4, 9).t() + b1).reshape(4, 6, 6, 4).permute(0, 3, 1, 2).reshape(4, -1)
    e_h = (2 * gamma(9) * (a1.abs() @ w1.reshape(4, 9).t().abs())
           ).reshape(4, 6, 6, 4).permute(0, 3, 1, 2).reshape(4, -1) + 2 * U * h.abs()
    g = d(G)
    e_dw2 = (2 * gamma(4) * (g.abs().t() @ h.abs()) + g.abs().t() @ e_h)
    dh = g @ w2                                                                  # (4, 144)
    e_dh = 2 * gamma(3) * (g.abs() @ w2.abs())
    dc = dh.reshape(4, 4, 6, 6).permute(0, 2, 3, 1).reshape(-1, 4)               # (144, 4)
    e_dc = e_dh.reshape(4, 4, 6, 6).permute(0, 2, 3, 1).reshape(-1, 4)
    e_dw1 = (2 * gamma(144) * (a1.abs().t() @ dc.abs()) + a1.abs().t() @ e_dc).t().reshape(4, 1, 3, 3)
    e_db1 = e_dc.sum(0) + 2 * gamma(144) * dc.abs().sum(0)
    e_g = {"conv.weight": e_dw1, "conv.bias": e_db1, "fc.weight": e_dw2,
           "fc.bias": 2 * gamma(4) * g.abs().sum(0)}
    return {n: 1.01 * (lr * e_g[n] * (1 + 3 * U) + 2 * U * (d(new[n]).abs() + lr * d(grads[n]).abs()))
            for n in e_g}


def step():
    lr = 0.1
    model, x, G = setup()
    ref_model, _, _ = setup()
    ref_grads = sgd_step(ref_model, x, G, lr)
    with torch.no_grad():
        w0 = {n: p.clone() for n, p in model.named_parameters()}
    h = st.offload(model, array=8, backward=True)
    grads = sgd_step(model, x, G, lr, h)
    check(all(g is not None for g in grads.values()),
          "every parameter has a gradient (%s)" % sorted(grads))
    new = dict(model.named_parameters())
    ref_new = dict(ref_model.named_parameters())
    init, _, _ = setup()
    bound = bounds(init, x, G, lr, ref_grads, ref_new)
    for n in bound:
        diff = (new[n].detach().double() - ref_new[n].detach().double()).abs()
        moved = (new[n].detach() - w0[n]).abs().max().item()
        ratio = (diff / bound[n]).max().item()
        check(bool((diff <= bound[n]).all()) and moved > 0,
              "%s after one step: max |model - PyTorch| %.3g, within the bound (worst at %.2f of "
              "it), the step moved it by up to %.3g" % (n, diff.max().item(), ratio, moved))
    back = [r for r in h.reports if r["phase"] == "backward"]
    got = sorted((r["name"], tuple(r["grads"]), r["gemms"]) for r in back)
    check(got == [("conv", ("dW",), 1), ("fc", ("dX", "dW"), 2)],
          "the reports hold the backward GEMMs: fc dX and dW, conv dW (x needs none): %s" % got)
    shapes = {r["name"]: r["gemm_shapes"] for r in back}
    check(shapes.get("fc") == [[4, 3, 144], [144, 4, 3]] and shapes.get("conv") == [[9, 144, 4]],
          "their shapes: fc dX 4x3x144 and dW^T 144x4x3, conv dW^T 9x144x4 (%s)" % shapes)
    check(all(r["passed"] and r["max_rel_error"] < 1e-5 for r in back),
          "every backward GEMM passed its scoreboard, within 1e-5 of PyTorch's on its operands")
    check(h.total()["gemms"] == 5, "the totals count 2 forward and 3 backward GEMMs (%d)"
          % h.total()["gemms"])


class Spy:
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


def default():
    model, x, G = setup()
    with Spy() as spy:
        h = st.offload(model, array=8)
        grads = sgd_step(model, x, G, 0.1, h)
    check(spy.calls == 2 and all(r["phase"] == "forward" for r in h.reports),
          "backward=False: only the 2 forward GEMMs ran on the model (%d)" % spy.calls)
    ref_model, _, _ = setup()
    ref = sgd_step(ref_model, x, G, 0.1)
    check(all(grads[n] is not None for n in ref), "backward=False: every parameter has a gradient")
    worst = max(((grads[n] - ref[n]).abs().max() / ref[n].abs().max()).item() for n in ref)
    check(worst < 1e-5, "backward=False: PyTorch's gradients (max relative difference %.3g, the "
          "forward's rounding only)" % worst)
    y = None
    with st.offload(model, array=8):
        y = model(x)
    check(y.grad_fn is not None and y.requires_grad, "an offloaded output keeps its grad_fn (%s)"
          % type(y.grad_fn).__name__)


def main():
    what = sys.argv[1:] or ["step", "default"]
    for w in what:
        globals()[w]()
    print("%d failed" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
