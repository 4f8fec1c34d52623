"""Helpers of the nn family's operator tests (test_ops_nn_*.py): one-node ONNX models built with
onnx.helper, compiled and run through tessera.onnx.load / tessera.build, and numpy references
of the sliding-window operators."""
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import tessera

ONNX_TYPES = {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "int16": TensorProto.INT16, "int32": TensorProto.INT32,
    "int64": TensorProto.INT64, "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64, "bool": TensorProto.BOOL,
}


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
    with tempfile.TemporaryDirectory(prefix="tessera_nn_") as folder:
        path = os.path.join(folder, "model.onnx")
        onnx.save(m, path)
        return tessera.onnx.load(path)


def run(op, inputs, attrs=None, opset=17, outputs=1, constants=()):
    """Compiles the one-node model and runs it on the non-constant inputs; returns the outputs."""
    lib = tessera.build(load(model(op, inputs, attrs, opset, outputs, constants)))
    return lib.run([a for i, a in enumerate(inputs) if a is not None and i not in constants])


def assert_close(got, want, dtype, rtol=None, atol=None):
    dtype = np.dtype(dtype)
    assert got.dtype == dtype, f"dtype {got.dtype}, expected {dtype}"
    assert got.shape == np.shape(want), f"shape {got.shape}, expected {np.shape(want)}"
    if dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    tight = {np.dtype("float16"): 1e-2, np.dtype("float32"): 1e-4, np.dtype("float64"): 1e-9}[dtype]
    np.testing.assert_allclose(got.astype("float64"), np.asarray(want, "float64"), rtol=rtol or tight, atol=atol or tight)


def windows(x, kernel, strides, dilations, pads, fill=0.0):
    """Sliding windows of x [N, C, spatial...]: an array [N, C, out..., kernel...] of the padded
    input read at out * stride + k * dilation."""
    rank = len(kernel)
    padded = np.pad(x.astype("float64"), [(0, 0), (0, 0)] + [(pads[d], pads[d + rank]) for d in range(rank)],
                    constant_values=fill)
    out = [(padded.shape[2 + d] - (kernel[d] - 1) * dilations[d] - 1) // strides[d] + 1 for d in range(rank)]
    result = np.empty(x.shape[:2] + tuple(out) + tuple(kernel))
    for k in np.ndindex(*kernel):
        sl = tuple(slice(k[d] * dilations[d], k[d] * dilations[d] + (out[d] - 1) * strides[d] + 1, strides[d]) for d in range(rank))
        result[(Ellipsis,) + k] = padded[(slice(None), slice(None)) + sl]
    return result


def conv_reference(x, w, b=None, strides=None, pads=None, dilations=None, groups=1):
    rank = x.ndim - 2
    strides, dilations = strides or [1] * rank, dilations or [1] * rank
    pads = pads or [0] * 2 * rank
    win = windows(x, w.shape[2:], strides, dilations, pads)  # N, C, out..., k...
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    out = np.zeros((n, m) + win.shape[2:2 + rank])
    for g in range(groups):
        xs = win[:, g * cg:(g + 1) * cg]
        ws = w[g * (m // groups):(g + 1) * (m // groups)].astype("float64")
        out[:, g * (m // groups):(g + 1) * (m // groups)] = np.tensordot(
            xs, ws, axes=([1] + [2 + rank + d for d in range(rank)], [1] + [2 + d for d in range(rank)])).transpose(
            (0, 1 + rank) + tuple(range(1, 1 + rank)))
    if b is not None:
        out += b.astype("float64").reshape((1, m) + (1,) * rank)
    return out
