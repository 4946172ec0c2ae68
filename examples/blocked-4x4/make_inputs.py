#!/usr/bin/python3
"""Write a.npy and b.npy for seed 000's worked example: a 4x4 product cut into 2x2 blocks.

    C00 = A00 B00 + A01 B10 = [1 2; 3 4] I + [0 1; 1 0] [1 1; 0 1] = [1 3; 4 5]

A10, A11, B01 and B11 do not reach C00; they are small values chosen so that the other
blocks of C are easy to check by hand. Run with Debian's Python: /usr/bin/python3 make_inputs.py
"""
from pathlib import Path

import numpy as np

A00 = np.array([[1, 2], [3, 4]])
A01 = np.array([[0, 1], [1, 0]])
A10 = np.array([[2, 0], [0, 2]])
A11 = np.array([[1, 1], [1, 1]])
B00 = np.array([[1, 0], [0, 1]])
B01 = np.array([[0, 1], [1, 0]])
B10 = np.array([[1, 1], [0, 1]])
B11 = np.array([[2, 0], [0, 2]])


def main():
    here = Path(__file__).resolve().parent
    a = np.block([[A00, A01], [A10, A11]]).astype(np.int32)
    b = np.block([[B00, B01], [B10, B11]]).astype(np.int32)
    np.save(here / "a.npy", a)
    np.save(here / "b.npy", b)
    c = a.astype(np.int64) @ b
    assert (c[:2, :2] == [[1, 3], [4, 5]]).all()
    print("C =", c.tolist())


if __name__ == "__main__":
    main()
