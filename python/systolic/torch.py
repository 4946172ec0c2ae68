"""Run a PyTorch module's GEMMs on the systolic model (docs/networks.md, "Running a network with
offload").

``offload(module, ...)`` returns a context manager. Inside ``with``, a
``torch.overrides.TorchFunctionMode`` sees every call into PyTorch's API made in this thread, by
whatever name it was bound (``from torch.nn.functional import conv1d`` before the ``with`` too),
and nothing is rebound: leaving the ``with`` pops the mode. Every GEMM-shaped call it knows
(linear, conv1d/2d/3d, conv_transpose1d/2d, matmul, mm, bmm, addmm, baddbmm, addbmm, mv, addmv,
dot, einsum, bilinear, ``@``, multi-head attention, RNN, LSTM, GRU and their cells) is lowered
to GEMMs (_lowering.py) that run through ``systolic.matmul`` inside a custom autograd function,
so outputs keep their ``grad_fn``. Every other GEMM-shaped call runs in PyTorch and is listed
in ``handle.fallbacks`` with its call site; ``strict=True`` raises ``FallbackError`` at the
first. One report per layer call is appended to ``handle.reports``.
"""

import inspect
import math
import os
import re
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import systolic

from . import _lowering

# What offload runs a layer in: a floating-point format of the model's list (from the native
# module), or int8 codes of quantized activations and weights.
_FLOAT_DTYPES = tuple(f["name"] for f in systolic._systolic.formats if not f["integer"])
_OFFLOAD_DTYPES = _FLOAT_DTYPES + ("int8",)

# Frames in these directories are not "the caller" of a fallback (its call site is the first
# frame outside them).
_LIBRARY_DIRS = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                      for m in (torch, systolic))


class FallbackError(RuntimeError):
    """strict=True and a GEMM-shaped call ran in PyTorch, not on the model: ``fallback`` says
    which (a ``Fallback``)."""

    def __init__(self, fallback):
        super().__init__("offload(strict=True): %s" % fallback)
        self.fallback = fallback


class Fallback(str):
    """One GEMM-shaped call that ran in PyTorch: a string ("layer: op at file:line (reason)"),
    so it prints and serialises as one, with the parts as attributes."""

    def __new__(cls, name, op, site, reason):
        s = super().__new__(cls, "%s: %s at %s (%s)" % (name, op, site, reason))
        s.name, s.op, s.site, s.reason = name, op, site, reason
        return s


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


