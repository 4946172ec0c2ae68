"""Runs a network with systolic.torch.offload on seeded inputs and compares its outputs with
PyTorch's own run (docs/networks.md).

  systolic-infer --torchvision resnet18 --input-shape 3x32x32 --inputs 2 --dtype fp32,int8 \
                 --array 32 --engine functional [--json FILE] [--layers]
  systolic-infer --transformer --d-model 32 --nhead 4 --seq 8 --dtype fp32

Prints, per dtype, the top-1 agreement (argmax per sample, or per sample and position for the
transformer) and the largest relative error (max |offloaded - PyTorch| / max |PyTorch| of a
sample). Exit 0 when fp32 agrees on every sample and every other dtype on at least
--min-agreement percent, 1 otherwise, 2 on bad input, 3 when PyTorch's own output is degenerate,
so that agreeing with it would mean nothing: a sample whose outputs are all equal (all zero, as
torchvision's vit_b_16 gives with its zero-initialised head), or, with more than one sample (or
position), the same class predicted for every one. Nothing runs on the model then.

The package's command systolic-infer; scripts/infer runs the same code in a clone, with the built
package on PYTHONPATH (build/python).
"""

import argparse
import json
import os
import sys
import time

from .import_cli import batched_shape

# The name in messages and in --help's usage: the command's (scripts/infer sets its own).
PROG = "systolic-infer"
COMMAND = "systolic-infer"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("%s: %s\n" % (PROG, message))
        sys.exit(2)


def _fail(message):
    sys.stderr.write("%s: %s\n" % (PROG, message))
    sys.exit(2)


def _one_input(text, rank):
    """--input-shape as scripts/import reads it (its batched_shape: "," or "x", the batch first or
    left out), for one input: the batch is --inputs, so a batch written here must be 1."""
    try:
        dims = batched_shape(text, rank)
    except ValueError as e:
        _fail(str(e))
    if dims[0] != 1:
        _fail("--input-shape %s: the batch is --inputs here; give one input (%s)"
              % (text, ",".join(map(str, [1] + dims[1:]))))
    return tuple(dims[1:])


def _array(text):
    try:
        dims = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("expected N or RxC, got %r" % text)
    if len(dims) not in (1, 2) or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError("expected N or RxC, got %r" % text)
    return dims[0] if len(dims) == 1 else dims


