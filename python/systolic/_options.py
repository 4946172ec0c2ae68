"""matmul's job options: systolic-tb's own, from its one table (tb/cli_options.cpp), as the native
module reads it (``_systolic.options``). Python checks each keyword against it (its name, a flag or a
value, the value's choices) and turns it into systolic-tb's arguments; the values themselves are then
parsed by the same code as the command line's.
"""

from __future__ import annotations

import inspect
import os
import types
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

import numpy as np

from . import _systolic

UsageError = _systolic.UsageError


class Option(NamedTuple):
    """One of systolic-tb's options, as ``systolic.job_options`` lists it."""

    name: str  # the keyword: k_tile
    flag: str  # systolic-tb's option: --k-tile
    type: Optional[str]  # its value as --help names it (INT, N|RxC, SIZE|inf, ...); None: a flag
    choices: Optional[Tuple[str, ...]]  # the values it takes, when it names them
    default: Optional[str]  # as --help gives it
    existing_file: bool  # a file the job reads (a .npy): an array may be given instead
    help: str

    @property
    def is_flag(self) -> bool:
        return self.type is None


# What matmul sets itself: from the operands, or as its own parameters.
_SET_BY_MATMUL = {
    "--m": "from A's shape", "--k": "from A's shape", "--p": "from B's shape",
    "--a": "A is matmul's first argument", "--b": "B is matmul's second argument",
    "--array": "matmul's array= parameter", "--dtype": "matmul's dtype= parameter",
    "--engine": "matmul's engine= parameter",
}

_ALL: Dict[str, Option] = {}
for _o in _systolic.options:
    _name = _o["flag"][2:].replace("-", "_")
    _ALL[_name] = Option(_name, _o["flag"], _o["type"], _o["choices"], _o["default"],
                         _o["existing_file"], _o["help"])

#: systolic-tb's options that ``matmul`` takes as keywords (docs/options.md), by keyword, in the
#: order of systolic-tb's --help: everything but what matmul sets itself (--m, --k, --p from the
#: operands, --a, --b, and its own array=, dtype= and engine=).
job_options: Mapping[str, Option] = types.MappingProxyType(
    {n: o for n, o in _ALL.items() if o.flag not in _SET_BY_MATMUL})


def choices_of(flag: str) -> Tuple[str, ...]:
    """The values systolic-tb's option `flag` takes (--dtype, --engine, ...)."""
    for o in _ALL.values():
        if o.flag == flag and o.choices:
            return o.choices
    raise KeyError(flag)


def _refuse(option: Option, value: Any, wants: str) -> UsageError:
    return UsageError(f"{option.flag} ({option.name}=) {wants}, got {value!r}")


def check(name: str, value: Any) -> None:
    """Refuses (UsageError) a keyword systolic-tb has no option for, or a value of the wrong kind."""
    option = job_options.get(name)
    if option is None:
        flag = "--" + name.replace("_", "-")
        if flag in _SET_BY_MATMUL:
            raise UsageError(f"{flag} ({name}=) is not a job option: it is set {_SET_BY_MATMUL[flag]}")
        raise UsageError(_systolic.unknown_option(flag))
    if value is None:
        return
    if option.is_flag:
        if not isinstance(value, (bool, np.bool_)):
            raise _refuse(option, value, "is a flag: give True or False")
        return
    if value is False:
        return  # left out, as None
    if isinstance(value, (bool, np.bool_)):
        raise UsageError(f"{option.flag} ({option.name}=) takes a value ({option.type}), not True")
    if isinstance(value, np.ndarray):
        if not option.existing_file:
            raise _refuse(option, value, "does not read a file, so it takes no array")
        return
    if isinstance(value, (tuple, list)):
        if "RxC" not in (option.type or ""):
            raise _refuse(option, value, f"takes one value ({option.type}), not a sequence")
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            raise _refuse(option, value, f"takes {option.type}: a sequence of integers")
        return
    if not isinstance(value, (str, os.PathLike, int, float, np.integer, np.floating)):
        raise _refuse(option, value, f"takes {option.type}")
    if option.choices and str(value) not in option.choices:
        raise _refuse(option, value, "must be one of " + ", ".join(option.choices))


def text(value: Any) -> str:
    """A value as systolic-tb reads it: a shape (R, C) as RxC."""
    if isinstance(value, (tuple, list)):
        return "x".join(str(v) for v in value)
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def arguments(options: Mapping[str, Any], directory: Optional[str]) -> List[str]:
    """systolic-tb's arguments for checked `options`; an array given for an option that reads a
    file (scale_file=...) is written to a .npy file in `directory`."""
    args: List[str] = []
    for name, value in options.items():
        check(name, value)
        if isinstance(value, np.bool_):
            value = bool(value)
        if value is None or value is False:
            continue
        flag = job_options[name].flag
        if value is True:
            args.append(flag)
        elif isinstance(value, np.ndarray):
            assert directory is not None
            path = os.path.join(directory, name + ".npy")
            np.save(path, value)
            args += [flag, path]
        else:
            args += [flag, text(value)]
    return args


def signature_with_options(function: Any) -> inspect.Signature:
    """`function`'s signature with each job option as a keyword-only parameter (default None), so
    that help() and inspect list them, in place of **job_options."""
    sig = inspect.signature(function)
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    for o in job_options.values():
        annotation = "bool" if o.is_flag else (
            "Literal[" + ", ".join(repr(c) for c in o.choices) + "]" if o.choices else
            "str | int | tuple[int, ...]" if "RxC" in (o.type or "") else
            "str | os.PathLike | numpy.ndarray" if o.existing_file else "str | int | float")
        params.append(inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=annotation))
    return sig.replace(parameters=params)
