"""The systolic-array model from Python.

``systolic.matmul(a, b, array=..., dtype=..., engine=..., **job_options)`` runs the job
``systolic-tb`` runs, with every option it has and its scoreboard, on numpy operands, and
returns C and the JSON report as a dict (docs/python.md). ``systolic.torch.offload`` runs
a PyTorch module's convolutions, linear layers and attention matmuls on it.
"""

import glob as _glob
import os as _os

try:
    from . import _systolic
except ImportError as _e:
    # Without the native module beside these files, this is the source tree (python/), not the built
    # package; with it, the module itself failed to load, and its own error says why.
    if not _glob.glob(_os.path.join(_os.path.dirname(__file__), "_systolic*.so")):
        raise ImportError(
            f"systolic: {_os.path.dirname(__file__)} is the package's source, without its native module "
            "_systolic: build the project (scripts/setup) and import build/python's systolic "
            "(PYTHONPATH=build/python)") from None
    raise

from ._jobs import CheckError, UsageError, close, matmul

__version__ = _systolic.__version__
__all__ = ["matmul", "close", "CheckError", "UsageError", "__version__"]
