"""Real models (resnet18, mobilenet_v2, a transformer encoder) exported from PyTorch compile and
match PyTorch's outputs (relative error <= 1e-3)."""
import os
import sys

import numpy as np
import pytest

import tessera

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
MODEL_DIR = os.path.join(ROOT, "models")


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "transformer"])
def test_model_matches_pytorch(name):
    import make_models  # needs python3-torch and python3-torchvision, which scripts/test.sh installs
    path = make_models.ensure(name, MODEL_DIR)
    x = np.load(os.path.join(MODEL_DIR, f"{name}.input.npy"))
    ref = np.load(os.path.join(MODEL_DIR, f"{name}.output.npy"))
    lib = tessera.build(tessera.onnx.load(path))
    out = lib.run([x])[0]
    assert out.shape == ref.shape
    rel = np.abs(out - ref).max() / np.abs(ref).max()
    assert rel <= 1e-3, f"{name}: relative error {rel:.2e}"


def test_the_dynamic_transformer_is_built_once_for_every_size():
    """The benchmark's dynamic model (benchmarks/dynamic.py) builds as one symbolic library, not
    once per size (which a kernel failing to build for symbolic sizes falls back to), and matches
    the static build at each size."""
    import make_models
    path = make_models.ensure("transformer", MODEL_DIR, dynamic=True)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    rng = np.random.default_rng(0)
    for shape in [(1, 16, 256), (2, 7, 256), (1, 33, 256)]:
        x = rng.standard_normal(shape).astype("float32")
        static = tessera.build(tessera.onnx.load(path, shapes={"input": shape}), db=False)
        np.testing.assert_allclose(lib.run([x])[0], static.run([x])[0], rtol=1e-4, atol=1e-4)
        assert lib.symbolic, lib.symbolic_reason
        assert lib.served_by({"input": shape}) == "the build for every size"
