"""systolic.matmul: one systolic-tb job on numpy operands.

The options are systolic-tb's own (docs/options.md), written as keyword arguments with
``-`` as ``_``; they are parsed and checked by the same code as the command line's. Each
testbench configuration (format, array, fabric) needs a process of its own, because
SystemC elaborates once per process: the first configuration a program uses runs in the
program's own process, on operands copied once into the testbench's problem; every other
runs in a worker process, started on first use and kept until ``close()`` or exit, with
the operands copied once into memory shared with it.

SIGINT, SIGTERM and SIGHUP during a job stop it at its next plan step: its temporaries are
removed, nothing is written, and the signal then goes to the program's own handler (SIGINT:
KeyboardInterrupt; SIGTERM and SIGHUP: the process ends by the signal), as in the C++ tools.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import mmap
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _options, _systolic
from ._wire import read_message, view, write_message

UsageError = _systolic.UsageError
ArrayShape = Union[int, Tuple[int, int]]  # N (an N x N array) or (R, C)

# The formats come from the model's one list, through the native module (number_format.h).
# The numpy dtype each format's operands are given in (bf16 is rounded from float32).
_OPERAND_DTYPES = {f["name"]: np.dtype(f["operand_dtype"]) for f in _systolic.formats}
# The format a numpy dtype means when dtype= is not given: the first in the list that takes it
# (float32 is fp32, not bf16).
_FORMAT_OF = {}
for _name, _dtype in _OPERAND_DTYPES.items():
    _FORMAT_OF.setdefault(_dtype, _name)
_FORMAT_NAMES = ", ".join(list(_OPERAND_DTYPES)[:-1]) + " or " + list(_OPERAND_DTYPES)[-1]
_ALIGN = 64
_ENGINES = _options.choices_of("--engine")


def _is_array_shape(array: Any) -> bool:
    """N, (R, C) or "RxC": the values are range-checked by systolic-tb's parser, with its message."""
    def integer(v: Any) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
    if isinstance(array, (tuple, list)):
        return len(array) == 2 and all(integer(v) for v in array)
    return isinstance(array, str) or integer(array)


class CheckError(RuntimeError):
    """The scoreboard failed the job: ``report`` and ``c`` say what happened."""

    report: Dict[str, Any]
    c: Optional[np.ndarray]

    def __init__(self, message: str, report: Dict[str, Any], c: Optional[np.ndarray]) -> None:
        super().__init__(message)
        self.report = report
        self.c = c


def _operand(x, dtype, which):
    """x as a C-contiguous array of the format's operand dtype, without rounding integers."""
    x = np.asarray(x)
    target = np.dtype(_OPERAND_DTYPES[dtype])
    if x.ndim != 2:
        raise UsageError(f"{which} must be 2-D, got shape {x.shape}")
    if x.dtype == target:
        return np.ascontiguousarray(x)
    if target.kind == "f" and x.dtype.kind in "fiu":
        return np.ascontiguousarray(x, dtype=target)
    if target.kind == "i" and x.dtype.kind in "iu":
        info = np.iinfo(target)
        if x.size and (x.min() < info.min or x.max() > info.max):
            raise UsageError(f"{which} has values outside {dtype}'s range "
                             f"[{info.min}, {info.max}]")
        return np.ascontiguousarray(x, dtype=target)
    raise UsageError(f"{which} is {x.dtype}, which dtype {dtype} does not take")


