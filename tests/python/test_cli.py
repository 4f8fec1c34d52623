"""The tessera command-line program: compile, run and inspect an ONNX model, and its errors."""
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from package_under_test import program

TESSERA = program("tessera")


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



def test_run_builds_a_model_of_symbolic_sizes_at_its_inputs_sizes(model, tmp_path):
    """Without --shape, the model's dimension 'batch' takes the input's size (one build, for every size)."""
    for rows in [3, 1, 0]:
        x = np.linspace(-3, 3, rows * 8, dtype="float32").reshape(rows, 8)
        np.save(tmp_path / "x.npy", x)
        out = tessera("run", model, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out").stdout
        assert "for llvm at these sizes: the build for every size" in out and f"output 0: float32({rows}, 8)" in out
        np.testing.assert_array_equal(np.load(tmp_path / "out" / "output0.npy"),
                                      np.maximum(x + (np.arange(8) - 4).astype("float32"), 0))
    np.save(tmp_path / "bad.npy", np.zeros((3, 7), "float32"))
    proc = tessera("run", model, "--input", f"x={tmp_path / 'bad.npy'}", ok=False)
    assert "input 'x' (#0): dimension 1 must be 8" in proc.stderr

def test_specialized_sizes_run_static_builds_and_inspect_lists_them(model, tmp_path):
    x = np.linspace(-3, 3, 24, dtype="float32").reshape(3, 8)
    np.save(tmp_path / "x.npy", x)
    for given, served in [("batch=3", "specialized for batch = 3"), ("batch=2", "the build for every size")]:
        out = tessera("run", model, "--specialize", given, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir",
                      tmp_path / "out").stdout
        assert f"at these sizes: {served}" in out
        np.testing.assert_array_equal(np.load(tmp_path / "out" / "output0.npy"),
                                      np.maximum(x + (np.arange(8) - 4).astype("float32"), 0))
    out = tessera("inspect", model, "--specialize", "batch=1", "--specialize", "batch=16").stdout
    assert "def @main(%x: float32[batch, 8])" in out
    assert "specialized for batch = 1: 1 kernels" in out and "specialized for batch = 16: 1 kernels" in out
    assert "--specialize batch=x: 'x' is not an integer" in tessera("inspect", model, "--specialize", "batch=x",
                                                                    ok=False).stderr
    assert "no dimension 'n'" in tessera("inspect", model, "--specialize", "n=2", ok=False).stderr
    assert "--specialize applies to models of symbolic sizes" in tessera(
        "run", model, "--shape", "x=3,8", "--specialize", "batch=3", "--input", f"x={tmp_path / 'x.npy'}",
        ok=False).stderr
    # compile -o writes them into the module, which serves them as the model does.
    out = tessera("compile", model, "--specialize", "batch=3", "-o", tmp_path / "hot.so").stdout
    assert "for every size" in out and "specialized for batch = 3: 1 kernels" in out
    for rows, served in [(3, "specialized for batch = 3"), (2, "the build for every size")]:
        np.save(tmp_path / "x.npy", x[:rows])
        out = tessera("run", tmp_path / "hot.so", "--input", f"x={tmp_path / 'x.npy'}", "--output-dir",
                      tmp_path / "out").stdout
        assert f"at these sizes: {served}" in out
        np.testing.assert_array_equal(np.load(tmp_path / "out" / "output0.npy"),
                                      np.maximum(x[:rows] + (np.arange(8) - 4).astype("float32"), 0))


def test_inspect_prints_graph_kernels_memory_and_dot(model, tmp_path):
    out = tessera("inspect", model, "--shape", "x=3,8", "--dot", tmp_path / "g.dot").stdout
    assert "def @main(%x: float32[3, 8])" in out
    assert "fused_add_relu" in out and "memory plan: peak" in out
    assert (tmp_path / "g.dot").read_text().startswith("digraph tessera {")


def test_errors_are_one_clear_line(model, tmp_path):
    # Without --shape the model compiles once for every size (test_symbolic_build.py).
    assert "for every size" in tessera("compile", model).stdout
    proc = tessera("run", model, "--shape", "x=3,8", ok=False)
    assert "input 'x' is not given (--input x=FILE.npy)" in proc.stderr
    np.save(tmp_path / "bad.npy", np.zeros((2, 8), "float32"))
    proc = tessera("run", model, "--shape", "x=3,8", "--input", f"x={tmp_path / 'bad.npy'}", ok=False)
    assert "input 'x': expected shape (3, 8), got (2, 8)" in proc.stderr
    proc = tessera("compile", model, "--shape", "x=3,eight", ok=False)
    assert "'eight' is not an integer" in proc.stderr
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    proc = tessera("run", model, "--shape", "x=3,8", "--input", f"x={tmp_path / 'junk.npy'}", ok=False)
    assert "not a .npy file" in proc.stderr
    # A compiled module where a command reads an ONNX model is named as one (it was "not a valid
    # ONNX model (the protobuf does not parse)").
    tessera("compile", model, "--shape", "x=3,8", "-o", tmp_path / "m.so")
    for command in ["inspect", "compile", "tune"]:
        proc = tessera(command, tmp_path / "m.so", ok=False)
        assert "m.so is a compiled module, not an ONNX model: `tessera run` runs it" in proc.stderr, proc.stderr


def test_a_model_of_symbolic_sizes_is_tuned_at_each_size_given(tmp_path):
    w = helper.make_tensor("w", TensorProto.FLOAT, [48, 40], list(np.linspace(-1, 1, 48 * 40)))
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 48])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 40])], [w])
    model = tmp_path / "mm.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(model))
    db = tmp_path / "t.db"
    proc = tessera("tune", model, "--db", db, "--trials", 4, "--batch", 2, "--repeat", 2, "--no-model-check",
                   "--shape", "x=8,48", "--shape", "x=32,48")
    assert "== x=8,48" in proc.stdout and "== x=32,48" in proc.stdout, proc.stdout
    assert "tuning 1 tasks of" in proc.stderr and "at x=32,48 for llvm, 2 trials" in proc.stderr  # the trials shared
    assert len(tessera("db", "--db", db, "list").stdout.splitlines()) == 3  # a workload per size
    assert (tmp_path / "t.report.1.html").exists() and (tmp_path / "t.report.2.html").exists()
    proc = tessera("compile", model, "--shape", "x=8,48", "--shape", "x=32,48", "-o", tmp_path / "m.so", ok=False)
    assert proc.returncode == 1 and "--shape is given 2 times for input 'x'" in proc.stderr


