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
