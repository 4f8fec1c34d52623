"""The tessera command-line program: compile, run and inspect an ONNX model, and its errors."""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

BUILD = os.environ.get("TESSERA_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
TESSERA = os.path.abspath(os.path.join(BUILD, "bin", "tessera"))


def tessera(*args, ok=True):
    proc = subprocess.run([TESSERA, *map(str, args)], capture_output=True, text=True, timeout=120)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def model(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    b = helper.make_tensor("b", TensorProto.FLOAT, [8], list(np.arange(8) - 4.0))
    g = helper.make_graph([helper.make_node("Add", ["x", "b"], ["t"]), helper.make_node("Relu", ["t"], ["y"])], "g", [x], [y], [b])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_compile_reports_what_it_built(model):
    out = tessera("compile", model, "--shape", "x=3,8").stdout
    assert "1 kernels" in out and "input  x: float32(3, 8)" in out and "output output0: float32(3, 8)" in out


def test_run_writes_outputs_and_times(model, tmp_path):
    x = np.linspace(-3, 3, 24, dtype="float32").reshape(3, 8)
    np.save(tmp_path / "x.npy", x)
    out = tessera("run", model, "--shape", "x=3,8", "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out",
                  "--bench", 20).stdout
    assert "output 0: float32(3, 8)" in out
    assert "latency over 20 runs: min" in out and "median" in out and "p90" in out
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output0.npy"), np.maximum(x + (np.arange(8) - 4).astype("float32"), 0))


def test_inspect_prints_graph_kernels_memory_and_dot(model, tmp_path):
    out = tessera("inspect", model, "--shape", "x=3,8", "--dot", tmp_path / "g.dot").stdout
    assert "def @main(%x: float32[3, 8])" in out
    assert "fused_add_relu" in out and "memory plan: peak" in out
    assert (tmp_path / "g.dot").read_text().startswith("digraph tessera {")


def test_errors_are_one_clear_line(model, tmp_path):
    proc = tessera("compile", model, ok=False)
    assert proc.returncode == 1 and "symbolic dimension 'batch'" in proc.stderr
    proc = tessera("run", model, "--shape", "x=3,8", ok=False)
    assert "input 'x' is not given (--input x=FILE.npy)" in proc.stderr
    np.save(tmp_path / "bad.npy", np.zeros((2, 8), "float32"))
    proc = tessera("run", model, "--shape", "x=3,8", "--input", f"x={tmp_path / 'bad.npy'}", ok=False)
    assert "input 'x': expected shape (3, 8), got (2, 8)" in proc.stderr
    proc = tessera("compile", model, "--shape", "x=3,eight", ok=False)
    assert "'eight' is not a number" in proc.stderr
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    proc = tessera("run", model, "--shape", "x=3,8", "--input", f"x={tmp_path / 'junk.npy'}", ok=False)
    assert "not a .npy file" in proc.stderr