def test_tune_then_db_commands(tmp_path):
    w = helper.make_tensor("w", TensorProto.FLOAT, [48, 40], list(np.linspace(-1, 1, 48 * 40)))
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 48])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 40])], [w])
    model = tmp_path / "mm.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(model))
    db = tmp_path / "t.db"
    proc = tessera("tune", model, "--db", db, "--trials", 6, "--batch", 3, "--repeat", 2)
    assert "matmul" in proc.stdout and "estimated latency" in proc.stdout and "report:" in proc.stdout
    assert "[  6/6 trials" in proc.stderr  # the progress line (a line per batch when not on a terminal)
    assert (tmp_path / "t.report.html").exists()
    kernels = tessera("inspect", model, "--db", db).stdout
    assert any(label in kernels for label in ("tuned (record", "default (measured fastest", "default (faster in the model"))

    listing = tessera("db", "--db", db, "list").stdout.splitlines()
    assert tessera("db", "list", "--db", db).stdout.splitlines() == listing  # --db on either side of the action
    assert len(listing) == 2 and "matmul" in listing[1]
    prefix, records = listing[1].split()[0], int(listing[1].split()[2])
    # Six trials; when the best of them is not the default, two more (the session ends by timing
    # the two again side by side) and, if it is still not, two in-model records (the model check
    # times them in the model).
    checked = "model check: 1 kernel with a tuned schedule" in proc.stdout
    assert checked or "model check: 0 kernels" in proc.stdout
    assert records in ((10,) if checked else (6, 8))
    shown = tessera("db", "--db", db, "show", prefix).stdout
    assert shown.count(" evolutionary ") + shown.count(" default ") + shown.count(" in-model ") == records and "compute(" in shown

    tessera("db", "--db", db, "export", tmp_path / "e.jsonl")
    assert len((tmp_path / "e.jsonl").read_text().splitlines()) == records + 1  # the workload, its records
    kept = 3 if checked else 1  # and the in-model records
    assert f"removed {records - kept} records" in tessera("db", "--db", db, "prune", "--keep", 1).stdout
    out = tessera("db", "--db", tmp_path / "copy.db", "import", tmp_path / "e.jsonl").stdout
    assert f"imported {records} records" in out
    assert f" {records} " in tessera("db", "--db", tmp_path / "copy.db", "list").stdout.splitlines()[1]


def test_db_errors_name_the_file(tmp_path):
    proc = tessera("db", "--db", tmp_path / "none.db", "list", ok=False)
    assert proc.returncode == 1 and "no tuning database at" in proc.stderr
    (tmp_path / "bad.db").write_text("not a database")
    proc = tessera("db", "--db", tmp_path / "bad.db", "list", ok=False)
    assert "bad.db" in proc.stderr and "not a database" in proc.stderr
    (tmp_path / "bad.jsonl").write_text('{"record": 1}\n')
    proc = tessera("db", "--db", tmp_path / "n.db", "import", tmp_path / "bad.jsonl", ok=False)
    assert proc.returncode == 1 and "line 1" in proc.stderr


