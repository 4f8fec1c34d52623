"""ONNX import: tessera.onnx.load("model.onnx", shapes={"x": (1, 3, 224, 224)}, bind={...}).

Tessera compiles for static shapes: `shapes` fixes symbolic input dimensions, and `bind` turns
inputs that set shapes or indices (Reshape's shape, Slice's starts, ...) into constants. When an
input must be bound, load raises BindingRequired whose `inputs` names them."""
import numpy as np

from . import _tessera as _t
from ._tessera import BindingRequired

__all__ = ["load", "initializer_values", "BindingRequired", "supported_operators"]


def load(path, shapes=None, bind=None, trainable=None):
    """`trainable` names initializers (weights) to import as inputs instead of constants, after
    the model's own inputs, so they can be differentiated and trained (fine-tuning); their
    values come from initializer_values()."""
    shapes = {k: [int(d) for d in v] for k, v in (shapes or {}).items()}
    bind = {k: np.ascontiguousarray(v) for k, v in (bind or {}).items()}
    return _t.onnx_load(str(path), shapes, bind, list(trainable or []))


def initializer_values(path, names):
    """The values of the named initializers of an ONNX model, as numpy arrays."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(path))
    found = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer if t.name in set(names)}
    missing = [n for n in names if n not in found]
    if missing:
        raise KeyError(f"the model has no initializer {missing[0]!r}")
    return [found[n] for n in names]


def supported_operators():
    return _t.onnx_supported_operators()
