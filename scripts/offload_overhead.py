#!/usr/bin/python3
"""What systolic.torch.offload adds to a GEMM, beside systolic.matmul's own time for the same job.

    PYTHONPATH=build/python scripts/offload_overhead.py [--repeat N]

For each shape (M x K times K x P on an R x R array, fp32, functional engine) it times, in one
process and alternated, N calls (after one warm-up call each, so that the testbench is built):
  matmul   systolic.matmul(A, B) on numpy arrays;
  offload  nn.Linear(K, P)(X) inside one `with offload(...)`, X = A and the weight B^T: the same
           job, plus what offload does around it (dispatch, lowering, the tensor copies, the
           report, and PyTorch's own result of the layer, which offload computes to give
           max_rel_error);
  pytorch  the same nn.Linear in plain PyTorch.
It prints a Markdown table of the medians and offload's overhead per GEMM (offload - matmul), and
checks that the offloaded output is matmul's C. Wall times: they vary with the machine's load.
Exit status 0, 1 when an output differs, 2 for bad usage.
"""

import argparse
import statistics
import sys
import time

import numpy as np
import torch

import systolic
from systolic.torch import offload

SHAPES = ((64, 64, 64, 16), (256, 256, 256, 32), (1024, 768, 768, 128))  # M, K, P, array


def median_seconds(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="timed calls per shape and way (default 7)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows, bad = [], 0
    for m, k, p, array in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, p), dtype=np.float32)
        layer = torch.nn.Linear(k, p, bias=False)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(b.T.copy()))
        x = torch.from_numpy(a)
        options = dict(array=array, dtype="fp32", engine="functional")
        c, _ = systolic.matmul(a, b, **options)
        with torch.no_grad(), offload(layer, **options) as h:
            y = layer(x)
            if not np.array_equal(y.numpy(), c):
                print(f"offload_overhead: {m}x{k}x{p}: the offloaded output is not matmul's C", file=sys.stderr)
                bad += 1
            t_offload, t_matmul = [], []
            for _ in range(args.repeat):  # alternated, so that both see the same load
                t_matmul.append(median_seconds(lambda: systolic.matmul(a, b, **options), 1))
                t_offload.append(median_seconds(lambda: layer(x), 1))
        if len(h.reports) != 1 + args.repeat or h.fallbacks:
            print(f"offload_overhead: {m}x{k}x{p}: {len(h.reports)} reports, fallbacks {h.fallbacks}",
                  file=sys.stderr)
            bad += 1
        with torch.no_grad():
            t_torch = median_seconds(lambda: layer(x), args.repeat)
        mm, off = statistics.median(t_matmul), statistics.median(t_offload)
        rows.append((m, k, p, array, mm, off, t_torch))
    print("| M × K × P | array | `systolic.matmul` | `offload` | overhead per GEMM | PyTorch alone |")
    print("|---|---|---|---|---|---|")
    for m, k, p, array, mm, off, tt in rows:
        print(f"| {m} × {k} × {p} | {array} × {array} | {mm * 1e3:.2f} ms | {off * 1e3:.2f} ms | "
              f"{(off - mm) * 1e3:+.2f} ms ({100 * (off - mm) / mm:+.0f}%) | {tt * 1e3:.2f} ms |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
