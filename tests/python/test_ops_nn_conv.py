"""Conv, ConvTranspose, ConvInteger and QLinearConv through the ONNX importer, against numpy:
1-D to 3-D, groups (depthwise and with channel multipliers), strides, dilations, asymmetric
pads and every auto_pad, widths the register tile does not divide, output channels that do
and do not fill a vector, every float dtype."""
import numpy as np
import pytest

import host_cpu
import nn_testing
import tessera
from nn_testing import assert_close, conv_reference, run


def conv_transpose_reference(x, w, b, strides, pads, dilations, groups, output_padding):
    rank = x.ndim - 2
    n, c = x.shape[:2]
    _, mg = w.shape[:2]
    kernel = w.shape[2:]
    full = [strides[d] * (x.shape[2 + d] - 1) + output_padding[d] + (kernel[d] - 1) * dilations[d] + 1 for d in range(rank)]
    y = np.zeros((n, mg * groups) + tuple(full))
    cg = c // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg].astype("float64")
        for pos in np.ndindex(*x.shape[2:]):
            for k in np.ndindex(*kernel):
                at = tuple(pos[d] * strides[d] + k[d] * dilations[d] for d in range(rank))
                contrib = xs[(slice(None), slice(None)) + pos] @ w[(slice(g * cg, (g + 1) * cg), slice(None)) + k].astype("float64")
                y[(slice(None), slice(g * mg, (g + 1) * mg)) + at] += contrib
    y = y[(slice(None), slice(None)) + tuple(slice(pads[d], full[d] - pads[d + rank]) for d in range(rank))]
    if b is not None:
        y += b.astype("float64").reshape((1, -1) + (1,) * rank)
    return y


