"""GridSample (against PyTorch's grid_sample) and RoiAlign (against a numpy port of ONNX Runtime's
kernel, and torchvision's roi_align for the average), DeformConv against torchvision's deform_conv2d."""
import math

import numpy as np
import pytest

import tessera
from extra_testing import assert_close, run


def torch_grid_sample(x, grid, mode, padding, align):
    torch = pytest.importorskip("torch")
    import torch_numpy
    y = torch.nn.functional.grid_sample(torch_numpy.tensor(x.astype(np.float64)), torch_numpy.tensor(grid.astype(np.float64)),
                                        mode=mode, padding_mode=padding, align_corners=bool(align))
    return torch_numpy.array(y)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_modes(rng, mode, padding, align):
    x = rng.standard_normal((2, 3, 5, 19)).astype("float32")
    # Coordinates well outside [-1, 1] exercise the padding (reflection folds several times).
    grid = rng.uniform(-3.5, 3.5, (2, 4, 17, 2)).astype("float32")
    grid[0, 0, :5] = [[-1, -1], [1, 1], [0, 0], [-1, 1], [0.5, -0.25]]
    (y,) = run("GridSample", [x, grid], {"mode": mode, "padding_mode": padding, "align_corners": align}, opset=16)
    assert_close(y, torch_grid_sample(x, grid, mode, padding, align), "float32", 1e-4)


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (1, 2, 1, 7), (3, 1, 6, 1)])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "reflection"])
def test_grid_sample_size_one_axes(rng, shape, mode, padding):
    x = rng.standard_normal(shape).astype("float64")
    grid = rng.uniform(-2, 2, (shape[0], 3, 2, 2)).astype("float64")
    for align in (0, 1):
        (y,) = run("GridSample", [x, grid], {"mode": mode, "padding_mode": padding, "align_corners": align}, opset=16)
        assert_close(y, torch_grid_sample(x, grid, mode, padding, align), "float64", 1e-9)


def test_grid_sample_non_finite_grid_reads_nothing_out_of_bounds(rng):
    x = rng.standard_normal((1, 2, 4, 4)).astype("float32")
    grid = np.array([[[[np.nan, 0], [np.inf, 0], [-np.inf, np.inf], [1e30, -1e30]]]], np.float32)
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            (y,) = run("GridSample", [x, grid], {"mode": mode, "padding_mode": padding}, opset=16)
            assert y.shape == (1, 2, 1, 4)


def test_grid_sample_float16(rng):
    x = rng.standard_normal((1, 2, 3, 4)).astype("float16")
    grid = rng.uniform(-1.2, 1.2, (1, 5, 3, 2)).astype("float16")
    (y,) = run("GridSample", [x, grid], opset=16)
    assert_close(y, torch_grid_sample(x, grid, "bilinear", "zeros", 0), "float16", 1e-2)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_volumes(rng, mode, padding, align):
    """Opset 20: [N, C, D, H, W] sampled at [N, Do, Ho, Wo, 3], trilinear or nearest."""
    x = rng.standard_normal((2, 3, 4, 5, 7)).astype("float32")
    grid = rng.uniform(-2.5, 2.5, (2, 3, 2, 5, 3)).astype("float32")
    (y,) = run("GridSample", [x, grid], {"mode": mode, "padding_mode": padding, "align_corners": align}, opset=20)
    want = torch_grid_sample(x, grid, "bilinear" if mode == "linear" else mode, padding, align)
    assert_close(y, want, "float32", 1e-4)


def test_grid_sample_errors(rng):
    x = rng.standard_normal((1, 2, 3, 4)).astype("float32")
    with pytest.raises(tessera.Error, match="mode"):
        run("GridSample", [x, np.zeros((1, 2, 2, 2), np.float32)], {"mode": "linear"}, opset=16)
    with pytest.raises(tessera.Error, match="grid must be"):
        run("GridSample", [x, np.zeros((2, 2, 2, 2), np.float32)], opset=16)
    volume = rng.standard_normal((1, 2, 3, 4, 5)).astype("float32")
    with pytest.raises(tessera.Error, match="bicubic sampling of volumes is not supported"):
        run("GridSample", [volume, np.zeros((1, 2, 2, 2, 3), np.float32)], {"mode": "cubic"}, opset=20)


