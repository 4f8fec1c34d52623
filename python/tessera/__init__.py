"""Tessera: a deep-learning compiler. `tessera.te` is the operator DSL (compute separate from
schedule); `tessera.onnx` imports models, `tessera.relay` builds and differentiates graphs,
`tessera.train` trains them; compiled kernels and graphs run on numpy arrays."""
from . import _tessera as _t
from ._tessera import Error, num_threads, empty, Module, Library

__all__ = ["Error", "num_threads", "empty", "te", "onnx", "relay", "train", "autotune", "build", "load", "Module", "Library"]
__version__ = "0.1.0"


def build(mod, target="llvm", db=None, opt_level=2, jit=True, transfer=True):
    """Compiles a graph module (tessera.onnx.load, tessera.relay) for `target`; the result runs
    with lib.run([inputs]) or lib.run({name: input}) and lib.export("model.so") writes it as one
    shared library. Kernels take the best schedule recorded in the tuning database `db` (a path;
    None: $TESSERA_DB or ~/.cache/tessera/tuning.db, if it exists; False: none) and the default
    schedules otherwise (lib.kernels says which). A kernel without records of its own first
    borrows those of similar workloads (same computation, other shapes), measuring the best few
    against its default schedule and storing the results (transfer=False: never). jit=False only
    plans and lowers, for export (e.g. target="llvm -mtriple=aarch64-linux-gnu", which cannot run
    here)."""
    path = "" if db is False else str(db) if db is not None else _t.default_db_path()
    return _t.build_module(mod, target, opt_level, path, jit, transfer)


def load(path):
    """Loads a module written by lib.export() or `tessera compile -o` with the runtime alone (no
    compiler): the file is validated (format, version, checksums, this CPU's features) before
    any of its code runs. The result runs like a built one."""
    return _t.load_module(str(path))


from . import te, onnx, relay, train, autotune  # noqa: E402  (train uses build)
