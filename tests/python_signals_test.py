"""Signals during systolic.matmul: stop promptly, remove every temporary, commit nothing.

Usage: python_signals_test.py (with the built package on PYTHONPATH).
Each case runs a child Python that starts a long job (about 15 s uninterrupted) with
vcd=, c_out= and an array for scale_file= (so the package writes a temporary directory too), in
a scratch directory with TMPDIR inside it, and signals it once the job's temporaries are being
written. The child must end within LIVENESS seconds of the signal (a bound with a wide margin:
the job stops at its next plan step, and the check then waits for the environment's reference
product, a few seconds here), by the signal's rule: SIGINT
raises KeyboardInterrupt, SIGTERM and SIGHUP end the process by that signal after the cleanup
(or run a handler the program installed). Afterwards the scratch directory holds nothing but the
empty TMPDIR: no .systolic-*.tmp, no systolic-* directory, no job.vcd or c.npy.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

import systolic

LIVENESS = 20  # seconds from the signal to the child's end

# The child: argv = scratch directory, where ("here": this process's testbench; "worker": a worker
# process's, after a first job takes this process's), handler (a Python handler for SIGHUP that
# exits 7, or "none"). It prints "KeyboardInterrupt" and exits 130 on one, and prints the
# RuntimeError and exits 3 on a dead worker.
CHILD = r"""
import os, signal, sys
import numpy as np
import systolic

scratch, where, handler = sys.argv[1:4]
if handler == "exit7":
    signal.signal(signal.SIGHUP, lambda sig, frame: sys.exit(7))
if where == "worker":
    small = np.ones((4, 4), np.int8)
    systolic.matmul(small, small, array=2)  # this process's own testbench is 2x2 from now on
m, k, p = 1024, 65536, 1024
a, b = np.ones((m, k), np.int8), np.ones((k, p), np.int8)
try:
    systolic.matmul(a, b, array=256, k_tile=8192, out_dtype="int8",
                    scale_file=np.full(p, 1e-6), vcd=os.path.join(scratch, "job.vcd"),
                    vcd_pes="0,0", c_out=os.path.join(scratch, "c.npy"))
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(130)
except RuntimeError as e:
    print("RuntimeError:", e, flush=True)
    sys.exit(3)
print("the job completed", flush=True)
"""


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
        return [int(x) for x in f.read().split()]


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


class SignalTest(unittest.TestCase):
    def run_case(self, sig, where="here", target="child", handler="none"):
        """Starts the child, signals `target` ("child" or "worker") once the job writes its
        temporaries; returns (status, stdout) after checking what is left behind."""
        with tempfile.TemporaryDirectory(prefix="signals-") as scratch:
            tmp = os.path.join(scratch, "tmp")
            os.mkdir(tmp)
            env = dict(os.environ, TMPDIR=tmp)
            child = subprocess.Popen([sys.executable, "-c", CHILD, scratch, where, handler],
                                     cwd=scratch, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
            try:
                # The job runs once its VCD temporary has bytes (the header, then the edges).
                while True:
                    temps = [n for n in os.listdir(scratch) if n.startswith(".systolic-")]
                    if any(os.path.getsize(os.path.join(scratch, n)) > 0 for n in temps):
                        break
                    if child.poll() is not None:
                        self.fail(f"the child ended before the signal: {child.communicate()}")
                    time.sleep(0.05)
                worker = None
                if where == "worker":
                    (worker,) = children(child.pid)
                os.kill(worker if target == "worker" else child.pid, sig)
                try:
                    out, err = child.communicate(timeout=LIVENESS)
                except subprocess.TimeoutExpired:
                    child.kill()
                    out, err = child.communicate()
                    self.fail(f"the child did not end within {LIVENESS} s of "
                              f"{signal.Signals(sig).name}: {out} {err}")
                if worker is not None:
                    self.assertTrue(gone(worker), "the worker outlived its program")
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
            self.assertNotIn("Traceback", err)
            self.assertEqual(sorted(os.listdir(scratch)), ["tmp"],
                             "left behind or committed in the scratch directory")
            self.assertEqual(os.listdir(tmp), [], "left behind in TMPDIR")
            return child.returncode, out

    def test_sigint_raises_keyboard_interrupt(self):
        status, out = self.run_case(signal.SIGINT)
        self.assertEqual(status, 130)
        self.assertIn("KeyboardInterrupt", out)

    def test_sigterm_ends_the_program_by_it(self):
        status, _ = self.run_case(signal.SIGTERM)
        self.assertEqual(status, -signal.SIGTERM)

    def test_sighup_ends_the_program_by_it(self):
        status, _ = self.run_case(signal.SIGHUP)
        self.assertEqual(status, -signal.SIGHUP)

    def test_a_programs_own_handler_runs_after_the_cleanup(self):
        status, _ = self.run_case(signal.SIGHUP, handler="exit7")
        self.assertEqual(status, 7)

    def test_sigterm_to_a_worker_is_a_runtime_error(self):
        status, out = self.run_case(signal.SIGTERM, where="worker", target="worker")
        self.assertEqual(status, 3)
        self.assertIn("the model's process for int8 256x256", out)
        self.assertIn("exit status -15", out)

    def test_sigterm_to_the_program_stops_its_worker(self):
        status, _ = self.run_case(signal.SIGTERM, where="worker")
        self.assertEqual(status, -signal.SIGTERM)

    def test_sigint_to_the_program_stops_its_worker(self):
        status, out = self.run_case(signal.SIGINT, where="worker")
        self.assertEqual(status, 130)
        self.assertIn("KeyboardInterrupt", out)

    def test_the_handlers_are_the_programs_again_after_a_job(self):
        before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
        small = np.ones((3, 3), np.int32)
        systolic.matmul(small, small, array=2)
        after = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
        self.assertEqual(before, after)
        # Python's own handler, not one the job left installed, takes the next Ctrl-C.
        with self.assertRaises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)


if __name__ == "__main__":
    unittest.main()
