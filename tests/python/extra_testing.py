"""Helpers of the extra family's operator tests (test_ops_extra_*.py): one-node ONNX models built
with onnx.helper, compiled and run through tessera.onnx.load / tessera.build."""
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import tessera

ONNX_TYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
              "int32": TensorProto.INT32, "int64": TensorProto.INT64}


def model(op, inputs, attrs=None, opset=17, outputs=1, constants=()):
    """A one-node model. `inputs`: numpy arrays, or None for an omitted optional input; those
    whose position is in `constants` become initializers. `outputs`: a count, or a list of names
    with "" for an omitted output."""
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(inputs)]
    out_names = [f"y{i}" for i in range(outputs)] if isinstance(outputs, int) else list(outputs)
    node = helper.make_node(op, names, out_names, **(attrs or {}))
    graph_inputs, inits = [], []
    for i, (n, a) in enumerate(zip(names, inputs)):
        if a is None:
            continue
        if i in constants:
            inits.append(numpy_helper.from_array(np.asarray(a), n))
        else:
            graph_inputs.append(helper.make_tensor_value_info(n, ONNX_TYPES[str(a.dtype)], a.shape))
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in out_names if o]
    graph = helper.make_graph([node], "g", graph_inputs, outs, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def load(m):
    path = os.path.join(tempfile.mkdtemp(prefix="tessera_extra_"), "model.onnx")
    onnx.save(m, path)
    return tessera.onnx.load(path)


def run(op, inputs, attrs=None, opset=17, outputs=1, constants=()):
    """Compiles the one-node model and runs it on the non-constant inputs; returns the outputs."""
    lib = tessera.build(load(model(op, inputs, attrs, opset, outputs, constants)))
    return lib.run([a for i, a in enumerate(inputs) if a is not None and i not in constants])


def assert_close(got, want, dtype, tol=None):
    dtype = np.dtype(dtype)
    assert got.dtype == dtype, f"dtype {got.dtype}, expected {dtype}"
    assert got.shape == np.shape(want), f"shape {got.shape}, expected {np.shape(want)}"
    tight = tol or {np.dtype("float16"): 1e-2, np.dtype("float32"): 1e-4, np.dtype("float64"): 1e-9}[dtype]
    np.testing.assert_allclose(got.astype("float64"), np.asarray(want, "float64"), rtol=tight, atol=tight)
