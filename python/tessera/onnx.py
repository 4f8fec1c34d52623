"""ONNX import: tessera.onnx.load("model.onnx", shapes={"x": (1, 3, 224, 224)}, bind={...}).

`shapes` fixes symbolic input dimensions, and `bind` turns inputs that set shapes or indices
(Reshape's shape, Slice's starts, ...) into constants: both give one static graph, the fastest
code. Without them such a model still loads, as a DynamicModule built at the sizes and values it
is run with; so does a model with control flow or data-dependent shapes."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from . import _tessera as _t
from ._tessera import BindingRequired, DynamicModule, Module

__all__ = ["load", "initializer_values", "BindingRequired", "supported_operators"]


def load(path: os.PathLike | str | bytes | onnx.ModelProto, shapes: Mapping[str, Sequence[int]] | None = None,
         bind: Mapping[str, npt.ArrayLike] | None = None, trainable: Iterable[str] | None = None) -> Module | DynamicModule:
    """Imports the ONNX model at `path` as a graph module (tessera.Module). `path` may also be
    the model itself, as an onnx.ModelProto or its serialized bytes (as ONNX Runtime takes it).

    `shapes` gives input name -> full shape, fixing symbolic dimensions (others come from the
    file). A model whose inputs keep symbolic dimensions (a dynamic batch or sequence length)
    gives a tessera.DynamicModule: tessera.build() of it runs at any size, building the model
    for each new one on its first run. A model with control flow decided at run time (If on the
    data, Loop, Scan), outputs whose size depends on the data (NonZero, Unique, Compress,
    NonMaxSuppression) or inputs that set shapes or counts gives a DynamicModule too, which
    tessera.build() makes a ProgramLibrary. `bind` gives input name -> value for inputs to import
    as constants (shapes, indices).
    `trainable` names initializers (weights) to import as inputs instead of constants, after
    the model's own inputs, so they can be differentiated and trained (fine-tuning); their
    values come from initializer_values(). Raises tessera.Error for a malformed file, unsupported
    operators (all of them named, in every subgraph) or inconsistent shapes."""
    shapes = {k: [int(d) for d in v] for k, v in (shapes or {}).items()}
    bind = {k: np.ascontiguousarray(v) for k, v in (bind or {}).items()}
    return _t.onnx_load(_model_path(path), shapes, bind, list(trainable or []))


_models_in_memory: tempfile.TemporaryDirectory | None = None  # their files, removed at exit


def _model_path(model: os.PathLike | str | bytes | onnx.ModelProto) -> str:
    """The path of `model`: as given, or a file that a model given in memory is written to (a
    DynamicModule reads its file again to build each new size)."""
    if isinstance(model, (str, os.PathLike)):
        return os.fsdecode(model)
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    if not isinstance(model, (bytes, bytearray, memoryview)):
        raise TypeError(f"an ONNX model is a path, an onnx.ModelProto or its serialized bytes, not {type(model).__name__}")
    global _models_in_memory
    if _models_in_memory is None:
        _models_in_memory = tempfile.TemporaryDirectory(prefix="tessera-onnx-")
    fd, path = tempfile.mkstemp(suffix=".onnx", dir=_models_in_memory.name)
    with os.fdopen(fd, "wb") as f:
        f.write(model)
    return path


def initializer_values(path: os.PathLike | str | bytes | onnx.ModelProto, names: Sequence[str]) -> list[np.ndarray]:
    """The values of the named initializers of an ONNX model, as numpy arrays in the order of
    `names`. Needs the `onnx` Python package; raises KeyError naming a missing initializer."""
    import onnx
    from onnx import numpy_helper
    model = path if isinstance(path, onnx.ModelProto) else onnx.load(_model_path(path))
    found = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer if t.name in set(names)}
    missing = [n for n in names if n not in found]
    if missing:
        raise KeyError(f"the model has no initializer {missing[0]!r}")
    return [found[n] for n in names]


def supported_operators() -> list[str]:
    """The ONNX operator types the importer translates, sorted."""
    return _t.onnx_supported_operators()