def roi_align_ref(x, rois, batch_indices, mode, out_h, out_w, ratio, scale, half_pixel):
    """ONNX Runtime's RoiAlign kernel, sample by sample."""
    n, c, height, width = x.shape
    y = np.zeros((len(rois), c, out_h, out_w))
    off = 0.5 if half_pixel else 0.0
    for r, roi in enumerate(rois.astype(np.float64)):
        x1, y1, x2, y2 = roi * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / out_h, rw / out_w
        gh = ratio if ratio > 0 else int(math.ceil(rh / out_h))
        gw = ratio if ratio > 0 else int(math.ceil(rw / out_w))
        img = x[batch_indices[r]].astype(np.float64)
        for ph in range(out_h):
            for pw in range(out_w):
                acc, best = np.zeros(c), None
                for iy in range(gh):
                    yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                        if yy < -1 or yy > height or xx < -1 or xx > width:
                            v = np.zeros(c)
                        else:
                            yc, xc = max(yy, 0.0), max(xx, 0.0)
                            yl, xl = int(yc), int(xc)
                            if yl >= height - 1:
                                yl = yh = height - 1
                                yc = float(yl)
                            else:
                                yh = yl + 1
                            if xl >= width - 1:
                                xl = xh = width - 1
                                xc = float(xl)
                            else:
                                xh = xl + 1
                            ly, lx = yc - yl, xc - xl
                            hy, hx = 1 - ly, 1 - lx
                            t = [hy * hx * img[:, yl, xl], hy * lx * img[:, yl, xh], ly * hx * img[:, yh, xl], ly * lx * img[:, yh, xh]]
                            v = np.maximum(np.maximum(np.maximum(t[0], t[1]), t[2]), t[3]) if mode == "max" else sum(t)
                        acc += v
                        best = v if best is None else np.maximum(best, v)
                if mode == "max":
                    y[r, :, ph, pw] = 0 if best is None else best
                else:
                    y[r, :, ph, pw] = acc / max(gh * gw, 1)
    return y


ROIS = np.array([[0, 0, 9, 9], [0, 5, 4, 9], [5, 5, 9, 9], [-3, 2.5, 4.2, 14], [7.5, 1, 2, 3.5], [-40, -30, 60, 45],
                 [3.3, 3.3, 3.4, 3.9]], np.float32)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("half_pixel", [0, 1])
@pytest.mark.parametrize("ratio", [0, 2, 3])
@pytest.mark.parametrize("constant_rois", [False, True])
def test_roi_align(rng, mode, half_pixel, ratio, constant_rois):
    x = rng.standard_normal((2, 3, 10, 13)).astype("float32")
    batch_indices = np.array([0, 1, 1, 0, 1, 0, 1], np.int64)
    scale = 0.75
    attrs = {"mode": mode, "output_height": 3, "output_width": 4, "sampling_ratio": ratio, "spatial_scale": scale,
             "coordinate_transformation_mode": "half_pixel" if half_pixel else "output_half_pixel"}
    (y,) = run("RoiAlign", [x, ROIS, batch_indices], attrs, opset=16, constants=(1,) if constant_rois else ())
    want = roi_align_ref(x, ROIS, batch_indices, mode, 3, 4, ratio, scale, half_pixel)
    assert_close(y, want, "float32", 1e-4)


def test_roi_align_matches_torchvision(rng):
    ops = pytest.importorskip("torchvision.ops")
    import torch_numpy
    x = rng.standard_normal((2, 4, 11, 9)).astype("float64")
    rois = (rng.uniform(0, 1, (6, 4)) * [9, 11, 9, 11]).astype("float64")
    rois[:, 2:] += rois[:, :2]
    batch = np.array([0, 1, 0, 1, 1, 0], np.int64)
    for aligned in (False, True):
        for ratio in (0, 2):
            attrs = {"output_height": 2, "output_width": 3, "sampling_ratio": ratio, "spatial_scale": 0.5,
                     "coordinate_transformation_mode": "half_pixel" if aligned else "output_half_pixel"}
            (y,) = run("RoiAlign", [x, rois, batch], attrs, opset=16)
            boxes = torch_numpy.tensor(np.concatenate([batch[:, None].astype(np.float64), rois], axis=1))
            want = torch_numpy.array(ops.roi_align(torch_numpy.tensor(x), boxes, (2, 3), 0.5, ratio, aligned))
            assert_close(y, want, "float64", 1e-9)


