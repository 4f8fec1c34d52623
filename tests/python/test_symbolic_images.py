"""Convolutions and pooling over images of symbolic height and width (issue 25, item 2), built once
for every size: each form a convolution takes (blocked, pointwise, strip, depthwise, Winograd,
direct), strides, dilations and padding, 1-D and 3-D windows, max, average and p-norm pools with
ceil_mode, global pools, at sizes that divide no tile, of one pixel, and from the exported
module; an image too small for a window is an error naming the node."""
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import host_cpu
import tessera
from nn_testing import conv_reference, windows
from test_symbolic_ops import save, vi


def built_once(tmp_path, path, size_hints=None, target="llvm"):
    """The library built for every size (an error if it is built per size), and its module."""
    lib = tessera.build(tessera.onnx.load(path), target=target, db=False, size_hints=size_hints)
    lib.export(str(tmp_path / "m.so"))
    assert lib.symbolic, lib.symbolic_reason
    return lib, tessera.load(str(tmp_path / "m.so"))


def conv_model(tmp_path, rng, spatial, channels, out_channels, kernel, relu=True, **attrs):
    rank = len(kernel)
    groups = attrs.get("group", 1)
    w = rng.standard_normal((out_channels, channels // groups) + tuple(kernel)).astype("float32")
    b = rng.standard_normal(out_channels).astype("float32")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs)]
    nodes.append(helper.make_node("Relu" if relu else "Identity", ["c"], ["y"]))
    dims = ["N", channels] + spatial[:rank]
    path = save(tmp_path, nodes, [vi("x", dims)], [vi("y", None)],
                [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])

    def reference(x):
        pads = attrs.get("pads")
        y = conv_reference(x, w, b, attrs.get("strides"), pads, attrs.get("dilations"), groups)
        return np.maximum(y, 0) if relu else y
    return path, reference


# (channels, out_channels, kernel, attrs): the form each takes at the size hints given.
CONVS = {
    "blocked 3x3": (16, 32, (3, 3), {"pads": [1, 1, 1, 1]}),
    "blocked strided, uneven pads": (16, 24, (3, 3), {"pads": [0, 1, 2, 1], "strides": [2, 2]}),
    "blocked dilated": (8, 16, (3, 3), {"pads": [2, 2, 2, 2], "dilations": [2, 2]}),
    "pointwise": (32, 48, (1, 1), {}),
    "pointwise strided": (32, 16, (1, 1), {"strides": [2, 2]}),
    "strip (3 channels, 7x7 stride 2)": (3, 16, (7, 7), {"pads": [3, 3, 3, 3], "strides": [2, 2]}),
    "depthwise": (24, 24, (3, 3), {"pads": [1, 1, 1, 1], "group": 24}),
    "depthwise strided": (16, 16, (3, 3), {"pads": [1, 1, 1, 1], "group": 16, "strides": [2, 2]}),
    "direct (grouped)": (12, 6, (3, 3), {"pads": [1, 1, 1, 1], "group": 3}),
    "direct (fewer output channels than a vector, strided)": (12, 12, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    "1-D": (8, 16, (5,), {"pads": [2, 2], "strides": [3]}),
    "3-D": (4, 8, (3, 3, 3), {"pads": [1, 1, 1, 1, 1, 1]}),
}


@pytest.mark.parametrize("case", list(CONVS))
def test_convolution_of_symbolic_height_and_width(tmp_path, rng, case):
    channels, out_channels, kernel, attrs = CONVS[case]
    path, reference = conv_model(tmp_path, rng, ["H", "W", "D"], channels, out_channels, kernel, **attrs)
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 20, "W": 30, "D": 6})
    rank = len(kernel)
    for n, h, w in [(1, 20, 30), (2, 9, 13), (1, 1, 1), (3, 33, 7), (1, 2, 41)]:
        x = rng.standard_normal((n, channels) + (h, w, 3)[:rank]).astype("float32")
        want = reference(x)
        for runner in (lib, module):
            got = runner.run([x])[0]
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_direct_convolution_of_symbolic_width_accumulates_whole_vectors(tmp_path, rng):
    """The direct form's product of symbolic width is padded to whole vectors: each vector of
    positions accumulates in place over the reduction (its loop ran scalar: HuggingFace's small
    ResNet built for every size took 0.76 of its static build's time)."""
    path, _ = conv_model(tmp_path, rng, ["H", "W"], 12, 12, (3, 3), pads=[1, 1, 1, 1], strides=[2, 2])
    lib, _ = built_once(tmp_path, path, {"N": 1, "H": 28, "W": 28})
    lowered = "\n".join(k["lowered"] for k in lib.kernels if k["name"].endswith("conv_relu"))
    assert re.search(r"conv_direct\[ramp\([^\n]*\] = conv_direct\[ramp\(", lowered), lowered


