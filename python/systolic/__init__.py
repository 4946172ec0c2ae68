"""The systolic-array model from Python.

``systolic.matmul(a, b, array=..., dtype=..., engine=..., **job_options)`` runs the job
``systolic-tb`` runs, with every option it has and its scoreboard, on numpy operands, and
returns C and the JSON report as a dict (docs/python.md). ``systolic.torch.offload`` runs
a PyTorch module's convolutions, linear layers and attention matmuls on it.
"""

from ._jobs import CheckError, UsageError, close, matmul

__all__ = ["matmul", "close", "CheckError", "UsageError"]
