"""LLM inference on the systolic model: a GPT-2-shaped decoder, prefill and decode with a KV cache,
every GEMM run by ``systolic.matmul`` (docs/llm.md).

``generate(layers=12, d_model=768, heads=12, prompt=..., new_tokens=..., array=..., dtype=...)``
builds a GPT-2-shaped decoder in plain PyTorch (seeded weights, or a ``state_dict`` file with
Hugging Face GPT-2's names), runs the prefill of the prompt's T tokens and then decode steps of one
token each against a KV cache, greedily, and returns a JSON-serialisable report: one entry per
step (the prefill, then each decode step), totals per phase, time to first token and time per
output token at a stated clock. Every GEMM of the decoder runs on the model: per layer the QKV
projection, Q·Kᵀ and P·V per KV head (the query heads that share a KV head are stacked as rows of
one GEMM, so with as many KV heads as heads that is one per head), the attention's output
projection and the MLP's two linears, and the LM head (on the last position only). Layer norm,
GELU, softmax, the causal mask, the embeddings, biases, the residual adds and the int8
(de)quantization run in PyTorch on the host and are not timed.

The values are checked (``check=True``): fp32 against the same decoder run in plain PyTorch on
the whole sequence without a cache (``reference_logits``: every position's logits within a
normwise bound, and the same greedy tokens), each of the model's fp32 GEMMs against the summation
bound; int8 against the same quantized arithmetic with numpy's integer GEMM in place of the
model's (logits equal bit for bit, the same tokens). bf16 is compared with the fp32 reference and
reported, not checked. ``kv_bytes`` of each step is the DRAM bytes the memory system reports for
the K and V operands (operand B) of its Q·Kᵀ and P·V GEMMs: counted, not computed.

``main(argv)`` is the command ``systolic-generate``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import torch
import torch.nn.functional as F

import systolic
from systolic import CheckError, UsageError

__all__ = ["generate", "reference_logits", "init_weights", "Config", "main", "UsageError",
           "CheckError", "GPT2_SMALL", "PROG"]

PROG = "systolic-generate"

#: GPT-2 small's shape.
GPT2_SMALL = {"layers": 12, "d_model": 768, "heads": 12, "vocab": 50257, "context": 1024}

DTYPES = ("fp32", "bf16", "int8")
ENGINES = ("functional", "cycle")
BUFFERS = ("double", "none")
#: The bytes of one operand element, per format (what kv_bytes' formula multiplies by).
ELEMENT_BYTES = {"fp32": 4, "bf16": 2, "int8": 1}
#: What the fp32 logits are compared with PyTorch's by: max |model - PyTorch| over all positions
#: and the vocabulary, over max |PyTorch| (normwise).
FP32_LOGIT_REL = 1e-4
#: GEMM kinds, in the order a layer runs them. The KV operands are those of "qk" and "pv".
KINDS = ("qkv", "qk", "pv", "attn_proj", "fc", "mlp_proj", "lm_head")
_COUNTED = ("tiles", "advance_edges", "macs_real", "macs_padded")
_EPS = 1e-5  # GPT-2's layer-norm epsilon


# ----------------------------------------------------------------------------------------------
# The decoder's shape and weights
# ----------------------------------------------------------------------------------------------

class Config:
    """A GPT-2-shaped decoder: layers, d_model, heads, kv_heads (grouped-query attention when
    fewer than heads), vocab, context (the longest sequence, the position table's length)."""

    def __init__(self, layers: int, d_model: int, heads: int, kv_heads: Optional[int] = None,
                 vocab: int = 50257, context: int = 1024) -> None:
        for name, v in (("layers", layers), ("d_model", d_model), ("heads", heads),
                        ("vocab", vocab), ("context", context)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v <= 0:
                raise UsageError("%s must be a positive integer, got %r" % (name, v))
        kv_heads = heads if kv_heads is None else kv_heads
        if not isinstance(kv_heads, (int, np.integer)) or isinstance(kv_heads, bool) \
                or kv_heads <= 0:
            raise UsageError("kv_heads must be a positive integer, got %r" % (kv_heads,))
        if d_model % heads:
            raise UsageError("d_model (%d) must be a multiple of heads (%d)" % (d_model, heads))
        if heads % kv_heads:
            raise UsageError("heads (%d) must be a multiple of kv_heads (%d)" % (heads, kv_heads))
        self.layers, self.d_model, self.heads = int(layers), int(d_model), int(heads)
        self.kv_heads, self.vocab, self.context = int(kv_heads), int(vocab), int(context)
        self.d_head = self.d_model // self.heads
        self.group = self.heads // self.kv_heads
        self.kv_dim = self.kv_heads * self.d_head

    def as_dict(self) -> Dict[str, int]:
        return {"layers": self.layers, "d_model": self.d_model, "heads": self.heads,
                "kv_heads": self.kv_heads, "d_head": self.d_head, "vocab": self.vocab,
                "context": self.context, "mlp": 4 * self.d_model}

    def shapes(self) -> Dict[str, tuple]:
        """Every weight's shape, by its name in Hugging Face's GPT2LMHeadModel (without the
        ``transformer.`` prefix); linears are Conv1D-shaped (in, out), as GPT-2 stores them."""
        d, L = self.d_model, self.layers
        s = {"wte.weight": (self.vocab, d), "wpe.weight": (self.context, d),
             "ln_f.weight": (d,), "ln_f.bias": (d,)}
        for i in range(L):
            p = "h.%d." % i
            s.update({p + "ln_1.weight": (d,), p + "ln_1.bias": (d,),
                      p + "attn.c_attn.weight": (d, d + 2 * self.kv_dim),
                      p + "attn.c_attn.bias": (d + 2 * self.kv_dim,),
                      p + "attn.c_proj.weight": (d, d), p + "attn.c_proj.bias": (d,),
                      p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
                      p + "mlp.c_fc.weight": (d, 4 * d), p + "mlp.c_fc.bias": (4 * d,),
                      p + "mlp.c_proj.weight": (4 * d, d), p + "mlp.c_proj.bias": (d,)})
        return s


def init_weights(cfg: Config, seed: int = 0) -> Dict[str, torch.Tensor]:
    """Seeded GPT-2-like weights (float32): normal with std 0.02 (the residual projections
    0.02 / sqrt(2 layers), as GPT-2 initialises them), layer norms near 1 and biases near 0 but
    not exactly (so that every parameter takes part)."""
    g = torch.Generator().manual_seed(int(seed))
    out = {}
    for name, shape in cfg.shapes().items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            t = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            t = 0.02 * torch.randn(shape, generator=g)
        elif name.endswith("c_proj.weight"):
            t = 0.02 / math.sqrt(2 * cfg.layers) * torch.randn(shape, generator=g)
        elif name == "wpe.weight":
            t = 0.01 * torch.randn(shape, generator=g)
        else:
            t = 0.02 * torch.randn(shape, generator=g)
        out[name] = t.float().contiguous()
    return out


def load_state_dict(path: str, cfg: Config) -> Dict[str, torch.Tensor]:
    """A state_dict file (torch.save) with Hugging Face GPT-2's names, ``transformer.`` prefixed or
    not; the causal-mask buffers (``attn.bias``, ``attn.masked_bias``) are ignored, and a
    ``lm_head.weight`` equal to ``wte.weight`` is GPT-2's tied head. Shapes must be cfg's."""
    try:
        sd = torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # a PyTorch without weights_only
        sd = torch.load(path, map_location="cpu")
    except (OSError, RuntimeError, EOFError, ValueError) as e:
        raise UsageError("state_dict %s: cannot load it: %s" % (path, str(e).splitlines()[0]))
    if not isinstance(sd, dict):
        raise UsageError("state_dict %s: not a state_dict (a dict of tensors)" % path)
    out = {}
    for key, t in sd.items():
        name = key[len("transformer."):] if key.startswith("transformer.") else key
        if name.endswith(".attn.bias") or name.endswith(".attn.masked_bias"):
            continue
        out[name] = t
    head = out.pop("lm_head.weight", None)
    if head is not None and "wte.weight" in out and not torch.equal(head, out["wte.weight"]):
        raise UsageError("state_dict %s: lm_head.weight differs from wte.weight: only GPT-2's "
                         "tied head is modelled" % path)
    want = cfg.shapes()
    for name, shape in want.items():
        if name not in out:
            raise UsageError("state_dict %s: %s is missing (a %s decoder needs it)"
                             % (path, name, _shape_text(cfg)))
        if tuple(out[name].shape) != shape:
            raise UsageError("state_dict %s: %s is %s, a %s decoder needs %s"
                             % (path, name, "x".join(map(str, out[name].shape)),
                                _shape_text(cfg), "x".join(map(str, shape))))
    extra = sorted(set(out) - set(want))
    if extra:
        raise UsageError("state_dict %s: %s is not a weight of a %s decoder"
                         % (path, extra[0], _shape_text(cfg)))
    return {n: out[n].detach().float().contiguous() for n in want}


def _shape_text(cfg: Config) -> str:
    return "%d-layer, d_model %d, %d-head (%d KV), vocab %d, context %d" % (
        cfg.layers, cfg.d_model, cfg.heads, cfg.kv_heads, cfg.vocab, cfg.context)


# ----------------------------------------------------------------------------------------------
# The reference: the same decoder in plain PyTorch, the whole sequence at once, no cache
# ----------------------------------------------------------------------------------------------

def reference_logits(cfg: Config, w: Dict[str, torch.Tensor],
                     tokens: Sequence[int]) -> torch.Tensor:
    """Every position's logits (len(tokens) x vocab, float32) of the decoder in plain PyTorch:
    full causal attention over the sequence, no KV cache, PyTorch's own matmuls. Shares no code
    with generate()'s decoder."""
    with torch.no_grad():
        idx = torch.as_tensor(list(tokens), dtype=torch.long)
        T, d, H, KV, dh = len(idx), cfg.d_model, cfg.heads, cfg.kv_heads, cfg.d_head
        x = w["wte.weight"][idx] + w["wpe.weight"][:T]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        for i in range(cfg.layers):
            p = "h.%d." % i
            h = F.layer_norm(x, (d,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], _EPS)
            qkv = torch.addmm(w[p + "attn.c_attn.bias"], h, w[p + "attn.c_attn.weight"])
            q, k, v = qkv.split([d, cfg.kv_dim, cfg.kv_dim], dim=1)
            q = q.view(T, H, dh).transpose(0, 1)
            k = k.view(T, KV, dh).transpose(0, 1).repeat_interleave(cfg.group, dim=0)
            v = v.view(T, KV, dh).transpose(0, 1).repeat_interleave(cfg.group, dim=0)
            att = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(dh)
            att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
            y = torch.matmul(att, v).transpose(0, 1).reshape(T, d)
            x = x + torch.addmm(w[p + "attn.c_proj.bias"], y, w[p + "attn.c_proj.weight"])
            h = F.layer_norm(x, (d,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], _EPS)
            f = F.gelu(torch.addmm(w[p + "mlp.c_fc.bias"], h, w[p + "mlp.c_fc.weight"]),
                       approximate="tanh")
            x = x + torch.addmm(w[p + "mlp.c_proj.bias"], f, w[p + "mlp.c_proj.weight"])
        x = F.layer_norm(x, (d,), w["ln_f.weight"], w["ln_f.bias"], _EPS)
        return torch.matmul(x, w["wte.weight"].t())


# ----------------------------------------------------------------------------------------------
# GEMM runners: on the model, or on the host (the references and the calibration)
# ----------------------------------------------------------------------------------------------

def _gamma(n: int) -> float:
    u = 2.0 ** -24
    return n * u / (1 - n * u)


class _Tally:
    """What one step's GEMMs counted, summed over the step and per kind."""

    def __init__(self) -> None:
        self.total = self._zero()
        self.by_kind: Dict[str, Dict[str, Any]] = {}

    @staticmethod
    def _zero() -> Dict[str, Any]:
        z: Dict[str, Any] = {k: 0 for k in _COUNTED}
        z.update(gemms=0, cycles=0, stall_cycles=0, prefetch_cycles=0,
                 dram_a=0, dram_b=0, dram_c=0)
        return z

    def add(self, kind: str, rep: Dict[str, Any]) -> None:
        mem = rep["memory"]
        b = mem["bytes"]
        row = {k: int(rep[k]) for k in _COUNTED}
        row.update(gemms=1, cycles=int(mem["total_cycles"]),
                   stall_cycles=int(mem["stall_cycles"]),
                   prefetch_cycles=int(mem["prefetch_cycles"]),
                   dram_a=int(b["a"]["dram"]), dram_b=int(b["b"]["dram"]),
                   dram_c=int(b["c"]["dram"]))
        for t in (self.total, self.by_kind.setdefault(kind, self._zero())):
            for k, v in row.items():
                t[k] += v


class _ModelRunner:
    """GEMMs on the model through systolic.matmul; its reports go to the current step's tally."""

    on_model = True

    def __init__(self, array, dtype, engine, job_options, check_bound):
        self.opts = dict(array=array, dtype=dtype, engine=engine, **job_options)
        self.dtype = dtype
        self.check_bound = check_bound and dtype == "fp32"
        self.tally = _Tally()
        self.bound_checked = 0
        self.bound_worst = 0.0  # the largest |error| / bound seen
        self.bound_failure: Optional[str] = None  # the first GEMM outside it
        self.seconds = 0.0

    def __call__(self, kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        t0 = time.perf_counter()
        c, rep = systolic.matmul(a, b, **self.opts)
        self.seconds += time.perf_counter() - t0
        self.tally.add(kind, rep)
        if self.check_bound:
            self._bound(kind, a, b, c)
        return c

    def _bound(self, kind, a, b, c):
        """|C - A.B| <= gamma_K |A||B| for the model's C, whatever its order of summation. A.B and
        |A||B| come from float32 GEMMs (each within gamma_K of exact), hence the factors."""
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        ref = (ta @ tb).numpy()
        mag = (ta.abs() @ tb.abs()).numpy()
        g = _gamma(a.shape[1])
        bound = (2 * g / (1 - g)) * mag + np.finfo(np.float32).tiny
        ratio = float(np.max(np.abs(c.astype(np.float64) - ref) / bound))
        self.bound_checked += 1
        self.bound_worst = max(self.bound_worst, ratio)
        if ratio > 1 and self.bound_failure is None:
            self.bound_failure = ("%s GEMM %dx%dx%d: the model's C is outside the summation "
                                  "bound (%.3g times it)"
                                  % (kind, a.shape[0], a.shape[1], b.shape[1], ratio))


class _HostRunner:
    """GEMMs on the host: float32 in PyTorch, or int8 codes in numpy (int64, exact)."""

    on_model = False

    def __init__(self) -> None:
        self.tally = _Tally()

    def __call__(self, kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype == np.int8:
            c = a.astype(np.int64) @ b.astype(np.int64)
            if c.size and (c.min() < -2 ** 31 or c.max() >= 2 ** 31):
                raise RuntimeError("%s: an int8 GEMM leaves int32" % kind)
            return c.astype(np.int32)
        return (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()


# ----------------------------------------------------------------------------------------------
# The decoder with a KV cache, every GEMM through a runner
# ----------------------------------------------------------------------------------------------

def _scale(amax: float) -> float:
    return amax / 127.0 if amax > 0 else 1.0


def _quantize(x: torch.Tensor, scale) -> tuple:
    """Symmetric int8 codes clamp(round_half_even(x / scale), -127, 127), and how many clipped."""
    q = torch.round(x.double() / scale)
    clipped = int((q.abs() > 127).sum())
    return np.ascontiguousarray(q.clamp(-127, 127).to(torch.int8).numpy()), clipped


class _Decoder:
    """GPT-2 with a KV cache. dtype fp32 or bf16: the GEMMs' operands are float32 (the model rounds
    bf16's on load). int8: weights per output channel, activations per tensor with calibrated
    scales (``amax``, by site), P with the scale 1/127 (it lies in [0, 1]); C is int32, scaled
    back to float32 in PyTorch. ``amax=None`` with int8 is not allowed; ``record`` (a dict)
    records the sites' amax instead (calibration, float GEMMs)."""

    def __init__(self, cfg: Config, w: Dict[str, torch.Tensor], runner, int8: bool,
                 amax: Optional[Dict[str, float]] = None, record: Optional[Dict[str, float]] = None,
                 lm_head: bool = True) -> None:
        self.cfg, self.w, self.run, self.int8 = cfg, w, runner, int8
        self.amax, self.record = amax, record
        self.lm_head = lm_head
        self.k: List[torch.Tensor] = [torch.zeros(0, cfg.kv_dim) for _ in range(cfg.layers)]
        self.v: List[torch.Tensor] = [torch.zeros(0, cfg.kv_dim) for _ in range(cfg.layers)]
        self.clipped = 0
        self._codes: Dict[str, tuple] = {}
        self._float: Dict[str, np.ndarray] = {}

    @property
    def length(self) -> int:
        return int(self.k[0].shape[0])

    # --- one GEMM, in the run's arithmetic ---
    def _weight(self, name: str, transpose: bool = False):
        key = name + (".T" if transpose else "")
        if self.int8:
            if key not in self._codes:
                wt = self.w[name].t() if transpose else self.w[name]
                sw = wt.abs().amax(dim=0).double()
                sw = torch.where(sw > 0, sw / 127.0, torch.ones_like(sw))
                q, _ = _quantize(wt, sw.reshape(1, -1))
                self._codes[key] = (q, sw.reshape(1, -1))
            return self._codes[key]
        if key not in self._float:
            wt = self.w[name].t() if transpose else self.w[name]
            self._float[key] = np.ascontiguousarray(wt.numpy(), dtype=np.float32)
        return self._float[key]

    def _act(self, site: str, x: torch.Tensor):
        if self.record is not None:
            m = float(x.abs().max()) if x.numel() else 0.0
            self.record[site] = max(self.record.get(site, 0.0), m)
        if not self.int8:
            return np.ascontiguousarray(x.numpy(), dtype=np.float32), None
        s = _scale(self.amax[site])
        q, clipped = _quantize(x, s)
        self.clipped += clipped
        return q, s

    def linear(self, kind: str, site: str, x: torch.Tensor, name: str, bias: Optional[str] = None,
               transpose: bool = False) -> torch.Tensor:
        a, sx = self._act(site, x)
        if self.int8:
            qw, sw = self._weight(name, transpose)
            c = self.run(kind, a, qw)
            y = (torch.from_numpy(c).double() * sx * sw).float()
        else:
            y = torch.from_numpy(self.run(kind, a, self._weight(name, transpose)))
        return y + self.w[bias] if bias else y

    def product(self, kind: str, site_a: str, a: torch.Tensor, site_b: str, b: torch.Tensor,
                fixed_a: Optional[float] = None) -> torch.Tensor:
        """a (M x K) . b (K x P), both activations: per-tensor scales."""
        if self.int8:
            if fixed_a is not None:
                qa, c1 = _quantize(a, fixed_a)
                self.clipped += c1
                sa = fixed_a
            else:
                qa, sa = self._act(site_a, a)
            qb, sb = self._act(site_b, b)
            c = self.run(kind, qa, np.ascontiguousarray(qb))
            return (torch.from_numpy(c).double() * sa * sb).float()
        if self.record is not None:
            self._act(site_b, b)
            if fixed_a is None:
                self._act(site_a, a)
        return torch.from_numpy(self.run(kind, np.ascontiguousarray(a.numpy(), dtype=np.float32),
                                         np.ascontiguousarray(b.numpy(), dtype=np.float32)))

    # --- the decoder ---
    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple:
        """Appends these positions' K and V to the layer's cache; returns the whole cache."""
        self.k[layer] = torch.cat([self.k[layer], k])
        self.v[layer] = torch.cat([self.v[layer], v])
        return self.k[layer], self.v[layer]

    def forward(self, tokens: Sequence[int]) -> torch.Tensor:
        """Runs the tokens at the next positions (appending their K and V to the cache) and returns
        the last one's logits (vocab,)."""
        cfg, w = self.cfg, self.w
        n, p0 = len(tokens), self.length
        if p0 + n > cfg.context:
            raise UsageError("the sequence would be %d tokens, longer than the context (%d)"
                             % (p0 + n, cfg.context))
        d, dh, G = cfg.d_model, cfg.d_head, cfg.group
        idx = torch.as_tensor(list(tokens), dtype=torch.long)
        x = w["wte.weight"][idx] + w["wpe.weight"][p0:p0 + n]
        # The causal mask of these n rows against the c = p0 + n positions of the cache.
        c = p0 + n
        mask = torch.arange(c).reshape(1, c) > (p0 + torch.arange(n)).reshape(n, 1)
        mask = mask.repeat(G, 1)  # G query heads stacked per KV head
        for i in range(cfg.layers):
            p = "h.%d." % i
            h = F.layer_norm(x, (d,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], _EPS)
            qkv = self.linear("qkv", p + "qkv", h, p + "attn.c_attn.weight", p + "attn.c_attn.bias")
            q, k, v = qkv.split([d, cfg.kv_dim, cfg.kv_dim], dim=1)
            K, V = self.append(i, k, v)
            heads = []
            for g in range(cfg.kv_heads):
                # The group's query heads stacked as rows: (G n) x dh.
                qg = q.reshape(n, cfg.heads, dh)[:, g * G:(g + 1) * G, :].transpose(0, 1)
                qg = qg.reshape(G * n, dh)
                kg = K[:, g * dh:(g + 1) * dh]
                vg = V[:, g * dh:(g + 1) * dh]
                s = self.product("qk", p + "q", qg, p + "k", kg.t())
                s = (s / math.sqrt(dh)).masked_fill(mask, float("-inf")).softmax(dim=-1)
                o = self.product("pv", p + "p", s, p + "v", vg, fixed_a=1.0 / 127.0)
                heads.append(o.reshape(G, n, dh))
            y = torch.cat(heads).transpose(0, 1).reshape(n, d)
            x = x + self.linear("attn_proj", p + "attn_proj", y, p + "attn.c_proj.weight",
                                p + "attn.c_proj.bias")
            h = F.layer_norm(x, (d,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], _EPS)
            f = F.gelu(self.linear("fc", p + "fc", h, p + "mlp.c_fc.weight", p + "mlp.c_fc.bias"),
                       approximate="tanh")
            x = x + self.linear("mlp_proj", p + "mlp_proj", f, p + "mlp.c_proj.weight",
                                p + "mlp.c_proj.bias")
        x = F.layer_norm(x[-1:], (d,), w["ln_f.weight"], w["ln_f.bias"], _EPS)
        if self.lm_head:
            return self.linear("lm_head", "lm_head", x, "wte.weight", transpose=True)[0]
        return torch.matmul(x, w["wte.weight"].t())[0]


# ----------------------------------------------------------------------------------------------
# generate()
# ----------------------------------------------------------------------------------------------

def _positive(name, v, zero_ok=False):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < (0 if zero_ok else 1):
        raise UsageError("%s must be a %s integer, got %r"
                         % (name, "non-negative" if zero_ok else "positive", v))
    return int(v)


def _step_entry(phase: str, index: int, position: int, tokens_in: int, context: int, token: int,
                tally: _Tally, cfg: Config, clock_ghz: float, clipped: int) -> Dict[str, Any]:
    t = tally.total
    e: Dict[str, Any] = {"phase": phase, "step": index, "position": position,
                         "tokens_in": tokens_in, "context": context, "token": token}
    e.update(_totals(t, clock_ghz))
    kv = sum(tally.by_kind.get(k, {}).get("dram_b", 0) for k in ("qk", "pv"))
    e["kv_bytes"] = kv
    e["weight_bytes"] = sum(tally.by_kind.get(k, {}).get("dram_b", 0)
                            for k in ("qkv", "attn_proj", "fc", "mlp_proj", "lm_head"))
    e["by_kind"] = {k: _totals(tally.by_kind[k], clock_ghz) for k in KINDS if k in tally.by_kind}
    e["input_clipped"] = clipped
    return e


def _totals(t: Dict[str, Any], clock_ghz: float) -> Dict[str, Any]:
    out = {k: int(t[k]) for k in ("gemms",) + _COUNTED}
    out["utilization"] = t["macs_real"] / t["macs_padded"] if t["macs_padded"] else None
    out["cycles"] = int(t["cycles"])
    out["stall_cycles"] = int(t["stall_cycles"])
    out["prefetch_cycles"] = int(t["prefetch_cycles"])
    out["dram_bytes"] = {"a": int(t["dram_a"]), "b": int(t["dram_b"]), "c": int(t["dram_c"]),
                         "total": int(t["dram_a"] + t["dram_b"] + t["dram_c"])}
    out["time_us"] = t["cycles"] / (clock_ghz * 1e3)
    return out


def _phase_totals(steps: List[Dict[str, Any]], clock_ghz: float) -> Dict[str, Any]:
    keys = ("gemms",) + _COUNTED + ("cycles", "stall_cycles", "prefetch_cycles", "kv_bytes",
                                   "weight_bytes", "input_clipped")
    out: Dict[str, Any] = {"steps": len(steps), "tokens_in": sum(s["tokens_in"] for s in steps)}
    for k in keys:
        out[k] = sum(s[k] for s in steps)
    out["utilization"] = out["macs_real"] / out["macs_padded"] if out["macs_padded"] else None
    out["dram_bytes"] = {k: sum(s["dram_bytes"][k] for s in steps)
                         for k in ("a", "b", "c", "total")}
    out["time_us"] = out["cycles"] / (clock_ghz * 1e3)
    return out


def _prompt_tokens(prompt, vocab, seed) -> List[int]:
    if isinstance(prompt, (int, np.integer)) and not isinstance(prompt, bool):
        n = _positive("prompt", prompt)
        g = torch.Generator().manual_seed(int(seed) + 1)
        return [int(t) for t in torch.randint(0, vocab, (n,), generator=g)]
    if isinstance(prompt, str):
        try:
            prompt = [int(t) for t in prompt.replace(",", " ").split()]
        except ValueError:
            raise UsageError("prompt must be a number of tokens or token ids, got %r" % prompt)
    try:
        tokens = [int(t) for t in prompt]
    except (TypeError, ValueError):
        raise UsageError("prompt must be a number of tokens or a sequence of token ids, got %r"
                         % (prompt,))
    if not tokens:
        raise UsageError("prompt has no tokens")
    bad = [t for t in tokens if not 0 <= t < vocab]
    if bad:
        raise UsageError("prompt token %d is outside the vocabulary [0, %d)" % (bad[0], vocab))
    return tokens


def generate(layers: Optional[int] = None, d_model: Optional[int] = None, heads: int = 12,
             prompt: Union[int, Sequence[int], str] = 8, new_tokens: int = 4,
             array: Any = 32, dtype: str = "fp32", engine: str = "functional", seed: int = 0,
             kv_heads: Optional[int] = None, vocab: Optional[int] = None,
             context: Optional[int] = None, state_dict: Optional[str] = None,
             buffers: str = "double", dram_bandwidth: Optional[float] = 64.0,
             clock_ghz: float = 1.0, lm_head: bool = True, check: bool = True,
             progress: Any = None, **job_options: Any) -> Dict[str, Any]:
    """Greedy generation on the systolic model: the prefill of the prompt, then decode steps
    with a KV cache, every GEMM on the model (docs/llm.md).

    layers, d_model, heads, kv_heads (default heads; fewer: grouped-query attention), vocab,
    context: the decoder's shape, GPT-2 small's by default (12, 768, 12, 12, 50257, 1024). Weights:
    seeded (``seed``), or ``state_dict``, a file of torch.save with Hugging Face GPT-2's names (its
    shape is then taken from it, apart from heads and kv_heads). prompt: a number of seeded random
    tokens, or the token ids. new_tokens: the tokens generated, greedily: the first by the
    prefill, each other by one decode step (new_tokens - 1 of them). array: N or (R, C). dtype:
    fp32, bf16 or int8. engine: functional (default) or cycle. buffers ("double" or "none") and
    dram_bandwidth (bytes per cycle, None: unlimited) set the memory system; clock_ghz turns
    cycles into time. lm_head=False runs the LM head in PyTorch, untimed. Other keywords go to
    ``systolic.matmul`` (dataflow="ws", order="snake", b_sram="1M", ...). check: compare the
    values with the reference (fp32, int8; see the module's docstring) and raise CheckError,
    with ``report``, when they differ. progress: a callable given each step's entry.

    Returns the report, a JSON-serialisable dict (docs/llm.md lists its keys). Raises UsageError
    (a ValueError) for bad arguments, before anything runs.
    """
    t_start = time.perf_counter()
    if dtype not in DTYPES:
        raise UsageError("dtype must be one of %s, got %r" % (", ".join(DTYPES), dtype))
    if engine not in ENGINES:
        raise UsageError("engine must be one of %s, got %r" % (", ".join(ENGINES), engine))
    if buffers not in BUFFERS:
        raise UsageError("buffers must be one of %s, got %r" % (", ".join(BUFFERS), buffers))
    if dram_bandwidth is not None and (isinstance(dram_bandwidth, bool) or not isinstance(
            dram_bandwidth, (int, float, np.integer, np.floating)) or not dram_bandwidth > 0):
        raise UsageError("dram_bandwidth must be a positive number of bytes per cycle or None "
                         "(unlimited), got %r" % (dram_bandwidth,))
    if isinstance(clock_ghz, bool) or not isinstance(clock_ghz, (int, float)) \
            or not 0 < clock_ghz < math.inf:
        raise UsageError("clock_ghz must be a positive number, got %r" % (clock_ghz,))
    if not systolic._jobs._is_array_shape(array):
        raise UsageError("array must be N or (R, C), positive integers, got %r" % (array,))
    new_tokens = _positive("new_tokens", new_tokens)
    seed = _positive("seed", seed, zero_ok=True)
    for name, value in job_options.items():
        systolic._options.check(name, value)
        if name in ("buffers", "dram_bandwidth", "check"):
            raise UsageError("%s is generate()'s own keyword" % name)
    if state_dict is not None:
        shapes = _state_dict_shape(state_dict)
        for name, got in (("layers", layers), ("d_model", d_model), ("vocab", vocab),
                          ("context", context)):
            if got is not None and got != shapes[name]:
                raise UsageError("%s=%r, but state_dict %s has %s %d"
                                 % (name, got, state_dict, name, shapes[name]))
        layers, d_model = shapes["layers"], shapes["d_model"]
        vocab, context = shapes["vocab"], shapes["context"]
    cfg = Config(GPT2_SMALL["layers"] if layers is None else layers,
                 GPT2_SMALL["d_model"] if d_model is None else d_model, heads, kv_heads,
                 GPT2_SMALL["vocab"] if vocab is None else vocab,
                 GPT2_SMALL["context"] if context is None else context)
    prompt_ids = _prompt_tokens(prompt, cfg.vocab, seed)
    T = len(prompt_ids)
    if T + new_tokens - 1 > cfg.context:
        raise UsageError("prompt (%d) + new_tokens (%d) - 1 = %d tokens do not fit the context "
                         "(%d)" % (T, new_tokens, T + new_tokens - 1, cfg.context))
    mem = {"buffers": buffers}
    if buffers == "double":
        mem["dram_bandwidth"] = "inf" if dram_bandwidth is None else repr(float(dram_bandwidth))
    elif dram_bandwidth is not None:
        mem["dram_bandwidth"] = repr(float(dram_bandwidth))
    job_options = dict(job_options, **mem)
    # The options are checked by the model's own parser now, on a 1x1x1 job, before the weights.
    systolic.matmul(np.ones((1, 1), np.float32 if dtype != "int8" else np.int8),
                    np.ones((1, 1), np.float32 if dtype != "int8" else np.int8),
                    array=array, dtype=dtype, engine=engine, **job_options)

    w = load_state_dict(state_dict, cfg) if state_dict is not None else init_weights(cfg, seed)
    int8 = dtype == "int8"
    amax = None
    if int8:
        # Calibration: the fp32 decoder on the host over the prompt records each site's amax.
        amax = {}
        with torch.no_grad():
            _Decoder(cfg, w, _HostRunner(), False, record=amax).forward(prompt_ids)
    runner = _ModelRunner(array, dtype, engine, job_options, check)
    dec = _Decoder(cfg, w, runner, int8, amax=amax, lm_head=lm_head)
    steps: List[Dict[str, Any]] = []
    logits: List[torch.Tensor] = []
    tokens: List[int] = []
    with torch.no_grad():
        feed = prompt_ids
        for i in range(new_tokens):
            runner.tally = _Tally()
            clipped0 = dec.clipped
            position = dec.length
            out = dec.forward(feed)
            tok = int(torch.argmax(out))
            logits.append(out)
            tokens.append(tok)
            e = _step_entry("prefill" if i == 0 else "decode", i, position, len(feed),
                            dec.length, tok, runner.tally, cfg, clock_ghz,
                            dec.clipped - clipped0)
            steps.append(e)
            if progress is not None:
                progress(e)
            feed = [tok]
    model_seconds = runner.seconds

    # The checks.
    chk: Dict[str, Any] = {"checked": bool(check)}
    failure = None
    if check:
        t0 = time.perf_counter()
        seq = prompt_ids + tokens[:-1]
        if dtype in ("fp32", "bf16"):
            ref = reference_logits(cfg, w, seq)[T - 1:]
            got = torch.stack(logits)
            err = float((got - ref).abs().max())
            scale = float(ref.abs().max())
            ref_tokens = [int(t) for t in ref.argmax(dim=1)]
            chk.update(reference="plain PyTorch, whole sequence, no KV cache (reference_logits)",
                       max_abs_logit_error=err, max_rel_logit_error=err / scale if scale else None,
                       reference_logit_range=[float(ref.min()), float(ref.max())],
                       reference_tokens=ref_tokens, tokens_equal=ref_tokens == tokens)
            if dtype == "fp32":
                chk.update(bound=FP32_LOGIT_REL, gemms_bound_checked=runner.bound_checked,
                           gemm_bound_worst=runner.bound_worst)
                if runner.bound_failure is not None:
                    failure = runner.bound_failure
                elif not scale > 0 or float(ref.std()) == 0:
                    failure = "the reference logits are constant: nothing to compare"
                elif err > FP32_LOGIT_REL * scale:
                    failure = ("fp32 logits differ from PyTorch's by %.3g (bound %.3g)"
                               % (err, FP32_LOGIT_REL * scale))
                elif ref_tokens != tokens:
                    failure = "fp32 tokens differ from PyTorch's: %s, PyTorch %s" % (
                        tokens, ref_tokens)
            chk["passed"] = failure is None
        else:
            host = _Decoder(cfg, w, _HostRunner(), True, amax=amax, lm_head=lm_head)
            ref_logits, ref_tokens, feed = [], [], prompt_ids
            for i in range(new_tokens):
                out = host.forward(feed)
                ref_logits.append(out)
                ref_tokens.append(int(torch.argmax(out)))
                feed = [tokens[i]]  # teacher-forced with the model's tokens
            same = all(torch.equal(a, b) for a, b in zip(logits, ref_logits))
            err = float((torch.stack(logits) - torch.stack(ref_logits)).abs().max())
            chk.update(reference="the same int8 arithmetic, numpy's int64 GEMMs in place of the "
                       "model's", logits_identical=same, max_abs_logit_error=err,
                       reference_tokens=ref_tokens, tokens_equal=ref_tokens == tokens)
            fp = reference_logits(cfg, w, seq)[T - 1:]
            chk["fp32_max_abs_logit_error"] = float((torch.stack(logits) - fp).abs().max())
            chk["fp32_tokens"] = [int(t) for t in fp.argmax(dim=1)]
            if not same:
                failure = "int8 logits differ from the quantized reference's by up to %.3g" % err
            elif ref_tokens != tokens:
                failure = "int8 tokens differ from the quantized reference's"
            chk["passed"] = failure is None
        chk["seconds"] = time.perf_counter() - t0

    prefill, decode = steps[:1], steps[1:]
    report: Dict[str, Any] = {
        "model": dict(cfg.as_dict(), weights=("state_dict %s" % state_dict) if state_dict
                      else "seeded %d" % seed, lm_head_on_model=bool(lm_head)),
        "array": list(array) if isinstance(array, (tuple, list)) else array,
        "dtype": dtype, "element_bytes": ELEMENT_BYTES[dtype], "engine": engine,
        "memory": {"buffers": buffers,
                   "dram_bandwidth": None if dram_bandwidth is None else float(dram_bandwidth)},
        "job_options": {k: v for k, v in job_options.items()
                        if k not in ("buffers", "dram_bandwidth")},
        "clock_ghz": float(clock_ghz), "seed": seed,
        "prompt": prompt_ids, "tokens": tokens,
        "phases": {"prefill": _phase_totals(prefill, clock_ghz),
                   "decode": _phase_totals(decode, clock_ghz)},
        "steps": steps,
        "ttft_us": prefill[0]["time_us"],
        "tpot_us": (sum(s["time_us"] for s in decode) / len(decode)) if decode else None,
        "check": chk,
        "seconds": {"total": time.perf_counter() - t_start, "model": model_seconds},
    }
    if failure is not None:
        raise CheckError(failure, report, None)
    return report


def _state_dict_shape(path: str) -> Dict[str, int]:
    """layers, d_model, vocab, context read off a state_dict file's shapes."""
    try:
        try:
            sd = torch.load(path, map_location="cpu", weights_only=True)
        except TypeError:
            sd = torch.load(path, map_location="cpu")
    except (OSError, RuntimeError, EOFError, ValueError) as e:
        raise UsageError("state_dict %s: cannot load it: %s" % (path, str(e).splitlines()[0]))
    if not isinstance(sd, dict):
        raise UsageError("state_dict %s: not a state_dict (a dict of tensors)" % path)
    names = {(k[len("transformer."):] if k.startswith("transformer.") else k): v
             for k, v in sd.items()}
    for need in ("wte.weight", "wpe.weight"):
        if need not in names:
            raise UsageError("state_dict %s: %s is missing" % (path, need))
    layers = 1 + max([int(k.split(".")[1]) for k in names if k.startswith("h.")], default=-1)
    if layers == 0:
        raise UsageError("state_dict %s: no layers (h.0. ...)" % path)
    return {"layers": layers, "d_model": int(names["wte.weight"].shape[1]),
            "vocab": int(names["wte.weight"].shape[0]),
            "context": int(names["wpe.weight"].shape[0])}


# ----------------------------------------------------------------------------------------------
# The command
# ----------------------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _array(text: str):
    try:
        if "x" in text:
            r, c = text.split("x")
            return (int(r), int(c))
        return int(text)
    except ValueError:
        raise UsageError("--array takes N or RxC, got %r" % text)


_array.__name__ = "N or RxC"  # argparse's "invalid ... value" names it


def _bandwidth(text: str):
    if text == "inf":
        return None
    try:
        return float(text)
    except ValueError:
        raise UsageError("--dram-bandwidth takes bytes per cycle or inf, got %r" % text)


_bandwidth.__name__ = "bytes per cycle"


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Greedy generation with a GPT-2-shaped decoder on the "
                "systolic model: prefill, then decode steps with a KV cache, every GEMM on the "
                "model, the values checked (docs/llm.md).")
    p.add_argument("--layers", type=int, help="decoder layers (default 12, GPT-2 small's)")
    p.add_argument("--d-model", type=int, help="model width (default 768)")
    p.add_argument("--heads", type=int, default=12, help="attention heads (default 12)")
    p.add_argument("--kv-heads", type=int, help="KV heads (default: heads; fewer: grouped-query)")
    p.add_argument("--vocab", type=int, help="vocabulary (default 50257)")
    p.add_argument("--context", type=int, help="the longest sequence (default 1024)")
    p.add_argument("--state-dict", help="weights: a torch.save'd state_dict with GPT-2's names "
                   "(default: seeded)")
    p.add_argument("--prompt", default="8", help="a number of seeded random tokens, or token "
                   "ids separated by commas (default 8)")
    p.add_argument("--new-tokens", type=int, default=4, help="tokens generated: the first by the "
                   "prefill, the rest by one decode step each (default 4)")
    p.add_argument("--array", type=_array, default=32, help="N or RxC (default 32)")
    p.add_argument("--dtype", default="fp32", help="fp32, bf16 or int8 (default fp32)")
    p.add_argument("--engine", default="functional", help="functional or cycle (default "
                   "functional)")
    p.add_argument("--seed", type=int, default=0, help="weights' and prompt's seed (default 0)")
    p.add_argument("--buffers", default="double", help="double or none (default double)")
    p.add_argument("--dram-bandwidth", type=_bandwidth, default=64.0,
                   help="bytes per cycle, or inf (default 64)")
    p.add_argument("--clock-ghz", type=float, default=1.0, help="clock for the times (default 1)")
    p.add_argument("--no-lm-head", action="store_true", help="run the LM head in PyTorch, untimed")
    p.add_argument("--no-check", action="store_true", help="skip the comparison with the "
                   "reference")
    p.add_argument("--job-option", action="append", default=[], metavar="NAME=VALUE",
                   help="a systolic.matmul keyword, e.g. dataflow=ws (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the report to FILE ('-': stdout)")
    p.add_argument("--quiet", action="store_true", help="no line per step")
    return p


def _job_options(items: List[str]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip().replace("-", "_")
        opt = systolic.job_options.get(name)
        if opt is not None and opt.is_flag and not eq:
            out[name] = True
        elif not eq:
            raise UsageError("--job-option takes NAME=VALUE, got %r" % item)
        else:
            out[name] = value
    return out


def _write_json(path: str, report: Dict[str, Any]) -> None:
    """The report, written atomically: a temporary file in the same directory, then renamed."""
    text = json.dumps(report, indent=1) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def summary(report: Dict[str, Any]) -> str:
    """The report's last lines, as the command prints them."""
    pre, dec = report["phases"]["prefill"], report["phases"]["decode"]
    lines = ["prefill: %d tokens, %d GEMMs, %d cycles, utilization %.2f%%, DRAM %d bytes; "
             "time to first token %.1f us at %g GHz" % (
                 pre["tokens_in"], pre["gemms"], pre["cycles"], 100 * (pre["utilization"] or 0),
                 pre["dram_bytes"]["total"], report["ttft_us"], report["clock_ghz"])]
    if dec["steps"]:
        lines.append("decode: %d steps, %d GEMMs, %d cycles, utilization %.2f%%, DRAM %d bytes "
                     "(KV %d); time per output token %.1f us" % (
                         dec["steps"], dec["gemms"], dec["cycles"], 100 * (dec["utilization"] or 0),
                         dec["dram_bytes"]["total"], dec["kv_bytes"], report["tpot_us"]))
    c = report["check"]
    if c.get("checked"):
        if report["dtype"] == "int8":
            lines.append("check: logits %s the quantized reference's, tokens %s" % (
                "identical to" if c["logits_identical"] else "DIFFER from",
                "equal" if c["tokens_equal"] else "DIFFER"))
        else:
            lines.append("check: max |logit - PyTorch's| %.3g (%.3g of max |logit|), tokens %s%s"
                         % (c["max_abs_logit_error"], c["max_rel_logit_error"] or 0,
                            "equal" if c["tokens_equal"] else "differ",
                            "" if report["dtype"] == "fp32" else " (bf16: not checked)"))
    lines.append("tokens: %s" % " ".join(map(str, report["tokens"])))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    """The command systolic-generate: argv without the program's name (None: sys.argv's).
    Returns the exit status: 0 done and checked, 1 a check failed, 2 bad usage or input (one
    line on stderr, nothing written)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parser().parse_args(argv)
        prompt: Any = args.prompt
        if prompt.strip().isdigit() and "," not in prompt:
            prompt = int(prompt)
        if args.json and args.json != "-":
            d = os.path.dirname(os.path.abspath(args.json))
            if not os.path.isdir(d):
                raise UsageError("--json %s: the directory %s does not exist" % (args.json, d))

        def progress(e):
            if not args.quiet:
                sys.stderr.write("%s %d: %d token(s) in, context %d, %d cycles, DRAM %d bytes, "
                                 "KV %d bytes -> token %d\n" % (
                                     e["phase"], e["step"], e["tokens_in"], e["context"],
                                     e["cycles"], e["dram_bytes"]["total"], e["kv_bytes"],
                                     e["token"]))

        status = 0
        try:
            report = generate(layers=args.layers, d_model=args.d_model, heads=args.heads,
                              kv_heads=args.kv_heads, vocab=args.vocab, context=args.context,
                              state_dict=args.state_dict, prompt=prompt,
                              new_tokens=args.new_tokens, array=args.array, dtype=args.dtype,
                              engine=args.engine, seed=args.seed, buffers=args.buffers,
                              dram_bandwidth=args.dram_bandwidth, clock_ghz=args.clock_ghz,
                              lm_head=not args.no_lm_head, check=not args.no_check,
                              progress=progress, **_job_options(args.job_option))
        except CheckError as e:
            sys.stderr.write("%s: FAIL: %s\n" % (PROG, e))
            if "steps" not in (e.report or {}):
                return 1  # the model's scoreboard failed a GEMM: no report of ours to write
            report, status = e.report, 1
        if args.json:
            _write_json(args.json, report)
        print(summary(report), file=sys.stderr if args.json == "-" else sys.stdout)
        return status
    except UsageError as e:
        sys.stderr.write("%s: %s\n" % (PROG, str(e).splitlines()[0] if str(e) else "bad usage"))
        return 2
    except OSError as e:
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
