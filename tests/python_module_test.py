"""systolic.matmul against systolic-tb and numpy.

Usage: python_module_test.py SYSTOLIC_TB (with the built package on PYTHONPATH).
Each job runs twice, from Python and as systolic-tb with the same operands in .npy files:
C and the JSON report must be the same, and C must equal numpy's product (exactly for the
integer formats).
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import systolic
from systolic import _jobs

TB = None


def operands(dtype, m, k, p, seed):
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return (rng.integers(-128, 128, (m, k)).astype(np.int8),
                rng.integers(-128, 128, (k, p)).astype(np.int8))
    if dtype == "int32":
        return (rng.integers(-1000, 1001, (m, k)).astype(np.int32),
                rng.integers(-1000, 1001, (k, p)).astype(np.int32))
    return (rng.uniform(-1, 1, (m, k)).astype(np.float32),
            rng.uniform(-1, 1, (k, p)).astype(np.float32))


def systolic_tb(a, b, args):
    """C and the report of the same job run by systolic-tb."""
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "a.npy"), a)
        np.save(os.path.join(d, "b.npy"), b)
        c_path = os.path.join(d, "c.npy")
        run = subprocess.run([TB, "--a", os.path.join(d, "a.npy"), "--b", os.path.join(d, "b.npy"),
                              "--c-out", c_path, "--json", "-", "--no-progress"] + args,
                             capture_output=True, text=True, check=False)
        assert run.returncode in (0, 1), run.stderr
        return np.load(c_path), json.loads(run.stdout)


def as_args(options):
    out = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


# (dtype, array, shape, options): each on a testbench configuration of its own, so the first
# runs in this process and the others in worker processes.
JOBS = [
    ("int32", 2, (3, 3, 3), {}),
    ("int8", (4, 3), (13, 21, 10), {"dataflow": "ws", "out_dtype": "int8", "scale": 0.01,
                                    "zero_point": 3}),
    ("fp32", 4, (9, 40, 7), {"k_tile": 16, "k_policy": "partials", "order": "snake"}),
    ("bf16", (3, 5), (11, 8, 12), {"engine": "functional", "dataflow": "is"}),
    ("int32", 8, (20, 30, 17), {"buffers": "double", "a_sram": "4k", "b_sram": "4k",
                                "c_sram": "4k", "dram_bandwidth": 8}),
]


class MatmulTest(unittest.TestCase):
    def test_same_job_as_systolic_tb(self):
        for i, (dtype, array, (m, k, p), options) in enumerate(JOBS):
            with self.subTest(dtype=dtype, array=array, options=options):
                a, b = operands(dtype, m, k, p, seed=i)
                c, report = systolic.matmul(a, b, array=array, dtype=dtype, **options)
                array_text = "x".join(map(str, array)) if isinstance(array, tuple) else str(array)
                tb_c, tb_report = systolic_tb(
                    a, b, ["--array", array_text, "--dtype", dtype] + as_args(options))
                self.assertTrue(report["pass"])
                self.assertGreater(report["scoreboard"]["checked"], 0)
                self.assertEqual(c.dtype, tb_c.dtype)
                np.testing.assert_array_equal(c, tb_c)
                # The estimate counts the file buffers systolic-tb reads the operands into.
                for r in (report, tb_report):
                    del r["memory_estimate_bytes"]
                self.assertEqual(report, tb_report)

    def test_an_array_for_a_file_option(self):
        a, b = operands("int8", 14, 30, 11, seed=8)
        scales = np.linspace(0.002, 0.02, 11)
        zero_points = np.arange(-5, 6, dtype=np.int32)
        c, report = systolic.matmul(a, b, array=(4, 3), out_dtype="int8", scale_file=scales,
                                    zero_point_file=zero_points)
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "s.npy"), scales)
            np.save(os.path.join(d, "z.npy"), zero_points)
            tb_c, tb_report = systolic_tb(a, b, ["--array", "4x3", "--dtype", "int8",
                                                 "--out-dtype", "int8",
                                                 "--scale-file", os.path.join(d, "s.npy"),
                                                 "--zero-point-file", os.path.join(d, "z.npy")])
        self.assertEqual(report["output"]["scale"], "per_column")
        np.testing.assert_array_equal(c, tb_c)
        acc = a.astype(np.int64) @ b.astype(np.int64)
        np.testing.assert_array_equal(c, np.clip(np.rint(acc * scales) + zero_points, -128, 127))

    def test_every_format_of_the_models_list_runs(self):
        # The package's formats are the model's list (number_format.h), through the native module,
        # in the order systolic-tb names them.
        names = [f["name"] for f in systolic._systolic.formats]
        self.assertEqual(list(_jobs._OPERAND_DTYPES), names)
        tb = subprocess.run([TB, "--dtype", "int4"], capture_output=True, text=True)
        self.assertIn("{" + ",".join(names) + "}", tb.stderr)
        for name in names:
            with self.subTest(dtype=name):
                a, b = operands(name, 3, 4, 5, seed=1)
                c, report = systolic.matmul(a, b, array=2, dtype=name)
                self.assertEqual(report["dtype"], name)
                self.assertTrue(report["pass"])

    def test_c_is_the_product(self):
        for dtype in ("int8", "int32", "fp32"):
            with self.subTest(dtype=dtype):
                a, b = operands(dtype, 17, 33, 9, seed=7)
                c, report = systolic.matmul(a, b, array=(4, 8))
                self.assertEqual(report["dtype"], dtype)
                if dtype == "fp32":
                    exact = a.astype(np.float64) @ b.astype(np.float64)
                    bound = 33 * 2.0 ** -23 * (np.abs(a) @ np.abs(b))
                    self.assertTrue(np.all(np.abs(c - exact) <= bound))
                else:
                    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))

    def test_operands_that_are_not_contiguous(self):
        a, b = operands("int32", 12, 12, 12, seed=3)
        c, _ = systolic.matmul(a.T, b[:, ::-1], array=2)
        np.testing.assert_array_equal(c, a.T.astype(np.int64) @ b[:, ::-1].astype(np.int64))

    def test_bad_options_and_operands_are_one_line(self):
        a, b = operands("int32", 4, 5, 6, seed=1)
        cases = [
            (lambda: systolic.matmul(a, b, bogus=1), "unknown option --bogus"),
            (lambda: systolic.matmul(a, b, k_tile=0), "--k-tile must be positive"),
            (lambda: systolic.matmul(a, b, array=0), "--array must be between 1"),
            (lambda: systolic.matmul(a, a), "A's columns must equal B's rows"),
            (lambda: systolic.matmul(a.astype(np.float64), b), "say which format with dtype="),
            (lambda: systolic.matmul(a * 1000, b, dtype="int8"), "outside int8's range"),
            (lambda: systolic.matmul(a, b, dtype="int4"), "dtype must be one of"),
            (lambda: systolic.matmul(a[0], b), "A must be 2-D"),
        ]
        for call, words in cases:
            with self.subTest(words=words):
                with self.assertRaises(systolic.UsageError) as caught:
                    call()
                self.assertIn(words, str(caught.exception))
                self.assertNotIn("\n", str(caught.exception))

    def test_empty_operands_are_a_usage_error_in_every_process(self):
        # The first configuration runs in this process, the others in workers: the same error.
        _, b = operands("int8", 1, 3, 2, seed=9)
        for array in (2, (3, 2), (2, 5)):
            with self.subTest(array=array):
                with self.assertRaises(systolic.UsageError) as caught:
                    systolic.matmul(np.zeros((0, 3), np.int8), b, array=array)
                self.assertIn("M, K and P must be positive", str(caught.exception))
        # The native half refuses them too, whoever calls it.
        with self.assertRaises(systolic.UsageError) as caught:
            systolic._systolic.run(["--array", "2", "--dtype", "int8", "--m", "0", "--k", "3", "--p", "2"],
                                   np.zeros((0, 3), np.int8), b)
        self.assertIn("--m must be positive", str(caught.exception))

    def test_a_job_over_max_memory_is_refused_before_a_worker_starts(self):
        # Refused from the options alone: no worker is started and no operand is copied into the
        # memory shared with one (a 10 GB job used to be copied for 45 s, then refused).
        a, b = operands("int8", 4, 5, 6, seed=10)
        before = set(_jobs._workers)
        with self.assertRaises(systolic.UsageError) as caught:
            systolic.matmul(a, b, array=(6, 5), max_memory="1k")
        self.assertIn("over the limit of", str(caught.exception))
        self.assertEqual(set(_jobs._workers), before)

    def test_the_version_is_the_projects(self):
        self.assertEqual(systolic.__version__, os.environ["SYSTOLIC_PROJECT_VERSION"])

    def test_the_source_tree_says_how_to_build(self):
        # python/ holds the package's Python files without the native module: importing it by
        # mistake (PYTHONPATH=python) says what to do, not "circular import".
        env = dict(os.environ, PYTHONPATH=os.path.join(os.environ["SYSTOLIC_SOURCE_DIR"], "python"))
        r = subprocess.run([sys.executable, "-c", "import systolic"], capture_output=True, text=True,
                           env=env, check=False)
        self.assertNotEqual(r.returncode, 0)
        last = r.stderr.strip().splitlines()[-1]
        self.assertIn("ImportError: systolic:", last)
        self.assertIn("scripts/setup", last)
        self.assertIn("PYTHONPATH=build/python", last)
        self.assertNotIn("circular import", r.stderr)

    def test_a_failed_check_raises_with_the_report(self):
        a, b = operands("int32", 5, 4, 5, seed=2)
        with self.assertRaises(systolic.CheckError) as caught:
            systolic.matmul(a, b, array=2, inject="no-mask")
        self.assertFalse(caught.exception.report["pass"])
        self.assertIn("outside C", str(caught.exception))
        c, report = systolic.matmul(a, b, array=2, inject="no-mask", check=False)
        self.assertFalse(report["pass"])
        self.assertEqual(report["inject"], "no-mask")
        # The same testbench runs clean again afterwards; a worker's as well.
        c, report = systolic.matmul(a, b, array=2)
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
        with self.assertRaises(systolic.CheckError) as caught:
            systolic.matmul(a, b, array=4, inject="no-mask")
        self.assertIsNone(caught.exception.c, "a bus error leaves no C")
        self.assertEqual(caught.exception.report["status"], "bus_error")

    def test_output_files_are_written(self):
        a, b = operands("int32", 6, 5, 4, seed=4)
        with tempfile.TemporaryDirectory() as d:
            vcd, report_file = os.path.join(d, "job.vcd"), os.path.join(d, "job.json")
            _, report = systolic.matmul(a, b, array=2, vcd=vcd, json=report_file)
            with open(vcd, encoding="ascii") as f:
                self.assertIn("$enddefinitions", f.read())
            with open(report_file, encoding="utf-8") as f:
                written = json.load(f)
            del written["memory_estimate_bytes"], report["memory_estimate_bytes"]
            self.assertEqual(written, report)

    def test_a_worker_that_died_is_started_again(self):
        a, b = operands("int8", 6, 7, 8, seed=5)
        systolic.matmul(a, b, array=(2, 7))
        workers = list(_jobs._workers.values())
        self.assertTrue(workers, "a second configuration runs in a worker process")
        for w in workers:
            os.kill(w.process.pid, signal.SIGKILL)
            w.process.wait()
        with self.assertRaises(RuntimeError):
            # The request to a dead worker fails; the next call starts a new one.
            workers[0].run(["--array", "2x7"], a, b, 8 * 6 * 8)
        c, _ = systolic.matmul(a, b, array=(2, 7))
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


if __name__ == "__main__":
    TB = sys.argv.pop(1)
    unittest.main()
