"""ONNX unary math operators, activations, casts and pass-through operators against numpy, on
shapes that the vector width (16 floats) does not divide, size-1 and empty dimensions, every
dtype each operator takes, and special values (NaN, infinities, signed zeros)."""
import math

import numpy as np
import pytest

import tessera
from math_onnx import FLOATS, INTS, SIGNED, UNSIGNED, build, check, onnx_type, run, sample

SHAPES = [(), (0,), (1,), (17,), (3, 1, 33), (2, 70)]
SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, 0.5, np.inf, -np.inf, np.nan, 1e-30, 3.0, -7.75], np.float32)

erf = np.vectorize(math.erf, otypes=[np.float64])

FLOAT_UNARY = {
    "Exp": (np.exp, -5, 5), "Log": (np.log, 0.01, 10), "Sqrt": (np.sqrt, 0, 10), "Reciprocal": (np.reciprocal, 0.5, 4),
    "Floor": (np.floor, -10, 10), "Ceil": (np.ceil, -10, 10), "Round": (np.round, -10, 10), "Erf": (erf, -3, 3),
    "Sin": (np.sin, -6, 6), "Cos": (np.cos, -6, 6), "Tan": (np.tan, -1.5, 1.5), "Asin": (np.arcsin, -1, 1),
    "Acos": (np.arccos, -1, 1), "Atan": (np.arctan, -10, 10), "Sinh": (np.sinh, -5, 5), "Cosh": (np.cosh, -5, 5),
    "Asinh": (np.arcsinh, -10, 10), "Acosh": (np.arccosh, 1, 10), "Atanh": (np.arctanh, -0.99, 0.99),
    "Tanh": (np.tanh, -6, 6), "Sigmoid": (lambda x: 1 / (1 + np.exp(-x)), -10, 10),
}


@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_float_unary(op, dtype, shape, rng):
    f, lo, hi = FLOAT_UNARY[op]
    x = sample(rng, shape, dtype, lo, hi)
    want = f(x.astype(np.float64)).astype(dtype)
    check(run(op, [x]), want, rtol=2e-3 if dtype == np.float16 else 2e-6, atol=1e-3 if dtype == np.float16 else 1e-6)


def test_round_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 2.5001, np.nan, np.inf], np.float32)
    check(run("Round", [x]), np.round(x))


