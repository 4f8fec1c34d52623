"""Tessera: a deep-learning compiler. `tessera.te` is the operator DSL (compute separate from
schedule); compiled kernels run on numpy arrays."""
from ._tessera import Error, num_threads, empty
from . import te

__all__ = ["Error", "num_threads", "empty", "te"]
__version__ = "0.1.0"
