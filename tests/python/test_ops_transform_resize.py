"""Resize, Upsample and TopK against ONNX's own reference implementation of Resize (shipped with
python3-onnx) and numpy's stable sort: every interpolation mode, coordinate transformation and
nearest rounding, sizes and scales, up- and downsampling, several dtypes, opset variants, and
TopK's tie order (the lower index first) on both of its strategies (k <= 8 and above)."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test.case.node.resize import cubic_coeffs, interpolate_nd, linear_coeffs, nearest_coeffs

import tessera
from test_ops_transform import I64, build_graph, check, make_data, run_node

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


@pytest.mark.parametrize("target", ["llvm", "opencl"])
@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_crop_and_resize_by_a_roi_the_data_gives(tmp_path, rng, target, exported, mode):
    """tf_crop_and_resize of images of symbolic sizes by a roi given at each run (a box per call,
    as detection models crop): the kernel reads it as it runs, so one build (and a module) serves
    every box, inside the image and past its edges (the extrapolation value). Resize 18 of two
    axes in reverse order beside Resize 13 of all four; a roi of another length is an error."""
    crop = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": -3.0}
    nodes = [helper.make_node("Resize", ["x", "box", "", "size2"], ["y"], axes=[3, 2], name="two_axes", **crop),
             helper.make_node("Resize", ["x", "roi", "", "size4"], ["z"], name="four_axes", **crop)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", "W"]),
                     helper.make_tensor_value_info("box", TensorProto.FLOAT, ["R"]),
                     helper.make_tensor_value_info("roi", TensorProto.FLOAT, [8])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z")],
        [numpy_helper.from_array(I64(4, 5), "size2"), numpy_helper.from_array(I64(1, 2, 3, 6), "size4")])
    lib = build_graph(tmp_path, graph, 18, target, exported)
    kw = {"coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": -3.0}
    for shape, start, end in [((1, 2, 9, 7), (0.2, 0.1), (0.8, 0.9)), ((3, 2, 4, 12), (-0.3, 0.5), (1.2, 0.6)),
                              ((1, 2, 1, 5), (0, 0), (1, 1)), ((2, 2, 6, 6), (0.9, 0.7), (0.1, 0.2))]:
        x = make_data(rng, shape, "float32")
        box = np.array([start[1], start[0], end[1], end[0]], np.float32)  # axes 3 then 2
        roi = np.array([0, 0, start[0], start[1], 1, 1, end[0], end[1]], np.float32)
        y, z = lib.run([x, box, roi])
        # Coordinates in float64 from the roi's values (the reference rounds a float32 roi's in
        # float32, which moves nearest's ties).
        roi64 = roi.astype(np.float64)
        np.testing.assert_allclose(y, reference(x, mode, sizes=list(shape[:2]) + [5, 4], roi=roi64, **kw),
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(z, reference(x, mode, sizes=[1, 2, 3, 6], roi=roi64, **kw), rtol=1e-5, atol=1e-5)
    with pytest.raises(tessera.Error, match="node 'two_axes'.*reads a roi of 4 values"):
        lib.run([x, np.zeros(3, np.float32), roi])


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


RUN_TIME_SCALES = {
    "nearest": {"mode": "nearest"},
    "linear, align_corners": {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
    "linear, pytorch_half_pixel": {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
    "cubic": {"mode": "cubic"},
    "cubic, exclude_outside, asymmetric": {"mode": "cubic", "exclude_outside": 1, "coordinate_transformation_mode": "asymmetric"},
    "cubic, half_pixel_symmetric": {"mode": "cubic", "coordinate_transformation_mode": "half_pixel_symmetric"},
}


@pytest.mark.parametrize("target", ["llvm", "c", "opencl"])
@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
@pytest.mark.parametrize("case", list(RUN_TIME_SCALES))
def test_resize_reads_scales_the_data_gives_as_it_runs(tmp_path, rng, target, exported, case):
    """Scales from an input (or computed from one): a step computes the output sizes, and the
    kernel reads the scales as it runs, so one build (and a module) serves every scale and size;
    cubic along all four axes interpolates them one after another. Also Resize 18 of two axes and
    Upsample 9. Against ONNX's reference, float32 and uint8 (whose sum is truncated)."""
    attrs = RUN_TIME_SCALES[case]
    nodes = [helper.make_node("Mul", ["s", "one"], ["scales"]),  # computed from the input
             helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs),
             helper.make_node("Resize", ["x8", "", "s2"], ["y8"], axes=[3, 2], **attrs)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "C", "H", "W"]),
              helper.make_tensor_value_info("x8", TensorProto.UINT8, ["N", "C", "H", "W"]),
              helper.make_tensor_value_info("s", TensorProto.FLOAT, [4]), helper.make_tensor_value_info("s2", TensorProto.FLOAT, [2])]
    if attrs["mode"] == "nearest":
        nodes.append(helper.make_node("Upsample", ["x", "s"], ["u"], mode="nearest"))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None)
                                                   for n in ("y", "y8", "u")[:len(nodes) - 1]],
                              [numpy_helper.from_array(np.ones(4, np.float32), "one")])
    lib = build_graph(tmp_path, graph, 19, target, exported)
    kw = {k: v for k, v in attrs.items() if k != "mode"}
    if "exclude_outside" in kw:
        kw["exclude_outside"] = bool(kw["exclude_outside"])
    for shape, scales in [((1, 2, 5, 7), [1, 1, 2.5, 1.7]), ((2, 3, 6, 4), [1, 1, 0.6, 0.45]), ((2, 1, 3, 3), [1.5, 2, 1, 0.5]),
                          ((1, 1, 4, 4), [1, 1, 1, 1]), ((1, 2, 5, 5), [1, 1, 0.1, 1]), ((1, 1, 1, 1), [1, 1, 3, 2])]:
        x = make_data(rng, shape, "float32")
        x8 = make_data(rng, shape, "uint8")
        s = np.array(scales, np.float32)
        outs = lib.run([x, x8, s, s[[3, 2]]])
        if 0 in np.floor(np.array(shape) * s.astype(np.float64)):  # the reference takes no empty output
            assert all(o.shape == tuple(int(n) for n in np.floor(np.array(shape) * s)) for o in (outs[0], outs[1]))
            continue
        if kw.get("coordinate_transformation_mode") == "half_pixel_symmetric":  # not in Debian's onnx 1.12
            np.testing.assert_allclose(outs[0], resize(tmp_path, x, attrs, scales=scales, opset=19), rtol=1e-5, atol=1e-5)
            continue
        want = reference(x, attrs["mode"], scales=scales, **kw)
        np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-5)
        want8 = reference(x8.astype(np.float64), attrs["mode"], scales=[1, 1] + scales[2:], **kw)
        assert outs[1].dtype == np.uint8 and outs[1].shape == want8.shape
        assert np.max(np.abs(outs[1].astype(np.float64) - np.clip(np.trunc(want8), 0, 255)), initial=0) <= 1
        if attrs["mode"] == "nearest":
            want_u = reference(x, "nearest", scales=scales, nearest="floor", coordinate_transformation_mode="asymmetric")
            np.testing.assert_array_equal(outs[2], want_u.astype(np.float32))
    if not exported:
        assert lib.symbolic, lib.symbolic_reason
    x, x8 = np.zeros((1, 1, 2, 2), np.float32), np.zeros((1, 1, 2, 2), np.uint8)
    with pytest.raises(tessera.Error, match="Resize: scale -2 of axis 2 is not a positive number"):
        lib.run([x, x8, np.array([1, 1, -2, 1], np.float32), np.ones(2, np.float32)])
    with pytest.raises(tessera.Error, match="Resize: scale nan of axis 3"):
        lib.run([x, x8, np.array([1, 1, 1, np.nan], np.float32), np.ones(2, np.float32)])


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_of_scales_read_as_it_runs_into_a_convolution_matches_across_targets(rng, mode):
    """Cubic along all four axes whose scales only the run knows interpolates them one stage after
    another; on OpenCL the stages are kernels of their own (each reads its neighbours along one
    axis, where the scales say), not computed inside the next one's threads."""
    src = ("def @main(%x: float32[1, 3, 10, 12], %s: float32[4], %w: float32[4, 3, 3, 3]) { "
           f'%0 = resize(%x, %s, sizes=[1, 3, 18, 17], mode="{mode}"); conv(%0, %w) }}')
    args = [make_data(rng, (1, 3, 10, 12), "float32"), np.array([1, 1, 1.84, 1.47], np.float32),
            make_data(rng, (4, 3, 3, 3), "float32")]
    want = reference(args[0], mode, scales=[1, 1, 1.84, 1.47])
    windows = np.lib.stride_tricks.sliding_window_view(want, (3, 3), axis=(2, 3))
    want = np.einsum("nchwij,ocij->nohw", windows, args[2].astype(np.float64))
    for target in ["llvm", "opencl"]:
        got = tessera.build(tessera.relay.parse(src), target=target, db=False).run(args)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["llvm", "opencl"])
