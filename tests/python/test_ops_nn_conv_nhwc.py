"""conv_nhwc, the channels-last convolution the graph's ConvertLayout pass uses for
depthwise-separable networks, called directly from the graph text, against numpy: depthwise
(with a channel multiplier), dense and grouped, data read as NHWC or as NCHW, strides,
dilations, asymmetric pads, widths the register tile does not divide, channel counts that do
not fill a vector, size-1 planes, two images, no bias, float16 and float64; every schedule knob's
options; bad arguments."""
import sqlite3

import numpy as np
import pytest

import tessera
from nn_testing import assert_close, conv_reference


def nhwc_reference(x, w, b, strides, pads, dilations, groups, nchw_data=False):
    """conv_reference in channels-last terms: x [N, H, W, C] (or NCHW), w [KH, KW, C / groups, M]."""
    x_nchw = x if nchw_data else x.transpose(0, 3, 1, 2)
    y = conv_reference(x_nchw, w.transpose(3, 2, 0, 1), b, list(strides), list(pads), list(dilations), groups)
    return y.transpose(0, 2, 3, 1)


def program(x_shape, w_shape, dtype, strides, pads, dilations, groups, layout, bias):
    shape = lambda s: ", ".join(map(str, s))
    b_param = f", %b: {dtype}[{w_shape[3]}]" if bias else ""
    return f"""def @main(%x: {dtype}[{shape(x_shape)}], %w: {dtype}[{shape(w_shape)}]{b_param}) {{
  conv_nhwc(%x, %w{", %b" if bias else ""}, strides=[{shape(strides)}], pads=[{shape(pads)}], dilations=[{shape(dilations)}], groups={groups}, data_layout="{layout}")
}}"""


def run_conv_nhwc(rng, x_shape, w_shape, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups=1, layout="NHWC",
                  bias=True, dtype="float32"):
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[3]).astype(dtype) if bias else None
    lib = tessera.build(tessera.relay.parse(program(x_shape, w_shape, dtype, strides, pads, dilations, groups, layout, bias)),
                        opt_level=3)
    got = lib.run([x, w] + ([b] if bias else []))[0]
    return got, nhwc_reference(x, w, b, strides, pads, dilations, groups, layout == "NCHW"), lib


CASES = [
    # x [N, H, W, C], w [KH, KW, C / groups, M], strides, pads (top, left, bottom, right), dilations, groups
    # Depthwise: MobileNet's 14x14 and stride-2 layers (tiles of 7 positions), widths no tile of
    # 4..8 divides (13, 11), channels that do not fill a vector (20, 8), a channel multiplier of 2,
    # a dilated 5x5, a plane of one position, two images.
    ((1, 14, 14, 64), (3, 3, 1, 64), (1, 1), (1, 1, 1, 1), (1, 1), 64),
    ((1, 28, 28, 48), (3, 3, 1, 48), (2, 2), (1, 1, 1, 1), (1, 1), 48),
    ((1, 13, 11, 20), (3, 3, 1, 20), (2, 2), (1, 0, 1, 2), (1, 1), 20),
    ((2, 9, 10, 8), (3, 3, 1, 16), (1, 2), (2, 2, 2, 2), (2, 2), 8),
    ((1, 12, 17, 24), (5, 5, 1, 24), (1, 1), (4, 4, 4, 4), (2, 2), 24),
    ((1, 1, 1, 40), (3, 3, 1, 40), (1, 1), (1, 1, 1, 1), (1, 1), 40),
    # Dense: a stem (3 colours, stride 2), a 1x1 (which the graph turns into a matmul instead),
    # channels not filling a vector, groups of 3 input channels each.
    ((1, 31, 29, 3), (3, 3, 3, 32), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    ((1, 7, 9, 6), (1, 1, 6, 10), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 7, 9, 6), (3, 2, 6, 5), (1, 1), (1, 0, 0, 1), (1, 1), 1),
    ((1, 8, 8, 6), (3, 3, 3, 8), (1, 1), (1, 1, 1, 1), (1, 1), 2),
]


