"""ONNX broadcasting binary, comparison, logical, Where and variadic operators against numpy:
every numeric dtype, broadcasting of every kind (scalar, size-1 dimensions, fewer dimensions,
both sides stretched), sizes the vector width does not divide, integer division and remainder
semantics (signs, zero divisors), NaN propagation."""
import numpy as np
import pytest

import tessera
from math_onnx import FLOATS, INTS, SIGNED, UNSIGNED, build, check, run, sample

BROADCASTS = [((17,), (17,)), ((3, 33), ()), ((2, 3, 4, 5), (5,)), ((2, 3, 4, 5), (3, 1, 1)), ((64, 1), (1, 100)),
              ((1, 7, 1), (5, 1, 9)), ((4, 0), (1,)), ((1,), (2, 1, 19))]


def both(rng, shapes, dtype, lo=-10, hi=10):
    return sample(rng, shapes[0], dtype, lo, hi), sample(rng, shapes[1], dtype, lo, hi)


@pytest.mark.parametrize("op,f", [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply)])
@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("shapes", BROADCASTS)
def test_arithmetic(op, f, dtype, shapes, rng):
    a, b = both(rng, shapes, dtype)
    with np.errstate(over="ignore"):
        check(run(op, [a, b], opset=14), f(a, b))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", BROADCASTS)
def test_div_float(dtype, shapes, rng):
    a, b = both(rng, shapes, dtype, 1, 10)
    check(run("Div", [a, b], opset=14), a / b)


def test_div_is_exact_division():
    # x * (1 / y) would make 41 / 41 = 0.99999994, which floor and rounding expose.
    a = np.arange(1, 200, dtype=np.float32)
    check(run("Div", [a, a]), np.ones_like(a))


@pytest.mark.parametrize("dtype", SIGNED)
def test_div_signed_truncates(dtype):
    a = np.array([7, -7, 7, -7, 0, 5, np.iinfo(dtype).min, 9], dtype)
    b = np.array([2, 2, -2, -2, 3, 0, -1, 0], dtype)
    # Truncation toward zero as in C (ONNX); by 0 Tessera gives 0; MIN / -1 wraps to MIN.
    want = np.array([3, -3, -3, 3, 0, 0, np.iinfo(dtype).min, 0], dtype)
    check(run("Div", [a, b], opset=14), want)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_div_unsigned(dtype, rng):
    a, b = sample(rng, (37,), dtype, 0, 250), sample(rng, (37,), dtype, 1, 20)
    b[3] = 0
    want = a // np.where(b == 0, 1, b)
    want[3] = 0
    check(run("Div", [a, b], opset=14), want)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", SIGNED + FLOATS)
def test_mod_mixed_signs(fmod, dtype):
    a = np.array([-4, 7, 5, 4, -7, 8, 0, -9], dtype)
    b = np.array([2, -3, 8, -2, 3, 5, 3, 4], dtype)
    want = np.fmod(a, b) if fmod else np.mod(a, b)
    check(run("Mod", [a, b], {"fmod": fmod}), want.astype(dtype))


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_mod_unsigned(dtype, rng):
    a, b = sample(rng, (3, 17), dtype, 0, 250), sample(rng, (17,), dtype, 1, 30)
    check(run("Mod", [a, b]), np.mod(a, b))
    check(run("Mod", [a, b], {"fmod": 1}), np.fmod(a, b))


def test_mod_by_zero_and_minus_one():
    a = np.array([5, -5, np.iinfo(np.int32).min, 7], np.int32)
    b = np.array([0, 0, -1, -1], np.int32)
    check(run("Mod", [a, b]), np.zeros(4, np.int32))
    check(run("Mod", [a, b], {"fmod": 1}), np.zeros(4, np.int32))


