"""Modules for devices (issue 24, item 3): a model built for opencl or cuda exports as one file
holding its device code (OpenCL C, PTX), plan and weights, with no host code; tessera.load, the
C API (examples/deploy) and `tessera run` run it on a device of its kind, and refuse, naming
what is wrong, a device of another kind, a missing one or a missing driver. A model of symbolic
sizes exports as one device module that runs at any size (issue 25, item 5)."""
import os

import numpy as np
import onnx
import pytest

import tessera
from test_deploy import ROOT, BUILD, TESSERA, run, small_cnn, top5

CUDA = tessera.device("cuda").exists


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    d = tmp_path_factory.mktemp("cnn_device")
    mod = tessera.onnx.load(str(small_cnn(d / "cnn.onnx")))
    x = np.random.default_rng(1).standard_normal((2, 3, 16, 16)).astype("float32")
    np.save(d / "x.npy", x)
    return {"dir": d, "mod": mod, "x": x, "cpu": tessera.build(mod, db=False).run([x])}


def test_an_opencl_module_runs_as_the_in_process_build_does(cnn, tmp_path):
    lib = tessera.build(cnn["mod"], target="opencl", db=False)
    lib.export(tmp_path / "cnn.so")
    loaded = tessera.load(tmp_path / "cnn.so")
    assert loaded.target == "opencl" and loaded.device == tessera.device("opencl")
    assert loaded.inputs == lib.inputs and loaded.outputs == lib.outputs
    for got, built, cpu in zip(loaded.run([cnn["x"]]), lib.run([cnn["x"]]), cnn["cpu"]):
        np.testing.assert_array_equal(got, built)  # the same device code on the same device
        np.testing.assert_allclose(got, cpu, rtol=1e-5, atol=1e-5)
    # Device inputs give device outputs, as for a build in this process.
    out = loaded.run([tessera.nd.array(cnn["x"], device="opencl:0")])
    assert all(o.device == tessera.device("opencl") for o in out)
    np.testing.assert_array_equal(out[0].numpy(), lib.run([cnn["x"]])[0])
    # Built without JIT compilation (nothing runs here), the export is the same file.
    tessera.build(cnn["mod"], target="opencl", db=False, jit=False).export(tmp_path / "cnn_nojit.so")
    assert (tmp_path / "cnn_nojit.so").read_bytes() == (tmp_path / "cnn.so").read_bytes()