def _positive(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    if v <= 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return v


def parse(argv):
    p = _Parser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    net = p.add_mutually_exclusive_group(required=True)
    net.add_argument("--torchvision", metavar="NAME",
                     help="a torchvision classification model with seeded random weights")
    net.add_argument("--transformer", action="store_true",
                     help="one nn.TransformerEncoderLayer (batch_first)")
    p.add_argument("--d-model", type=_positive, default=32)
    p.add_argument("--nhead", type=_positive, default=4)
    p.add_argument("--seq", type=_positive, default=8)
    p.add_argument("--dim-feedforward", type=_positive, default=None,
                   help="default 4 x d-model")
    p.add_argument("--width-mult", type=float, default=None,
                   help="mobilenet_v2's width multiplier (a smaller network)")
    p.add_argument("--num-classes", type=_positive, default=1000)
    p.add_argument("--input-shape", default=None,
                   help="one input, C,H,W or 1,C,H,W ('x' separates too), as scripts/import "
                        "reads it (default 3,224,224, or SEQ,D_MODEL for the transformer); "
                        "--inputs is the batch")
    p.add_argument("--inputs", type=_positive, default=1, help="seeded inputs, one batch")
    p.add_argument("--calibration", type=_positive, default=4,
                   help="int8: seeded calibration inputs, drawn apart from the inputs (default 4)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dtype", default="fp32", help="fp32, int8, bf16 or a comma list")
    p.add_argument("--array", type=_array, default=32, help="N or RxC (default 32)")
    p.add_argument("--engine", default="functional", choices=("functional", "cycle"))
    p.add_argument("--min-agreement", type=float, default=90.0,
                   help="top-1 agreement in percent that int8 and bf16 must reach (default 90; "
                        "fp32 must reach 100)")
    p.add_argument("--json", metavar="FILE", help="write the results and every layer's report")
    p.add_argument("--layers", action="store_true", help="print the per-layer table")
    args = p.parse_args(argv)
    args.dtypes = [d.strip() for d in args.dtype.split(",")]
    for d in args.dtypes:
        if d not in ("fp32", "int8", "bf16"):
            p.error("--dtype: %r is not fp32, int8 or bf16" % d)
    if len(set(args.dtypes)) != len(args.dtypes):
        p.error("--dtype: a dtype is given twice")
    if not 0 <= args.min_agreement <= 100:
        p.error("--min-agreement must be between 0 and 100")
    if args.transformer and args.d_model % args.nhead:
        p.error("--d-model %d is not a multiple of --nhead %d" % (args.d_model, args.nhead))
    return args


def build(args, torch, torchvision):
    torch.manual_seed(args.seed)
    if args.transformer:
        ff = args.dim_feedforward or 4 * args.d_model
        model = torch.nn.TransformerEncoderLayer(args.d_model, args.nhead, ff, dropout=0.0,
                                                 batch_first=True)
        shape = _one_input(args.input_shape, 3) if args.input_shape else (args.seq, args.d_model)
        if len(shape) != 2 or shape[1] != args.d_model:
            _fail("--input-shape of the transformer is SEQ,D_MODEL (or 1,SEQ,D_MODEL), got %s"
                  % "x".join(map(str, shape)))
    else:
        ctor = getattr(torchvision.models, args.torchvision, None)
        if ctor is None or not callable(ctor) or args.torchvision.startswith("_"):
            _fail("--torchvision: torchvision has no model %r" % args.torchvision)
        kwargs = {"weights": None, "num_classes": args.num_classes}
        if args.width_mult is not None:
            kwargs["width_mult"] = args.width_mult
        try:
            model = ctor(**kwargs)
        except TypeError as e:
            _fail("--torchvision %s: %s" % (args.torchvision, e))
        if not isinstance(model, torch.nn.Module):
            _fail("--torchvision: %r is not a model" % args.torchvision)
        shape = _one_input(args.input_shape, 4) if args.input_shape else (3, 224, 224)
    return model.eval(), shape


def degenerate(ref, transformer):
    """Why top-1 agreement with PyTorch's output ref would mean nothing, or None."""
    logits = ref.reshape(-1, ref.shape[-1]) if transformer else ref.reshape(ref.shape[0], -1)
    spread = logits.amax(1) - logits.amin(1)
    if not bool((spread > 0).all()):
        what = "all zero" if not bool(ref.any()) else "all equal"
        return ("PyTorch's output of a sample is %s, so its top-1 class is a tie (a zero-initialised "
                "head gives that)" % what)
    classes = logits.argmax(1).unique().numel()
    if logits.shape[0] > 1 and classes < 2:
        return ("PyTorch predicts one class, %d, for all %d %s, so the network ignores its input "
                "(random weights can give that; try another model or --seed)"
                % (int(logits.argmax(1)[0]), logits.shape[0],
                   "positions" if transformer else "inputs"))
    return None


def compare(y, ref, transformer):
    """Top-1 agreement (fraction) and the largest per-sample relative error."""
    if transformer:
        agree = (y.argmax(-1) == ref.argmax(-1)).float().mean().item()
    else:
        agree = (y.argmax(1) == ref.argmax(1)).float().mean().item()
    n = ref.shape[0]
    d = (y - ref).abs().reshape(n, -1).amax(1)
    s = ref.abs().reshape(n, -1).amax(1).clamp_min(1e-30)
    return agree, float((d / s).max())


def layer_table(reports):
    lines = ["%-34s %-7s %-18s %6s %7s %6s %6s %10s" % (
        "layer", "kind", "M x K x P", "gemms", "tiles", "util", "sat", "max rel")]
    for r in reports:
        lines.append("%-34s %-7s %-18s %6d %7d %6.3f %6d %10.3g" % (
            r["name"][:34], r["kind"], "x".join(map(str, r["gemm"])), r["gemms"], r["tiles"],
            r["utilization"] or 0.0, r["overflow_saturations"] + r["output_saturated"],
            r["max_rel_error"]))
    return "\n".join(lines)


def main(argv=None):
    """The command: argv without the program's name (None: sys.argv's); returns the exit status."""
    args = parse(sys.argv[1:] if argv is None else argv)
    import torch
    import torchvision
    try:
        import systolic
        import systolic.torch as st
    except ImportError as e:
        _fail("cannot import systolic (%s); set PYTHONPATH=build/python" % e)
    model, shape = build(args, torch, torchvision)
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn((args.inputs,) + tuple(shape), generator=gen)
    calib = torch.randn((args.calibration,) + tuple(shape), generator=gen)
    try:
        with torch.no_grad():
            ref = model(x)
    except (RuntimeError, ValueError) as e:
        _fail("the network does not take an input of shape %s: %s"
              % ("x".join(map(str, shape)), str(e).splitlines()[0]))
    name = "transformer" if args.transformer else args.torchvision
    why = degenerate(ref, args.transformer)
    if why:
        sys.stderr.write("%s: %s: no agreement to check: %s\n" % (PROG, name, why))
        return 3
    results = {"network": name, "input_shape": list(shape), "inputs": args.inputs,
               "seed": args.seed, "array": args.array, "engine": args.engine, "dtypes": {}}
    ok = True
    for dtype in args.dtypes:
        t0 = time.time()
        try:
            with torch.no_grad():
                handle = st.offload(model, array=args.array, dtype=dtype, engine=args.engine,
                                    calibration=calib if dtype == "int8" else None)
                with handle:
                    y = model(x)
        except systolic.UsageError as e:
            _fail(str(e))
        except systolic.CheckError as e:
            print("%s: %s: the model's check failed: %s" % (name, dtype, e))
            return 1
        seconds = time.time() - t0
        agree, rel = compare(y, ref, args.transformer)
        need = 1.0 if dtype == "fp32" else args.min_agreement / 100.0
        # Nothing on the model (no layer call) is a failure too, not a match by default.
        passed = (agree >= need - 1e-12 and bool(handle.reports) and not handle.fallbacks
                  and all(r["passed"] for r in handle.reports))
        ok = ok and passed
        gemms = sum(r["gemms"] for r in handle.reports)
        print("%s %s: top-1 agreement %.1f%% (%d inputs), max relative error %.3g, "
              "%d layer calls, %d GEMMs, %.1f s%s" % (
                  name, dtype, 100 * agree, args.inputs, rel, len(handle.reports), gemms,
                  seconds, "" if passed else "  FAIL"))
        if handle.fallbacks:
            print("  ran in PyTorch, not on the model: %s" % ", ".join(handle.fallbacks))
        if args.layers:
            print(layer_table(handle.reports))
        results["dtypes"][dtype] = {"top1_agreement": agree, "max_rel_error": rel,
                                    "seconds": seconds, "passed": passed,
                                    "fallbacks": handle.fallbacks, "layers": handle.reports}
    if args.json:
        tmp = args.json + ".tmp%d" % os.getpid()
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, args.json)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