def test_mod_float_broadcast(rng):
    a = sample(rng, (3, 1, 20), np.float32)
    b = sample(rng, (5, 1), np.float32, 1, 4)
    check(run("Mod", [a, b], {"fmod": 1}), np.fmod(a, b))
    check(run("Mod", [a, b]), np.mod(a, b), atol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_float(dtype, rng):
    a, b = sample(rng, (3, 33), dtype, 0.1, 3), sample(rng, (33,), dtype, -2, 2)
    check(run("Pow", [a, b], opset=15), np.power(a, b))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_pow_int_exact(dtype):
    a = np.array([2, -3, 0, 1, -1, 7, 2, 3, -1, 5], dtype)
    b = np.array([10, 3, 0, 100, 7, 0, 62 if dtype == np.int64 else 30, 20, 6, -2], dtype)
    exact = [int(x) ** int(y) if y >= 0 else (1 if x == 1 else (-1) ** int(y) if x == -1 else 0) for x, y in zip(a, b)]
    # Wrapped like C, in Python's integers (numpy 2 refuses 2**64 as an int64 operand).
    want = np.array([v % 2 ** (8 * np.dtype(dtype).itemsize) for v in exact], np.uint64).astype(dtype)
    check(run("Pow", [a, b], opset=15), want)


@pytest.mark.parametrize("base,exponent", [(np.float32, np.int32), (np.float32, np.int64), (np.float64, np.float32),
                                           (np.float16, np.float32), (np.int32, np.float32), (np.int64, np.int32),
                                           (np.int64, np.float64)])
def test_pow_mixed_types(base, exponent):
    a = np.array([1, 2, 3, 4, 5], base)
    b = np.array([4, 3, 2, 1, 0], exponent)
    check(run("Pow", [a, b], opset=15), np.power(a.astype(np.float64), b.astype(np.float64)).astype(base))


@pytest.mark.parametrize("k", [1, 2, 3, 2.5])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_pow_constant_exponent(k, dtype, rng):
    if dtype == np.int64 and k == 2.5:
        k = 4
    x = sample(rng, (3, 17), dtype, -5, 5)
    e = np.array(k, np.float32 if dtype == np.float32 else np.int64)
    wide = np.full((2, 3, 17), k, e.dtype)  # widens the result by broadcasting
    with np.errstate(invalid="ignore"):  # negative ** 2.5 is NaN
        check(run("Pow", [x], opset=15, constants={1: e}), np.power(x, e).astype(dtype), rtol=1e-6)
        check(run("Pow", [x], opset=15, constants={1: wide}), np.power(x, wide).astype(dtype), rtol=1e-6)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_bitshift(dtype, rng):
    bits = np.dtype(dtype).itemsize * 8
    a = sample(rng, (21,), dtype, 0, 200)
    s = np.arange(21, dtype=dtype) % (bits + 3)
    ok = s < bits
    with np.errstate(over="ignore"):
        left = np.where(ok, np.left_shift(a, np.where(ok, s, 0)), 0).astype(dtype)
        right = np.where(ok, np.right_shift(a, np.where(ok, s, 0)), 0).astype(dtype)
    check(run("BitShift", [a, s], {"direction": "LEFT"}, opset=11), left)
    check(run("BitShift", [a, s], {"direction": "RIGHT"}, opset=11), right)


def test_bitshift_bad_direction():
    with pytest.raises(tessera.Error, match="direction must be LEFT or RIGHT"):
        build("BitShift", [np.ones(3, np.uint8), np.ones(3, np.uint8)], {"direction": "UP"}, opset=11)


@pytest.mark.parametrize("op,f", [("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or),
                                  ("BitwiseXor", np.bitwise_xor)])
@pytest.mark.parametrize("dtype", INTS)
def test_bitwise(op, f, dtype, rng):
    a, b = both(rng, ((4, 19), (19,)), dtype, -100, 100)
    check(run(op, [a, b], opset=18), f(a, b))


@pytest.mark.parametrize("op,f", [("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)])
@pytest.mark.parametrize("shapes", BROADCASTS)
def test_logical(op, f, shapes, rng):
    a, b = rng.random(shapes[0]) < 0.5, rng.random(shapes[1]) < 0.5
    check(run(op, [a, b]), f(a, b))


COMPARISONS = [("Equal", np.equal, 13), ("Less", np.less, 13), ("LessOrEqual", np.less_equal, 16),
               ("Greater", np.greater, 13), ("GreaterOrEqual", np.greater_equal, 16)]


@pytest.mark.parametrize("op,f,opset", COMPARISONS)
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_compare(op, f, opset, dtype, rng):
    a, b = both(rng, ((3, 1, 20), (5, 1)), dtype, -3, 3)
    check(run(op, [a, b], opset=opset), f(a, b))


@pytest.mark.parametrize("op,f,opset", COMPARISONS)
def test_compare_nan(op, f, opset):
    a = np.array([np.nan, 1, np.nan, np.inf], np.float32)
    b = np.array([np.nan, np.nan, 1, np.inf], np.float32)
    check(run(op, [a, b], opset=opset), f(a, b))


def test_equal_bool(rng):
    a, b = rng.random(17) < 0.5, rng.random(17) < 0.5
    check(run("Equal", [a, b]), a == b)


@pytest.mark.parametrize("shapes", [((17,), (17,), (17,)), ((64, 100), (64, 1), (100,)), ((2, 1, 3), (4, 1), ()),
                                    ((1,), (2, 19), (3, 1, 1))])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.bool_])
def test_where(shapes, dtype, rng):
    c = rng.random(shapes[0]) < 0.5
    x, y = sample(rng, shapes[1], dtype), sample(rng, shapes[2], dtype)
    check(run("Where", [c, x, y], opset=16), np.where(c, x, y))


@pytest.mark.parametrize("op,f", [("Max", np.maximum), ("Min", np.minimum), ("Sum", np.add)])
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_variadic(op, f, dtype, rng):
    xs = [sample(rng, s, dtype, -20, 20) for s in [(3, 1, 17), (4, 1), (17,)]]
    # float16 chains may run fused in float32, rounding once: compare with the exact result.
    wide = [x.astype(np.float64) for x in xs] if dtype == np.float16 else xs
    with np.errstate(over="ignore"):
        check(run(op, xs), f(f(wide[0], wide[1]), wide[2]).astype(dtype))
    check(run(op, xs[:1]), xs[0])


@pytest.mark.parametrize("dtype", FLOATS)
def test_mean(dtype, rng):
    xs = [sample(rng, s, dtype) for s in [(3, 1, 17), (4, 1), (17,)]]
    check(run("Mean", xs), ((xs[0].astype(np.float64) + xs[1] + xs[2]) / 3).astype(dtype))
    check(run("Mean", xs[:1]), xs[0])


def test_max_min_propagate_nan():
    a = np.array([np.nan, 1, 2, np.nan], np.float32)
    b = np.array([1, np.nan, 3, np.nan], np.float32)
    check(run("Max", [a, b]), np.maximum(a, b))
    check(run("Min", [a, b]), np.minimum(a, b))


def test_mismatched_dtypes_are_an_error():
    with pytest.raises(tessera.Error, match="Add.*dtypes differ"):
        build("Add", [np.ones(3, np.float32), np.ones(3, np.float64)])


def test_shapes_that_do_not_broadcast():
    with pytest.raises(tessera.Error, match="do not broadcast"):
        build("Mul", [np.ones((2, 3), np.float32), np.ones((4,), np.float32)])
