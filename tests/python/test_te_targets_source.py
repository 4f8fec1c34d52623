"""te.build for the targets printed as C-family source: c (compiled by the system's C compiler and
run in process, against numpy and the llvm target), opencl and cuda (the device verifier's errors
through te.build; kernels on PoCL's OpenCL device and through NVRTC once schedules bind loops to
thread axes)."""
import numpy as np
import pytest

import tessera
from tessera import nd, te


def matmul(n, m, k):
    A = te.placeholder((n, k), "float32", name="A")
    B = te.placeholder((k, m), "float32", name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


@pytest.mark.parametrize("n,m,k", [(1, 1, 1), (37, 29, 13), (64, 48, 100)])
def test_c_target_matmul_with_parallel_tiles_matches_numpy_and_llvm(rng, n, m, k):
    A, B, C = matmul(n, m, k)
    s = te.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    s[C].parallel(io)
    f = te.build(s, [A, B, C], target="c")
    assert ("tessera_hook_parallel_launch(" in f.get_source("c")) == (n > 8)  # one tile: no loop is left
    a = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal((k, m)).astype("float32")
    c, c_llvm = np.zeros((n, m), "float32"), np.zeros((n, m), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    te.build(s, [A, B, C], target="llvm")(a, b, c_llvm)
    # LLVM may contract multiply-adds; the C compiler is told not to: the last bits may differ.
    np.testing.assert_allclose(c, c_llvm, rtol=1e-5, atol=1e-5)


def test_c_target_math_and_types(rng):
    A = te.placeholder((33,), "float32", name="A")
    B = te.compute((33,), lambda i: te.exp(A[i]) + te.sigmoid(A[i]) - te.floor(A[i] * 2.5), name="B")
    M = te.compute((33,), lambda i: B[i] > 1.0, name="M")
    s = te.create_schedule([B, M])
    f = te.build(s, [A, B, M], target="c")
    a = rng.standard_normal(33).astype("float32")
    b, m = np.zeros(33, "float32"), np.zeros(33, bool)
    f(a, b, m)
    expected = np.exp(a) + 1 / (1 + np.exp(-a)) - np.floor(a * 2.5)
    np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(m, b > 1.0)


@pytest.mark.parametrize("n", [1, 37, 64])
def test_c_target_prints_vectorized_loops_lane_by_lane(rng, n):
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: te.select(A[i] > 0.0, te.sqrt(A[i]), A[i] * 2.0), name="B")
    s = te.create_schedule(B)
    _, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    f = te.build(s, [A, B], target="c")
    assert n < 8 or "lane" in f.get_source("c")
    a = rng.standard_normal(n).astype("float32")
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_allclose(b, np.where(a > 0, np.sqrt(np.abs(a)), a * 2), rtol=1e-6)


def test_c_target_refuses_float16_by_name():
    H = te.placeholder((4,), "float16", name="H")
    G = te.compute((4,), lambda i: H[i] + 1.0, name="G")
    with pytest.raises(tessera.Error, match="cannot print float16 values"):
        te.build(te.create_schedule(G), [H, G], target="c")


@pytest.mark.parametrize("target", ["opencl", "cuda -arch=sm_80"])
def test_device_targets_refuse_unbound_loops(target):
    A, B, C = matmul(8, 8, 8)
    with pytest.raises(tessera.Error, match=r"kernel 'main_kernel0': loop 'i' is outside every thread extent"):
        te.build(te.create_schedule(C), [A, B, C], target=target)


def bound_vector_add(n, threads):
    A = te.placeholder((n,), "float32", name="A")
    B = te.placeholder((n,), "float32", name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C)
    bx, tx = s[C].split(C.op.axis[0], factor=threads)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B, C]


@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_opencl_vector_add_on_pocl(rng, n):
    s, args = bound_vector_add(n, 64)
    f = te.build(s, args, target="opencl")
    assert "__kernel" in f.get_source() and "get_local_id(0)" in f.get_source()
    a, b = rng.standard_normal(n).astype("float32"), rng.standard_normal(n).astype("float32")
    c = np.zeros(n, "float32")
    f(a, b, c)  # host arrays: copied to the device and back
    np.testing.assert_array_equal(c, a + b)
    dev = tessera.device("opencl", 0)
    da, db, dc = nd.array(a, device=dev), nd.array(b, device=dev), nd.empty((n,), "float32", device=dev)
    f(da, db, dc)  # arrays on the device: used in place
    np.testing.assert_array_equal(dc.numpy(), a + b)


def test_cuda_vector_add_compiles_for_sm80_and_sm90():
    s, args = bound_vector_add(1000, 128)
    for arch in ["sm_80", "sm_90"]:
        f = te.build(s, args, target="cuda -arch=" + arch)
        assert "__global__" in f.get_source() and ".target " + arch in f.get_source("ptx")
        assert "registers" in f.get_source("ptxas")


def test_c_target_builds_a_model_like_llvm(rng, tmp_path):
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 17, 17])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 3, 3, 3], rng.standard_normal(8 * 27).astype("float32").tolist())
    fw = helper.make_tensor("fw", TensorProto.FLOAT, [8 * 15 * 15, 10],
                            (rng.standard_normal(8 * 225 * 10) * 0.01).astype("float32").tolist())
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]), helper.make_node("MatMul", ["f", "fw"], ["m"]),
             helper.make_node("Softmax", ["m"], ["y"], axis=1)]
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w, fw]),
                                opset_imports=[helper.make_opsetid("", 13)]), str(path))
    mod = tessera.onnx.load(str(path))
    xin = rng.standard_normal((1, 3, 17, 17)).astype("float32")
    lib = tessera.build(mod, target="c", db=None)
    from_c = lib.run([xin])[0]
    from_llvm = tessera.build(mod, target="llvm", db=None).run([xin])[0]
    np.testing.assert_allclose(from_c, from_llvm, rtol=1e-5, atol=1e-6)
    # Exported, its C compiled for the host's architecture with no extensions, run by the runtime alone.
    lib.export(str(tmp_path / "m.so"))
    loaded = tessera.load(str(tmp_path / "m.so"))
    assert loaded.target == "c"
    np.testing.assert_array_equal(loaded.run([xin])[0], from_c)


def test_c_target_refuses_a_vectorized_let_chain_rather_than_hang(tmp_path):
    # Integer Pow's square-and-multiply reads each square twice: substituted into a vector store's
    # text, it would double 31 times. The c target says so and names the way out.
    import onnx
    from onnx import TensorProto, helper
    vals = [helper.make_tensor_value_info(n, TensorProto.INT32, [64]) for n in "xyz"]
    model = helper.make_model(helper.make_graph([helper.make_node("Pow", ["x", "y"], ["z"])], "g", vals[:2], vals[2:]),
                              opset_imports=[helper.make_opsetid("", 15)])
    onnx.save(model, str(tmp_path / "pow.onnx"))
    mod = tessera.onnx.load(str(tmp_path / "pow.onnx"))
    with pytest.raises(tessera.Error, match="over a megabyte of text.*build it for llvm"):
        tessera.build(mod, target="c", db=False)
