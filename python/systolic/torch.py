"""Run a PyTorch module's GEMMs on the systolic model (docs/networks.md).

``offload(module, ...)`` returns a context manager. Inside ``with``, every ``F.conv2d``
(so every ``nn.Conv2d``, any padding mode, stride, dilation, groups), every ``F.linear``
(every ``nn.Linear`` and ``nn.MultiheadAttention``'s projections) and every ``torch.matmul``,
``torch.bmm`` and ``torch.baddbmm`` (the attention products) runs through ``systolic.matmul``,
lowered to GEMMs as systolic-run lowers a topology. Bias, masks and everything else stay in
PyTorch. One report per layer call is appended to ``handle.reports``.
"""

import contextlib
import math

import numpy as np
import torch
import torch.nn.functional as F

import systolic

# What offload runs a layer in: a floating-point format of the model's list (from the native
# module), or int8 codes of quantized activations and weights.
_FLOAT_DTYPES = tuple(f["name"] for f in systolic._systolic.formats if not f["integer"])
_OFFLOAD_DTYPES = _FLOAT_DTYPES + ("int8",)


def _rel(err, ref):
    """Max abs error over the largest magnitude of the reference (normwise, so zeros are fine)."""
    scale = float(ref.abs().max()) if ref.numel() else 0.0
    return err / scale if scale > 0 else (0.0 if err == 0 else math.inf)


def _quantize(x, scale):
    """Symmetric int8 codes: clamp(round_half_even(x / scale), -127, 127); counts the clipped."""
    q = torch.round(x.double() / scale)
    clipped = int((q.abs() > 127).sum())
    return q.clamp(-127, 127).to(torch.int8), clipped


def _scale_of(amax):
    return float(amax) / 127.0 if amax > 0 else 1.0


