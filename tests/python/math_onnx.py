"""Helpers of the math family's operator tests: one-node ONNX models built with onnx.helper,
imported and compiled by Tessera, run on numpy inputs."""
import os
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

import tessera

FLOATS = [np.float16, np.float32, np.float64]
SIGNED = [np.int8, np.int16, np.int32, np.int64]
UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]
INTS = SIGNED + UNSIGNED


def onnx_type(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype)) if hasattr(helper, "np_dtype_to_tensor_dtype") else \
        onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]


def build(op, inputs, attrs=None, opset=13, outputs=1, constants=None):
    """Compiles a model of one `op` node. `inputs` are the graph inputs (numpy arrays, None for
    an omitted optional input); `constants` maps input positions to values passed as initializers."""
    constants = constants or {}
    names, graph_inputs, inits = [], [], []
    for i in range(max([len(inputs)] + [k + 1 for k in constants])):
        if i in constants:
            names.append(f"c{i}")
            inits.append(numpy_helper.from_array(np.asarray(constants[i]), f"c{i}"))
        elif i < len(inputs) and inputs[i] is not None:
            names.append(f"x{i}")
            graph_inputs.append(helper.make_tensor_value_info(f"x{i}", onnx_type(inputs[i].dtype), inputs[i].shape))
        else:
            names.append("")
    outs = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, **(attrs or {}))
    graph = helper.make_graph([node], "g", graph_inputs, [helper.make_tensor_value_info(o, 0, None) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.onnx")
        onnx.save(model, path)
        return tessera.build(tessera.onnx.load(path))


def run(op, inputs, attrs=None, opset=13, outputs=1, constants=None):
    """The outputs of `op` on `inputs` (see build); one array, or a list for several outputs."""
    lib = build(op, inputs, attrs, opset, outputs, constants)
    got = lib.run([x for x in inputs if x is not None])
    return got[0] if outputs == 1 else got


def check(got, want, rtol=None, atol=None):
    """got equals want in shape and dtype, floats within tolerances (NaN where NaN)."""
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        if rtol is None:
            rtol = {2: 2e-3, 4: 1e-5, 8: 1e-12}[want.dtype.itemsize]
        if atol is None:
            atol = {2: 1e-3, 4: 1e-6, 8: 1e-12}[want.dtype.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def sample(rng, shape, dtype, low=-10, high=10):
    """Random values of a dtype: floats in [low, high), integers in [low, high] clipped to the
    type's range."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(low, high, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    lo, hi = max(info.min, low), min(info.max, high)
    return rng.integers(lo, hi + 1, shape, dtype=dtype)
