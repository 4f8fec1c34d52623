"""ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear against numpy: per tensor and
per axis and per block, uint8 and int8, rounding half to even, saturation, omitted zero points.
(The narrow quantized types, float8, int4, int2, are in the current ONNX node suite.)"""
import numpy as np
import pytest

import tessera
from math_onnx import build, check, run, sample


def quantize(x, scale, zp, axis=1):
    if np.ndim(scale) == 1 and np.size(scale) > 1:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zp = np.reshape(scale, shape), np.reshape(zp, shape)
    info = np.iinfo(zp.dtype)
    q = np.round(x.astype(np.float32) / scale.astype(np.float32)) + zp.astype(np.float32)
    return np.clip(q, info.min, info.max).astype(zp.dtype)


def dequantize(x, scale, zp, axis=1):
    if np.ndim(scale) == 1 and np.size(scale) > 1:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zp = np.reshape(scale, shape), np.reshape(zp, shape)
    return ((x.astype(np.int64) - zp.astype(np.int64)).astype(np.float32) * scale).astype(np.float32)


@pytest.mark.parametrize("qtype", [np.uint8, np.int8])
@pytest.mark.parametrize("shape", [(17,), (2, 3, 33), ()])
def test_quantize_per_tensor(qtype, shape, rng):
    x = sample(rng, shape, np.float32, -300, 300)
    scale, zp = np.float32(1.7), np.array(3 if qtype == np.uint8 else -4, qtype)
    check(run("QuantizeLinear", [x], constants={1: scale, 2: zp}), quantize(x, scale, zp))
    check(run("QuantizeLinear", [x, scale, zp]), quantize(x, scale, zp))


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000, -1000, 3.0], np.float32)
    check(run("QuantizeLinear", [x], constants={1: np.float32(1), 2: np.int8(0)}),
          np.array([0, 2, 2, 0, -2, -2, 127, -128, 3], np.int8))
    check(run("QuantizeLinear", [x], constants={1: np.float32(1), 2: np.uint8(128)}),
          np.array([128, 130, 130, 128, 126, 126, 255, 0, 131], np.uint8))


def test_quantize_default_zero_point_is_uint8(rng):
    x = sample(rng, (20,), np.float32, -10, 300)
    check(run("QuantizeLinear", [x], constants={1: np.float32(2)}), quantize(x, np.float32(2), np.uint8(0)))


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_quantize_per_axis(axis, rng):
    x = sample(rng, (3, 4, 5), np.float32, -100, 100)
    n = x.shape[axis]
    scale = rng.uniform(0.5, 2, n).astype(np.float32)
    zp = rng.integers(-10, 10, n).astype(np.int8)
    check(run("QuantizeLinear", [x], {"axis": axis}, constants={1: scale, 2: zp}), quantize(x, scale, zp, axis))


def test_quantize_int32_input(rng):
    x = rng.integers(-1000, 1000, (33,)).astype(np.int32)
    check(run("QuantizeLinear", [x], constants={1: np.float32(3), 2: np.uint8(100)}),
          quantize(x, np.float32(3), np.uint8(100)))


@pytest.mark.parametrize("xtype", [np.uint8, np.int8, np.int32])
def test_dequantize_per_tensor(xtype, rng):
    x = sample(rng, (3, 37), xtype, -128, 255)
    zp = np.array(0 if xtype == np.int32 else 7, xtype)
    check(run("DequantizeLinear", [x], constants={1: np.float32(0.25), 2: zp}), dequantize(x, np.float32(0.25), zp))
    check(run("DequantizeLinear", [x], constants={1: np.float32(0.25)}), dequantize(x, np.float32(0.25), np.zeros((), xtype)))


def test_dequantize_per_axis(rng):
    x = sample(rng, (2, 3, 17), np.uint8, 0, 255)
    scale = np.array([0.5, 1, 2], np.float32)
    zp = np.array([0, 128, 255], np.uint8)
    check(run("DequantizeLinear", [x, scale, zp]), dequantize(x, scale, zp))
    check(run("DequantizeLinear", [x], constants={1: scale}), dequantize(x, scale, np.zeros(3, np.uint8)))


def test_per_axis_parameters_must_match():
    with pytest.raises(tessera.Error, match="QuantizeLinear.*1-D with 4 elements"):
        build("QuantizeLinear", [np.ones((3, 4), np.float32)], constants={1: np.ones(3, np.float32), 2: np.zeros(3, np.uint8)})


def dynamic_quantize(x):
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    scale = np.float32((hi - lo) / 255)
    zp = np.uint8(np.clip(np.round(-lo / scale), 0, 255))
    return quantize(x, scale, zp), scale, zp


@pytest.mark.parametrize("shape,lo,hi", [((6,), -3, 2), ((3, 40), 1, 5), ((2, 3, 17), -8, -1), ((100000,), -1, 1)])
def test_dynamic_quantize(shape, lo, hi, rng):
    x = sample(rng, shape, np.float32, lo, hi)
    y, scale, zp = run("DynamicQuantizeLinear", [x], opset=11, outputs=3)
    want_y, want_scale, want_zp = dynamic_quantize(x)
    check(scale, np.array(want_scale))
    check(zp, np.array(want_zp))
    check(y, want_y)


@pytest.mark.parametrize("axis,block", [(1, 3), (0, 2), (-1, 4), (2, 5)])
def test_blocked_quantize_and_dequantize(axis, block, rng):
    # Opset 21: one scale and zero point per `block` elements along `axis`, the last block short
    # where the extent is not a multiple.
    x = sample(rng, (3, 7, 5), np.float32, -100, 100)
    blocks = list(x.shape)
    blocks[axis] = -(-x.shape[axis] // block)
    scale = rng.uniform(0.5, 2, blocks).astype(np.float32)
    zp = rng.integers(-10, 10, blocks).astype(np.int8)
    full_scale, full_zp = (np.repeat(p, block, axis=axis).take(range(x.shape[axis]), axis=axis) for p in (scale, zp))
    attrs = {"axis": axis, "block_size": block}
    q = run("QuantizeLinear", [x], attrs, opset=21, constants={1: scale, 2: zp})
    info = np.iinfo(np.int8)
    want = np.clip(np.round(x / full_scale) + full_zp, info.min, info.max).astype(np.int8)
    check(q, want)
    check(run("DequantizeLinear", [q], attrs, opset=21, constants={1: scale, 2: zp}),
          ((want.astype(np.int64) - full_zp).astype(np.float32) * full_scale).astype(np.float32))
    with pytest.raises(tessera.Error, match="blocks of"):
        run("QuantizeLinear", [x], {"axis": axis, "block_size": 1}, opset=21, constants={1: scale, 2: zp})