@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_resize_of_the_image_axes_by_data_scales_keeps_the_channels_for_a_convolution(tmp_path, rng, target, exported):
    """Resize 18 of the axes [2, 3] by scales from an input, into a convolution, in a model of
    symbolic batch and image sizes: the axes the scales leave out keep their sizes, so the
    convolution gets a constant number of channels and one build (and a module) serves every
    image and scale."""
    w = make_data(rng, (4, 3, 3, 3), "float32")
    nodes = [helper.make_node("Resize", ["x", "", "s"], ["r"], mode="linear", axes=[2, 3]),
             helper.make_node("Conv", ["r", "w"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"]),
                                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])
    lib = build_graph(tmp_path, graph, 18, target, exported)
    for shape, scales in [((2, 3, 10, 12), [1.5, 2]), ((1, 3, 7, 5), [0.6, 1]), ((1, 3, 2, 2), [1.5, 1.5])]:
        x = make_data(rng, shape, "float32")
        got = lib.run([x, np.array(scales, np.float32)])[0]
        resized = reference(x, "linear", scales=[1, 1] + scales)
        windows = np.lib.stride_tricks.sliding_window_view(resized, (3, 3), axis=(2, 3))
        np.testing.assert_allclose(got, np.einsum("nchwij,ocij->nohw", windows, w.astype(np.float64)), rtol=1e-4, atol=1e-4)
    if not exported:
        assert [signatures for _, signatures in lib.builds] == [["every size"]]


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_resize_of_every_axis_by_data_scales_into_a_convolution_keeps_its_channels(tmp_path, rng, exported):
    """Scales from an input for all four axes, into a convolution: the output sizes are values the
    run computes, and the convolution needs the channels its weights have, so the part after the
    resize is built for every size but that one, and a call whose channels' scale changes them is an
    error naming the value."""
    w = make_data(rng, (4, 3, 3, 3), "float32")
    nodes = [helper.make_node("Resize", ["x", "", "s"], ["r"], mode="cubic"), helper.make_node("Conv", ["r", "w"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 12]),
                                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])
    lib = build_graph(tmp_path, graph, 13, "llvm", exported)
    x = make_data(rng, (1, 3, 10, 12), "float32")
    for scales in [[1, 1, 1.5, 2], [2, 1, 0.5, 0.7]]:
        got = lib.run([x, np.array(scales, np.float32)])[0]
        resized = reference(x, "cubic", scales=scales)
        windows = np.lib.stride_tricks.sliding_window_view(resized, (3, 3), axis=(2, 3))
        np.testing.assert_allclose(got, np.einsum("nchwij,ocij->nohw", windows, w.astype(np.float64)), rtol=1e-4, atol=1e-4)
    if not exported:
        assert [signatures for _, signatures in lib.builds] == [["every size"]]
    with pytest.raises(tessera.Error, match=r"'r#sizes' holds 4 \(element 1\), where the part of the model after it was "
                                            r"built for 3: an operator there needs it constant"):
        lib.run([x, np.array([1, 1.5, 1, 1], np.float32)])