@pytest.mark.parametrize("case", CASES)
def test_conv_nhwc(rng, case):
    got, want, _ = run_conv_nhwc(rng, *case)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("x_shape,w_shape,strides", [((1, 3, 45, 38), (3, 3, 3, 32), (2, 2)), ((1, 3, 20, 21), (7, 7, 3, 16), (2, 2)),
                                                     ((2, 4, 9, 9), (3, 3, 1, 4), (1, 1))])
def test_conv_nhwc_reads_nchw_data(rng, x_shape, w_shape, strides):
    # A stem reading the image as it comes ([N, C, H, W]): its padded input stage transposes it.
    groups = x_shape[1] if w_shape[2] == 1 else 1
    got, want, _ = run_conv_nhwc(rng, x_shape, w_shape, strides, (1, 1, 1, 1), (1, 1), groups, layout="NCHW")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_conv_nhwc_without_bias(rng):
    got, want, _ = run_conv_nhwc(rng, (1, 10, 10, 32), (3, 3, 1, 32), pads=(1, 1, 1, 1), groups=32, bias=False)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_conv_nhwc_dtypes(rng, dtype):
    for case in (CASES[2], CASES[6]):
        got, want, _ = run_conv_nhwc(rng, *case, dtype=dtype)
        assert got.dtype == dtype
        tol = 3e-2 if dtype == "float16" else 1e-9
        assert_close(got, want, dtype, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[6]])
def test_conv_nhwc_tuned_schedules(rng, case, tmp_path):
    # The template's knobs (tile width, vectors per tile, padding in place or copied per row,
    # threads) and the rule-generated sketches, through a short tuning session whose
    # measurements check each candidate against the default schedule on random inputs (a wrong
    # one is recorded as an error); the database's best then builds and runs right.
    x_shape, w_shape, strides, pads, dilations, groups = case
    mod = tessera.relay.parse(program(x_shape, w_shape, "float32", strides, pads, dilations, groups, "NHWC", True))
    db = tmp_path / "tune.db"
    tessera.autotune.tune(mod, db=db, trials=24, batch=8, repeat=2, seed=1, opt_level=3, progress=False, model_check=False)
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT trace, error FROM records").fetchall()
    # A candidate past the worker's timeout says the machine stalled (each compiles in under half
    # a second and runs for a few tens of milliseconds here), not that its schedule is wrong.
    assert [error for _, error in rows if error and not error.startswith("timeout after")] == []
    assert len({trace for trace, error in rows if not error}) >= 16
    x = rng.standard_normal(x_shape).astype("float32")
    w = rng.standard_normal(w_shape).astype("float32")
    b = rng.standard_normal(w_shape[3]).astype("float32")
    got = tessera.build(mod, opt_level=3, db=str(db)).run([x, w, b])[0]
    want = nhwc_reference(x, w, b, strides, pads, dilations, groups)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("x_shape,w_shape,attrs,message", [
    ((1, 8, 8, 6), (3, 3, 4, 8), "", "expects 4 input channels"),
    ((1, 8, 8, 6), (3, 3, 6, 8), ', data_layout="NCWH"', "data_layout must be NHWC or NCHW, got NCWH"),
    ((1, 8, 8), (3, 3, 6, 8), "", "data must be 4-D"),
    ((1, 2, 2, 6), (5, 5, 6, 8), "", "larger than the padded input"),
    ((1, 8, 8, 6), (3, 3, 2, 8), ", groups=3, strides=[0, 1]", "strides and dilations must be positive"),
])
def test_conv_nhwc_bad_arguments(x_shape, w_shape, attrs, message):
    shape = lambda s: ", ".join(map(str, s))
    text = f"""def @main(%x: float32[{shape(x_shape)}], %w: float32[{shape(w_shape)}]) {{
  conv_nhwc(%x, %w{attrs})
}}"""
    with pytest.raises(tessera.Error, match=message):
        tessera.build(tessera.relay.parse(text))