def test_weights_are_prefetched_a_symbolic_count_of_tiles_ahead(tmp_path, rng):
    """More weights than input: the blocked form runs blocks of output channels outermost (and the
    Winograd form's product panels of them), and a block's tiles fetch the next block's weights.
    The next block is as many tiles ahead as the image makes (it was the count at the size hints:
    at other sizes the fetch ran blocks ahead or behind), a share of its lines per step."""
    path, reference = conv_model(tmp_path, rng, ["H", "W"], 64, 64, (3, 3), pads=[1, 1, 1, 1])
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 7, "W": 7})
    lowered = "\n".join(k["lowered"] for k in lib.kernels)
    ahead = re.findall(r"let prefetch_min\w* = \([\w.]+ \+ ([^\n]*)", lowered)
    assert ahead and all("H" in a and "W" in a for a in ahead), lowered
    for n, h, w in [(1, 7, 7), (2, 3, 41), (1, 20, 20), (1, 1, 1)]:
        x = rng.standard_normal((n, 64, h, w)).astype("float32")
        for runner in (lib, module):  # sums of 576 products up to ~40, some by Winograd's form
            np.testing.assert_allclose(runner.run([x])[0], reference(x), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("out_channels", [16, 32])
def test_a_convolution_of_few_input_channels_exports_before_any_run(tmp_path, rng, out_channels):
    """3 input channels: the blocked form walks output rows outermost and prefetches the next
    block's weights once per row, whose batch index a region clipped at both ends gives (its extent
    at most 1 had to be found through the clips). Exported without size hints or a run."""
    path, reference = conv_model(tmp_path, rng, ["H", "W"], 3, out_channels, (3, 3))
    lib, module = built_once(tmp_path, path)
    for n, h, w in [(1, 20, 30), (2, 3, 3), (3, 9, 41)]:
        x = rng.standard_normal((n, 3, h, w)).astype("float32")
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], reference(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("hints", [{"N": 1, "H": 7, "W": 7}, {"N": 2, "H": 9, "W": 3}])
def test_a_blocked_convolution_takes_the_tile_that_pads_each_width_least(tmp_path, rng, hints):
    """The register tile of a row's positions, chosen at the hinted width (7: a 224x224 image's
    last stage), has versions of 8 and 5 positions: rows of 5 are not padded to 7 nor rows of 8 to
    14. Each width runs the version padding it least, from the library and its module."""
    path, reference = conv_model(tmp_path, rng, ["H", "W"], 16, 32, (3, 3), pads=[1, 1, 1, 1])
    lib, module = built_once(tmp_path, path, hints)
    schedule = lib.kernels[0]["schedule"]
    tiles = [int(t) for t in re.findall(r"in tiles of (\d+) positions", schedule)]
    assert sorted(tiles) == sorted({8, 5} - {hints["W"]}), schedule
    for n, h, w in [(1, 7, 7), (1, 5, 5), (2, 8, 8), (1, 1, 1), (1, 4, 13), (3, 6, 16), (1, 3, 41)]:
        x = rng.standard_normal((n, 16, h, w)).astype("float32")
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], reference(x), rtol=1e-4, atol=1e-4)


def test_a_strided_pointwise_convolution_hinted_to_few_positions_keeps_its_packing(tmp_path, rng):
    """A ResNet's 1x1 stride-2 shortcut late in the network (HuggingFace's ResNetModel as exported
    with dynamic height and width): few positions at the hints take the blocked form, whose weight
    AlterOpLayout packs in blocks of two vectors; the versions of other widths would take the
    pointwise form, which reads blocks of its register tile's rows. Those widths keep the blocked
    form (the model was built per size, "is not the packing of a weight")."""
    path, reference = conv_model(tmp_path, rng, ["H", "W"], 16, 32, (1, 1), strides=[2, 2])
    lib, module = built_once(tmp_path, path)
    for n, h, w in [(1, 5, 7), (2, 17, 9), (1, 1, 1), (1, 64, 40)]:
        x = rng.standard_normal((n, 16, h, w)).astype("float32")
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], reference(x), rtol=1e-4, atol=1e-4)


