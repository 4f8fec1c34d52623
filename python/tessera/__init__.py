"""Tessera: a deep-learning compiler. `tessera.te` is the operator DSL (compute separate from
schedule); `tessera.onnx` imports models, `tessera.relay` builds and differentiates graphs,
`tessera.train` trains them; compiled kernels and graphs run on numpy arrays."""
from . import _tessera as _t
from ._tessera import Error, num_threads, empty, Module, Library

__all__ = ["Error", "num_threads", "empty", "te", "onnx", "relay", "train", "build", "Module", "Library"]
__version__ = "0.1.0"


def build(mod, target="llvm", db=None, opt_level=2):
    """Compiles a graph module (tessera.onnx.load, tessera.relay) for `target`; the result runs
    with lib.run([inputs]) or lib.run({name: input}). Kernels take the best schedule recorded in
    the tuning database `db` (a path; None: $TESSERA_DB or ~/.cache/tessera/tuning.db, if it
    exists; False: none) and the default schedules otherwise (lib.kernels says which)."""
    path = "" if db is False else str(db) if db is not None else _t.default_db_path()
    return _t.build_module(mod, target, opt_level, path)


from . import te, onnx, relay, train  # noqa: E402  (train uses build)