def test_inspect_writes_each_kernels_source(model, tmp_path):
    out = tessera("inspect", model, "--shape", "x=3,8", "-t", "c", "--source", tmp_path / "c").stdout
    assert "wrote 1 files of 1 kernels' c source to" in out
    (c_file,) = (tmp_path / "c").glob("*.c")
    assert "fused_add_relu" in c_file.name and "int32_t " in c_file.read_text()
    tessera("inspect", model, "--shape", "x=3,8", "--source", tmp_path / "ll")
    assert list((tmp_path / "ll").glob("*.ll"))
    # For a GPU, the kernels under the default GPU schedules: threads bound to the elements.
    tessera("inspect", model, "--shape", "x=3,8", "-t", "opencl", "--source", tmp_path / "cl")
    (cl_file,) = (tmp_path / "cl").glob("*.cl")
    assert "__kernel" in cl_file.read_text() and "get_local_id(0)" in cl_file.read_text()
    tessera("inspect", model, "--shape", "x=3,8", "-t", "cuda -arch=sm_80", "--source", tmp_path / "cu")
    assert {f.suffix for f in (tmp_path / "cu").iterdir()} == {".cu", ".ptx", ".txt"}
    assert "threadIdx.x" in next((tmp_path / "cu").glob("*.cu")).read_text()


def test_run_takes_a_model_with_control_flow_as_a_program(tmp_path):
    """y = If(sum(x) > 0, x * 2, -x): the branch is chosen on the data at every run."""
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    g = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    path = tmp_path / "if.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    for x in [np.array([1, -0.5, 2], "float32"), np.array([-1, -2], "float32")]:
        np.save(tmp_path / "x.npy", x)
        out = tessera("run", path, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out",
                      "--bench", 3).stdout
        assert f"output 0: float32({len(x)},)" in out and "latency over 3 runs" in out
        np.testing.assert_array_equal(np.load(tmp_path / "out" / "output0.npy"), x * 2 if x.sum() > 0 else -x)
    out = tessera("inspect", path).stdout
    assert out.startswith("program(x) -> (y)\n") and "y = if(c)  # If (node 'y')" in out and "then() -> (t)" in out
    proc = tessera("run", path, "--input", f"y={tmp_path / 'x.npy'}", ok=False)
    assert "the model has no input 'y' (its inputs are: x)" in proc.stderr
    # Compiled ahead of time for every size, into a module that `run` loads with the runtime alone.
    out = tessera("compile", path, "-o", tmp_path / "if.so").stdout
    assert "for every size: a program of 3 stages" in out and "wrote " in out
    for x in [np.array([1, -0.5, 2, 4], "float32"), np.array([-1], "float32")]:
        np.save(tmp_path / "x.npy", x)
        out = tessera("run", tmp_path / "if.so", "--input", f"x={tmp_path / 'x.npy'}", "--output-dir",
                      tmp_path / "out").stdout
        assert "a program of 3 stages) on cpu" in out
        np.testing.assert_array_equal(np.load(tmp_path / "out" / "output0.npy"), x * 2 if x.sum() > 0 else -x)


def test_run_reads_and_writes_sequences_and_optionals_as_folders(tmp_path):
    """s2 = SequenceInsert(seq, x), its length, and whether the optional input `opt` was given:
    a sequence is a folder of 0.npy, 1.npy, ... both ways; an optional input may be left out."""
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    g = helper.make_graph(
        [helper.make_node("SequenceInsert", ["seq", "x"], ["s2"]), helper.make_node("SequenceLength", ["s2"], ["n"]),
         helper.make_node("OptionalHasElement", ["opt"], ["has"])], "g",
        [helper.make_value_info("seq", seq_type), helper.make_tensor_value_info("x", TensorProto.FLOAT, ["k"]),
         helper.make_value_info("opt", opt_type)],
        [helper.make_value_info("s2", seq_type), helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("has", TensorProto.BOOL, [])])
    path = tmp_path / "seq.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    elements = [np.arange(3, dtype="float32"), np.ones(5, "float32")]
    (tmp_path / "seq").mkdir()
    for k, e in enumerate(elements):
        np.save(tmp_path / "seq" / f"{k}.npy", e)
    x = np.array([7, 8], "float32")
    np.save(tmp_path / "x.npy", x)
    given = ["--input", f"seq={tmp_path / 'seq'}", "--input", f"x={tmp_path / 'x.npy'}"]
    out = tessera("run", path, *given, "--output-dir", tmp_path / "out").stdout
    assert "output 0: a sequence of 3 tensors: float32(3,), float32(5,), float32(2,)" in out
    for k, e in enumerate(elements + [x]):
        np.testing.assert_array_equal(np.load(tmp_path / "out" / "output0" / f"{k}.npy"), e)
    assert np.load(tmp_path / "out" / "output1.npy") == 3 and not np.load(tmp_path / "out" / "output2.npy")
    tessera("run", path, *given, "--input", f"opt={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    assert np.load(tmp_path / "out" / "output2.npy")
    proc = tessera("run", path, "--input", f"seq={tmp_path / 'x.npy'}", "--input", f"x={tmp_path / 'x.npy'}", ok=False)
    assert "input 'seq' is a sequence: give a folder of 0.npy, 1.npy, ..." in proc.stderr
    np.save(tmp_path / "seq" / "3.npy", x)  # 2.npy is missing
    proc = tessera("run", path, *given, ok=False)
    assert "must hold only 0.npy, 1.npy, ..." in proc.stderr