def test_special_values():
    x = SPECIAL
    with np.errstate(all="ignore"):
        for op, f in [("Exp", np.exp), ("Log", np.log), ("Sqrt", np.sqrt), ("Floor", np.floor), ("Tanh", np.tanh),
                      ("Abs", np.abs), ("Neg", np.negative), ("Sign", np.sign), ("Relu", lambda v: np.where(v < 0, 0, v))]:
            check(run(op, [x]), f(x).astype(np.float32), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", FLOATS + SIGNED)
def test_abs_neg_sign(dtype, rng):
    x = sample(rng, (5, 33), dtype)
    check(run("Abs", [x]), np.abs(x))
    check(run("Neg", [x]), np.negative(x))
    check(run("Sign", [x]), np.sign(x))


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_unsigned_abs_sign(dtype, rng):
    x = sample(rng, (40,), dtype, 0, 200)
    check(run("Abs", [x]), x)
    check(run("Sign", [x]), np.sign(x))


@pytest.mark.parametrize("dtype", FLOATS + SIGNED)
def test_relu(dtype, rng):
    x = sample(rng, (3, 1, 33), dtype)
    check(run("Relu", [x], opset=14), np.maximum(x, 0).astype(dtype))


def test_relu_keeps_nan():
    x = np.array([np.nan, -1, 1], np.float32)
    check(run("Relu", [x]), np.array([np.nan, 0, 1], np.float32))


def test_isnan_isinf():
    x = SPECIAL
    check(run("IsNaN", [x]), np.isnan(x))
    check(run("IsInf", [x], opset=10), np.isinf(x))
    check(run("IsInf", [x], {"detect_negative": 0}, opset=10), np.isposinf(x))
    check(run("IsInf", [x], {"detect_positive": 0}, opset=10), np.isneginf(x))
    check(run("IsInf", [x], {"detect_positive": 0, "detect_negative": 0}, opset=10), np.zeros(x.shape, bool))
    check(run("IsNaN", [x.astype(np.float16)]), np.isnan(x))


def test_not(rng):
    x = rng.random((4, 17)) < 0.5
    check(run("Not", [x]), ~x)


def test_bitwise_not(rng):
    for dtype in INTS:
        x = sample(rng, (19,), dtype, -100, 100)
        check(run("BitwiseNot", [x], opset=18), np.invert(x))


def softplus(x):
    return np.logaddexp(0, x)


ACTIVATIONS = [
    ("LeakyRelu", {}, lambda x: np.where(x < 0, 0.01 * x, x)),
    ("LeakyRelu", {"alpha": 0.3}, lambda x: np.where(x < 0, 0.3 * x, x)),
    ("Elu", {}, lambda x: np.where(x < 0, np.expm1(x), x)),
    ("Elu", {"alpha": 0.5}, lambda x: np.where(x < 0, 0.5 * np.expm1(x), x)),
    ("Selu", {}, lambda x: 1.0507009873554805 * np.where(x <= 0, 1.6732632423543772 * np.expm1(x), x)),
    ("Selu", {"alpha": 2.0, "gamma": 3.0}, lambda x: 3.0 * np.where(x <= 0, 2.0 * np.expm1(x), x)),
    ("Celu", {"alpha": 2.0}, lambda x: np.maximum(0, x) + np.minimum(0, 2.0 * np.expm1(x / 2.0))),
    ("HardSigmoid", {}, lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    ("HardSigmoid", {"alpha": 0.5, "beta": 0.25}, lambda x: np.clip(0.5 * x + 0.25, 0, 1)),
    ("HardSwish", {}, lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    ("Softplus", {}, softplus),
    ("Softsign", {}, lambda x: x / (1 + np.abs(x))),
    ("Mish", {}, lambda x: x * np.tanh(softplus(x))),
    ("ThresholdedRelu", {}, lambda x: np.where(x > 1.0, x, 0)),
    ("ThresholdedRelu", {"alpha": -0.5}, lambda x: np.where(x > -0.5, x, 0)),
    ("Shrink", {}, lambda x: np.where(x < -0.5, x, np.where(x > 0.5, x, 0))),
    ("Shrink", {"bias": 1.5, "lambd": 2.0}, lambda x: np.where(x < -2, x + 1.5, np.where(x > 2, x - 1.5, 0))),
]


@pytest.mark.parametrize("op,attrs,f", ACTIVATIONS, ids=[f"{a[0]}-{i}" for i, a in enumerate(ACTIVATIONS)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_activation(op, attrs, f, dtype, rng):
    x = sample(rng, (3, 1, 37), dtype, -8, 8)
    opset = 18 if op == "Mish" else 14 if op == "HardSwish" else 13
    want = f(x.astype(np.float64)).astype(dtype)
    check(run(op, [x], attrs, opset=opset), want, rtol=3e-3 if dtype == np.float16 else 1e-5,
          atol=3e-3 if dtype == np.float16 else 1e-6)


def test_softplus_large_values():
    x = np.array([-200, -30, 0, 30, 100, 1e30], np.float32)
    check(run("Softplus", [x]), softplus(x.astype(np.float64)).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_shrink_integers(dtype, rng):
    x = sample(rng, (30,), dtype, -20, 20)
    xf = x.astype(np.float64)
    want = np.where(xf < -2, xf + 1, np.where(xf > 2, xf - 1, 0)).astype(dtype)
    check(run("Shrink", [x], {"bias": 1.0, "lambd": 2.0}), want)


@pytest.mark.parametrize("shapes", [((2, 3, 4, 5), (5,)), ((2, 3, 4, 5), (3, 1, 1)), ((3, 17), ()), ((3, 17), (3, 17)),
                                    ((1, 40), (1,))])
def test_prelu_broadcast(shapes, rng):
    x = sample(rng, shapes[0], np.float32)
    slope = sample(rng, shapes[1], np.float32)
    check(run("PRelu", [x, slope], opset=16), np.where(x < 0, slope * x, x))


def test_prelu_per_channel_slope(rng):
    # A 1-D slope with one value per channel (axis 1), as old exporters write it.
    x = sample(rng, (2, 3, 4, 5), np.float32)
    slope = sample(rng, (3,), np.float32)
    check(run("PRelu", [x], opset=9, constants={1: slope}), np.where(x < 0, slope[:, None, None] * x, x))


def test_prelu_rejects_bad_slope(rng):
    with pytest.raises(tessera.Error, match="PRelu.*broadcast"):
        build("PRelu", [np.ones((2, 3), np.float32), np.ones((4,), np.float32)], opset=16)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_clip_inputs(dtype, rng):
    x = sample(rng, (3, 37), dtype, -50, 50)
    lo, hi = np.array(-5 if np.dtype(dtype).kind != "u" else 3, dtype), np.array(7, dtype)
    check(run("Clip", [x], constants={1: lo, 2: hi}), np.clip(x, lo, hi))
    check(run("Clip", [x, lo, hi]), np.clip(x, lo, hi))
    check(run("Clip", [x, lo]), np.maximum(x, lo))
    check(run("Clip", [x, None, hi]), np.minimum(x, hi))
    check(run("Clip", [x, lo], constants={2: hi}), np.clip(x, lo, hi))
    check(run("Clip", [x]), x)


def test_clip_attributes_before_opset_11(rng):
    x = sample(rng, (40,), np.float32)
    check(run("Clip", [x], {"min": -1.5, "max": 2.0}, opset=7), np.clip(x, -1.5, 2.0))
    check(run("Clip", [x], {"max": 0.0}, opset=10), np.minimum(x, 0.0))


def test_clip_nan_and_crossed_bounds():
    x = np.array([np.nan, -3, 0, 3], np.float32)
    check(run("Clip", [x], constants={1: np.float32(-1), 2: np.float32(1)}), np.array([np.nan, -1, 0, 1], np.float32))
    # min > max: numpy's (and ONNX's) min(max(x, lo), hi) gives hi everywhere.
    check(run("Clip", [x[1:]], constants={1: np.float32(2), 2: np.float32(1)}), np.ones(3, np.float32))
    check(run("Clip", [x[1:], np.float32(2), np.float32(1)]), np.ones(3, np.float32))


def test_clip_int64_extremes():
    x = np.array([np.iinfo(np.int64).min, -5, 0, np.iinfo(np.int64).max], np.int64)
    lo = np.array(np.iinfo(np.int64).min + 1, np.int64)
    check(run("Clip", [x], constants={1: lo}), np.maximum(x, lo))


CAST_TYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
              np.uint32, np.uint64, np.bool_]


@pytest.mark.parametrize("src", CAST_TYPES)
@pytest.mark.parametrize("dst", CAST_TYPES)
def test_cast(src, dst, rng):
    src_kind, dst_kind = np.dtype(src).kind, np.dtype(dst).kind
    # Values every destination holds (out-of-range conversions are undefined in ONNX).
    if dst_kind == "b" or src_kind == "b":
        x = sample(rng, (3, 17), src, 0, 2)
    elif dst_kind == "u" or src_kind == "u":
        x = sample(rng, (3, 17), src, 0, 100)
    else:
        x = sample(rng, (3, 17), src, -100, 100)
    if src_kind == "f":
        x[0, :4] = np.array([2.7, -2.7, 0.5, 99.9]) if dst_kind not in "ub" else np.array([2.7, 0.5, 99.9, 0])
    want = x.astype(dst)
    check(run("Cast", [x], {"to": int(onnx_type(dst))}), want)
    check(run("CastLike", [x, np.zeros((1,), dst)], opset=15), want)


def test_cast_float_to_int_truncates():
    x = np.array([2.9, -2.9, 0.49, -0.51, 7.0], np.float32)
    check(run("Cast", [x], {"to": 6}), np.array([2, -2, 0, 0, 7], np.int32))


def test_cast_to_bool_nan_is_true():
    x = np.array([0.0, -0.0, np.nan, 0.25], np.float32)
    check(run("Cast", [x], {"to": 9}), np.array([False, False, True, True]))


def test_cast_to_bfloat16_returns_ml_dtypes_arrays():
    # Without ml_dtypes numpy has no bfloat16: the run says what to install.
    x = np.array([1.0, 3.0e38, 1 + 2**-9], np.float32)
    lib = build("Cast", [x], {"to": 16})
    try:
        import ml_dtypes
    except ImportError:
        with pytest.raises(ImportError, match="install the ml_dtypes package"):
            lib.run([x])
        return
    np.testing.assert_array_equal(lib.run([x])[0], x.astype(ml_dtypes.bfloat16))


def test_identity(rng):
    x = sample(rng, (2, 3), np.int32)
    check(run("Identity", [x]), x)


@pytest.mark.parametrize("opset", [7, 10, 12, 13])
def test_dropout_inference(opset, rng):
    x = sample(rng, (3, 17), np.float32)
    y, mask = run("Dropout", [x], {"ratio": 0.3} if opset < 12 else {}, opset=opset, outputs=2)
    check(y, x)
    check(mask, np.ones(x.shape, bool if opset >= 10 else np.float32))


def test_dropout_ratio_and_training_mode_false(rng):
    x = sample(rng, (5,), np.float32)
    check(run("Dropout", [x], opset=13, constants={1: np.float32(0.5), 2: np.array(False)}), x)


def test_dropout_training_mode_with_zero_ratio_drops_nothing(rng):
    x = sample(rng, (4, 5), np.float32)
    y, mask = run("Dropout", [x], opset=13, outputs=2, constants={1: np.float32(0), 2: np.array(True)})
    check(y, x)
    check(mask, np.ones(x.shape, bool))


def test_dropout_rejects_training_mode():
    with pytest.raises(tessera.Error, match="training mode"):
        build("Dropout", [np.ones(3, np.float32)], opset=13, constants={1: np.float32(0.5), 2: np.array(True)})


def test_unsupported_attribute_is_named():
    with pytest.raises(tessera.Error, match="Elu.*unsupported attribute.*beta"):
        build("Elu", [np.ones(3, np.float32)], {"beta": 1.0})


def test_float_op_rejects_integers():
    with pytest.raises(tessera.Error, match="exp.*float"):
        build("Exp", [np.ones(3, np.int32)])
