"""Tessera: a deep-learning compiler. `tessera.te` is the operator DSL (compute separate from
schedule); `tessera.onnx` imports models, `tessera.relay` builds and differentiates graphs,
`tessera.train` trains them; compiled kernels and graphs run on numpy arrays, `tessera.nd` arrays
and any array with __dlpack__ (PyTorch tensors, ...)."""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from . import _tessera as _t
from ._tessera import Error, num_threads, empty, Device, Module, Library, DynamicModule, DynamicLibrary, ProgramLibrary, BuildOptions

__all__ = ["Error", "num_threads", "empty", "device", "Device", "nd", "te", "onnx", "relay", "train", "autotune", "build",
           "load", "Module", "Library", "DynamicModule", "DynamicLibrary", "ProgramLibrary", "BuildOptions"]
__version__ = "0.1.0"

_BUILD_DEFAULTS = BuildOptions()  # the C++ driver's defaults, the one place they are written


def device(kind: str, id: int = 0) -> Device:
    """The device `id` of `kind` ("cpu", "opencl" or "cuda"), present or not: .exists says whether
    it is there; .name, .max_threads_per_block and the other attributes ask it (tessera.Error
    names what is missing, such as the CUDA driver). Arrays go there with
    tessera.nd.array(x, device=tessera.device("opencl"))."""
    return Device(kind, id)


def build(mod: Module | DynamicModule, target: str = "llvm", db: os.PathLike | str | bool | None = None,
          opt_level: int = _BUILD_DEFAULTS.opt_level, jit: bool = _BUILD_DEFAULTS.jit,
          transfer: bool = _BUILD_DEFAULTS.transfer,
          size_hints: Mapping[str, int] | None = None,
          specialize: Sequence[Mapping[str, int]] = ()) -> Library | DynamicLibrary | ProgramLibrary:
    """Compiles a graph module (tessera.onnx.load, tessera.relay) for `target`; the result runs
    with lib.run([inputs]) or lib.run({name: input}) and lib.export("model.so") writes it as one
    shared library. Kernels take the best schedule recorded in the tuning database `db` (a path;
    None: $TESSERA_DB or ~/.cache/tessera/tuning.db, if it exists; False: none) and the default
    schedules otherwise (lib.kernels says which). A kernel without records of its own first
    borrows those of similar workloads (same computation, other shapes), measuring the best few
    against its default schedule and storing the results (transfer=False: never). jit=False only
    plans and lowers, for export (e.g. target="llvm -mtriple=aarch64-linux-gnu", which cannot run
    here). `target` is "llvm" (this CPU) or "llvm -mcpu=NAME -mattr=+F,-G -mtriple=TRIPLE";
    `opt_level` (0-3) selects the graph passes: 3, the default, is the fastest (packed weight
    layouts, Winograd 3x3 convolutions); levels 1 and above fold batch norms into weights and 3
    takes Winograd, which round differently from the model's order of operations (~1e-6 of the
    output's scale); 0 computes the graph as written. Raises tessera.Error for an invalid target or
    option, or a graph that cannot be compiled. The options are those of tessera.BuildOptions.
    A DynamicModule (a model with symbolic input dimensions) gives a DynamicLibrary, which builds
    the model with these options for each new size it is run at; a DynamicModule of a model with
    control flow decided at run time or data-dependent shapes (or recurrent layers over a symbolic
    length) gives a ProgramLibrary, which builds the static parts between those nodes on its first
    run for every size (else, where one needs a value as a constant, at the shapes it meets).
    `size_hints` ({dimension: value}) are the sizes a module of symbolic sizes has its tiles chosen for (a dimension not given counts
    as 16, unless the first run gives it); its code runs at any size. `specialize` lists sizes
    ({dimension: value} for every dimension, e.g. [{"N": 1, "L": 128}]) that a DynamicLibrary
    builds now as static models, the fastest code, and runs at those sizes; other sizes run the
    build for every size (lib.served_by says which build runs a size)."""
    path = "" if db is False else str(db) if db is not None else _t.default_db_path()
    options = BuildOptions(opt_level=opt_level, db=path, jit=jit, transfer=transfer,
                           size_hints={k: int(v) for k, v in (size_hints or {}).items()})
    if not isinstance(mod, DynamicModule):
        if specialize:
            raise Error("specialize= applies to models of symbolic sizes (a DynamicModule); this module's "
                        "sizes are fixed")
        return _t.build_module(mod, target, options)
    sizes = [{k: int(v) for k, v in size.items()} for size in specialize]
    return _t.build_module(mod, target, options, specialize=sizes)


def load(path: os.PathLike | str, device: Device | str | None = None) -> Library | ProgramLibrary:
    """Loads a module written by lib.export() or `tessera compile -o` with the runtime alone (no
    compiler): the file is validated (format, version, checksums, this CPU's features) before
    any of its code runs. A module built for opencl or cuda runs on `device` (tessera.device(...)
    or "opencl:1"), by default the first of its kind; a CPU module on the CPU. The result runs
    like a built one (a ProgramLibrary for a model with control flow or data-dependent shapes);
    tessera.Error says why a file cannot be loaded (a device or driver that is missing, a device
    of the wrong kind, a GPU older than the code's -arch)."""
    return _t.load_module(str(path), device)


from . import nd, te, onnx, relay, train, autotune  # noqa: E402  (train uses build)
