"""A worker process: runs the jobs of one testbench configuration (see _jobs.py).

SystemC elaborates once per process, so each configuration the caller uses gets a worker
of its own. Requests and replies are pickled, framed by their length, on two pipes; the
operands and C travel through a memory file shared with the caller.
"""

import mmap
import os
import sys

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
        try:
            out = _systolic.run(request["args"], view(shared, request["a"]),
                                view(shared, request["b"]))
        except _systolic.UsageError as e:
            write_message(replies, {"usage_error": str(e)})
            continue
        except MemoryError as e:
            write_message(replies, {"memory_error": str(e)})
            continue
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


def main():
    request_fd, reply_fd, memory_fd = (int(x) for x in sys.argv[1:4])
    with os.fdopen(request_fd, "rb") as requests, os.fdopen(reply_fd, "wb") as replies:
        serve(requests, replies, memory_fd)


if __name__ == "__main__":
    main()
