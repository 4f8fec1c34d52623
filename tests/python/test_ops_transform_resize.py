"""Resize, Upsample and TopK against ONNX's own reference implementation of Resize (shipped with
python3-onnx) and numpy's stable sort: every interpolation mode, coordinate transformation and
nearest rounding, sizes and scales, up- and downsampling, several dtypes, opset variants, and
TopK's tie order (the lower index first) on both of its strategies (k <= 8 and above)."""
import numpy as np
import pytest
from onnx.backend.test.case.node.resize import cubic_coeffs, interpolate_nd, linear_coeffs, nearest_coeffs

import tessera
from test_ops_transform import I64, check, make_data, run_node

EMPTY = np.zeros((0,), np.float32)


def resize(tmp_path, x, attrs, scales=None, sizes=None, roi=None, opset=13):
    consts = {"roi": roi if roi is not None else EMPTY}
    order = ["x", "roi"]
    if scales is not None:
        consts["scales"] = np.array(scales, np.float32)
        order.append("scales")
    else:
        order.append("")
        consts["sizes"] = np.array(sizes, np.int64)
        order.append("sizes")
    (y,) = run_node(tmp_path, "Resize", {"x": x}, attrs, consts=consts, input_order=order, opset=opset)
    return y


def reference(x, mode, scales=None, sizes=None, nearest="round_prefer_floor", a=-0.75, **kw):
    # Newer onnx releases also pass the scale (for antialiasing, not used here).
    coeffs = {"nearest": lambda r, *_: nearest_coeffs(r, mode=nearest), "linear": lambda r, *_: linear_coeffs(r),
              "cubic": lambda r, *_: cubic_coeffs(r, A=a)}[mode]
    # The model's float32 scales, as Python floats: the reference then computes in float64 under
    # numpy 1 and 2 alike (given numpy scalars, numpy 2's promotion rules move its rounding).
    s = None if scales is None else [float(v) for v in np.array(scales, np.float32)]
    return interpolate_nd(x, coeffs, scale_factors=s, output_size=sizes, **kw)


@pytest.mark.parametrize("coord", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("scales", [[1, 1, 2.5, 1.7], [1, 1, 0.6, 0.45]])
def test_resize_nearest(tmp_path, rng, coord, nearest, scales):
    x = make_data(rng, (1, 2, 5, 7), "float32")
    y = resize(tmp_path, x, {"mode": "nearest", "coordinate_transformation_mode": coord, "nearest_mode": nearest}, scales=scales, opset=11)
    want = reference(x, "nearest", scales=scales, nearest=nearest, coordinate_transformation_mode=coord)
    check(y, want.astype(np.float32))


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("coord", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("sizes", [[1, 2, 9, 13], [1, 2, 3, 2], [1, 2, 1, 7]])
def test_resize_linear_cubic_sizes(tmp_path, rng, mode, coord, sizes):
    x = make_data(rng, (1, 2, 5, 7), "float32")
    y = resize(tmp_path, x, {"mode": mode, "coordinate_transformation_mode": coord}, sizes=sizes)
    want = reference(x, mode, sizes=sizes, coordinate_transformation_mode=coord)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a,exclude", [(-0.5, 1), (-0.75, 1), (-0.6, 0)])
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 0.8, 0.7]])
def test_resize_cubic_options(tmp_path, rng, a, exclude, scales):
    x = make_data(rng, (1, 1, 6, 5), "float32")
    y = resize(tmp_path, x, {"mode": "cubic", "cubic_coeff_a": a, "exclude_outside": exclude}, scales=scales)
    want = reference(x, "cubic", scales=scales, a=a, exclude_outside=bool(exclude))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_resize_linear_all_axes(tmp_path, rng):
    x = make_data(rng, (3, 4, 5), "float32")
    scales = [2, 0.5, 1.5]
    y = resize(tmp_path, x, {"mode": "linear"}, scales=scales)
    np.testing.assert_allclose(y, reference(x, "linear", scales=scales), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("extrapolation", [0.0, 10.0])
def test_resize_tf_crop_and_resize(tmp_path, rng, extrapolation):
    x = make_data(rng, (1, 1, 6, 6), "float32")
    roi = np.array([0, 0, 0.4, -0.2, 1, 1, 1.3, 0.8], np.float32)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": extrapolation}
    y = resize(tmp_path, x, attrs, sizes=[1, 1, 5, 4], roi=roi)
    want = reference(x, "linear", sizes=[1, 1, 5, 4], roi=roi, coordinate_transformation_mode="tf_crop_and_resize",
                     extrapolation_value=extrapolation)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "float64", "uint8", "int32"])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_dtypes(tmp_path, rng, dtype, mode):
    x = make_data(rng, (2, 3, 4, 17), dtype)
    scales = [1, 1, 1.5, 0.5]
    y = resize(tmp_path, x, {"mode": mode}, scales=scales)
    want = reference(x.astype(np.float64), mode, scales=scales)
    assert y.dtype == x.dtype
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(y.astype(np.float64), want, rtol=2e-3 if dtype == "float16" else 1e-7, atol=1e-3 if dtype == "float16" else 0)
    else:
        # The reference's astype truncates; the weighted sum runs in float32 here, so a value
        # within rounding of an integer may land on either side.
        assert np.max(np.abs(y.astype(np.float64) - np.trunc(want))) <= (0 if mode == "nearest" else 1)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_opset10_and_upsample(tmp_path, rng, mode):
    x = make_data(rng, (1, 2, 3, 5), "float32")
    scales = [1, 1, 2, 3]
    want = reference(x, mode, scales=scales, nearest="floor", coordinate_transformation_mode="asymmetric").astype(np.float32)
    (y,) = run_node(tmp_path, "Resize", {"x": x}, {"mode": mode}, consts={"s": np.array(scales, np.float32)}, opset=10)
    np.testing.assert_allclose(y, want, rtol=1e-6)
    (u9,) = run_node(tmp_path, "Upsample", {"x": x}, {"mode": mode}, consts={"s": np.array(scales, np.float32)}, opset=9)
    np.testing.assert_allclose(u9, want, rtol=1e-6)
    (u7,) = run_node(tmp_path, "Upsample", {"x": x}, {"mode": mode, "scales": [float(s) for s in scales]}, opset=7)
    np.testing.assert_allclose(u7, want, rtol=1e-6)