def symbolic_batch(path, to):
    """The model at `path` with its batch dimension named N (dynamic_axes), saved to `to`."""
    model = onnx.load(str(path))
    for value in list(model.graph.input) + list(model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    onnx.save(model, str(to))
    return to


def test_an_opencl_module_of_symbolic_sizes_runs_at_any_batch(cnn, tmp_path):
    mod = tessera.onnx.load(str(symbolic_batch(cnn["dir"] / "cnn.onnx", tmp_path / "cnn_n.onnx")))
    lib = tessera.build(mod, target="opencl", db=False)
    rng = np.random.default_rng(2)
    lib.run([rng.standard_normal((2, 3, 16, 16)).astype("float32")])  # builds for every size
    lib.export(tmp_path / "cnn_n.so")
    loaded = tessera.load(tmp_path / "cnn_n.so")
    cpu = tessera.build(mod, db=False)
    for batch in (1, 5, 2, 0):
        x = rng.standard_normal((batch, 3, 16, 16)).astype("float32")
        for got, built, ref in zip(loaded.run([x]), lib.run([x]), cpu.run([x])):
            assert got.shape == ref.shape
            np.testing.assert_array_equal(got, built)
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    assert lib.symbolic
    with pytest.raises(tessera.Error, match=r"input .x.: expected shape \(N, 3, 16, 16\), got \(2, 4, 16, 16\)"):
        loaded.run([np.zeros((2, 4, 16, 16), "float32")])
    # The command line runs it at the input's size.
    np.save(tmp_path / "x3.npy", rng.standard_normal((3, 3, 16, 16)).astype("float32"))
    run(TESSERA, "run", tmp_path / "cnn_n.so", "--input", f"x={tmp_path / 'x3.npy'}", "--output-dir", tmp_path / "out")
    np.testing.assert_allclose(np.load(tmp_path / "out" / "output0.npy"), cpu.run([np.load(tmp_path / "x3.npy")])[0],
                               rtol=1e-5, atol=1e-5)
    # For CUDA, compiled here by NVRTC; it loads where a driver is.
    cuda = tessera.build(mod, target="cuda -arch=sm_80", db=False, jit=False, size_hints={"N": 2})
    cuda.export(tmp_path / "cnn_n_cuda.so")
    if not CUDA:
        with pytest.raises(tessera.Error, match="no CUDA driver found"):
            tessera.load(tmp_path / "cnn_n_cuda.so")


def test_an_opencl_module_with_hot_sizes_serves_them_with_their_static_builds(cnn, tmp_path):
    """The build for every size and the static builds of the hot sizes in one device module (issue
    25, items 3 and 5). The C example (examples/deploy) runs it at a hot size and at others: its
    host copies of the outputs take each run's size."""
    mod = tessera.onnx.load(str(symbolic_batch(cnn["dir"] / "cnn.onnx", tmp_path / "cnn_n.onnx")))
    tessera.build(mod, target="opencl", db=False, specialize=[{"N": 2}]).export(tmp_path / "hot.so")
    loaded = tessera.load(tmp_path / "hot.so")
    assert loaded.specialized == [{"N": 2}]
    assert loaded.served_by([(2, 3, 16, 16)]) == "specialized for N = 2"
    assert loaded.served_by({"x": (4, 3, 16, 16)}) == "the build for every size"
    cpu = tessera.build(mod, db=False)
    exe = deploy_example(tmp_path)
    rng = np.random.default_rng(3)
    for batch in (2, 3, 2, 1):
        x = rng.standard_normal((batch, 3, 16, 16)).astype("float32")
        kernels = [k for k, _ in loaded.profile([x], repeat=1)]
        assert {k.startswith("hot1_") for k in kernels if k != "copy"} == {batch == 2}, kernels
        for got, ref in zip(loaded.run([x]), cpu.run([x])):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
        np.save(tmp_path / "x.npy", x)
        scores = cpu.run([x])[0].ravel()
        got = top5(run(exe, tmp_path / "hot.so", tmp_path / "x.npy").stdout)
        np.testing.assert_allclose([s for _, s in got], np.sort(scores)[::-1][:5], rtol=1e-5, atol=1e-5)


def test_devices_of_the_wrong_kind_are_refused(cnn, tmp_path):
    tessera.build(cnn["mod"], target="opencl", db=False).export(tmp_path / "cl.so")
    tessera.build(cnn["mod"], db=False).export(tmp_path / "cpu.so")
    with pytest.raises(tessera.Error, match=r"on cpu\(0\): it was built for opencl devices \(target 'opencl'\)"):
        tessera.load(tmp_path / "cl.so", device="cpu")
    with pytest.raises(tessera.Error, match=r"on opencl\(5\): opencl\(5\): only 1 OpenCL device"):
        tessera.load(tmp_path / "cl.so", device=tessera.device("opencl", 5))
    with pytest.raises(tessera.Error, match=r"it holds CPU code .*; build the model for opencl to run it there"):
        tessera.load(tmp_path / "cpu.so", device="opencl")
    with pytest.raises(ValueError, match="unknown device kind 'gpu'"):
        tessera.load(tmp_path / "cl.so", device="gpu")


def test_a_cuda_module_is_built_without_a_gpu_and_runs_only_on_one(cnn, tmp_path):
    """NVRTC compiles the PTX here; loading it needs a CUDA driver and a device at least as new
    as its -arch."""
    lib = tessera.build(cnn["mod"], target="cuda -arch=sm_80", db=False, jit=False)
    lib.export(tmp_path / "cnn_cuda.so")
    if not CUDA:
        with pytest.raises(tessera.Error, match=r"cannot load module '.*cnn_cuda.so' \(target 'cuda -arch=sm_80'\) on "
                                                r"cuda\(0\): no CUDA driver found"):
            tessera.load(tmp_path / "cnn_cuda.so")
        return
    loaded = tessera.load(tmp_path / "cnn_cuda.so")
    for got, cpu in zip(loaded.run([cnn["x"]]), cnn["cpu"]):
        np.testing.assert_allclose(got, cpu, rtol=1e-5, atol=1e-5)


def test_the_cli_compiles_and_runs_device_modules(cnn, tmp_path):
    onnx_path = cnn["dir"] / "cnn.onnx"
    out = run(TESSERA, "compile", onnx_path, "-t", "opencl", "-o", tmp_path / "cnn.so").stdout
    assert "wrote " in out
    for device in [[], ["--device", "opencl:0"]]:
        out = run(TESSERA, "run", tmp_path / "cnn.so", *device, "--input", f"x={cnn['dir'] / 'x.npy'}",
                  "--output-dir", tmp_path / "out", "--bench", "2").stdout
        assert "(target opencl) on opencl(0)" in out and "latency over 2 runs" in out
        for i, cpu in enumerate(cnn["cpu"]):
            np.testing.assert_allclose(np.load(tmp_path / "out" / f"output{i}.npy"), cpu, rtol=1e-5, atol=1e-5)
    failed = run(TESSERA, "run", tmp_path / "cnn.so", "--device", "cuda", "--input", f"x={cnn['dir'] / 'x.npy'}", ok=False)
    assert failed.returncode == 1 and "it was built for opencl devices" in failed.stderr
    failed = run(TESSERA, "run", onnx_path, "--device", "opencl", "--input", f"x={cnn['dir'] / 'x.npy'}", ok=False)
    assert "--device applies to modules" in failed.stderr


def deploy_example(tmp_path, source="classify.c"):
    """examples/deploy/`source` compiled against the static runtime."""
    exe = tmp_path / "classify"
    compiler = ["cc"] if source.endswith(".c") else ["c++", "-std=c++17"]
    run(*compiler, "-O2", os.path.join(ROOT, "examples", "deploy", source), "-I", os.path.join(ROOT, "runtime"),
        os.path.join(BUILD, "lib", "libtessera_runtime.a"), "-lstdc++", "-lm", "-pthread", "-ldl", "-o", exe)
    return exe


@pytest.mark.parametrize("source", ["classify.c", "classify.cpp"])
def test_the_deploy_examples_run_a_device_module(cnn, tmp_path, source):
    tessera.build(cnn["mod"], target="opencl", db=False).export(tmp_path / "cnn.so")
    exe = deploy_example(tmp_path, source)
    scores = cnn["cpu"][0].ravel()
    order = list(np.argsort(-scores, kind="stable")[:5])
    for device in [[], ["-d", "opencl"]]:
        got = top5(run(exe, *device, tmp_path / "cnn.so", cnn["dir"] / "x.npy").stdout)
        assert [c for c, _ in got] == order
        np.testing.assert_allclose([s for _, s in got], scores[order], rtol=1e-5, atol=1e-5)
    failed = run(exe, "-d", "cpu", tmp_path / "cnn.so", cnn["dir"] / "x.npy", ok=False)
    assert failed.returncode == 1 and "it was built for opencl devices" in failed.stderr
