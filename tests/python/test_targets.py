"""Every CPU target computes right: the models of scripts/make_models.py and the 23 convolution
shapes of ResNet-50 built for the host (AVX-512 here), x86-64-v3 (AVX2) and x86-64-v2 (SSE4.2)
match PyTorch, one optimization level each (level 3: the packed layouts, Winograd and the
channels-last form are where vector widths matter most). AArch64 runs under qemu in
test_aarch64.py."""
import os
import sys

import numpy as np
import pytest

import tessera

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
MODEL_DIR = os.path.join(ROOT, "models")
TARGETS = ["llvm", "llvm -mcpu=x86-64-v3", "llvm -mcpu=x86-64-v2"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["resnet18", "resnet34", "resnet50", "mobilenet_v2", "transformer"])
def test_model_on_every_target(name, target):
    import make_models
    path = make_models.ensure(name, MODEL_DIR)
    x = np.load(os.path.join(MODEL_DIR, f"{name}.input.npy"))
    ref = np.load(os.path.join(MODEL_DIR, f"{name}.output.npy"))
    out = tessera.build(tessera.onnx.load(path), target=target, opt_level=3, db=False).run([x])[0]
    rel = np.abs(out - ref).max() / np.abs(ref).max()
    assert rel <= 1e-3, f"{name} for {target}: relative error {rel:.2e}"


def conv_model(c, m, size, kernel, stride, rng):
    from onnx import TensorProto, helper, numpy_helper
    w = (rng.standard_normal((m, c, kernel, kernel)) * (2.0 / (c * kernel * kernel)) ** 0.5).astype("float32")
    b = rng.standard_normal(m).astype("float32") * 0.1
    pad = kernel // 2
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[pad] * 4, strides=[stride] * 2)
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), w, b


@pytest.mark.parametrize("target", TARGETS)
def test_resnet50_layer_shapes_on_every_target(target, tmp_path):
    import onnx
    torch = pytest.importorskip("torch")
    import torch_numpy
    from common import RESNET50_CONVS
    rng = np.random.default_rng(0)
    for name, c, m, size, kernel, stride in RESNET50_CONVS:
        model, w, b = conv_model(c, m, size, kernel, stride, rng)
        path = str(tmp_path / f"{name}.onnx")
        onnx.save(model, path)
        x = rng.standard_normal((1, c, size, size)).astype("float32")
        ref = torch_numpy.array(torch.nn.functional.conv2d(torch_numpy.tensor(x), torch_numpy.tensor(w), torch_numpy.tensor(b),
                                                           stride=stride, padding=kernel // 2))
        out = tessera.build(tessera.onnx.load(path), target=target, opt_level=3, db=False).run([x])[0]
        rel = np.abs(out - ref).max() / np.abs(ref).max()
        assert rel <= 1e-4, f"{name} for {target}: relative error {rel:.2e}"


def test_each_target_sizes_its_layouts_by_its_registers(tmp_path):
    """The same convolution's packed weight is laid out for the registers of the target it is
    built for (named on the call), and so is its kernel: 64-byte vectors on an AVX-512 host, 32
    on AVX2, 16 on SSE; each is computed right (above)."""
    import onnx
    from common import has_avx512
    model, _, _ = conv_model(64, 64, 14, 3, 2, np.random.default_rng(1))
    path = str(tmp_path / "conv.onnx")
    onnx.save(model, path)
    widths = {"llvm": 64 if has_avx512() else 32, "llvm -mcpu=x86-64-v3": 32, "llvm -mcpu=x86-64-v2": 16}
    workloads = set()
    for target, width in widths.items():
        (task,) = tessera.autotune.tasks(tessera.onnx.load(path), target, opt_level=3)
        assert f"vector_bytes={width}" in task["kernel"], (target, task["kernel"])
        workloads.add(task["workload"])
    assert len(workloads) == len(set(widths.values()))