class _Worker:
    """A process holding one testbench configuration, and the memory it shares with us."""

    def __init__(self, key):
        self.key = key
        self.lock = threading.Lock()
        self.memory_fd = os.memfd_create("systolic-operands")
        self.size = 0
        self.shared = None
        request_read, self.request_fd = os.pipe()
        self.reply_fd, reply_write = os.pipe()
        package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [package_parent] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "systolic._worker", str(request_read),
             str(reply_write), str(self.memory_fd)],
            pass_fds=(request_read, reply_write, self.memory_fd), env=env,
            stdin=subprocess.DEVNULL)
        os.close(request_read)
        os.close(reply_write)
        self.requests = os.fdopen(self.request_fd, "wb")
        self.replies = os.fdopen(self.reply_fd, "rb")

    def _room(self, size):
        if size > self.size:
            size = max(size, 2 * self.size)
            os.ftruncate(self.memory_fd, size)
            if self.shared is not None:
                self.shared.close()
            self.shared = mmap.mmap(self.memory_fd, size)
            self.size = size

    def run(self, args, a, b, c_bytes):
        offsets, end = [], 0
        for nbytes in (a.nbytes, b.nbytes, c_bytes):
            offsets.append(end)
            end += (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
        with self.lock:
            self._room(max(end, _ALIGN))
            where_a = (offsets[0], a.shape, a.dtype.str)
            where_b = (offsets[1], b.shape, b.dtype.str)
            view(self.shared, where_a)[...] = a
            view(self.shared, where_b)[...] = b
            try:
                write_message(self.requests, {"args": args, "size": self.size,
                                              "a": where_a, "b": where_b,
                                              "c": (offsets[2], c_bytes)})
                self._wait_for_reply()
                reply = read_message(self.replies)
            except BrokenPipeError:
                reply = None
            except BaseException:
                # Stopped by a signal, or anything else: the worker's job must not go on (and
                # commit its files) without us; it gets our signal, or SIGTERM, and cleans up.
                self._end(_systolic.stop_signal() or signal.SIGTERM)
                raise
            if reply is None:
                status = self.process.wait()
                raise RuntimeError(f"the model's process for {self.key} ended "
                                   f"(exit status {status})")
            if reply.get("c") is not None:
                reply["c"] = view(self.shared, reply["c"]).copy()
            return reply

    def _wait_for_reply(self):
        """Waits for the worker's reply, polling for a signal that stops the job."""
        while not select.select([self.reply_fd], [], [], 0.1)[0]:
            sig = _systolic.stop_signal()
            if sig:
                raise _systolic.Stopped(f"the job was stopped by signal {sig}; nothing was written")

    def _end(self, sig):
        """Hands `sig` to the worker, which stops its job, removes its temporaries and ends."""
        if self.process.poll() is None:
            try:
                self.process.send_signal(sig)
            except OSError:
                pass
        with _workers_lock:
            if _workers.get(self.key) is self:
                del _workers[self.key]
        self.close()

    def close(self):
        for stream in (self.requests, self.replies):
            try:
                stream.close()
            except OSError:
                pass
        self.process.wait()
        if self.shared is not None:
            self.shared.close()
        os.close(self.memory_fd)


_workers = {}
_workers_lock = threading.Lock()
_local = {"key": None}  # the configuration this process's own testbench has
_local_lock = threading.Lock()


def _run(key, args, a, b, c_bytes):
    """The job's reply, from this process's testbench or from a worker's."""
    with _local_lock:
        if _local["key"] in (None, key):
            _local["key"] = key
            try:
                return _systolic.run(args, a, b)
            except UsageError as e:
                return {"usage_error": str(e)}
            except MemoryError as e:
                return {"memory_error": str(e)}
    with _workers_lock:
        worker = _workers.get(key)
        if worker is not None and worker.process.poll() is not None:
            worker.close()
            worker = None
        if worker is None:
            worker = _workers[key] = _Worker(key)
    return worker.run(args, a, b, c_bytes)


def close() -> None:
    """Ends every worker process (they end with the interpreter anyway)."""
    with _workers_lock:
        while _workers:
            _workers.popitem()[1].close()


atexit.register(close)


def _job(a, b, array, dtype, engine, job_options):
    """The job's reply; arrays given for file options live in a temporary directory until it ends."""
    has_arrays = any(isinstance(v, np.ndarray) for v in job_options.values())
    with (tempfile.TemporaryDirectory(prefix="systolic-") if has_arrays
          else contextlib.nullcontext()) as directory:
        args = ["--array", _options.text(array), "--dtype", dtype, "--engine", engine,
                "--m", str(a.shape[0]), "--k", str(a.shape[1]), "--p", str(b.shape[1])]
        args += _options.arguments(job_options, directory)
        # Bad options, and a job too big for --max-memory, are refused here: before a process
        # starts or the operands are copied into the memory shared with it.
        key = _systolic.bench_key(args)
        _systolic.check(args)
        c_bytes = a.shape[0] * b.shape[1] * 8
        return _run(key, args, a, b, c_bytes)


def matmul(a: npt.ArrayLike, b: npt.ArrayLike, array: ArrayShape = 2, dtype: Optional[str] = None,
           engine: str = "cycle", check: bool = True,
           **job_options: Any) -> Tuple[Optional[np.ndarray], Dict[str, Any]]:
    """C = A·B on the model, checked by its scoreboard.

    a: M x K, b: K x P (numpy arrays or anything np.asarray takes). array: N or (R, C).
    dtype: "int8", "int32", "fp32" or "bf16"; by default the operands' (int8, int32,
    float32). engine: "cycle" or "functional". job_options: systolic-tb's options with
    "-" written "_", e.g. k_tile=64, dataflow="ws", out_dtype="int8", scale=0.5,
    order="snake", packed=True, vcd="job.vcd" (docs/options.md). An option that takes a
    .npy file also takes an array: scale_file=np.array([...]) for per-column scales.
    systolic.job_options lists them all, from systolic-tb's own table: an unknown keyword, a
    flag given a value, a value given True or a value outside an option's choices is a
    UsageError before anything runs.

    Returns (c, report): C as M x P (the accumulators' dtype, or int8 with
    out_dtype="int8") and systolic-tb's JSON report as a dict (docs/report-json.md).
    Raises UsageError (a ValueError) for bad options or operands, with systolic-tb's
    one-line message, and CheckError when the scoreboard fails the job, unless
    check=False. SIGINT during the job stops it and raises KeyboardInterrupt; SIGTERM
    and SIGHUP stop it and end the process by the signal (or run the program's handler
    for it); either way the job's temporaries are removed and no file is written.
    """
    if dtype is None:
        dtype = _FORMAT_OF.get(np.asarray(a).dtype)
        if dtype is None:
            raise UsageError(f"A is {np.asarray(a).dtype}: say which format with dtype= "
                             f"({_FORMAT_NAMES})")
    if dtype not in _OPERAND_DTYPES:
        raise UsageError(f"dtype must be one of {', '.join(_OPERAND_DTYPES)}, got {dtype!r}")
    if engine not in _ENGINES:
        raise UsageError(f"engine must be one of {', '.join(_ENGINES)}, got {engine!r}")
    if not _is_array_shape(array):
        raise UsageError(f"array must be N or (R, C), integers, got {array!r}")
    for name, value in job_options.items():
        _options.check(name, value)  # before the operands are converted
    a = _operand(a, dtype, "A")
    b = _operand(b, dtype, "B")
    if 0 in a.shape or 0 in b.shape:
        raise UsageError(f"A is {a.shape[0]}x{a.shape[1]} and B is {b.shape[0]}x{b.shape[1]}: "
                         "M, K and P must be positive")
    if a.shape[1] != b.shape[0]:
        raise UsageError(f"A is {a.shape[0]}x{a.shape[1]} but B is {b.shape[0]}x{b.shape[1]}: "
                         "A's columns must equal B's rows")
    # No progress bar unless asked for: the worker shares the caller's terminal.
    job_options.setdefault("no_progress", not job_options.get("progress"))
    # From here to the end of the job, SIGINT, SIGTERM and SIGHUP stop it (see the top).
    _systolic.hold_signals()
    try:
        try:
            reply = _job(a, b, array, dtype, engine, job_options)
        except _systolic.Stopped:
            reply = None
    finally:
        sig = _systolic.release_signals()
        if sig:
            # Everything is cleaned up: the program's own handler now, which raises
            # KeyboardInterrupt, ends the process by the signal, or does what it was written to.
            signal.raise_signal(sig)
    if reply is None:
        # The program's handler returned, or Python runs it in the main thread and this is another.
        raise RuntimeError(f"the job was stopped by {signal.Signals(sig).name}; nothing was written")
    if "usage_error" in reply:
        raise UsageError(reply["usage_error"])
    if "memory_error" in reply:
        raise MemoryError(reply["memory_error"])
    if "error" in reply:
        raise RuntimeError(reply["error"])
    report = json.loads(reply["report"])
    c = reply["c"]
    if check and not reply["pass"]:
        errors = report.get("scoreboard", {}).get("errors") or [report.get("error") or "FAIL"]
        raise CheckError(f"the scoreboard failed the job: {errors[0]}", report, c)
    return c, report


# help() and inspect show every job option as a keyword of matmul's, from the same table.
matmul.__signature__ = _options.signature_with_options(matmul)  # type: ignore[attr-defined]
