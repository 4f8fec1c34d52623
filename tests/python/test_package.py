"""The package in the Python environments users have: numpy 1 (Debian's interpreter, build/python)
and numpy 2 (the venv scripts/setup.sh installs the wheel into) compute the same model outputs,
and an extension that cannot read the numpy it finds refuses to import instead of computing."""
import os
import subprocess
import sys

import numpy as np
import pytest

import package_under_test

# What each environment runs: ResNet-18's output and the numpy version it ran with.
RUN_MODEL = """
import sys, numpy as np, tessera
model, x, out = sys.argv[1:]
(y,) = tessera.build(tessera.onnx.load(model), db=False).run([np.load(x)])
np.save(out, y)
print(np.__version__)
"""


def environments():
    """(interpreter, extra environment variables) of the numpy-1 and the numpy-2 environment."""
    venv_python = os.path.join(package_under_test.VENV, "bin", "python")
    if not os.path.exists(venv_python):
        pytest.skip(f"no venv with the installed package at {package_under_test.VENV} (scripts/setup.sh makes it)")
    return {"numpy 1": ("/usr/bin/python3", {"PYTHONPATH": os.path.join(package_under_test.BUILD, "python")}),
            "numpy 2": (venv_python, {})}


def test_numpy_1_and_2_give_the_same_outputs(tmp_path):
    import make_models
    model_dir = os.path.join(package_under_test.ROOT, "models")
    path = make_models.ensure("resnet18", model_dir)
    x, want = (os.path.join(model_dir, f"resnet18.{k}.npy") for k in ("input", "output"))
    outputs = {}
    for name, (python, env) in environments().items():
        out = tmp_path / f"{name.replace(' ', '')}.npy"
        proc = subprocess.run([python, "-c", RUN_MODEL, path, x, str(out)], capture_output=True, text=True,
                              env={**os.environ, **env}, cwd=tmp_path, timeout=600)
        assert proc.returncode == 0, f"{name}: {proc.stderr}"
        assert proc.stdout.strip().split(".")[0] == name[-1], f"{name} ran with numpy {proc.stdout.strip()}"
        outputs[name] = np.load(out)
    reference = np.load(want)
    for name, y in outputs.items():
        assert np.unique(y).size > 900, f"{name}: {np.unique(y).size} distinct values among 1000 scores"
        assert np.abs(y - reference).max() <= 1e-3 * np.abs(reference).max(), name
    np.testing.assert_array_equal(outputs["numpy 1"], outputs["numpy 2"])


def test_a_numpy_the_extension_cannot_read_is_refused_at_import(tmp_path):
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text('__version__ = "3.0.1"\n')
    path = [str(tmp_path)] + ([] if package_under_test.INSTALLED else [os.path.join(package_under_test.BUILD, "python")])
    proc = subprocess.run([sys.executable, "-c", "import tessera"], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(path)}, timeout=60)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr and "numpy 3.0.1" in proc.stderr and "numpy 1.x and 2.x" in proc.stderr, proc.stderr


def test_the_console_scripts_run_the_programs():
    if not package_under_test.INSTALLED:
        pytest.skip("the console scripts exist in an installed package (TESSERA_TEST_INSTALLED=1)")
    proc = subprocess.run([package_under_test.program("tessera"), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "Usage" in proc.stdout, proc.stderr
    # The worker serves requests until its input ends.
    proc = subprocess.run([package_under_test.program("tessera-measure")], input="", capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