def test_roi_align_opset10_is_output_half_pixel(rng):
    x = rng.standard_normal((1, 2, 6, 6)).astype("float32")
    rois = np.array([[0.5, 1, 4, 5.5]], np.float32)
    (y,) = run("RoiAlign", [x, rois, np.zeros(1, np.int64)], {"output_height": 2, "output_width": 2}, opset=10)
    assert_close(y, roi_align_ref(x, rois, [0], "avg", 2, 2, 0, 1.0, False), "float32", 1e-4)


def test_roi_align_batch_index_out_of_range_stays_in_bounds(rng):
    x = rng.standard_normal((2, 1, 4, 4)).astype("float32")
    rois = np.array([[0, 0, 3, 3], [0, 0, 3, 3]], np.float32)
    (y,) = run("RoiAlign", [x, rois, np.array([5, -7], np.int64)], {"sampling_ratio": 1}, opset=16)
    want = roi_align_ref(x, rois, [1, 0], "avg", 1, 1, 1, 1.0, True)
    assert_close(y, want, "float32", 1e-5)


def test_roi_align_errors(rng):
    x = rng.standard_normal((1, 1, 4, 4)).astype("float32")
    rois = np.zeros((1, 4), np.float32)
    with pytest.raises(tessera.Error, match="mode"):
        run("RoiAlign", [x, rois, np.zeros(1, np.int64)], {"mode": "sum"}, opset=16)
    with pytest.raises(tessera.Error, match="rois must be"):
        run("RoiAlign", [x, np.zeros((1, 5), np.float32), np.zeros(1, np.int64)], opset=16)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("half_pixel", [0, 1])
def test_roi_align_adaptive_sampling_of_huge_rois(rng, mode, half_pixel):
    # Far more samples per bin than the kernel visits: only those inside the image are read.
    x = rng.standard_normal((1, 2, 10, 7)).astype("float32")
    rois = np.array([[-100, -100, 110, 120], [-3, 4, 6, 300], [2, 2, 5, 5]], np.float32)
    attrs = {"mode": mode, "coordinate_transformation_mode": "half_pixel" if half_pixel else "output_half_pixel"}
    (y,) = run("RoiAlign", [x, rois, np.zeros(3, np.int64)], attrs, opset=16)
    assert_close(y, roi_align_ref(x, rois, [0, 0, 0], mode, 1, 1, 0, 1.0, half_pixel), "float32", 1e-4)


@pytest.mark.parametrize("groups,offset_groups,stride,dilation,pads,w", [
    (1, 1, (1, 1), (1, 1), (0, 0, 0, 0), 9),
    (2, 2, (2, 1), (1, 2), (1, 0, 2, 1), 9),
    (3, 1, (1, 3), (2, 1), (2, 2, 0, 1), 9),
    (2, 3, (1, 1), (1, 1), (1, 1, 1, 1), 37),  # output rows longer than a vector
])
def test_deform_conv_matches_torchvision(rng, groups, offset_groups, stride, dilation, pads, w):
    ops = pytest.importorskip("torchvision.ops")
    import torch_numpy
    n, c, h, oc, kh, kw = 2, 6, 7, 6, 3, 2
    x = rng.standard_normal((n, c, h, w))
    weight = rng.standard_normal((oc, c // groups, kh, kw))
    bias = rng.standard_normal(oc)
    oh = (h + pads[0] + pads[2] - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (w + pads[1] + pads[3] - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    # Offsets move taps by up to several pixels, well outside the image too, with fractions.
    offset = rng.uniform(-4, 4, (n, offset_groups * kh * kw * 2, oh, ow))
    mask = rng.uniform(0, 1, (n, offset_groups * kh * kw, oh, ow))
    attrs = {"group": groups, "offset_group": offset_groups, "strides": list(stride), "dilations": list(dilation),
             "pads": list(pads)}
    (y,) = run("DeformConv", [x, weight, offset, bias, mask], attrs, opset=19)
    # torchvision pads symmetrically: the image is padded by the rest of each side first.
    sym = (min(pads[0], pads[2]), min(pads[1], pads[3]))
    extra = np.pad(x, ((0, 0), (0, 0), (pads[0] - sym[0], pads[2] - sym[0]), (pads[1] - sym[1], pads[3] - sym[1])))
    t = torch_numpy.tensor
    want = ops.deform_conv2d(t(extra), t(offset), t(weight), t(bias), stride=stride, padding=sym, dilation=dilation,
                             mask=t(mask))
    assert_close(y, torch_numpy.array(want), "float64", 1e-9)
