"""Per-column int8 requantization on the model against PyTorch's quantized linear layer.

PyTorch quantizes the weights per output channel (symmetric, zero point 0) and the input per
tensor (quint8 with zero point 128, which is our int8 code + 128), and requantizes each output
channel c with the multiplier M[c] = s_x * s_w[c] / s_y and the output zero point. The model
gets the int8 codes, S[j] = M[j] as its per-column scale vector (scale_file) and Z = z_y - 128.

The int32 accumulators must be equal exactly. The requantized codes are compared element by
element, and every difference is explained by the one rule that differs: the model multiplies
in double, and PyTorch's kernel (the engine this machine has) in float32 before rounding, so
where the two products round to different integers the codes differ by one; nowhere else may
they differ (docs/networks.md#int8-requantization-against-pytorch).

Usage: quantized_torch_check.py (with the built package on PYTHONPATH). Exit 0 or 1.
"""

import sys

import numpy as np
import torch

import systolic


def case(m, k, p, seed, y_range, y_zero_point):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g)
    w = torch.randn(p, k, generator=g) * torch.rand(p, 1, generator=g)  # channels of different ranges
    s_x = float(x.abs().max()) / 127
    # The output scale: the float output's range times y_range (above 1: room to spare; below:
    # some codes saturate).
    y_scale = float((x @ w.t()).abs().max()) / 127 * y_range
    xq = torch.quantize_per_tensor(x, s_x, 128, torch.quint8)
    s_w = (w.abs().amax(1) / 127).double()
    wq = torch.quantize_per_channel(w, s_w, torch.zeros(p, dtype=torch.long), 0, torch.qint8)
    yq = torch.ops.quantized.linear(xq, torch.ops.quantized.linear_prepack(wq, None),
                                    y_scale, y_zero_point)
    torch_codes = yq.int_repr().numpy().astype(np.int32) - 128

    a = (xq.int_repr().numpy().astype(np.int32) - 128).astype(np.int8)
    b = np.ascontiguousarray(wq.int_repr().numpy().T)
    acc, report = systolic.matmul(a, b, array=(8, 16), engine="functional")
    exact = a.astype(np.int64) @ b.astype(np.int64)
    if not np.array_equal(acc, exact):
        return f"seed {seed}: the int32 accumulators differ from the exact product"

    # The multiplier as PyTorch's kernels form it, from float32 scales.
    mult32 = (np.float32(s_x) * s_w.numpy().astype(np.float32)) / np.float32(y_scale)
    scales = mult32.astype(np.float64)
    codes, report = systolic.matmul(a, b, array=(8, 16), engine="functional", out_dtype="int8",
                                    scale_file=scales, zero_point=y_zero_point - 128)
    if report["output"]["scale"] != "per_column" or not report["pass"]:
        return f"seed {seed}: the model did not run per-column requantization"
    codes = codes.astype(np.int32)

    wide = np.rint(exact * scales)  # the model's rule: the product in double, then nearest even
    narrow = np.rint((exact.astype(np.float32) * mult32).astype(np.float64))  # float32 product
    differ = codes != torch_codes
    explained = (wide != narrow) & (np.abs(codes - torch_codes) == 1)
    if np.any(differ & ~explained):
        i, j = np.argwhere(differ & ~explained)[0]
        return (f"seed {seed}: C[{i}][{j}] is {codes[i, j]} on the model, {torch_codes[i, j]} in "
                f"PyTorch, with acc {exact[i, j]} and scale {scales[j]!r}")
    print(f"seed {seed}: {m}x{k}x{p}, {codes.size} codes, {int(differ.sum())} differ by one "
          f"where float32 and double products round apart, "
          f"{int((codes == 127).sum() + (codes == -128).sum())} saturated")
    return None


def main():
    failures = [f for f in (case(m, k, p, seed, y_range, zp)
                            for m, k, p, seed, y_range, zp in [(33, 75, 21, 1, 1.0, 128),
                                                               (33, 75, 21, 2, 1.5, 100),
                                                               (200, 300, 64, 3, 0.7, 140),
                                                               (256, 147, 96, 4, 1.0, 128)]) if f]
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
