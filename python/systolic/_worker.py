"""A worker process: runs the jobs of one testbench configuration (see _jobs.py).

SystemC elaborates once per process, so each configuration the caller uses gets a worker
of its own. Requests and replies are pickled, framed by their length, on two pipes; the
operands and C travel through a memory file shared with the caller.

Signals: SIGINT, SIGTERM or SIGHUP during a job stop it as in the caller's own process (its
temporaries removed, nothing written), and the worker then ends by the signal, without a
traceback; the caller reports it as a RuntimeError. A worker whose caller is gone (killed) stops
its job and ends the same way, rather than commit the files of a program that no longer waits.
"""

import mmap
import os
import signal
import sys
import threading
import time

from . import _systolic
from ._wire import read_message, view, write_message

def serve(requests, replies, memory_fd):
    shared, size = None, 0
    while True:
        request = read_message(requests)
        if request is None:
            return
        if request["size"] != size:
            if shared is not None:
                shared.close()
            size = request["size"]
            shared = mmap.mmap(memory_fd, size)
        _systolic.hold_signals()
        try:
            out = _systolic.run(request["args"], view(shared, request["a"]),
                                view(shared, request["b"]))
        except _systolic.Stopped:
            out = None
        except _systolic.UsageError as e:
            write_message(replies, {"usage_error": str(e)})
            continue
        except MemoryError as e:
            write_message(replies, {"memory_error": str(e)})
            continue
        finally:
            sig = _systolic.release_signals()
            if sig:
                end_by(sig)
        c = out.pop("c")
        out["c"] = None  # a job that did not complete (a bus error) has no C
        if c is not None:
            offset, capacity = request["c"]
            if c.nbytes > capacity:
                write_message(replies, {"error": "C does not fit its shared buffer"})
                continue
            where = (offset, c.shape, c.dtype.str)
            view(shared, where)[...] = c
            out["c"] = where
        write_message(replies, out)


def end_by(sig):
    """Ends the process by `sig`, as the C++ tools do (the shell reports 128 + its number)."""
    sys.stdout.flush()
    signal.signal(sig, signal.SIG_DFL)
    signal.raise_signal(sig)
    os._exit(128 + sig)


def watch_caller(caller):
    """SIGTERM to this process once its caller is gone (its parent changes)."""
    while os.getppid() == caller:
        time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGTERM)


def main():
    # Ctrl-C reaches the worker too (the terminal's process group): it ends by it, no traceback.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    threading.Thread(target=watch_caller, args=(os.getppid(),), daemon=True).start()
    request_fd, reply_fd, memory_fd = (int(x) for x in sys.argv[1:4])
    with os.fdopen(request_fd, "rb") as requests, os.fdopen(reply_fd, "wb") as replies:
        serve(requests, replies, memory_fd)


if __name__ == "__main__":
    main()