class Offload:
    """The handle: a context manager holding the per-layer reports."""

    _COUNTED = ("tiles", "advance_edges", "preload_edges", "macs_padded", "macs_real")

    def __init__(self, module, array, dtype, engine, activation_scales, calibration,
                 job_options):
        if dtype not in _OFFLOAD_DTYPES:
            raise systolic.UsageError("offload: dtype must be %s or %s, got %r"
                                      % (", ".join(_OFFLOAD_DTYPES[:-1]), _OFFLOAD_DTYPES[-1], dtype))
        self.module = module
        self.array = array
        self.dtype = dtype
        self.engine = engine
        self.job_options = dict(job_options)
        self.reports = []
        self.fallbacks = []
        self.activation_scales = dict(activation_scales or {})
        self._stack = []
        self._ordinal = []
        self._hooks = []
        self._saved = {}
        self._mode = "offload"
        self._amax = {}
        self._param_owner = {}
        for mname, mod in module.named_modules():
            for pname, p in mod.named_parameters(recurse=False):
                self._param_owner.setdefault(id(p), (mname, pname))
        if calibration is not None:
            self.calibrate(calibration)

    # ----- naming -----
    def _layer_name(self, weight, op):
        owner = self._param_owner.get(id(weight)) if weight is not None else None
        if owner is not None:
            mname, pname = owner
            if pname == "weight":
                return mname
            return (mname + "." if mname else "") + pname.replace("_weight", "")
        where = self._stack[-1] if self._stack else ""
        n = self._ordinal[-1] if self._ordinal else 0
        if self._ordinal:
            self._ordinal[-1] += 1
        return "%s%s%d" % (where + "." if where else "", op, n)

    # ----- patching -----
    def __enter__(self):
        self._install()
        return self

    def __exit__(self, *exc):
        self._uninstall()
        return False

    def _install(self):
        self._stack, self._ordinal = [], []
        for name, mod in self.module.named_modules():
            self._hooks.append(mod.register_forward_pre_hook(self._pre_hook(name)))
            self._hooks.append(mod.register_forward_hook(self._post_hook()))
            if isinstance(mod, (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer,
                                torch.nn.TransformerDecoderLayer)):
                # The fused fast paths (torch._native_multi_head_attention,
                # torch._transformer_encoder_layer_fwd) bypass F.linear and torch.bmm. They are
                # skipped when grad is enabled and a parameter requires grad, so these modules
                # run under enable_grad with their parameters requiring grad.
                self._hooks.append(_FastPathOff(mod))
        self._saved = {
            (F, "conv2d"): F.conv2d, (F, "linear"): F.linear,
            (torch, "matmul"): torch.matmul, (torch, "bmm"): torch.bmm,
            (torch, "baddbmm"): torch.baddbmm,
            (torch.Tensor, "__matmul__"): torch.Tensor.__matmul__,
        }
        self._orig = {k[1]: v for k, v in self._saved.items()}
        F.conv2d = self._conv2d
        F.linear = self._linear
        torch.matmul = self._matmul
        torch.Tensor.__matmul__ = lambda a, b: self._matmul(a, b)
        torch.bmm = self._bmm
        torch.baddbmm = self._baddbmm

    def _uninstall(self):
        for (owner, attr), fn in self._saved.items():
            setattr(owner, attr, fn)
        self._saved = {}
        for h in reversed(self._hooks):
            h.remove()
        self._hooks = []

    def _pre_hook(self, name):
        def hook(mod, args):
            self._stack.append(name)
            self._ordinal.append(0)
        return hook

    def _post_hook(self):
        def hook(mod, args, out):
            self._stack.pop()
            self._ordinal.pop()
        return hook

    # ----- calibration -----
    def calibrate(self, inputs):
        """Runs the module in plain PyTorch arithmetic on `inputs`, recording every GEMM site's
        largest activation magnitude; the int8 activation scale of a site is that over 127."""
        self._mode = "calibrate"
        try:
            with self, torch.no_grad():
                self.module(inputs)
        finally:
            self._mode = "offload"
        for key, amax in self._amax.items():
            self.activation_scales[key] = [_scale_of(a) for a in amax]
        self._amax = {}
        self.reports = []

    def _record_amax(self, key, *tensors):
        vals = [float(t.detach().abs().max()) if t.numel() else 0.0 for t in tensors]
        old = self._amax.get(key)
        self._amax[key] = vals if old is None else [max(a, b) for a, b in zip(old, vals)]

    # ----- the GEMM on the model -----
    def _gemm(self, a, b, sx=None, sw=None):
        """a: M x K, b: K x P float tensors. sx: activation scale (int8), sw: per-column scales
        of b (tensor of P, int8) or one scale. Returns (M x P float32 tensor, report)."""
        opts = dict(array=self.array, dtype=self.dtype, engine=self.engine, **self.job_options)
        if self.dtype == "int8":
            qa, clip_a = _quantize(a, sx)
            sw_t = torch.as_tensor(sw, dtype=torch.float64).reshape(1, -1)
            qb, clip_b = _quantize(b, sw_t)
            c, rep = systolic.matmul(np.ascontiguousarray(qa.numpy()),
                                     np.ascontiguousarray(qb.numpy()), **opts)
            if c.dtype != np.int32:
                raise TypeError("systolic.matmul returned %s for int8 operands" % c.dtype)
            out = (torch.from_numpy(c.astype(np.float64)) * sx * sw_t).float()
            rep = dict(rep)
            rep["_clipped"] = clip_a + clip_b
            return out, rep
        c, rep = systolic.matmul(np.ascontiguousarray(a.detach().float().numpy()),
                                 np.ascontiguousarray(b.detach().float().numpy()), **opts)
        if c.dtype != np.float32:
            raise TypeError("systolic.matmul returned %s for %s operands" % (c.dtype, self.dtype))
        return torch.from_numpy(c), rep

    def _scales(self, key, *operands):
        """Calibrated activation scales for a site, or scales of these operands (dynamic)."""
        if key in self.activation_scales:
            s = self.activation_scales[key]
            s = s if isinstance(s, (list, tuple)) else [s]
            return list(s), "calibrated"
        return [_scale_of(float(t.abs().max()) if t.numel() else 0.0) for t in operands], "dynamic"

    def _add_report(self, name, kind, shape, gemm_reports, out, ref, extra):
        total = {k: sum(int(r.get(k, 0) or 0) for r in gemm_reports) for k in self._COUNTED}
        err = float((out - ref).abs().max()) if out.numel() else 0.0
        entry = {
            "name": name, "kind": kind, "dtype": self.dtype,
            "gemm": list(shape), "gemms": len(gemm_reports), **total,
            "utilization": (total["macs_real"] / total["macs_padded"]
                            if total["macs_padded"] else None),
            "stall_cycles": sum(int(r.get("memory", {}).get("stall_cycles", 0) or 0)
                                for r in gemm_reports),
            "overflow_wraps": sum(int(r.get("overflow", {}).get("wraps", 0) or 0)
                                  for r in gemm_reports),
            "overflow_saturations": sum(int(r.get("overflow", {}).get("saturations", 0) or 0)
                                        for r in gemm_reports),
            "output_saturated": sum(int(r.get("output", {}).get("saturated", 0) or 0)
                                    for r in gemm_reports),
            "input_clipped": sum(int(r.get("_clipped", 0)) for r in gemm_reports),
            "passed": all(r.get("pass", True) for r in gemm_reports),
            "max_abs_error": err, "max_rel_error": _rel(err, ref),
        }
        entry.update(extra)
        self.reports.append(entry)

    # ----- conv2d -----
    def _conv2d(self, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        orig = self._orig["conv2d"]
        name = self._layer_name(weight, "conv")
        if self._mode == "calibrate" or not input.is_floating_point():
            if self._mode == "calibrate":
                self._record_amax(name, input)
            else:
                self.fallbacks.append(name)
            return orig(input, weight, bias, stride, padding, dilation, groups)
        pair = torch.nn.modules.utils._pair
        ref = orig(input, weight, bias, stride, padding, dilation, groups).detach()
        stride, dilation = pair(stride), pair(dilation)
        fh, fw = weight.shape[2], weight.shape[3]
        x = input if input.dim() == 4 else input.unsqueeze(0)
        if isinstance(padding, str):
            if padding == "valid":
                padding = (0, 0)
            else:  # "same": PyTorch puts the odd pixel on the bottom/right
                th, tw = dilation[0] * (fh - 1), dilation[1] * (fw - 1)
                x = F.pad(x, (tw // 2, tw - tw // 2, th // 2, th - th // 2))
                padding = (0, 0)
        padding = pair(padding)
        n, ch, h, w = x.shape
        oh = (h + 2 * padding[0] - dilation[0] * (fh - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (fw - 1) - 1) // stride[1] + 1
        # im2col: (N, C*fh*fw, L) with K in (channel, row, column) order, as weight.view.
        cols = F.unfold(x.detach(), (fh, fw), dilation=dilation, padding=padding, stride=stride)
        cg, fg = ch // groups, weight.shape[0] // groups
        kg = cg * fh * fw
        w2 = weight.detach().reshape(weight.shape[0], kg)
        sx = None
        if self.dtype == "int8":
            (sx,), source = self._scales(name, input)
        outs, reps = [], []
        for g in range(groups):
            a = cols[:, g * kg:(g + 1) * kg, :].transpose(1, 2).reshape(n * oh * ow, kg)
            b = w2[g * fg:(g + 1) * fg].t()
            sw = None
            if self.dtype == "int8":
                sw = [_scale_of(v) for v in b.abs().amax(dim=0).tolist()]
            y, rep = self._gemm(a, b, sx, sw)
            outs.append(y)
            reps.append(rep)
        y = torch.cat(outs, dim=1).reshape(n, oh, ow, -1).permute(0, 3, 1, 2).contiguous()
        if bias is not None:
            y = y + bias.detach().reshape(1, -1, 1, 1)
        if input.dim() == 3:
            y = y.squeeze(0)
        extra = {"groups": groups, "batch": n}
        if self.dtype == "int8":
            extra.update(activation_scale=sx, scale_source=source)
        self._add_report(name, "conv2d", (n * oh * ow, kg, fg), reps, y, ref, extra)
        return y

    # ----- linear -----
    def _linear(self, input, weight, bias=None):
        orig = self._orig["linear"]
        name = self._layer_name(weight, "linear")
        if self._mode == "calibrate" or not input.is_floating_point():
            if self._mode == "calibrate":
                self._record_amax(name, input)
            else:
                self.fallbacks.append(name)
            return orig(input, weight, bias)
        a = input.detach().reshape(-1, input.shape[-1])
        b = weight.detach().t()
        sx = sw = None
        extra = {}
        if self.dtype == "int8":
            (sx,), source = self._scales(name, input)
            sw = [_scale_of(v) for v in b.abs().amax(dim=0).tolist()]
            extra.update(activation_scale=sx, scale_source=source)
        y, rep = self._gemm(a, b, sx, sw)
        if bias is not None:
            y = y + bias.detach()
        y = y.reshape(*input.shape[:-1], weight.shape[0])
        ref = orig(input, weight, bias).detach()
        shape = (a.shape[0], a.shape[1], b.shape[1])
        self._add_report(name, "linear", shape, [rep], y, ref, extra)
        return y

    # ----- matmul, bmm, baddbmm -----
    def _batched(self, name, kind, a, b, ref):
        """a (..., M, K) @ b (..., K, P) with equal batch dims: one GEMM per batch element."""
        sa = sb = None
        extra = {}
        if self.dtype == "int8":
            (sa, sb), source = self._scales(name, a, b)
            extra.update(activation_scale=[sa, sb], scale_source=source)
        batch = a.shape[:-2]
        a3 = a.detach().reshape(-1, a.shape[-2], a.shape[-1])
        b3 = b.detach().reshape(-1, b.shape[-2], b.shape[-1])
        outs, reps = [], []
        for i in range(a3.shape[0]):
            y, rep = self._gemm(a3[i], b3[i], sa, sb)
            outs.append(y)
            reps.append(rep)
        y = torch.stack(outs).reshape(*batch, a.shape[-2], b.shape[-1])
        extra["batch"] = int(a3.shape[0])
        self._add_report(name, kind, (a.shape[-2], a.shape[-1], b.shape[-1]), reps, y,
                         ref.detach(), extra)
        return y

    def _matmul(self, a, b, *, out=None):
        orig = self._orig["matmul"]
        name = self._layer_name(None, "matmul")
        if (out is not None or not (a.is_floating_point() and b.is_floating_point())
                or self._mode == "calibrate"):
            if self._mode == "calibrate":
                self._record_amax(name, a, b)
            else:
                self.fallbacks.append(name)
            return orig(a, b) if out is None else orig(a, b, out=out)
        ref = orig(a, b)
        a2 = a.unsqueeze(0) if a.dim() == 1 else a
        b2 = b.unsqueeze(-1) if b.dim() == 1 else b
        shape = torch.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        a2 = a2.expand(*shape, *a2.shape[-2:])
        b2 = b2.expand(*shape, *b2.shape[-2:])
        return self._batched(name, "matmul", a2, b2, ref.reshape(*shape, a2.shape[-2],
                                                                  b2.shape[-1])).reshape(ref.shape)

    def _bmm(self, a, b, *, out=None):
        orig = self._orig["bmm"]
        name = self._layer_name(None, "bmm")
        if out is not None or not a.is_floating_point() or self._mode == "calibrate":
            if self._mode == "calibrate":
                self._record_amax(name, a, b)
            else:
                self.fallbacks.append(name)
            return orig(a, b) if out is None else orig(a, b, out=out)
        return self._batched(name, "bmm", a, b, orig(a, b))

    def _baddbmm(self, input, a, b, *, beta=1, alpha=1, out=None):
        orig = self._orig["baddbmm"]
        name = self._layer_name(None, "bmm")
        if out is not None or not a.is_floating_point() or self._mode == "calibrate":
            if self._mode == "calibrate":
                self._record_amax(name, a, b)
            else:
                self.fallbacks.append(name)
            return orig(input, a, b, beta=beta, alpha=alpha, out=out)
        prod = self._batched(name, "bmm", a, b, self._orig["bmm"](a, b))
        # The added term (the attention mask) and the scalars stay in PyTorch.
        return (beta * input if beta != 1 else input) + (alpha * prod if alpha != 1 else prod)


class _FastPathOff:
    """Keeps a module off PyTorch's fused attention path while registered (see _install)."""

    def __init__(self, mod):
        self._params = [p for p in mod.parameters() if not p.requires_grad]
        for p in self._params:
            p.requires_grad_(True)
        self._pre = mod.register_forward_pre_hook(self._enter)
        self._post = mod.register_forward_hook(self._leave)
        self._ctx = []

    def _enter(self, mod, args):
        ctx = torch.enable_grad()
        ctx.__enter__()
        self._ctx.append(ctx)

    def _leave(self, mod, args, out):
        self._ctx.pop().__exit__(None, None, None)
        if not torch.is_grad_enabled():
            if isinstance(out, tuple):
                return tuple(o.detach() if torch.is_tensor(o) else o for o in out)
            return out.detach()
        return out

    def remove(self):
        # A forward that raised never ran _leave: restore the grad mode it had found.
        while self._ctx:
            self._ctx.pop().__exit__(None, None, None)
        self._pre.remove()
        self._post.remove()
        for p in self._params:
            p.requires_grad_(False)


def offload(module, array=32, dtype="fp32", engine="functional", activation_scales=None,
            calibration=None, **job_options):
    """A context manager: inside ``with offload(model, ...) as h``, calling ``model`` runs its
    convolutions, linear layers and matrix products on the systolic model; ``h.reports`` holds
    one dict per layer call. int8: ``calibration`` (an input batch) or ``activation_scales``
    ({site: scale or [scale_a, scale_b]}) give the activation scales; sites without one use the
    current operands' own (``scale_source: dynamic``). Other keywords go to ``systolic.matmul``.
    """
    return Offload(module, array, dtype, engine, activation_scales, calibration, job_options)