CONV_CASES = [
    # N, C, spatial, M, kernel, strides, pads, dilations, groups
    (1, 3, (13, 11), 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (2, 8, (17, 9), 32, (3, 3), (2, 2), (1, 0, 1, 2), (1, 1), 1),
    (1, 16, (15, 15), 48, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),
    (1, 32, (7, 7), 64, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (1, 32, (9, 13), 20, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # 1x1 over 130 positions: 5 column panels, the last partial, shared out in runs of row tiles.
    (2, 16, (10, 13), 64, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # Strided 1x1 (the matrix product's panels gather every stride-th position): odd sizes, a
    # stride along x only, and 1-D.
    (2, 24, (15, 13), 40, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    (1, 8, (9, 50), 24, (1, 1), (1, 3), (0, 0, 0, 0), (1, 1), 1),
    (1, 16, (61,), 32, (1,), (3,), (0, 0), (1,), 1),
    (1, 8, (9, 13), 17, (3, 2), (1, 2), (0, 0, 0, 0), (1, 1), 1),
    (1, 32, (10, 10), 64, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    (1, 12, (10, 11), 12, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 12),
    (2, 6, (14, 13), 12, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),
    (1, 20, (33, 40), 20, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 20),
    (1, 20, (19, 21), 20, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 20),
    # Depthwise with a stride along x over at least 9 columns: the input split by phase (a
    # partial vector; a dilated stride 3 with a channel multiplier and asymmetric pads).
    (1, 8, (9, 37), 8, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8),
    (1, 4, (7, 50), 8, (3, 3), (1, 3), (1, 0, 1, 2), (1, 2), 4),
    # ... and with phases narrower than a vector (one masked load of every stride-th element
    # per phase row): MobileNet's 28->14 and 14->7 layers, and stride 3 with asymmetric pads.
    (1, 6, (28, 28), 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 6),
    (2, 5, (14, 14), 5, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 5),
    (1, 3, (13, 17), 3, (3, 3), (3, 3), (0, 1, 2, 1), (1, 1), 3),
    # Depthwise over planes narrower than a vector: each row (of the padded input too) is one
    # narrow vector; MobileNet's 7x7 layers, and two images with asymmetric pads.
    (1, 16, (7, 7), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 16),
    (2, 5, (6, 11), 5, (3, 3), (1, 1), (0, 2, 1, 1), (1, 1), 5),
    (1, 8, (10, 10), 12, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4),
    (1, 4, (20,), 32, (3,), (2,), (1, 1), (1,), 1),
    (1, 4, (20,), 4, (3,), (1,), (1, 1), (2,), 4),
    (1, 4, (6, 7, 8), 16, (3, 3, 3), (1, 2, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1), 1),
    (1, 3, (6, 7, 8), 2, (2, 3, 1), (1, 1, 1), (0, 1, 0, 0, 1, 0), (1, 1, 1), 1),
    (1, 1, (1, 1), 1, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # At most 4 input channels (the strip form): a partial block of output channels and a
    # partial vector of positions, a dilated stride-3 kernel, a half block, and 1-D; with a
    # stride along x the input is split by phase (stride 4: taps in every phase, a phase
    # shorter than the others, asymmetric pads).
    (2, 3, (23, 37), 20, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    (1, 4, (9, 60), 8, (7, 5), (1, 3), (3, 2, 3, 2), (1, 2), 1),
    (1, 2, (50,), 16, (3,), (2,), (1, 1), (1,), 1),
    (1, 3, (11, 70), 16, (3, 6), (2, 4), (1, 1, 2, 3), (1, 1), 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv(rng, case, bias):
    n, c, spatial, m, kernel, strides, pads, dilations, groups = case
    x = rng.standard_normal((n, c) + spatial).astype("float32")
    w = rng.standard_normal((m, c // groups) + kernel).astype("float32")
    b = rng.standard_normal(m).astype("float32") if bias else None
    attrs = {"strides": list(strides), "pads": list(pads), "dilations": list(dilations), "group": groups,
             "kernel_shape": list(kernel)}
    (y,) = run("Conv", [x, w] + ([b] if bias else []), attrs)
    assert_close(y, conv_reference(x, w, b, list(strides), list(pads), list(dilations), groups), "float32", rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("spatial, m, packed", [((14, 14), 96, [3, 64, 1, 1, 32]), ((15, 13), 40, [5, 64, 1, 1, 8])])
def test_strided_pointwise_conv_with_a_constant_weight(rng, spatial, m, packed):
    """At -O 3 a weight known at build time is packed ahead: 7x7 outputs take positions as the
    matrix product's rows (weight panels of 32 channels, as ResNet's downsampling layers), 8x7
    take them as its columns (tiles of 8 channels)."""
    x = rng.standard_normal((1, 64) + spatial).astype("float32")
    w = rng.standard_normal((m, 64, 1, 1)).astype("float32")
    b = rng.standard_normal(m).astype("float32")
    mod = nn_testing.load(nn_testing.model("Conv", [x, w, b], {"strides": [2, 2]}, constants=(1, 2)))
    lib = tessera.build(mod, opt_level=3)
    layout = tessera.build(mod, target=host_cpu.AVX512, opt_level=3, jit=False).kernels[0]  # for 16 lanes
    assert f"float32{packed}" in layout["signature"], layout["signature"]
    assert_close(lib.run([x])[0], conv_reference(x, w, b, [2, 2], [0, 0, 0, 0], [1, 1], 1), "float32", rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("case", [CONV_CASES[1], CONV_CASES[7], CONV_CASES[4]])
def test_conv_dtypes(rng, dtype, case):
    n, c, spatial, m, kernel, strides, pads, dilations, groups = case
    x = rng.standard_normal((n, c) + spatial).astype(dtype)
    w = rng.standard_normal((m, c // groups) + kernel).astype(dtype)
    attrs = {"strides": list(strides), "pads": list(pads), "dilations": list(dilations), "group": groups}
    (y,) = run("Conv", [x, w], attrs)
    tol = 3e-2 if dtype == "float16" else 1e-9
    assert_close(y, conv_reference(x, w, None, list(strides), list(pads), list(dilations), groups), dtype, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_conv_auto_pad(rng, auto_pad, stride):
    x = rng.standard_normal((1, 3, 10, 7)).astype("float32")
    w = rng.standard_normal((4, 3, 4, 3)).astype("float32")
    (y,) = run("Conv", [x, w], {"auto_pad": auto_pad, "strides": [stride, stride]})
    if auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = [0, 0, 0, 0]
        for d, (size, k) in enumerate(zip((10, 7), (4, 3))):
            total = max(0, (-(-size // stride) - 1) * stride + k - size)
            small, big = total // 2, total - total // 2
            pads[d], pads[d + 2] = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
    assert_close(y, conv_reference(x, w, None, [stride, stride], pads), "float32", rtol=1e-4, atol=1e-4)
    if auto_pad != "VALID":
        assert y.shape[2:] == (-(-10 // stride), -(-7 // stride))


@pytest.mark.parametrize("attrs,message", [
    ({"group": 2}, "divisible by groups|input channels"),
    ({"kernel_shape": [5, 5]}, "kernel_shape"),
    ({"strides": [1]}, "strides has 1 entries"),
    ({"auto_pad": "SAME"}, "auto_pad must be"),
    ({"pads": [1, 1]}, "pads has 2 entries"),
])
def test_conv_errors(rng, attrs, message):
    x = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    with pytest.raises(tessera.Error, match=message):
        run("Conv", [x, w], attrs)


TRANSPOSE_CASES = [
    # C, spatial, M/groups, kernel, strides, pads, dilations, groups, output_padding
    (3, (5, 4), 2, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, (0, 0)),
    (4, (5, 6), 3, (3, 2), (3, 2), (1, 0, 2, 1), (1, 1), 1, (1, 0)),
    (4, (5, 6), 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 2, (1, 1)),
    (2, (7,), 3, (4,), (2,), (1, 2), (2,), 1, (1,)),
    (2, (3, 4, 3), 2, (2, 3, 2), (2, 1, 2), (0, 1, 0, 0, 1, 1), (1, 2, 1), 2, (0, 0, 1)),
    (8, (6, 6), 1, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8, (0, 0)),
]


@pytest.mark.parametrize("case", TRANSPOSE_CASES)
def test_conv_transpose(rng, case):
    c, spatial, mg, kernel, strides, pads, dilations, groups, out_pad = case
    x = rng.standard_normal((2, c) + spatial).astype("float32")
    w = rng.standard_normal((c, mg) + kernel).astype("float32")
    b = rng.standard_normal(mg * groups).astype("float32")
    attrs = {"strides": list(strides), "pads": list(pads), "dilations": list(dilations), "group": groups,
             "output_padding": list(out_pad)}
    (y,) = run("ConvTranspose", [x, w, b], attrs)
    want = conv_transpose_reference(x, w, b, strides, pads, dilations, groups, out_pad)
    assert_close(y, want, "float32", rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attrs,pads,extra", [
    ({"output_shape": [10, 8]}, (0, 0, 0, 0), (1, 1)),          # larger than the input reaches: zeros at the end
    ({"output_shape": [8, 6]}, (1, 1, 0, 0), (0, 0)),           # odd padding goes first (NOTSET, as the spec says)
    ({"auto_pad": "SAME_UPPER"}, (0, 0, 1, 1), (0, 0)),
    ({"auto_pad": "SAME_LOWER"}, (1, 1, 0, 0), (0, 0)),
])
def test_conv_transpose_output_shape(rng, attrs, pads, extra):
    x = rng.standard_normal((1, 1, 3, 3)).astype("float32")
    w = rng.standard_normal((1, 2, 3, 3)).astype("float32")
    strides = [3, 2] if "output_shape" in attrs else [2, 2]
    (y,) = run("ConvTranspose", [x, w], dict(attrs, strides=strides))
    want = conv_transpose_reference(x, w, None, strides, pads, [1, 1], 1, list(extra))
    assert_close(y, want, "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xdt,wdt", [("uint8", "uint8"), ("int8", "int8"), ("uint8", "int8")])
@pytest.mark.parametrize("groups,m", [(1, 5), (1, 32), (4, 4)])
def test_conv_integer(rng, xdt, wdt, groups, m):
    x = rng.integers(0 if xdt == "uint8" else -100, 100, size=(1, 4, 9, 11)).astype(xdt)
    w = rng.integers(0 if wdt == "uint8" else -100, 100, size=(m, 4 // groups, 3, 3)).astype(wdt)
    xz, wz = np.array(7, xdt), np.array(3, wdt)
    (y,) = run("ConvInteger", [x, w, xz, wz], {"pads": [1, 1, 1, 1], "group": groups}, opset=10)
    want = conv_reference(x.astype("int64") - 7, w.astype("int64") - 3, None, [1, 1], [1, 1, 1, 1], None, groups)
    assert_close(y, np.rint(want).astype("int32"), "int32")


def test_qlinear_conv_per_channel(rng):
    x = rng.integers(0, 255, size=(1, 2, 6, 5)).astype("uint8")
    w = rng.integers(-60, 60, size=(3, 2, 3, 3)).astype("int8")
    b = rng.integers(-500, 500, size=(3,)).astype("int32")
    xs, xz = np.array(0.02, "float32"), np.array(128, "uint8")
    ws, wz = np.array([0.01, 0.03, 0.005], "float32"), np.array([0, 0, 0], "int8")
    ys, yz = np.array(0.05, "float32"), np.array(100, "uint8")
    (y,) = run("QLinearConv", [x, xs, xz, w, ws, wz, ys, yz, b], {"pads": [1, 1, 1, 1]}, opset=10)
    acc = conv_reference(x.astype("int64") - 128, w.astype("int64"), None, [1, 1], [1, 1, 1, 1]) + b.reshape(1, 3, 1, 1)
    scaled = acc * (np.float32(0.02) * ws.reshape(1, 3, 1, 1) / np.float32(0.05))
    want = np.clip(np.rint(scaled.astype("float32")) + 100, 0, 255).astype("uint8")
    assert_close(y, want, "uint8")


@pytest.mark.parametrize("xs,ws", [((0, 3, 5, 5), (4, 3, 3, 3)), ((2, 0, 5, 5), (4, 0, 3, 3)), ((1, 32, 5, 5), (0, 32, 3, 3))])
def test_conv_empty(xs, ws):
    x, w = np.zeros(xs, "float32"), np.ones(ws, "float32")
    (y,) = run("Conv", [x, w], {"pads": [1, 1, 1, 1]})
    assert_close(y, conv_reference(x, w, None, [1, 1], [1, 1, 1, 1]), "float32")
