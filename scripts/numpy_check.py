#!/usr/bin/python3
"""Cross-checks systolic-tb against numpy: random int32 A and B saved with numpy.save, C read
back with numpy.load and compared with numpy's own int64 matmul. Exit status 0 when all agree.

usage: scripts/numpy_check.py PATH/TO/systolic-tb
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CASES = [  # (array N, M, K, P, tile order)
    (2, 3, 3, 3, "row"),
    (4, 9, 13, 6, "snake"),
    (3, 1, 7, 10, "col"),
    (8, 5, 2, 17, "random"),
    (1, 4, 4, 4, "row"),
]


def main() -> int:
    tb = sys.argv[1]
    rng = np.random.default_rng(2026)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for n, m, k, p, order in CASES:
            # Full int32 range: products and sums exercise the 64-bit accumulator.
            a = rng.integers(-2**31, 2**31, size=(m, k), dtype=np.int32)
            b = rng.integers(-2**31, 2**31, size=(k, p), dtype=np.int32)
            np.save(tmp / "a.npy", a)
            np.save(tmp / "b.npy", b)
            run = subprocess.run(
                [tb, "--array", str(n), "--order", order, "--a", str(tmp / "a.npy"), "--b",
                 str(tmp / "b.npy"), "--c-out", str(tmp / "c.npy"), "--json", "-"],
                capture_output=True, text=True, timeout=120)
            report = json.loads(run.stdout) if run.returncode == 0 else {}
            c = np.load(tmp / "c.npy") if run.returncode == 0 else None
            expected = a.astype(np.int64) @ b.astype(np.int64)
            ok = (run.returncode == 0 and c.dtype == np.int64 and c.shape == (m, p)
                  and np.array_equal(c, expected) and report.get("pass") is True)
            print(f"N={n} M={m} K={k} P={p} order={order}: {'ok' if ok else 'MISMATCH'}")
            if not ok:
                failures += 1
                print(run.stderr, file=sys.stderr)
    print(f"{len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