def normalization_reference(op, x, scale, bias, opset):
    n, c = x.shape[:2]
    if op == "MeanVarianceNormalization":
        mean = x.mean(axis=(0, 2, 3), keepdims=True)
        return (x - mean) / (np.sqrt((x * x).mean(axis=(0, 2, 3), keepdims=True) - mean * mean) + 1e-9)
    groups = c if op == "InstanceNormalization" else 2
    g = x.reshape(n, groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    if op == "GroupNormalization" and opset < 21:  # a scale and bias per group
        return (y.reshape(n, groups, -1) * scale[:, None] + bias[:, None]).reshape(x.shape)
    return y * scale[:, None, None] + bias[:, None, None]


@pytest.mark.parametrize("op, opset", [("InstanceNormalization", 17), ("GroupNormalization", 18),
                                       ("GroupNormalization", 21), ("MeanVarianceNormalization", 17)])
def test_normalizations_of_symbolic_height_and_width(tmp_path, rng, op, opset):
    """Statistics over an image of symbolic size divide by its element count as the kernel runs
    (a style-transfer or diffusion model at any image size)."""
    params = 2 if op == "GroupNormalization" and opset < 21 else 4
    scale, bias = rng.standard_normal(params).astype("float32"), rng.standard_normal(params).astype("float32")
    inputs = [] if op == "MeanVarianceNormalization" else ["s", "b"]
    attrs = {"num_groups": 2} if op == "GroupNormalization" else {}
    graph = helper.make_graph([helper.make_node(op, ["x"] + inputs, ["y"], **attrs)], "g", [vi("x", ["N", 4, "H", "W"])],
                              [vi("y", None)], [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")])
    path = str(tmp_path / "norm.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    lib, module = built_once(tmp_path, path)
    for shape in [(2, 4, 5, 6), (1, 4, 1, 3), (3, 4, 7, 2)]:
        x = rng.standard_normal(shape).astype("float32")
        want = normalization_reference(op, x.astype("float64"), scale, bias, opset)
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op, mode", [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"), ("SpaceToDepth", "DCR"),
                                      ("SpaceToDepth", "CRD")])
def test_depth_to_space_of_symbolic_sizes(tmp_path, rng, op, mode):
    """Pixel shuffle (a super-resolution model's upsampling) and its inverse (Real-ESRGAN's pixel
    unshuffle at its input) at any batch and image size; the inverse's height and width must
    divide by the blocksize, checked at each call with an error naming the node."""
    attrs = {"blocksize": 2, "mode": mode} if op == "DepthToSpace" else {"blocksize": 2}
    dims = ["N", 8 if op == "DepthToSpace" else 2, "H", "W"]
    opset = 13 if mode == "DCR" or op == "DepthToSpace" else 28  # SpaceToDepth's mode came with opset 28
    if op == "SpaceToDepth" and mode == "CRD":
        attrs["mode"] = mode
    path = save(tmp_path, [helper.make_node(op, ["x"], ["y"], name="s2d", **attrs)], [vi("x", dims)], [vi("y", None)],
                opset=opset)
    lib, module = built_once(tmp_path, path)
    for n, h, w in ([(2, 3, 5), (1, 1, 1), (3, 4, 2)] if op == "DepthToSpace" else [(2, 6, 4), (1, 2, 2), (3, 10, 16)]):
        x = rng.standard_normal((n, dims[1], h, w)).astype("float32")
        if op == "SpaceToDepth":
            blocks = x.reshape(n, 2, h // 2, 2, w // 2, 2)
            order = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
            want = blocks.transpose(order).reshape(n, 8, h // 2, w // 2)
        elif mode == "DCR":
            want = x.reshape(n, 2, 2, 2, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, 2, h * 2, w * 2)
        else:
            want = x.reshape(n, 2, 2, 2, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, 2, h * 2, w * 2)
        for runner in (lib, module):
            np.testing.assert_array_equal(runner.run([x])[0], want)
    if op == "SpaceToDepth":
        for runner in (lib, module):
            with pytest.raises(tessera.Error, match="node 's2d'.* needs the width a multiple of the blocksize 2"):
                runner.run([np.zeros((1, 2, 4, 5), np.float32)])


def runs_as_pytorch_at_even_sizes(tmp_path, rng, model_class, shapes, odd_shape, odd_dim):
    """An instance of `model_class` exported by PyTorch with a dynamic batch, height and width,
    built once: as PyTorch at `shapes`; at `odd_shape`, an error naming dimension `odd_dim` of the
    input, which must be even."""
    import torch
    from torch_numpy import array, tensor
    torch.manual_seed(0)
    model = model_class().eval()
    path = str(tmp_path / "model.onnx")
    torch.onnx.export(model, tensor(np.zeros(shapes[0], "float32")), path, input_names=["x"],
                      dynamic_axes={"x": {0: "N", 2: "H", 3: "W"}}, opset_version=17)
    lib, module = built_once(tmp_path, path)
    for shape in shapes:
        x = rng.standard_normal(shape).astype("float32")
        with torch.no_grad():
            want = array(model(tensor(x)))
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], want, rtol=1e-5, atol=1e-5)
    for runner in (lib, module):
        with pytest.raises(tessera.Error, match=f"input 'x'.*dimension {odd_dim} must be a multiple of 2"):
            runner.run([np.zeros(odd_shape, "float32")])


def test_pixel_unshuffle_as_pytorch_exports_it_declares_height_and_width_even(tmp_path, rng):
    """F.pixel_unshuffle exported by PyTorch: Reshape to (N, C, -1, 2, W / 2, 2), whose -1 is exact
    only where H is even. The import declares H and W multiples of 2 (a variable of their half
    each), so one build serves every even size, and an odd one is an error naming the input."""
    torch = pytest.importorskip("torch")

    class Unshuffle(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(12, 8, 3, padding=1)

        def forward(self, x):
            return self.conv(torch.nn.functional.pixel_unshuffle(x, 2))

    runs_as_pytorch_at_even_sizes(tmp_path, rng, Unshuffle, [(1, 3, 8, 8), (2, 3, 6, 14), (1, 3, 2, 2)], (1, 3, 8, 7), 3)


def test_yolo_focus_and_detect_head_build_once(tmp_path, rng):
    """YOLOv5's Focus (x[..., ::2, ::2] beside x[..., 1::2, ::2] and the other two, concatenated:
    equal only at an even height and width, which the import declares) and its detect head: the
    map viewed as (N, anchors, outputs, ny, nx), permuted, offset by a meshgrid of arange(ny) and
    arange(nx), flattened to (N, anchors * ny * nx, outputs). One build for every even size."""
    torch = pytest.importorskip("torch")

    class Yolo(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.focus, self.head = torch.nn.Conv2d(12, 16, 3, padding=1), torch.nn.Conv2d(16, 18, 1)

        def forward(self, x):
            x = torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1)
            p = self.head(torch.nn.functional.silu(self.focus(x)))
            n, _, ny, nx = p.shape
            p = p.view(n, 3, 6, ny, nx).permute(0, 1, 3, 4, 2)
            yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
            grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
            return torch.cat([(p[..., :2].sigmoid() * 2 - 0.5 + grid) * 2, p[..., 2:].sigmoid()], -1).view(n, -1, 6)

    runs_as_pytorch_at_even_sizes(tmp_path, rng, Yolo, [(1, 3, 16, 16), (2, 3, 10, 22), (1, 3, 2, 2)], (1, 3, 9, 8), 2)


# (channels, out channels, spatial dimensions, size hints, sizes run): Winograd pays at enough
# tiles per image, and at 7x7 outputs (4 tiles) over a batch of 3 or more (16-lane vectors).
WINOGRAD_AT_SOME_SIZES = {
    "symbolic image": (16, 32, ["H", "W"], [{"N": 1, "H": 56, "W": 56}, {"N": 1, "H": 4, "W": 4}],
                       [(1, 56, 56), (2, 7, 5), (1, 1, 1), (1, 18, 61)]),
    "7x7 over a symbolic batch": (64, 64, [7, 7], [{"N": 1}, {"N": 4}], [(3, 7, 7), (2, 7, 7), (1, 7, 7), (16, 7, 7)]),
}


@pytest.mark.parametrize("case", list(WINOGRAD_AT_SOME_SIZES))
def test_winograd_convolutions_of_symbolic_sizes_choose_their_form_at_each_call(tmp_path, rng, case):
    """A 3x3 stride-1 convolution whose Winograd form pays at some of its sizes only reads both
    packings of its weight and takes at each call the form a static build of those sizes takes,
    whichever form the hints gave its main version: the static build's result bit for bit
    (Winograd rounds differently from the direct sum), from the library and its module."""
    channels, out_channels, spatial, hints_list, sizes = WINOGRAD_AT_SOME_SIZES[case]
    if case == "7x7 over a symbolic batch" and host_cpu.float_lanes() < 16:
        pytest.skip("7x7 outputs take Winograd from one image on vectors of fewer than 16 lanes (test_graph_opt)")
    path, reference = conv_model(tmp_path, rng, spatial, channels, out_channels, (3, 3), pads=[1, 1, 1, 1])
    inputs = [rng.standard_normal((n, channels, h, w)).astype("float32") for n, h, w in sizes]
    static_libs = [tessera.build(tessera.onnx.load(path, shapes={"x": x.shape}), db=False) for x in inputs]
    static = [lib.run([x])[0] for lib, x in zip(static_libs, inputs)]
    assert ["winograd" in lib.kernels[0]["lowered"] for lib in static_libs[:2]] == [True, False]
    for hints in hints_list:
        lib, module = built_once(tmp_path, path, hints)
        assert "where Winograd's form" in lib.kernels[0]["schedule"], lib.kernels[0]["schedule"]
        for x, want in zip(inputs, static):
            for runner in (lib, module):
                np.testing.assert_array_equal(runner.run([x])[0], want)
            ref = reference(x)  # F(4x4, 3x3) rounds relative to the largest output (test_graph_opt)
            np.testing.assert_allclose(want, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def pool_reference(x, kind, kernel, strides, pads, count_include_pad=False, p=2, dilations=None):
    fill = -np.inf if kind == "max" else 0.0
    dilations = dilations or [1] * len(kernel)
    win = windows(x, kernel, strides, dilations, pads, fill)
    axes = tuple(range(-len(kernel), 0))
    if kind == "max":
        return win.max(axes)
    if kind == "lp":
        return (np.abs(win) ** p).sum(axes) ** (1 / p)
    if count_include_pad:
        return win.mean(axes)
    counts = windows(np.ones_like(x), kernel, strides, dilations, pads)
    return win.sum(axes) / counts.sum(axes)


POOLS = {
    "max 3x3 stride 2": ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "max 2x2": ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}),
    "max 3x2 dilated, uneven pads": ("MaxPool", {"kernel_shape": [3, 2], "strides": [1, 2], "dilations": [2, 3],
                                                 "pads": [2, 1, 0, 2]}),
    "average, padding not counted": ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "average, padding counted": ("AveragePool", {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "count_include_pad": 1}),
    "p-norm": ("LpPool", {"kernel_shape": [2, 3], "strides": [1, 2], "p": 2}),
}


@pytest.mark.parametrize("case", list(POOLS))
def test_pooling_of_symbolic_height_and_width(tmp_path, rng, case):
    op, attrs = POOLS[case]
    nodes = [helper.make_node(op, ["x"], ["y"], **attrs), helper.make_node("GlobalAveragePool", ["x"], ["g"]),
             helper.make_node("GlobalMaxPool", ["x"], ["gm"])]
    path = save(tmp_path, nodes, [vi("x", ["N", 5, "H", "W"])], [vi("y", None), vi("g", None), vi("gm", None)])
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 24, "W": 24})
    kind = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[op]
    kernel = attrs["kernel_shape"]
    for n, h, w in [(1, 24, 24), (2, 9, 13), (1, 3, 3), (1, 4, 37)]:
        x = rng.standard_normal((n, 5, h, w)).astype("float32")
        want = pool_reference(x, kind, kernel, attrs.get("strides", [1, 1]), attrs.get("pads", [0] * 4),
                              attrs.get("count_include_pad", 0), dilations=attrs.get("dilations"))
        for runner in (lib, module):
            y, g, gm = runner.run([x])
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(g, x.mean((2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(gm, x.max((2, 3), keepdims=True))
    if kind == "max":  # in separable steps (over the leading window dimension, then along rows), as at a constant width
        assert any("max_pool_leading" in k["lowered"] for k in lib.kernels), [k["lowered"] for k in lib.kernels]


def test_ceil_mode_pools_of_symbolic_sizes_drop_windows_starting_in_the_right_padding(tmp_path, rng):
    """ceil_mode rounds the window count up, but a window that would start past the input and its
    left padding is dropped (as PyTorch and ONNX Runtime do): at sizes where that happens too."""
    torch = pytest.importorskip("torch")
    from torch_numpy import array, tensor
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}
    nodes = [helper.make_node("MaxPool", ["x"], ["m"], **attrs), helper.make_node("AveragePool", ["x"], ["a"], **attrs)]
    path = save(tmp_path, nodes, [vi("x", ["N", 3, "H", "W"])], [vi("m", None), vi("a", None)])
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 16, "W": 16})
    for h, w in [(16, 16), (5, 6), (1, 2), (8, 9)]:
        x = rng.standard_normal((1, 3, h, w)).astype("float32")
        t = tensor(x)
        want_max = array(torch.nn.functional.max_pool2d(t, 3, 2, 1, ceil_mode=True))
        want_avg = array(torch.nn.functional.avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=False))
        for runner in (lib, module):
            m, a = runner.run([x])
            np.testing.assert_array_equal(m, want_max)
            np.testing.assert_allclose(a, want_avg, rtol=1e-5, atol=1e-6)


