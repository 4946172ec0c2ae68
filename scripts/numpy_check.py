#!/usr/bin/python3
"""Cross-checks systolic-tb against numpy, which shares no code with the model: random A and B
saved with numpy.save, C read back with numpy.load and compared with numpy's own product, for
every number format and both engines. Exit status 0 when all agree.

  int32: int64 matmul (exact);        int8: int32 matmul (exact here: K is short).
  fp32:  float32 products added in float32 in k order, one k at a time (not BLAS, whose order
         and fused multiply-adds differ), split into partial sums where --k-policy partials is.
  bf16:  the same after rounding the float32 operands to bfloat16, nearest even.

usage: scripts/numpy_check.py PATH/TO/systolic-tb
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CASES = [  # (dtype, array N, M, K, P, tile order, extra options)
    ("int32", 2, 3, 3, 3, "row", []),
    ("int32", 4, 9, 13, 6, "snake", []),
    ("int32", 3, 1, 7, 10, "col", []),
    ("int32", 8, 5, 2, 17, "random", []),
    ("int32", 1, 4, 4, 4, "row", []),
    ("int8", 4, 9, 20, 6, "snake", []),
    ("int8", 3, 5, 11, 7, "col", ["--k-tile", "4"]),
    ("fp32", 4, 9, 13, 6, "row", []),
    ("fp32", 3, 7, 17, 5, "random", ["--k-tile", "5", "--k-policy", "partials"]),
    ("fp32", 5, 6, 9, 11, "snake", ["--k-tile", "4"]),
    ("bf16", 4, 9, 13, 6, "col", []),
    ("bf16", 2, 5, 10, 3, "row", ["--k-tile", "3", "--k-policy", "partials"]),
]


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (kept in float32), rounding to nearest, ties to even."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def float_product(a: np.ndarray, b: np.ndarray, k_tile: int, partials: bool) -> np.ndarray:
    """C = A B in float32: each product rounded, then added in k order; with partial sums, each
    chunk's sum starts from zero and the chunks are added in order."""
    k = a.shape[1]
    chunk = k_tile if partials and 0 < k_tile < k else k
    total = None
    for k0 in range(0, k, chunk):
        part = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
        for kk in range(k0, min(k0 + chunk, k)):
            part = part + (a[:, kk:kk + 1] * b[kk:kk + 1, :])
        total = part if total is None else total + part
    return total


def operands(rng, dtype, m, k, p):
    if dtype == "int32":  # full range: products and sums exercise the 64-bit accumulator
        return (rng.integers(-2**31, 2**31, size=(m, k), dtype=np.int32),
                rng.integers(-2**31, 2**31, size=(k, p), dtype=np.int32))
    if dtype == "int8":
        return (rng.integers(-128, 128, size=(m, k), dtype=np.int8),
                rng.integers(-128, 128, size=(k, p), dtype=np.int8))
    return (rng.uniform(-1, 1, size=(m, k)).astype(np.float32),
            rng.uniform(-1, 1, size=(k, p)).astype(np.float32))


def expected_c(dtype, a, b, extra):
    k_tile = int(extra[extra.index("--k-tile") + 1]) if "--k-tile" in extra else 0
    partials = "partials" in extra
    if dtype == "int32":
        return a.astype(np.int64) @ b.astype(np.int64)
    if dtype == "int8":
        return a.astype(np.int32) @ b.astype(np.int32)
    if dtype == "bf16":
        a, b = to_bf16(a), to_bf16(b)
    return float_product(a, b, k_tile, partials)


def main() -> int:
    tb = sys.argv[1]
    rng = np.random.default_rng(2026)
    failures = runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for dtype, n, m, k, p, order, extra in CASES:
            a, b = operands(rng, dtype, m, k, p)
            np.save(tmp / "a.npy", a)
            np.save(tmp / "b.npy", b)
            want = expected_c(dtype, a, b, extra)
            for engine in ("cycle", "functional"):
                runs += 1
                run = subprocess.run(
                    [tb, "--dtype", dtype, "--array", str(n), "--order", order, "--engine", engine,
                     "--a", str(tmp / "a.npy"), "--b", str(tmp / "b.npy"), "--c-out",
                     str(tmp / "c.npy"), "--json", "-"] + extra,
                    capture_output=True, text=True, timeout=120)
                report = json.loads(run.stdout) if run.returncode == 0 else {}
                c = np.load(tmp / "c.npy") if run.returncode == 0 else None
                # Bit for bit: compare the bytes, so that -0 and +0 differ as they should.
                ok = (run.returncode == 0 and c.dtype == want.dtype and c.shape == (m, p)
                      and c.tobytes() == want.tobytes() and report.get("pass") is True)
                print(f"{dtype} N={n} M={m} K={k} P={p} order={order} {' '.join(extra)} "
                      f"engine={engine}: {'ok' if ok else 'MISMATCH'}")
                if not ok:
                    failures += 1
                    print(run.stderr, file=sys.stderr)
    print(f"{runs - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
