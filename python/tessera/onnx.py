"""ONNX import: tessera.onnx.load("model.onnx", shapes={"x": (1, 3, 224, 224)}, bind={...}).

Tessera compiles for static shapes: `shapes` fixes symbolic input dimensions, and `bind` turns
inputs that set shapes or indices (Reshape's shape, Slice's starts, ...) into constants. When an
input must be bound, load raises BindingRequired whose `inputs` names them."""
import numpy as np

from . import _tessera as _t
from ._tessera import BindingRequired

__all__ = ["load", "BindingRequired", "supported_operators"]


def load(path, shapes=None, bind=None):
    shapes = {k: [int(d) for d in v] for k, v in (shapes or {}).items()}
    bind = {k: np.ascontiguousarray(v) for k, v in (bind or {}).items()}
    return _t.onnx_load(str(path), shapes, bind)


def supported_operators():
    return _t.onnx_supported_operators()