def test_an_image_smaller_than_a_window_is_an_error_naming_the_node(tmp_path, rng):
    path, reference = conv_model(tmp_path, rng, ["H", "W"], 4, 8, (3, 3), relu=False)  # unpadded
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 8, "W": 8})
    x = rng.standard_normal((1, 4, 3, 5)).astype("float32")
    np.testing.assert_allclose(module.run([x])[0], reference(x), rtol=1e-4, atol=1e-4)  # one output row
    for runner in (lib, module):
        with pytest.raises(tessera.Error, match=r"conv \(node 'c'\) needs its input \(padding included\) at least as large as its "
                                                r"window in spatial dimension 0.* is 0 at N = 1, H = 2, W = 5"):
            runner.run([rng.standard_normal((1, 4, 2, 5)).astype("float32")])
    with pytest.raises(tessera.Error, match=r"input .x.*dimension 1 must be 4, got 5"):
        lib.run([rng.standard_normal((1, 5, 8, 8)).astype("float32")])


def test_a_fully_convolutional_network_runs_at_every_image_size(tmp_path, rng):
    """A small network as torch.onnx.export writes it with dynamic height and width (stem, max
    pool, pointwise, depthwise and 3x3 layers, an average pool with ceil_mode, a classifier
    over the global mean, the features upsampled by 2 twice, bilinear then nearest), against
    PyTorch, at every opt level."""
    torch = pytest.importorskip("torch")
    from torch_numpy import array, tensor
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.pool = nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.MaxPool2d(3, 2, 1)
            self.pw, self.dw = nn.Conv2d(16, 32, 1), nn.Conv2d(32, 32, 3, padding=1, groups=32)
            self.c3, self.down = nn.Conv2d(32, 32, 3, padding=1), nn.Conv2d(32, 40, 3, stride=2, padding=1)
            self.avg, self.fc = nn.AvgPool2d(2, ceil_mode=True), nn.Linear(40, 10)

        def forward(self, x):
            x = self.pool(torch.relu(self.stem(x)))
            x = torch.relu(self.dw(torch.relu(self.pw(x))))
            x = self.avg(self.down(torch.relu(self.c3(x)) + x))
            up = torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            return self.fc(x.mean((2, 3))), torch.nn.functional.interpolate(up, scale_factor=2, mode="nearest")

    torch.manual_seed(0)
    net = Net().eval()
    path = str(tmp_path / "fcn.onnx")
    torch.onnx.export(net, torch.randn(1, 3, 32, 40), path, input_names=["x"], output_names=["logits", "upsampled"],
                      dynamic_axes={"x": {0: "N", 2: "H", 3: "W"}}, opset_version=13)
    for level in (0, 2, 3):
        lib = tessera.build(tessera.onnx.load(path), opt_level=level, db=False)
        for shape in [(1, 3, 32, 40), (2, 3, 17, 23), (1, 3, 1, 1), (1, 3, 96, 9)]:
            x = rng.standard_normal(shape).astype("float32")
            with torch.no_grad():
                want = [array(t) for t in net(tensor(x))]
            for got, ref in zip(lib.run([x]), want):
                assert got.shape == ref.shape
                np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
        assert lib.symbolic and lib.symbolic_reason == "", lib.symbolic_reason


