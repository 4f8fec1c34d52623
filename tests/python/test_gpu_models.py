"""Whole models on GPU targets with the default GPU schedules (issue 24): the models of
scripts/make_models.py run on PoCL's OpenCL device and match the CPU build and PyTorch; every
kernel of each compiles for CUDA sm_80 and sm_90 through NVRTC and ptxas (and the models run on
a CUDA device where one is found: scripts/test_gpu.sh)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tessera
from package_under_test import ROOT, program

sys.path.insert(0, os.path.join(ROOT, "scripts"))
MODEL_DIR = os.path.join(ROOT, "models")
MODELS = ["resnet18", "resnet34", "resnet50", "mobilenet_v2", "transformer"]


def model(name):
    import make_models  # needs python3-torch and python3-torchvision, which scripts/test.sh installs
    path = make_models.ensure(name, MODEL_DIR)
    x = np.load(os.path.join(MODEL_DIR, f"{name}.input.npy"))
    return tessera.onnx.load(path), x, np.load(os.path.join(MODEL_DIR, f"{name}.output.npy"))


def run_on(target, name):
    mod, x, torch_out = model(name)
    out = tessera.build(mod, target=target, db=False).run([x])[0]
    cpu = tessera.build(mod, db=False).run([x])[0]
    scale = np.abs(torch_out).max()
    assert np.abs(out - cpu).max() <= 1e-5 * scale, f"{name} on {target}: against the CPU build"
    assert np.abs(out - torch_out).max() <= 1e-3 * scale, f"{name} on {target}: against PyTorch"


@pytest.mark.parametrize("name", MODELS)
def test_model_on_opencl_matches_the_cpu_and_pytorch(name):
    run_on("opencl", name)


@pytest.mark.skipif(not tessera.device("cuda").exists, reason="no CUDA driver and device here (scripts/test_gpu.sh)")
@pytest.mark.parametrize("name", MODELS)
def test_model_on_cuda_matches_the_cpu_and_pytorch(name):
    run_on("cuda", name)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", MODELS)
def test_every_kernel_compiles_for_cuda(name, arch, tmp_path):
    model(name)
    proc = subprocess.run([program("tessera"), "inspect", os.path.join(MODEL_DIR, f"{name}.onnx"), "-t", f"cuda -arch={arch}",
                           "--source", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    kernels = int(re.search(r"of (\d+) kernels", proc.stdout)[1])
    reports = [line for f in tmp_path.glob("*.ptxas.txt") for line in f.read_text().splitlines()]
    assert len(list(tmp_path.glob("*.ptx"))) == kernels and len(reports) >= kernels
    for line in reports:  # ptxas accepted each kernel and says what it uses
        registers = int(re.search(r": (\d+) registers", line)[1])
        assert 0 < registers <= 255, line


def test_the_cli_runs_a_model_on_opencl(tmp_path):
    _, x, torch_out = model("transformer")
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([program("tessera"), "run", os.path.join(MODEL_DIR, "transformer.onnx"), "-t", "opencl",
                           "--input", f"input={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = np.load(tmp_path / "out" / "output0.npy")
    assert np.abs(out - torch_out).max() <= 1e-3 * np.abs(torch_out).max()


def test_device_inputs_give_device_outputs_and_wrong_devices_are_named():
    mod, x, _ = model("transformer")
    lib = tessera.build(mod, target="opencl", db=False)
    opencl = tessera.device("opencl")
    (out,) = lib.run([tessera.nd.array(x, device=opencl)])
    assert isinstance(out, tessera.nd.NDArray) and out.device == opencl
    np.testing.assert_array_equal(out.numpy(), lib.run([x])[0])
    assert lib.run({mod.input_names[0]: x})[0].dtype == np.float32
    with pytest.raises(tessera.Error, match=r"the array is on opencl\(0\); the graph runs on cpu\(0\)"):
        tessera.build(mod, db=False).run([tessera.nd.array(x, device=opencl)])


def test_matrix_products_stage_panels_in_shared_memory_only_where_it_is_on_the_chip():
    """The default schedule of the transformer's matrix products: register tiles everywhere, and
    shared-memory panels for CUDA (on-chip shared memory) but not on PoCL, whose local memory is
    the CPU's global memory (where they measured slower: benchmarks/gpu.py)."""
    mod, _, _ = model("transformer")

    def lowered(target):
        return [k["lowered"] for k in tessera.build(mod, target=target, db=False, jit=False).kernels
                if k["op"].startswith("fused_matmul")]

    cuda, opencl = lowered("cuda -arch=sm_80"), lowered("opencl")
    assert cuda and all("(shared)" in k and "barrier()" in k and "(local)" in k for k in cuda)
    assert tessera.device("opencl").dedicated_shared_memory or not any("(shared)" in k for k in opencl)
    assert all("(local)" in k for k in opencl)


def test_a_fused_group_of_many_ops_runs_on_opencl(tmp_path):
    """A group fusing 40 ops: its kernel's name keeps the first ones' names (PoCL names a cache file
    after the kernel, and a name past 255 bytes aborted the process when the kernel first ran)."""
    import onnx
    from onnx import helper, TensorProto
    ops = ["Sin", "Cos", "Abs", "Neg"] * 10
    nodes = [helper.make_node(op, [f"v{i}"], [f"v{i + 1}"]) for i, op in enumerate(ops)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [3, 70])],
                              [helper.make_tensor_value_info(f"v{len(ops)}", TensorProto.FLOAT, [3, 70])])
    path = str(tmp_path / "chain.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    lib = tessera.build(tessera.onnx.load(path), target="opencl", db=False)
    assert max(len(k["name"]) for k in lib.kernels) <= 96
    x = np.random.default_rng(0).standard_normal((3, 70)).astype("float32")
    want = x
    for _ in range(10):
        want = -np.abs(np.cos(np.sin(want)))
    np.testing.assert_allclose(lib.run([x])[0], want, rtol=1e-5, atol=1e-6)
