"""The systolic-array model from Python.

``systolic.matmul(a, b, array=..., dtype=..., engine=..., **job_options)`` runs the job
``systolic-tb`` runs, with every option it has and its scoreboard, on numpy operands, and
returns C and the JSON report as a dict (docs/python.md). ``systolic.job_options`` lists those
options, from systolic-tb's own table. ``systolic.torch.offload`` runs every GEMM-shaped call of
a PyTorch module on it, gradients kept, and lists what it does not run there
(``systolic.torch.FallbackError`` with ``strict=True``; docs/networks.md). ``systolic.llm.generate``
runs a GPT-2-shaped decoder's prefill and decode with a KV cache on it (docs/llm.md). The commands
``systolic-import``, ``systolic-infer`` and ``systolic-generate`` come with the package.
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
            "(PYTHONPATH=build/python), or install the package (pip install --no-build-isolation . "
            "in a venv; docs/python.md)") from None
    raise

from ._jobs import CheckError, UsageError, close, matmul
from ._options import Option, job_options

__version__: str = _systolic.__version__
__all__ = ["matmul", "close", "job_options", "Option", "CheckError", "UsageError", "__version__"]