def test_a_depthwise_separable_network_of_symbolic_sizes_runs_channels_last(tmp_path, rng):
    """A MobileNet-style network (a 3-channel stem, depthwise and pointwise layers, strides, a
    residual, a clipped ReLU, the global mean, a classifier) exported with dynamic N, H and W
    runs channels-last as its static builds do (conv_nhwc kernels, 1x1 layers as products), at
    every size: against PyTorch, from the library and its module; an image smaller than an
    unpadded depthwise window is an error naming the node."""
    torch = pytest.importorskip("torch")
    from torch_numpy import array, tensor
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
            self.dw1, self.pw1 = nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.Conv2d(16, 24, 1)
            self.dw2, self.pw2 = nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=24), nn.Conv2d(24, 24, 1)
            self.dw3 = nn.Conv2d(24, 24, 3, groups=24)
            self.fc = nn.Linear(24, 10)

        def forward(self, x):
            x = torch.clamp(self.stem(x), 0, 6)
            x = self.pw1(torch.clamp(self.dw1(x), 0, 6))
            x = self.pw2(torch.clamp(self.dw2(x), 0, 6))
            x = x + self.pw2(x)
            return self.fc(torch.clamp(self.dw3(x), 0, 6).mean((2, 3)))

    torch.manual_seed(0)
    net = Net().eval()
    path = str(tmp_path / "mobile.onnx")
    torch.onnx.export(net, torch.randn(1, 3, 32, 40), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N", 2: "H", 3: "W"}}, opset_version=13)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    for shape in [(1, 3, 32, 40), (2, 3, 17, 23), (1, 3, 9, 9), (3, 3, 96, 13)]:
        x = rng.standard_normal(shape).astype("float32")
        with torch.no_grad():
            want = array(net(tensor(x)))
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], want, rtol=1e-4, atol=1e-4)
    assert lib.symbolic, lib.symbolic_reason
    ops = [k["op"] for k in lib.kernels]
    assert sum("conv_nhwc" in op for op in ops) == 4 and not any(op.startswith("fused_conv_") and "nhwc" not in op
                                                                for op in ops), ops
    with pytest.raises(tessera.Error, match=r"conv_nhwc.*needs its input \(padding included\) at least as large as its "
                                            r"window in spatial dimension 0.*at N = 1, H = 8, W = 16"):
        lib.run([rng.standard_normal((1, 3, 8, 16)).astype("float32")])


def test_convolutions_and_pools_of_symbolic_sizes_on_opencl(tmp_path, rng):
    """The same kernels for an OpenCL device (PoCL here): a strided blocked convolution, a
    depthwise one, a max pool, from the library and from its module, against numpy."""
    w1 = rng.standard_normal((16, 3, 3, 3)).astype("float32")
    w2 = rng.standard_normal((16, 1, 3, 3)).astype("float32")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Conv", ["c1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=16),
             helper.make_node("MaxPool", ["c2"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])]
    path = save(tmp_path, nodes, [vi("x", ["N", 3, "H", "W"])], [vi("y", None)],
                [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 32, "W": 32}, target="opencl")
    for n, h, w in [(1, 32, 32), (2, 13, 7), (1, 1, 1)]:
        x = rng.standard_normal((n, 3, h, w)).astype("float32")
        c2 = conv_reference(conv_reference(x, w1, None, [2, 2], [1, 1, 1, 1]), w2, None, None, [1, 1, 1, 1], None, 16)
        want = pool_reference(c2.astype("float32"), "max", [3, 3], [2, 2], [1, 1, 1, 1])
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], want, rtol=1e-4, atol=1e-4)


RESIZES = {
    "nearest x2": ({"mode": "nearest"}, [2, 2]),
    "nearest x2, asymmetric floor": ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                      "nearest_mode": "floor"}, [2, 2]),
    "linear x2, half_pixel": ({"mode": "linear"}, [2, 2]),
    "linear x0.5, pytorch_half_pixel": ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
                                        [0.5, 0.5]),
    "linear x1.5, align_corners": ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, [1.5, 2]),
    "cubic x2, exclude_outside": ({"mode": "cubic", "exclude_outside": 1}, [2, 1.25]),
    "linear x0.5 antialiased": ({"mode": "linear", "antialias": 1}, [0.5, 0.5]),
    "linear x1.5, half_pixel_symmetric": ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
                                          [1.5, 0.5]),
    "cubic x2, tf_crop_and_resize": ({"mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize",
                                      "extrapolation_value": 5.0, "roi": [0, 0, 0.25, -0.5, 1, 1, 0.75, 1.25]}, [2, 1.5]),
}


@pytest.mark.parametrize("case", list(RESIZES))
def test_resize_of_symbolic_height_and_width(tmp_path, rng, case):
    """Resize by scales (F.interpolate's scale_factor) of an image of symbolic size: its output
    size floor(size * scale) an expression of the size, the coordinates computed from the scale,
    against the static build of each size (which the ONNX suites check)."""
    attrs, hw_scales = RESIZES[case]
    attrs = dict(attrs)
    roi = attrs.pop("roi", None)
    nodes = [helper.make_node("Resize", ["x", "roi" if roi else "", "scales"], ["y"], **attrs)]
    inits = [numpy_helper.from_array(np.array([1, 1] + hw_scales, "float32"), "scales")]
    if roi:
        inits.append(numpy_helper.from_array(np.array(roi, "float32"), "roi"))
    path = save(tmp_path, nodes, [vi("x", ["N", 3, "H", "W"])], [vi("y", None)], inits, opset=18)
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 16, "W": 16})
    for n, h, w in [(1, 16, 16), (2, 7, 9), (1, 1, 1), (1, 2, 33)]:
        x = rng.standard_normal((n, 3, h, w)).astype("float32")
        want = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape}), db=False).run([x])[0]
        assert want.shape == (n, 3, int(np.floor(h * hw_scales[0])), int(np.floor(w * hw_scales[1])))
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], want, rtol=1e-5, atol=1e-5)