UNIT_SCALES = {  # the constant scales the Concat starts with, and whether a Constant node gives them
    "two ones (initializer)": ([1, 1], False),
    "two ones (Constant node)": ([1, 1], True),
    "one one": ([1], False),
    "not ones": ([1, 2], False),
}


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("case", list(UNIT_SCALES))
def test_resize_by_scales_the_data_gives_after_constant_ones(tmp_path, rng, case, mode):
    """Scales written as a Concat of constant ones and the data's scales (F.interpolate's
    scale_factor beside a batch and channels that keep their sizes): the leading axes keep their
    sizes and only the others interpolate, against ONNX's reference; constants other than ones
    take the path of scales all from the data."""
    lead, constant_node = UNIT_SCALES[case]
    rest = 4 - len(lead)
    nodes = [helper.make_node("Concat", ["lead", "s"], ["scales"], axis=0),
             helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)]
    inits = []
    if constant_node:
        nodes.insert(0, helper.make_node("Constant", [], ["lead"], value=numpy_helper.from_array(np.array(lead, np.float32))))
    else:
        inits.append(numpy_helper.from_array(np.array(lead, np.float32), "lead"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "C", "H", "W"]),
                                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [rest])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    lib = build_graph(tmp_path, graph, 13, "llvm", False)
    for shape, given in [((2, 3, 5, 7), [1.5, 2, 0.6][-rest:]), ((1, 2, 4, 4), [2, 0.5, 1][-rest:])]:
        x = make_data(rng, shape, "float32")
        scales = lead + given
        want = reference(x, mode, scales=scales)
        np.testing.assert_allclose(lib.run([x, np.array(given, np.float32)])[0], want, rtol=1e-5, atol=1e-5)
    assert [signatures for _, signatures in lib.builds] == [["every size"]] * len(lib.builds)


def test_resize_errors(tmp_path, rng):
    x = make_data(rng, (1, 1, 2, 2), "float32")
    with pytest.raises(tessera.Error, match="Resize.*mode 'area'"):
        resize(tmp_path, x, {"mode": "area"}, scales=[1, 1, 2, 2])
    with pytest.raises(tessera.Error, match="Resize.*exactly one of scales and sizes"):
        run_node(tmp_path, "Resize", {"x": x}, consts={"r": EMPTY, "s": np.array([1, 1, 2, 2], np.float32), "z": I64(1, 1, 4, 4)})
    with pytest.raises(tessera.Error, match="Resize.*roi"):
        resize(tmp_path, x, {"coordinate_transformation_mode": "tf_crop_and_resize"}, sizes=[1, 1, 3, 3], roi=np.zeros(3, np.float32))
    with pytest.raises(tessera.Error, match="scales must be a 1-D floating-point tensor of 4 values, got float32"):
        tessera.build(tessera.relay.parse("def @main(%x: float32[1, 1, 2, 2], %s: float32[3]) { resize(%x, %s, sizes=[1, 1, 4, 4]) }"))
    with pytest.raises(tessera.Error, match="no gradient where the scales or the roi are read as the model runs"):
        tessera.relay.gradient(tessera.relay.parse(
            "def @main(%x: float32[1, 1, 2, 2], %s: float32[4]) { resize(%x, %s, sizes=[1, 1, 4, 4]) }"), wrt=["x"])
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
