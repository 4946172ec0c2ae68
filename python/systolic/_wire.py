"""The messages between the caller and a worker: pickles framed by their length, and arrays
placed in the memory both share."""

import pickle
import struct

import numpy as np

_LENGTH = struct.Struct("<Q")


def read_message(stream):
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return pickle.loads(body)


def write_message(stream, message):
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(body)) + body)
    stream.flush()


def view(shared, where):
    offset, shape, dtype = where
    return np.ndarray(shape, dtype=np.dtype(dtype), buffer=shared, offset=offset)