RESIZES_TO_SIZES = {
    "linear, half_pixel": {"mode": "linear"},
    "nearest, asymmetric floor": {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                  "nearest_mode": "floor"},
    "nearest, round_prefer_ceil": {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
    "linear, align_corners": {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
    "linear, pytorch_half_pixel": {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
    "cubic, exclude_outside": {"mode": "cubic", "exclude_outside": 1},
    "linear, half_pixel_symmetric": {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
}


def resize_to_skip_model(tmp_path, attrs):
    """x resized to the height and width of `skip` (F.interpolate(x, size=skip.shape[2:]) of a U-Net
    or FPN): the sizes Concat(Shape(x)[:2], Shape(skip)[2:]), of symbolic dimensions."""
    nodes = [helper.make_node("Shape", ["x"], ["x_shape"], end=2), helper.make_node("Shape", ["skip"], ["skip_hw"], start=2),
             helper.make_node("Concat", ["x_shape", "skip_hw"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **attrs)]
    return save(tmp_path, nodes, [vi("x", ["N", 3, "H", "W"]), vi("skip", ["N", 3, "H2", "W2"])], [vi("y", None)],
                opset=18)


@pytest.mark.parametrize("case", list(RESIZES_TO_SIZES))
def test_resize_to_sizes_of_symbolic_dimensions(tmp_path, rng, case):
    """Resize by sizes computed from other shapes: the scale of each axis, output / input size, is
    computed at run time; against the static build of each size."""
    path = resize_to_skip_model(tmp_path, RESIZES_TO_SIZES[case])
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 8, "W": 8, "H2": 16, "W2": 16})
    for (h, w), (h2, w2) in [((7, 9), (16, 5)), ((1, 1), (3, 4)), ((16, 16), (1, 1)), ((5, 6), (5, 6)), ((8, 8), (3, 13))]:
        x = rng.standard_normal((2, 3, h, w)).astype("float32")
        skip = np.zeros((2, 3, h2, w2), "float32")
        want = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape, "skip": skip.shape}), db=False).run([x, skip])[0]
        assert want.shape == (2, 3, h2, w2)
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x, skip])[0], want, rtol=1e-5, atol=1e-5)