def test_resize_errors(tmp_path, rng):
    x = make_data(rng, (1, 1, 2, 2), "float32")
    with pytest.raises(tessera.Error, match="Resize.*mode 'area'"):
        resize(tmp_path, x, {"mode": "area"}, scales=[1, 1, 2, 2])
    with pytest.raises(tessera.Error, match="Resize.*exactly one of scales and sizes"):
        run_node(tmp_path, "Resize", {"x": x}, consts={"r": EMPTY, "s": np.array([1, 1, 2, 2], np.float32), "z": I64(1, 1, 4, 4)})
    with pytest.raises(tessera.Error, match="Resize.*roi"):
        resize(tmp_path, x, {"coordinate_transformation_mode": "tf_crop_and_resize"}, sizes=[1, 1, 3, 3], roi=np.zeros(3, np.float32))
    # antialias came with opset 18.
    with pytest.raises(tessera.Error, match="Resize.*unsupported attribute.*antialias"):
        resize(tmp_path, x, {"antialias": 1}, scales=[1, 1, 2, 2])


# --- TopK ----------------------------------------------------------------------------------

def topk_ref(x, k, axis, largest):
    key = x.astype(np.float64)
    order = np.argsort(-key if largest else key, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)


@pytest.mark.parametrize("k", [0, 1, 3, 8, 9, 40])
@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_topk(tmp_path, rng, k, largest, axis):
    shape = [41, 40, 42]
    x = rng.integers(-6, 6, shape).astype(np.float32)  # many ties
    (v, i) = run_node(tmp_path, "TopK", {"x": x}, {"axis": axis, "largest": largest}, consts={"k": I64(k)}, outputs=2, opset=11)
    wv, wi = topk_ref(x, k, axis, largest)
    check(v, wv)
    check(i, wi)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32", "uint8", "int64", "int8"])
def test_topk_dtypes_and_opset9(tmp_path, rng, dtype):
    x = make_data(rng, (5, 37), dtype)
    (v, i) = run_node(tmp_path, "TopK", {"x": x}, {"axis": 1, "k": 4}, outputs=2, opset=9)
    wv, wi = topk_ref(x, 4, 1, True)
    check(v, wv)
    check(i, wi)
    (v, i) = run_node(tmp_path, "TopK", {"x": x}, {"axis": 1, "largest": 0, "sorted": 0}, consts={"k": I64(20)}, outputs=2)
    wv, wi = topk_ref(x, 20, 1, False)
    check(v, wv)
    check(i, wi)


def test_topk_errors(tmp_path):
    with pytest.raises(tessera.Error, match="TopK.*k = 5 is not in \\[0, 3\\]"):
        run_node(tmp_path, "TopK", {"x": np.zeros((2, 3), np.float32)}, consts={"k": I64(5)}, outputs=2)
