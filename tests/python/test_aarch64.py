"""AArch64 modules run: each model is compiled for the host and cross-compiled for AArch64, both
run through the C deploy example (examples/deploy/classify.c), the AArch64 one under qemu user
emulation (scripts/run_aarch64.sh), and the two give the same top-5 and the same scores.
qemu and the cross compilers are installed by scripts/test.sh, so their absence fails."""
import os
import re

import numpy as np
import pytest

from test_deploy import BUILD, MODEL_DIR, ROOT, TESSERA, cnn, run, top5  # noqa: F401 (cnn: a fixture)

RUN_AARCH64 = os.path.join(ROOT, "scripts", "run_aarch64.sh")
AARCH64 = "llvm -mtriple=aarch64-linux-gnu"
# Under qemu on two cores resnet18 runs in about 12 s and mobilenet_v2 in 3 s (each test about
# 20 s with compiling twice): quick enough to run every time.
MODELS = ["cnn", "mobilenet_v2", "resnet18"]


@pytest.fixture(scope="module")
def classify_host(tmp_path_factory):
    """The example built for the host the way run_aarch64.sh builds it for AArch64 (the README's
    static one-line command), so the two programs differ only in their target."""
    exe = tmp_path_factory.mktemp("classify") / "classify"
    run("cc", "-O2", os.path.join(ROOT, "examples", "deploy", "classify.c"), "-I", os.path.join(ROOT, "runtime"),
        os.path.join(BUILD, "lib", "libtessera_runtime.a"), "-lstdc++", "-lm", "-pthread", "-o", exe)
    return exe


def model(name, request):
    """The ONNX file and input of a model: the small CNN of test_deploy.py or a real one."""
    if name == "cnn":
        small = request.getfixturevalue("cnn")
        return small["onnx"], small["dir"] / "x.npy"
    import make_models  # needs python3-torch and python3-torchvision, which scripts/test.sh installs
    return make_models.ensure(name, MODEL_DIR), os.path.join(MODEL_DIR, f"{name}.input.npy")


@pytest.mark.parametrize("name", MODELS)
def test_aarch64_module_under_qemu_matches_the_host_module(name, request, classify_host, tmp_path):
    onnx_path, x = model(name, request)
    run(TESSERA, "compile", onnx_path, "-o", tmp_path / "host.so")
    run(TESSERA, "compile", onnx_path, "-t", AARCH64, "-o", tmp_path / "arm.so")
    host_out = run(classify_host, tmp_path / "host.so", x, tmp_path / "host.npy").stdout
    arm_out = run(RUN_AARCH64, tmp_path / "arm.so", x, tmp_path / "arm.npy").stdout
    host, arm = np.load(tmp_path / "host.npy"), np.load(tmp_path / "arm.npy")
    assert arm.shape == host.shape and arm.dtype == host.dtype
    # Vector widths and instruction selection differ between the targets, so the sums are not
    # bit-identical; the largest difference seen is 1.7e-6 (mobilenet_v2), well inside 1e-4.
    rel = float(np.abs(arm - host).max() / np.abs(host).max())
    print(f"\n{name}: aarch64 vs host, max relative error {rel:.2e}")
    assert rel <= 1e-4, f"{name}: aarch64 output differs from the host's by {rel:.2e} (relative)"
    # What the program prints: the same header and classes; scores as printed, with 6 decimals.
    assert arm_out.splitlines()[0] == host_out.splitlines()[0]
    assert [c for c, _ in top5(arm_out)] == [c for c, _ in top5(host_out)], (host_out, arm_out)
    np.testing.assert_allclose([s for _, s in top5(arm_out)], [s for _, s in top5(host_out)], rtol=1e-4, atol=1e-5)


def test_aarch64_example_is_aarch64_with_the_runtime_linked_in(request, tmp_path):
    """The cross-built example is an AArch64 program that links the runtime statically, so qemu
    needs only the cross C and C++ runtimes."""
    onnx_path, x = model("cnn", request)
    run(TESSERA, "compile", onnx_path, "-t", AARCH64, "-o", tmp_path / "arm.so")
    run(RUN_AARCH64, tmp_path / "arm.so", x)  # builds the example if it is not yet
    exe = os.path.join(BUILD, "aarch64", "classify")
    assert re.search(r"Machine:\s+AArch64", run("readelf", "-h", exe).stdout)
    needed = set(re.findall(r"\(NEEDED\).*\[(.*)\]", run("readelf", "-d", exe).stdout))
    assert needed <= {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1"}, needed
    usage = run(RUN_AARCH64, ok=False)
    assert usage.returncode == 2 and "usage:" in usage.stderr


def test_a_program_cross_compiled_for_aarch64_runs_at_every_count(tmp_path):
    """A model with a data-dependent shape (x[x > 0] * 2 of N rows) compiled for every size as a
    program, cross-compiled, and run under qemu through the C API at two sizes."""
    from test_programs import positives_doubled
    path = positives_doubled(tmp_path, ["N", 4])
    run(TESSERA, "compile", path, "-t", AARCH64, "-o", tmp_path / "arm.so")
    for n in [5, 2]:
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        np.save(tmp_path / "x.npy", x)
        run(RUN_AARCH64, tmp_path / "arm.so", tmp_path / "x.npy", tmp_path / "y.npy")
        np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), x[x > 0] * 2)


def test_resnet18_of_symbolic_image_sizes_cross_compiled_for_aarch64_runs_at_any_size(tmp_path):
    """ResNet-18 exported with a symbolic batch, height and width, compiled once for AArch64 (its
    convolutions and pools take the sizes at run time), at an image size that no tile divides,
    against the host's static build of that size."""
    import make_models
    import tessera
    path = make_models.ensure("resnet18", MODEL_DIR, images=True)
    run(TESSERA, "compile", path, "-t", AARCH64, "-o", tmp_path / "arm.so")
    x = np.random.default_rng(0).standard_normal((1, 3, 97, 131)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    run(RUN_AARCH64, tmp_path / "arm.so", tmp_path / "x.npy", tmp_path / "arm.npy")
    host = tessera.build(tessera.onnx.load(path, shapes={"input": x.shape}), db=False).run([x])[0]
    arm = np.load(tmp_path / "arm.npy")
    assert arm.shape == host.shape
    assert float(np.abs(arm - host).max() / np.abs(host).max()) <= 1e-4