def _call_site():
    """file:line of the innermost frame outside torch and systolic: the user's line."""
    f = sys._getframe(1)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_LIBRARY_DIRS) and not f.f_code.co_filename.startswith("<frozen"):
            return "%s:%d" % (f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return "?"


class _Site:
    """One layer call: its GEMMs' reports, forward, and backward once autograd gets there."""

    def __init__(self, handle, name, kind, sx=None, sw=None, per_column=False):
        self.handle, self.name, self.kind = handle, name, kind
        self.sx, self.sw, self.per_column = sx, sw, per_column
        self.reps = []
        self.backward_entry = None


class _Gemm(torch.autograd.Function):
    """C = A.B on the model. backward: dA = dC.B^T and dB = A^T.dC, in PyTorch, or on the model
    with offload(backward=True)."""

    @staticmethod
    def forward(ctx, a, b, site):
        h = site.handle
        sw = site.sw
        if h.dtype == "int8" and site.per_column:  # weights: per output column
            sw = [_scale_of(v) for v in b.detach().abs().amax(dim=0).tolist()]
        c, rep = h._gemm(a, b, site.sx, sw)
        site.reps.append(rep)
        ctx.site = site
        ctx.save_for_backward(a, b)
        return c.to(torch.result_type(a, b))

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        site = ctx.site
        h = site.handle
        da = db = None
        h._passthrough += 1  # PyTorch's own arithmetic here, whether or not the mode is active
        try:
            if h.backward:
                if ctx.needs_input_grad[0]:
                    da = h._backward_gemm(site, "dX", dc, b.t())
                if ctx.needs_input_grad[1]:
                    db = h._backward_gemm(site, "dW", a.t(), dc)
            else:
                if ctx.needs_input_grad[0]:
                    da = dc.mm(b.t())
                if ctx.needs_input_grad[1]:
                    db = a.t().mm(dc)
        finally:
            h._passthrough -= 1
        return (None if da is None else da.to(a.dtype),
                None if db is None else db.to(b.dtype), None)


def _flat(x):
    """The tensors in x, detached, as one 1-D tensor."""
    ts = [t.detach().reshape(-1) for t in _tensors(x)]
    return ts[0] if len(ts) == 1 else torch.cat(ts) if ts else torch.zeros(0)


def _tensors(x):
    """The tensors in x (args, kwargs, nested lists and tuples)."""
    if torch.is_tensor(x):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _tensors(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _tensors(v)


def _bind(fn, args, kwargs, defaults):
    """The arguments of a call by name: positional in `defaults`' order, then kwargs."""
    names = list(defaults)
    out = dict(defaults)
    for n, v in zip(names, args):
        out[n] = v
    out.update(kwargs)
    return out


_CONV_ARGS = {"input": None, "weight": None, "bias": None, "stride": 1, "padding": 0,
              "dilation": 1, "groups": 1}
_CONVT_ARGS = {"input": None, "weight": None, "bias": None, "stride": 1, "padding": 0,
               "output_padding": 0, "groups": 1, "dilation": 1}
# torch.lstm, gru, rnn_tanh and rnn_relu (padded input), and their cells, as the modules call them.
_RNN_ARGS = {"input": None, "hx": None, "params": None, "has_biases": True, "num_layers": 1,
             "dropout": 0.0, "train": False, "bidirectional": False, "batch_first": False}
_CELL_ARGS = {"input": None, "hx": None, "w_ih": None, "w_hh": None, "b_ih": None, "b_hh": None}
_MHA_ARGS = {n: (None if p.default is inspect.Parameter.empty else p.default)
             for n, p in inspect.signature(F.multi_head_attention_forward).parameters.items()}

# Names of the GEMM-shaped functions of PyTorch's API (torch.*, Tensor.*, F.*, torch.ops.*): any
# call of one that no rule below takes is a fallback. Matched on the function's bare name.
_GEMM_NAME = re.compile(
    r"^_?(quantized_|fbgemm_|mkldnn_|cudnn_|miopen_|slow_|thnn_|_?nnpack_)?"
    r"(linear|bilinear|conv[123]d|conv_transpose[123]d|conv_tbc|convolution|"
    r"mm|bmm|addmm|baddbmm|addbmm|matmul|mv|addmv|dot|vdot|inner|tensordot|einsum|chain_matmul|"
    r"multi_dot|lstm|gru|rnn_tanh|rnn_relu|lstm_cell|gru_cell|rnn_tanh_cell|rnn_relu_cell|"
    r"native_multi_head_attention|multi_head_attention_forward|transformer_encoder_layer_fwd|"
    r"transformer_decoder_only_layer_fwd|scaled_dot_product_attention|addmm_activation|"
    r"linear_dynamic|linear_relu|linear_relu_dynamic|conv[123]d_relu|linear_fp16_weight|"
    r"linear_int8_weight|linear_fp16_weight_fp32_activation|linear_int8_weight_fp32_activation|"
    r"convolution_transpose|qlinear|qconv[123]d)(_out)?_?$")


def _bare_name(func):
    name = getattr(func, "__name__", None) or str(func)
    return name.split("::")[-1].split(".")[-1]


class _Mode(TorchFunctionMode):
    """The interception point: PyTorch calls this for every API call while it is pushed. It runs
    with itself popped (PyTorch's rule), so the rules' own PyTorch calls are plain."""

    def __init__(self, handle):
        super().__init__()
        self.handle = handle

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        h = self.handle
        if h._passthrough:
            return func(*args, **kwargs)
        rule = _RULES.get(func)
        if rule is not None:
            return rule(h, func, args, kwargs)
        gemm = _GEMM_SEEN.get(func)
        if gemm is None:
            gemm = _GEMM_SEEN[func] = bool(_GEMM_NAME.match(_bare_name(func)))
        if gemm:
            h._fallback(func, args, "no lowering for it")
        return func(*args, **kwargs)


_GEMM_SEEN = {}


class Offload:
    """The handle: a context manager holding the per-layer reports and the fallbacks."""

    _COUNTED = ("tiles", "advance_edges", "preload_edges", "macs_padded", "macs_real")

    def __init__(self, module, array, dtype, engine, activation_scales, calibration, strict,
                 backward, job_options):
        if dtype not in _OFFLOAD_DTYPES:
            raise systolic.UsageError("offload: dtype must be %s or %s, got %r"
                                      % (", ".join(_OFFLOAD_DTYPES[:-1]), _OFFLOAD_DTYPES[-1], dtype))
        if backward and dtype == "int8":
            raise systolic.UsageError("offload: backward=True runs the gradients' GEMMs in the "
                                      "forward's format; int8 has no gradient format (use %s)"
                                      % " or ".join(_FLOAT_DTYPES))
        self.module = module
        self.array = array
        self.dtype = dtype
        self.engine = engine
        self.strict = bool(strict)
        self.backward = bool(backward)
        self.job_options = dict(job_options)
        self.reports = []
        self.fallbacks = []
        self.activation_scales = dict(activation_scales or {})
        self._stack = []
        self._ordinal = []
        self._hooks = []
        self._mode_obj = None
        self._mode = "offload"
        self._passthrough = 0
        self._amax = {}
        self._param_owner = {}
        if module is not None:
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
        n = self._ordinal[-1] if self._ordinal else self._top_ordinal.get(op, 0)
        if self._ordinal:
            self._ordinal[-1] += 1
        else:
            self._top_ordinal[op] = n + 1
        return "%s%s%d" % (where + "." if where else "", op, n)

    def _owner(self, args):
        """The module owning a parameter among args, or the module being called."""
        for t in _tensors(args):
            owner = self._param_owner.get(id(t))
            if owner is not None:
                return owner[0]
        return self._stack[-1] if self._stack else ""

    # ----- the context -----
    def __enter__(self):
        if self._mode_obj is not None:
            raise systolic.UsageError("offload: this handle is already active")
        self._stack, self._ordinal, self._top_ordinal = [], [], {}
        if self.module is not None:
            for name, mod in self.module.named_modules():
                self._hooks.append(mod.register_forward_pre_hook(self._pre_hook(name)))
                self._hooks.append(mod.register_forward_hook(self._post_hook()))
        self._mode_obj = _Mode(self)
        self._mode_obj.__enter__()
        return self

    def __exit__(self, *exc):
        mode, self._mode_obj = self._mode_obj, None
        mode.__exit__(*exc)
        for h in reversed(self._hooks):
            h.remove()
        self._hooks = []
        return False

    def _pre_hook(self, name):
        def hook(mod, args):
            self._stack.append(name)
            self._ordinal.append(0)
        return hook

    def _post_hook(self):
        def hook(mod, args, out):
            if self._stack:
                self._stack.pop()
                self._ordinal.pop()
        return hook

    # ----- fallbacks -----
    def _fallback(self, func, args, reason, name=None):
        op = "%s%s" % ("" if getattr(func, "__module__", None) in (None, "torch") else
                       (func.__module__ + "."), getattr(func, "__qualname__", _bare_name(func)))
        op = op.replace("_TensorBase.", "Tensor.").replace("_VariableFunctionsClass.", "torch.")
        if name is None:
            owner = self._owner(args)
            name = owner or _bare_name(func)
        fb = Fallback(name, op, _call_site(), reason)
        self.fallbacks.append(fb)
        if self.strict:
            raise FallbackError(fb)

    # ----- calibration -----
    def calibrate(self, inputs):
        """Runs the module in plain PyTorch arithmetic on `inputs`, recording every GEMM site's
        largest activation magnitude; the int8 activation scale of a site is that over 127."""
        self._mode = "calibrate"
        fallbacks = list(self.fallbacks)
        try:
            with self, torch.no_grad():
                self.module(inputs)
        finally:
            self._mode = "offload"
        for key, amax in self._amax.items():
            self.activation_scales[key] = [_scale_of(a) for a in amax]
        self._amax = {}
        self.reports = []
        self.fallbacks = fallbacks

    def _record_amax(self, key, *tensors):
        vals = [float(t.detach().abs().max()) if t.numel() else 0.0 for t in tensors]
        old = self._amax.get(key)
        self._amax[key] = vals if old is None else [max(a, b) for a, b in zip(old, vals)]

    # ----- the GEMM on the model -----
    def _gemm(self, a, b, sx=None, sw=None):
        """a: M x K, b: K x P float tensors. sx: activation scale (int8), sw: per-column scales
        of b (list of P) or one scale. Returns (M x P float32 tensor, report)."""
        a, b = a.detach(), b.detach()
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
        c, rep = systolic.matmul(np.ascontiguousarray(a.float().numpy()),
                                 np.ascontiguousarray(b.float().numpy()), **opts)
        if c.dtype != np.float32:
            raise TypeError("systolic.matmul returned %s for %s operands" % (c.dtype, self.dtype))
        return torch.from_numpy(c), rep

    def _backward_gemm(self, site, which, a, b):
        """One gradient GEMM on the model, reported under the layer's name (phase backward)."""
        c, rep = self._gemm(a, b)
        ref = a.mm(b)
        err = float((c - ref).abs().max()) if c.numel() else 0.0
        e = site.backward_entry
        if e is None:
            e = site.backward_entry = self._entry(site.name, site.kind, "backward", [])
            self.reports.append(e)
        e["gemm_shapes"].append([a.shape[0], a.shape[1], b.shape[1]])
        e["gemm"] = e["gemm_shapes"][0]
        e["gemms"] += 1
        e["grads"].append(which)
        self._accumulate(e, [rep])
        e["max_abs_error"] = max(e["max_abs_error"], err)
        e["max_rel_error"] = max(e["max_rel_error"], _rel(err, ref))
        return c

    def _scales(self, key, *operands):
        """Calibrated activation scales for a site, or scales of these operands (dynamic)."""
        if key in self.activation_scales:
            s = self.activation_scales[key]
            s = s if isinstance(s, (list, tuple)) else [s]
            return list(s), "calibrated"
        return [_scale_of(float(t.abs().max()) if t.numel() else 0.0) for t in operands], "dynamic"

    # ----- reports -----
    def _entry(self, name, kind, phase, shapes):
        layer = name
        for suffix in (".in_proj", ".q_proj", ".kv_proj", ".k_proj", ".v_proj"):
            if name.endswith(suffix):
                layer = name[:-len(suffix)]
        if re.search(r"\.bmm\d+$", name) and kind == "bmm":
            layer = name.rsplit(".", 1)[0]
        e = {"name": name, "layer": layer, "kind": kind, "phase": phase, "dtype": self.dtype,
             "gemm": list(shapes[0]) if shapes else None, "gemm_shapes": [list(s) for s in shapes],
             "gemms": 0, "grads": [], "utilization": None, "stall_cycles": 0,
             "overflow_wraps": 0, "overflow_saturations": 0, "output_saturated": 0,
             "input_clipped": 0, "passed": True, "max_abs_error": 0.0, "max_rel_error": 0.0}
        e.update({k: 0 for k in self._COUNTED})
        if phase == "forward":
            del e["grads"]
        return e

    def _accumulate(self, e, reps):
        for k in self._COUNTED:
            e[k] += sum(int(r.get(k, 0) or 0) for r in reps)
        e["utilization"] = e["macs_real"] / e["macs_padded"] if e["macs_padded"] else None
        e["stall_cycles"] += sum(int(r.get("memory", {}).get("stall_cycles", 0) or 0)
                                 for r in reps)
        e["overflow_wraps"] += sum(int(r.get("overflow", {}).get("wraps", 0) or 0) for r in reps)
        e["overflow_saturations"] += sum(int(r.get("overflow", {}).get("saturations", 0) or 0)
                                         for r in reps)
        e["output_saturated"] += sum(int(r.get("output", {}).get("saturated", 0) or 0)
                                     for r in reps)
        e["input_clipped"] += sum(int(r.get("_clipped", 0)) for r in reps)
        e["passed"] = e["passed"] and all(r.get("pass", True) for r in reps)

    def _add_report(self, site, shapes, out, ref, extra):
        e = self._entry(site.name, site.kind, "forward", shapes)
        e["gemms"] = len(site.reps)
        self._accumulate(e, site.reps)
        # A layer of several outputs (a recurrent layer's output and final states): all of them.
        out, ref = _flat(out), _flat(ref)
        err = float((out - ref).abs().max()) if out.numel() else 0.0
        e["max_abs_error"], e["max_rel_error"] = err, _rel(err, ref)
        e.update(extra)
        self.reports.append(e)

    def layers(self):
        """Per-layer totals: the reports summed by layer (a module's name; an attention
        module's projections and products together), in first-call order."""
        out = {}
        for r in self.reports:
            t = out.setdefault(r["layer"], {"layer": r["layer"], "calls": 0, "gemms": 0,
                                            "backward_gemms": 0, "passed": True,
                                            **{k: 0 for k in self._COUNTED}})
            t["calls"] += r["phase"] == "forward"
            t["gemms" if r["phase"] == "forward" else "backward_gemms"] += r["gemms"]
            t["passed"] = t["passed"] and r["passed"]
            for k in self._COUNTED:
                t[k] += r[k]
        for t in out.values():
            t["utilization"] = t["macs_real"] / t["macs_padded"] if t["macs_padded"] else None
        return list(out.values())

    def total(self):
        """The network's totals over every report (forward and backward)."""
        t = {k: sum(r[k] for r in self.reports) for k in self._COUNTED}
        t["gemms"] = sum(r["gemms"] for r in self.reports)
        t["layer_calls"] = sum(1 for r in self.reports if r["phase"] == "forward")
        t["utilization"] = t["macs_real"] / t["macs_padded"] if t["macs_padded"] else None
        t["passed"] = all(r["passed"] for r in self.reports)
        t["fallbacks"] = len(self.fallbacks)
        return t

    # ----- one layer call -----
    def _run(self, func, args, kwargs, name, kind, lower, operands, extra=None, scale_of=None,
             per_column=False):
        """Runs `lower(gemm)` (a _lowering function bound to its arguments) on the model, with
        PyTorch's own result of func(*args, **kwargs) as the reference; or, calibrating, records
        the operands' amax and returns PyTorch's result."""
        if self._mode == "calibrate":
            self._record_amax(name, *operands)
            return func(*args, **kwargs)
        with torch.no_grad():  # the reference, and PyTorch's own error for bad arguments
            ref = func(*args, **kwargs)
        extra = dict(extra or {})
        sx = sw = None
        if self.dtype == "int8":
            scales, source = self._scales(name, *operands)
            extra.update(activation_scale=scales[0] if len(scales) == 1 else scales,
                         scale_source=source)
            sx, sw = scales[0], (scales[1] if len(scales) > 1 else None)
        site = _Site(self, name, kind, sx, sw, per_column)
        y, shapes = lower(lambda a, b: _Gemm.apply(a, b, site))
        self._add_report(site, shapes, y, ref.detach() if torch.is_tensor(ref) else ref, extra)
        return y

    def _floating(self, func, args, tensors, name, reason=None):
        """Whether these operands can go to the model; otherwise a fallback, listed."""
        if reason is None:
            if not all(t.is_floating_point() for t in tensors):
                reason = "operands of dtype %s, not floating point" % ", ".join(
                    sorted({str(t.dtype).replace("torch.", "") for t in tensors}))
            elif any(t.numel() == 0 for t in tensors):
                reason = "an empty operand: no GEMM to run"
        if reason is None:
            return True
        if self._mode != "calibrate":
            self._fallback(func, args, reason, name)
        return False

    # ----- the rules -----
    def _linear(self, func, args, kwargs):
        p = _bind(func, args, kwargs, {"input": None, "weight": None, "bias": None})
        x, w, b = p["input"], p["weight"], p["bias"]
        name = self._layer_name(w, "linear")
        if not self._floating(func, args, (x, w), name):
            return func(*args, **kwargs)
        return self._run(func, args, kwargs, name, "linear",
                         lambda g: _lowering.linear(g, x, w, b), (x,), per_column=True)

    def _conv(self, func, args, kwargs):
        p = _bind(func, args, kwargs, _CONV_ARGS)
        x, w = p["input"], p["weight"]
        kind = "conv%dd" % (w.dim() - 2)
        name = self._layer_name(w, "conv")
        if not self._floating(func, args, (x, w), name):
            return func(*args, **kwargs)
        extra = {"groups": p["groups"], "batch": x.shape[0] if x.dim() == w.dim() else 1}
        return self._run(func, args, kwargs, name, kind,
                         lambda g: _lowering.conv(g, x, w, p["bias"], p["stride"], p["padding"],
                                                  p["dilation"], p["groups"]),
                         (x,), extra, per_column=True)

    def _conv_transpose(self, func, args, kwargs):
        p = _bind(func, args, kwargs, _CONVT_ARGS)
        x, w = p["input"], p["weight"]
        kind = "conv_transpose%dd" % (w.dim() - 2)
        name = self._layer_name(w, "conv_transpose")
        why = "3-D transposed convolution: F.fold is 2-D" if w.dim() == 5 else None
        if not self._floating(func, args, (x, w), name, why):
            return func(*args, **kwargs)
        extra = {"groups": p["groups"], "batch": x.shape[0] if x.dim() == w.dim() else 1}
        return self._run(func, args, kwargs, name, kind,
                         lambda g: _lowering.conv_transpose(
                             g, x, w, p["bias"], p["stride"], p["padding"], p["output_padding"],
                             p["groups"], p["dilation"]),
                         (x,), extra, per_column=True)

    def _bilinear(self, func, args, kwargs):
        p = _bind(func, args, kwargs, {"input1": None, "input2": None, "weight": None,
                                       "bias": None})
        x1, x2, w = p["input1"], p["input2"], p["weight"]
        name = self._layer_name(w, "bilinear")
        if self.dtype == "int8":
            why = "int8: bilinear's second product has two activation operands of one site"
        else:
            why = None
        if not self._floating(func, args, (x1, x2, w), name, why):
            return func(*args, **kwargs)
        return self._run(func, args, kwargs, name, "bilinear",
                         lambda g: _lowering.bilinear(g, x1, x2, w, p["bias"]), (x1, x2))

    def _recurrent_refused(self, func, args, p, tensors, name):
        """Whether a recurrent call cannot go to the model (listed as a fallback then)."""
        why = None
        if self.dtype == "int8":
            why = "int8: a recurrent layer's state would need a calibrated scale per step"
        elif p.get("train") and p.get("dropout"):
            why = "dropout between layers in training: PyTorch's random masks"
        elif any(t.dim() != n for t, n in tensors):
            why = "unbatched operands (the modules add the batch dimension before this call)"
        return not self._floating(func, args, [t for t, _ in tensors], name, why)

    def _recurrent(self, func, args, kwargs):
        mode = _bare_name(func)
        p = _bind(func, args, kwargs, _RNN_ARGS)
        name = self._owner(args) or self._layer_name(None, mode)
        if not isinstance(p["has_biases"], bool):  # the PackedSequence overload: data, batch_sizes, ...
            if self._mode != "calibrate":
                self._fallback(func, args, "a packed sequence: only padded input is lowered", name)
            return func(*args, **kwargs)
        hx = p["hx"] if mode == "lstm" else (p["hx"],)
        if self._recurrent_refused(func, args, p, [(p["input"], 3)] + [(h, 3) for h in hx], name):
            return func(*args, **kwargs)
        return self._run(func, args, kwargs, name, mode,
                         lambda g: _lowering.recurrent(g, mode, p["input"], p["hx"], p["params"],
                                                       p["has_biases"], p["num_layers"],
                                                       p["bidirectional"], p["batch_first"]),
                         (p["input"],), {"batch": p["input"].shape[0 if p["batch_first"] else 1]})

    def _cell(self, func, args, kwargs):
        kind = _bare_name(func)
        p = _bind(func, args, kwargs, _CELL_ARGS)
        mode = kind[:-len("_cell")]
        name = self._owner(args) or self._layer_name(None, kind)
        hx = p["hx"] if mode == "lstm" else (p["hx"],)
        if self._recurrent_refused(func, args, p, [(p["input"], 2)] + [(h, 2) for h in hx], name):
            return func(*args, **kwargs)
        return self._run(func, args, kwargs, name, kind,
                         lambda g: _lowering.cell(g, mode, p["input"], p["hx"], p["w_ih"], p["w_hh"],
                                                  p["b_ih"], p["b_hh"]),
                         (p["input"],), {"batch": p["input"].shape[0]})

    # matmul and friends: name of the lowering, the operands' positions, what is added
    def _product(self, func, args, kwargs):
        fname = _bare_name(func)
        inplace = fname.endswith("_") and not fname.endswith("__")
        base = fname.strip("_")
        if base == "rmatmul":
            args = (args[1], args[0]) + tuple(args[2:])
            base = "matmul"
        has_input = base in ("addmm", "baddbmm", "addbmm", "addmv")
        a, b = (args[1], args[2]) if has_input else (args[0], args[1])
        if has_input and len(args) < 3:
            a, b = kwargs.get("mat1", kwargs.get("batch1", kwargs.get("mat"))), \
                kwargs.get("mat2", kwargs.get("batch2", kwargs.get("vec")))
        op = {"mm": "mm", "bmm": "bmm", "baddbmm": "bmm", "addmm": "mm", "addbmm": "bmm",
              "mv": "mv", "addmv": "mv", "dot": "dot"}.get(base, "matmul")
        name = self._layer_name(None, op)
        why = None
        if kwargs.get("out") is not None:
            why = "out= given"
        elif inplace:
            why = "in place"
        if not (torch.is_tensor(a) and torch.is_tensor(b)):
            why = why or "operands are not tensors"
            tensors = ()
        else:
            tensors = (a, b)
        if not self._floating(func, args, tensors, name, why):
            return func(*args, **kwargs)
        if base == "addbmm":
            lower = lambda g: _lowering.addbmm(g, a, b)
        else:
            lower = lambda g: _lowering.matmul(g, a, b)

        def lowered(g):
            y, shapes = lower(g)
            if has_input:
                inp = args[0] if args else kwargs["input"]
                beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
                # The added term (a mask, a bias) and the scalars stay in PyTorch.
                y = (beta * inp if beta != 1 else inp) + (alpha * y if alpha != 1 else y)
            return y, shapes

        extra = {"batch": int(np.prod(a.shape[:-2])) if a.dim() > 2 else 1}
        return self._run(func, args, kwargs, name, base, lowered, (a, b), extra)

    def _einsum(self, func, args, kwargs):
        eq = args[0]
        ops = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else \
            list(args[1:])
        name = self._layer_name(None, "einsum")
        why = None
        if not isinstance(eq, str):
            why = "the sublist form of einsum"
        if not self._floating(func, args, [o for o in ops if torch.is_tensor(o)], name, why):
            return func(*args, **kwargs)
        try:
            _lowering.einsum_check(eq, [tuple(o.shape) for o in ops])
        except _lowering.NotLowered as e:
            if self._mode != "calibrate":
                self._fallback(func, args, "einsum %r: %s" % (eq, e), name)
            return func(*args, **kwargs)
        return self._run(func, args, kwargs, name, "einsum",
                         lambda g: _lowering.einsum(g, eq, ops), ops[:2])

    def _fused(self, func, args, kwargs):
        # PyTorch takes these fused paths only when no TorchFunctionMode is active, so under
        # offload they are not reached; should one be, it is a fallback, never a silent pass.
        self._fallback(func, args, "a fused kernel: not decomposed")
        return func(*args, **kwargs)

    # ----- multi-head attention, decomposed into its GEMMs -----
    def _mha(self, func, args, kwargs):
        p = _bind(func, args, kwargs, _MHA_ARGS)
        base = self._owner((p["in_proj_weight"], p["q_proj_weight"]))
        prefix = base + "." if base else ""
        bmm_n = [0]
        H = p["num_heads"]
        query, key, value = p["query"], p["key"], p["value"]
        tensors = [t for t in (query, key, value) if torch.is_tensor(t)]
        if not all(t.is_floating_point() for t in tensors):
            return self._fallback(func, args, "non-floating attention") or func(*args, **kwargs)

        def lin(x, w, b, which):
            name = self._layer_name(w, which) if id(w) in self._param_owner else prefix + which
            return self._run(F.linear, (x, w, b), {}, name, "linear",
                             lambda g: _lowering.linear(g, x, w, b), (x,), per_column=True)

        def bmm(a, b, add=None):
            name = "%sbmm%d" % (prefix, bmm_n[0])
            bmm_n[0] += 1
            if add is None:
                ref_func, ref_args = torch.bmm, (a, b)
            else:
                ref_func, ref_args = torch.baddbmm, (add, a, b)

            def lower(g):
                y, shapes = _lowering.batched(g, a, b)
                return (y if add is None else add + y), shapes

            return self._run(ref_func, ref_args, {}, name, "bmm", lower, (a, b),
                             {"batch": a.shape[0]})

        is_batched = query.dim() == 3
        kpm, attn_mask = p["key_padding_mask"], p["attn_mask"]
        if not is_batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if kpm is not None:
                kpm = kpm.unsqueeze(0)
        tgt_len, bsz, E = query.shape
        src_len = key.shape[0]
        if E != p["embed_dim_to_check"]:
            raise AssertionError("was expecting embedding dimension of %s, but got %s"
                                 % (p["embed_dim_to_check"], E))
        hd = E // H
        b_in = p["in_proj_bias"]
        if not p["use_separate_proj_weight"]:
            w = p["in_proj_weight"]
            if key is value and query is key:
                q, k, v = lin(query, w, b_in, "in_proj").chunk(3, dim=-1)
            elif key is value:
                wq, wkv = w.split([E, 2 * E])
                bq, bkv = (None, None) if b_in is None else b_in.split([E, 2 * E])
                q = lin(query, wq, bq, "q_proj")
                k, v = lin(key, wkv, bkv, "kv_proj").chunk(2, dim=-1)
            else:
                wq, wk, wv = w.chunk(3)
                bq, bk, bv = (None,) * 3 if b_in is None else b_in.chunk(3)
                q, k, v = (lin(query, wq, bq, "q_proj"), lin(key, wk, bk, "k_proj"),
                           lin(value, wv, bv, "v_proj"))
        else:
            bq, bk, bv = (None,) * 3 if b_in is None else b_in.chunk(3)
            q = lin(query, p["q_proj_weight"], bq, "q_proj")
            k = lin(key, p["k_proj_weight"], bk, "k_proj")
            v = lin(value, p["v_proj_weight"], bv, "v_proj")
        if attn_mask is not None:
            if attn_mask.dtype == torch.uint8:
                attn_mask = attn_mask.to(torch.bool)
            if attn_mask.dim() == 2:
                attn_mask = attn_mask.unsqueeze(0)
        if p["bias_k"] is not None and p["bias_v"] is not None:
            k = torch.cat([k, p["bias_k"].repeat(1, bsz, 1)])
            v = torch.cat([v, p["bias_v"].repeat(1, bsz, 1)])
            if attn_mask is not None:
                attn_mask = F.pad(attn_mask, (0, 1))
            if kpm is not None:
                kpm = F.pad(kpm, (0, 1))
        q = q.contiguous().view(tgt_len, bsz * H, hd).transpose(0, 1)
        k = (k.contiguous().view(k.shape[0], bsz * H, hd).transpose(0, 1)
             if p["static_k"] is None else p["static_k"])
        v = (v.contiguous().view(v.shape[0], bsz * H, hd).transpose(0, 1)
             if p["static_v"] is None else p["static_v"])
        if p["add_zero_attn"]:
            z = torch.zeros((bsz * H, 1, hd), dtype=k.dtype, device=k.device)
            k, v = torch.cat([k, z], dim=1), torch.cat([v, z], dim=1)
            if attn_mask is not None:
                attn_mask = F.pad(attn_mask, (0, 1))
            if kpm is not None:
                kpm = F.pad(kpm, (0, 1))
        src_len = k.size(1)
        if kpm is not None:
            kpm = kpm.view(bsz, 1, 1, src_len).expand(-1, H, -1, -1).reshape(bsz * H, 1, src_len)
            if attn_mask is None:
                attn_mask = kpm
            elif attn_mask.dtype == torch.bool:
                attn_mask = attn_mask.logical_or(kpm)
            else:
                attn_mask = attn_mask.masked_fill(kpm, float("-inf"))
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            m = torch.zeros_like(attn_mask, dtype=q.dtype)
            attn_mask = m.masked_fill_(attn_mask, float("-inf"))
        dropout_p = p["dropout_p"] if p["training"] else 0.0
        q_scaled = q / math.sqrt(q.shape[-1])
        if attn_mask is not None:
            attn_mask = attn_mask.expand(bsz * H, tgt_len, src_len)
        w_att = bmm(q_scaled, k.transpose(-2, -1), attn_mask)
        w_att = F.softmax(w_att, dim=-1)
        if dropout_p > 0.0:
            w_att = F.dropout(w_att, p=dropout_p)
        out = bmm(w_att, v)
        out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, E)
        out = lin(out, p["out_proj_weight"], p["out_proj_bias"], "out_proj")
        out = out.view(tgt_len, bsz, out.size(1))
        weights = None
        if p["need_weights"]:
            weights = w_att.view(bsz, H, tgt_len, src_len)
            if p["average_attn_weights"]:
                weights = weights.sum(dim=1) / H
            if not is_batched:
                weights = weights.squeeze(0)
        if not is_batched:
            out = out.squeeze(1)
        return out, weights


_RULES = {}
for _f in (F.linear, torch.nn.functional.linear):
    _RULES[_f] = Offload._linear
for _f in (F.conv1d, F.conv2d, F.conv3d):
    _RULES[_f] = Offload._conv
for _f in (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d):
    _RULES[_f] = Offload._conv_transpose
_RULES[F.bilinear] = Offload._bilinear
_RULES[torch.einsum] = Offload._einsum
_RULES[F.multi_head_attention_forward] = Offload._mha
for _n in ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot"):
    for _owner in (torch, torch.Tensor):
        if hasattr(_owner, _n):
            _RULES[getattr(_owner, _n)] = Offload._product
    if hasattr(torch.Tensor, _n + "_"):
        _RULES[getattr(torch.Tensor, _n + "_")] = Offload._product
for _n in ("__matmul__", "__rmatmul__"):
    _RULES[getattr(torch.Tensor, _n)] = Offload._product
if hasattr(torch, "linalg") and hasattr(torch.linalg, "matmul"):
    _RULES[torch.linalg.matmul] = Offload._product
for _n in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
    _RULES[getattr(torch, _n)] = Offload._recurrent
    _RULES[getattr(torch, _n + "_cell")] = Offload._cell
for _n in ("_native_multi_head_attention", "_transformer_encoder_layer_fwd"):
    if hasattr(torch, _n):
        _RULES[getattr(torch, _n)] = Offload._fused


def offload(module, array=32, dtype="fp32", engine="functional", activation_scales=None,
            calibration=None, strict=False, backward=False, **job_options):
    """A context manager: inside ``with offload(model, ...) as h``, every GEMM-shaped PyTorch
    call of this thread runs on the systolic model (docs/networks.md); ``h.reports`` holds one
    dict per layer call (and, with ``backward=True``, one per layer call's gradient GEMMs),
    ``h.fallbacks`` every GEMM-shaped call that ran in PyTorch instead, with its call site.
    ``strict=True`` raises ``FallbackError`` at the first such call. int8: ``calibration`` (an
    input batch) or ``activation_scales`` ({site: scale or [scale_a, scale_b]}) give the
    activation scales; sites without one use the current operands' own (``scale_source:
    dynamic``). Outputs keep autograd: gradients are PyTorch's, computed by PyTorch, or with
    ``backward=True`` by the model (dX = dY.W^T, dW = X^T.dY). Other keywords go to
    ``systolic.matmul``.
    """
    return Offload(module, array, dtype, engine, activation_scales, calibration, strict, backward,
                   job_options)