def test_antialiased_resize_to_symbolic_sizes_is_built_per_size(tmp_path, rng):
    path = resize_to_skip_model(tmp_path, {"mode": "linear", "antialias": 1})
    lib = tessera.build(tessera.onnx.load(path), db=False)
    x = rng.standard_normal((1, 3, 12, 10)).astype("float32")
    skip = np.zeros((1, 3, 5, 4), "float32")
    want = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape, "skip": skip.shape}), db=False).run([x, skip])[0]
    np.testing.assert_allclose(lib.run([x, skip])[0], want, rtol=1e-5, atol=1e-5)
    assert not lib.symbolic and "antialias needs the scale of axis 2 as a constant" in lib.symbolic_reason


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_same_pads_with_a_stride_of_symbolic_sizes(tmp_path, rng, auto_pad):
    """SAME auto_pad with a stride (as tf2onnx writes a dynamic-size image model): the pads depend
    on the size (the output is ceil(size / stride)), so the input is padded explicitly by
    expressions of it, zeros before a Conv and the lowest value before a MaxPool; against the static
    build of each size, sizes of every remainder of the strides."""
    w1 = rng.standard_normal((8, 3, 3, 3)).astype("float32")
    w2 = rng.standard_normal((8, 8, 4, 2)).astype("float32")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], auto_pad=auto_pad, strides=[2, 2]),
             helper.make_node("MaxPool", ["c1"], ["p"], auto_pad=auto_pad, kernel_shape=[3, 3], strides=[2, 3]),
             helper.make_node("Conv", ["p", "w2"], ["y"], auto_pad=auto_pad, strides=[3, 2], dilations=[1, 2])]
    path = save(tmp_path, nodes, [vi("x", ["N", 3, "H", "W"])], [vi("y", None)],
                [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 32, "W": 32})
    for n, h, w in [(1, 32, 32), (2, 17, 23), (1, 1, 1), (1, 6, 13), (1, 45, 7)]:
        x = rng.standard_normal((n, 3, h, w)).astype("float32")
        want = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape}), db=False).run([x])[0]
        h1, w1_ = -(-h // 2), -(-w // 2)
        assert want.shape == (n, 8, -(-(-(-h1 // 2)) // 3), -(-(-(-w1_ // 3)) // 2))
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], want, rtol=1e-4, atol=1e-4)


def same_pads(size, kernel, strides, upper):
    """SAME auto_pad's pads: in total (out - 1) * stride + kernel - size, the odd one after (UPPER)
    or before."""
    pads = [0] * (2 * len(size))
    for d in range(len(size)):
        total = max(0, (-(-size[d] // strides[d]) - 1) * strides[d] + kernel[d] - size[d])
        pads[d], pads[d + len(size)] = (total // 2, total - total // 2) if upper else (total - total // 2, total // 2)
    return pads


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_same_pads_with_a_stride_of_average_and_p_norm_pools_of_symbolic_sizes(tmp_path, rng, auto_pad):
    """AveragePool and LpPool with SAME pads and a stride over symbolic sizes: the input padded by
    zeros (they add nothing to a sum or a p-norm); an average not counting the padding divides by
    the share of each window on the input (the same pools over ones). Against the static build of
    each size, and the windows of the reference."""
    nodes = [helper.make_node("AveragePool", ["x"], ["a"], auto_pad=auto_pad, kernel_shape=[3, 2], strides=[2, 3]),
             helper.make_node("AveragePool", ["x"], ["ac"], auto_pad=auto_pad, kernel_shape=[3, 3], strides=[2, 2],
                              count_include_pad=1),
             helper.make_node("LpPool", ["x"], ["l"], auto_pad=auto_pad, kernel_shape=[2, 3], strides=[3, 2], p=2)]
    path = save(tmp_path, nodes, [vi("x", ["N", 3, "H", "W"])], [vi("a", None), vi("ac", None), vi("l", None)])
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 32, "W": 32})
    for n, h, w in [(1, 32, 32), (2, 17, 23), (1, 1, 1), (1, 6, 13), (1, 2, 8)]:
        x = rng.standard_normal((n, 3, h, w)).astype("float32")
        static = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape}), db=False).run([x])
        upper = auto_pad == "SAME_UPPER"
        want = [pool_reference(x, "avg", [3, 2], [2, 3], same_pads((h, w), [3, 2], [2, 3], upper)),
                pool_reference(x, "avg", [3, 3], [2, 2], same_pads((h, w), [3, 3], [2, 2], upper), count_include_pad=True),
                pool_reference(x, "lp", [2, 3], [3, 2], same_pads((h, w), [2, 3], [3, 2], upper))]
        for got, reference, expected in zip(lib.run([x]), static, want):
            np.testing.assert_allclose(reference, expected, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        for got, expected in zip(module.run([x]), want):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices_of_symbolic_sizes(tmp_path, rng, storage_order):
    """MaxPool's Indices output over a symbolic batch, height and width: flat indices into the input
    as it is (row-major, or its spatial dimensions column-major with storage_order 1), computed
    from the sizes of each call; against numpy at sizes of every remainder of the stride."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1],
                            storage_order=storage_order)
    path = save(tmp_path, [node], [vi("x", ["N", 2, "H", "W"])], [vi("y", None), vi("i", None, TensorProto.INT64)])
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 16, "W": 16})
    for n, h, w in [(1, 16, 16), (2, 9, 7), (1, 2, 1), (3, 5, 12)]:
        x = rng.permutation(n * 2 * h * w).reshape(n, 2, h, w).astype("float32")  # distinct values: one argmax
        want = pool_reference(x, "max", [3, 2], [2, 2], [1, 0, 1, 1])
        flat = x.transpose(0, 1, 3, 2) if storage_order else x
        position = {v: i for i, v in enumerate(flat.ravel())}
        indices = np.vectorize(position.get)(want).astype("int64")
        for runner in (lib, module):
            y, i = runner.run([x])
            np.testing.assert_array_equal(y, want)
            np.testing.assert_array_equal(i, indices)


def test_max_unpool_to_an_output_shape_given_at_run_time(tmp_path, rng):
    """MaxUnpool of MaxPool's values and indices over a symbolic batch, height and width, to an
    output_shape the caller gives at each run (a module takes it as sizes): the pooled values at
    their positions, zeros elsewhere and in the rows and columns past the unpooled size. An
    output_shape smaller than the unpooled size, or of other channels, is an error naming the node."""
    nodes = [helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MaxUnpool", ["p", "i", "shape"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                              name="unpool")]
    path = save(tmp_path, nodes, [vi("x", ["N", 2, "H", "W"]), vi("shape", [4], TensorProto.INT64)], [vi("y", None)])
    lib = tessera.build(tessera.onnx.load(path), db=False, size_hints={"N": 1, "H": 16, "W": 16})
    lib.export(str(tmp_path / "m.so"))  # a program: built for every size ahead of its first run
    module = tessera.load(str(tmp_path / "m.so"))
    for n, h, w, extra in [(1, 16, 16, (0, 0)), (2, 6, 10, (1, 3)), (1, 2, 2, (2, 0)), (3, 14, 8, (0, 5))]:
        x = rng.permutation(n * 2 * h * w).reshape(n, 2, h, w).astype("float32")
        shape = np.array([n, 2, h + extra[0], w + extra[1]], "int64")
        pooled = x.reshape(n, 2, h // 2, 2, w // 2, 2).max(axis=(3, 5))
        want = np.zeros(shape, "float32")
        want[:, :, :h, :w] = np.where(x == np.repeat(np.repeat(pooled, 2, 2), 2, 3), x, 0)
        for runner in (lib, module):
            np.testing.assert_array_equal(runner.run([x, shape])[0], want)
    assert lib.symbolic, lib.symbolic_reason
    x = rng.standard_normal((1, 2, 8, 8)).astype("float32")
    for shape, what in [([1, 2, 7, 8], "dimension 2, shape_value2, at least the unpooled size"),
                        ([1, 3, 8, 8], "dimension 1, shape_value1, equal to the data's 2")]:
        for runner in (lib, module):
            with pytest.raises(tessera.Error, match=f"node 'unpool'.*{what}"):
                runner.run([x, np.array(shape, "int64")])


# (channels, out_channels / groups, kernel, attrs) of ConvTranspose of symbolic spatial sizes.
CONV_TRANSPOSES = {
    "2x up, kernel 4, pads 1": (8, 4, (4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "output_padding, dilation": (4, 3, (3, 3), {"strides": [2, 3], "output_padding": [1, 0], "dilations": [1, 2]}),
    "grouped": (6, 2, (3, 3), {"strides": [2, 2], "group": 3, "pads": [0, 1, 1, 0]}),
    "SAME_UPPER": (4, 4, (3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "1-D": (4, 5, (5,), {"strides": [3], "pads": [2, 1]}),
    "3-D": (2, 3, (2, 3, 3), {"strides": [2, 1, 2], "pads": [0, 1, 1, 0, 1, 0]}),
}


@pytest.mark.parametrize("case", list(CONV_TRANSPOSES))
def test_conv_transpose_of_symbolic_spatial_sizes(tmp_path, rng, case):
    """A decoder's upsampling (torch's ConvTranspose2d) at any image size from one build, against
    the static build of each size; an empty image is an error naming the node."""
    channels, per_group, kernel, attrs = CONV_TRANSPOSES[case]
    rank = len(kernel)
    w = rng.standard_normal((channels, per_group) + kernel).astype("float32")
    b = rng.standard_normal(per_group * attrs.get("group", 1)).astype("float32")
    spatial = ["H", "W", "D"][:rank]
    path = save(tmp_path, [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)],
                [vi("x", ["N", channels] + spatial)], [vi("y", None)],
                [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    lib, module = built_once(tmp_path, path, dict(zip(["N"] + spatial, [1] + [8] * rank)))
    for size in [(1, 8, 8, 8), (2, 5, 11, 3), (1, 1, 1, 1)]:
        x = rng.standard_normal((size[0], channels) + size[1:1 + rank]).astype("float32")
        want = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape}), db=False).run([x])[0]
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], want, rtol=1e-4, atol=1e-4)
    with pytest.raises(tessera.Error,
                       match=r"conv_transpose \(node 'y'\) needs an input of at least 1 in spatial dimension 0"):
        lib.run([np.zeros((1, channels, 0) + (4,) * (rank - 1), "float32")])


def quantized_model(tmp_path, rng, qlinear_attrs, integer_attrs, integer_kernel):
    """QLinearConv (x_scale 0.05, w_scale 0.1, y_scale 0.2, zero points 128, 0 and 100) and
    ConvInteger (x zero point 128) of one uint8 image of symbolic size: the path and both weights."""
    w = rng.integers(-5, 5, (4, 3, 3, 3)).astype("int8")
    w2 = rng.integers(0, 255, (2, 3) + integer_kernel).astype("uint8")
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], **qlinear_attrs),
             helper.make_node("ConvInteger", ["x", "w2", "xz"], ["z"], **integer_attrs)]
    inits = [numpy_helper.from_array(np.array(v, "float32"), k) for k, v in {"xs": 0.05, "ws": 0.1, "ys": 0.2}.items()]
    inits += [numpy_helper.from_array(np.array(128, "uint8"), "xz"), numpy_helper.from_array(w, "w"),
              numpy_helper.from_array(np.array(0, "int8"), "wz"), numpy_helper.from_array(np.array(100, "uint8"), "yz"),
              numpy_helper.from_array(w2, "w2")]
    path = save(tmp_path, nodes, [vi("x", ["N", 3, "H", "W"], TensorProto.UINT8)],
                [vi("y", None, TensorProto.UINT8), vi("z", None, TensorProto.INT32)], inits)
    return path, w, w2


# round_half_even(sum * (x_scale * w_scale / y_scale)) in float32, in ONNX's order.
QLINEAR_MULTIPLIER = np.float32(np.float32(0.05) * np.float32(0.1)) / np.float32(0.2)


def test_quantized_convolutions_of_symbolic_sizes(tmp_path, rng):
    """QLinearConv and ConvInteger of an image of symbolic size, against numpy: int32 sums, then
    round_half_even(sum * (x_scale * w_scale / y_scale)) in float32, in ONNX's order. The scales
    put products on ties (-180 * 0.025000002 is -4.5000005), which a multiplier reassociated by the
    compiler, 0.05 * (0.1 / 0.2), rounds the other way."""
    path, w, w2 = quantized_model(tmp_path, rng, {"pads": [1, 1, 1, 1], "strides": [2, 2]}, {}, (2, 2))
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 16, "W": 16})
    for n, h, wd in [(1, 9, 7), (2, 4, 5), (1, 16, 16)]:
        x = rng.integers(0, 255, (n, 3, h, wd)).astype("uint8")
        sums = conv_reference(x.astype("float64") - 128, w.astype("float64"), None, [2, 2], [1, 1, 1, 1])
        want_y = np.clip(np.round((sums.astype("float32") * QLINEAR_MULTIPLIER).astype("float32")) + 100, 0,
                         255).astype("uint8")
        want_z = conv_reference(x.astype("float64") - 128, w2.astype("float64"), None, None, None).astype("int32")
        for runner in (lib, module):
            y, z = runner.run([x])
            np.testing.assert_array_equal(y, want_y)
            np.testing.assert_array_equal(z, want_z)


def test_quantized_convolutions_with_same_pads_and_a_stride_of_symbolic_sizes(tmp_path, rng):
    """SAME pads with a stride over symbolic sizes before QLinearConv and ConvInteger: the input
    padded by its zero point, which then adds nothing; against numpy at sizes of every remainder.
    A zero point given at run time leaves the pads needing constant sizes: each size is built on
    its first run, and the reason says so."""
    path, w, w2 = quantized_model(tmp_path, rng, {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
                                  {"auto_pad": "SAME_LOWER", "strides": [2, 3]}, (2, 3))
    lib, module = built_once(tmp_path, path, {"N": 1, "H": 16, "W": 16})
    for n, h, wd in [(1, 9, 7), (2, 4, 5), (1, 16, 16), (1, 1, 2)]:
        x = rng.integers(0, 255, (n, 3, h, wd)).astype("uint8")
        centered = x.astype("float64") - 128
        sums = conv_reference(centered, w.astype("float64"), None, [2, 2], same_pads((h, wd), (3, 3), (2, 2), True))
        want_y = np.clip(np.round((sums.astype("float32") * QLINEAR_MULTIPLIER).astype("float32")) + 100, 0,
                         255).astype("uint8")
        want_z = conv_reference(centered, w2.astype("float64"), None, [2, 3], same_pads((h, wd), (2, 3), (2, 3), False))
        for runner in (lib, module):
            y, z = runner.run([x])
            np.testing.assert_array_equal(y, want_y)
            np.testing.assert_array_equal(z, want_z.astype("int32"))

    given = [helper.make_node("ConvInteger", ["x", "w2", "xz"], ["z"], auto_pad="SAME_UPPER", strides=[2, 2])]
    path = save(tmp_path, given, [vi("x", ["N", 3, "H", "W"], TensorProto.UINT8), vi("xz", [], TensorProto.UINT8)],
                [vi("z", None, TensorProto.INT32)], [numpy_helper.from_array(w2, "w2")])
    lib = tessera.build(tessera.onnx.load(path), db=False)
    x = rng.integers(0, 255, (1, 3, 5, 6)).astype("uint8")
    want = conv_reference(x.astype("float64") - 7, w2.astype("float64"), None, [2, 2], same_pads((5, 6), (2, 3), (2, 2), True))
    np.testing.assert_array_equal(lib.run([x, np.array(7, "uint8")])[0], want.astype("int32"))
    assert not lib.symbolic and "depend on the input size" in lib.symbolic_reason, lib.symbolic_reason
