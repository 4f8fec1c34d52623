"""Kernels of symbolic sizes (te.var dimensions): one kernel serves every size that fits its
shapes, with tails of splits that do not divide, on llvm and c; the sizes are checked at each
call with errors that name the argument and the dimension."""
import importlib.util
import os

import numpy as np
import pytest

import package_under_test
import tessera
from tessera import te
from gemm_gpu import schedule_gemm


def gemm_schedule(M, N, K):
    """examples/gemm.py's schedule (loaded by path: benchmarks/ has a gemm.py of its own)."""
    spec = importlib.util.spec_from_file_location("gemm_example", os.path.join(package_under_test.ROOT, "examples", "gemm.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example.gemm_schedule(M, N, K)

SIZES = (0, 1, 7, 16, 17, 33, 1000)


def scale_kernel(target, n=None):
    n = n if n is not None else te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B)
    o, i = s[B].split(B.op.axis[0], 16)
    oo, _ = s[B].split(o, 4)
    s[B].parallel(oo)
    s[B].vectorize(i)
    return te.build(s, [A, B], target=target)


@pytest.mark.parametrize("target", ["llvm", "c"])
def test_split_vectorized_parallel_loop_serves_every_size(rng, target):
    f = scale_kernel(target)
    for n in SIZES:
        a = rng.standard_normal(n).astype("float32")
        b = np.full(n + 1, 7.0, "float32")  # one past the end: must stay untouched
        f(a, b[:n])
        np.testing.assert_array_equal(b[:n], a * 2 + 1)
        assert b[n] == 7.0


def tiled_matmul(target, M, N, K):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C)
    CC = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, ii = s[C].split(i, 4)
    jo, ji = s[C].split(j, 16)
    s[C].reorder(io, jo, ii, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    s[CC].compute_at(s[C], jo)
    ci, cj = s[CC].op.axis
    (ck,) = s[CC].op.reduce_axis
    s[CC].reorder(ck, ci, cj)
    s[CC].vectorize(cj)
    s[CC].unroll(ci)
    return te.build(s, [A, B, C], target=target)


@pytest.mark.parametrize("target", ["llvm", "c"])
def test_tiled_matmul_with_a_cache_computed_at_a_symbolic_tile(rng, target):
    f = tiled_matmul(target, te.var("M"), te.var("N"), te.var("K"))
    for m, n, k in [(1, 1, 1), (5, 17, 3), (33, 40, 65), (4, 16, 8), (0, 4, 4), (4, 4, 0), (3, 0, 2)]:
        a = rng.standard_normal((m, k)).astype("float32")
        b = rng.standard_normal((k, n)).astype("float32")
        c = np.full((m, n), np.nan, "float32")
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_clipped_tiles_keep_their_whole_size_where_the_tile_is_inside():
    # The main part of the partitioned loops computes full 4x16 tiles: constant, vectorized loops.
    f = tiled_matmul("llvm", te.var("M"), te.var("N"), te.var("K"))
    tir = f.get_source("tir")
    assert "ramp(i*16, 1, 16)] = x16(0.0f)" in tir, tir


def test_likely_guards_split_off_the_padding_of_packed_panels(rng):
    # examples/gemm.py pads its packed panels with te.select(te.likely(...)): the main part of the
    # packing copies without a check, which symbolic sizes cannot prove away otherwise.
    s, tensors = gemm_schedule(te.var("M"), te.var("N"), te.var("K"))
    f = te.build(s, tensors)
    assert "Ap[k*8 + io*(K*8) + ii] = A[(io*8 + ii)*K + k]" in f.get_source("tir"), f.get_source("tir")
    for m, n, k in [(1, 1, 1), (9, 33, 5), (64, 64, 64), (70, 3, 130)]:
        a = rng.standard_normal((m, k)).astype("float32")
        b = rng.standard_normal((k, n)).astype("float32")
        c = tessera.empty((m, n))
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_intermediate_of_symbolic_size_and_a_reduction_over_a_symbolic_axis(rng):
    n = te.var("n")
    A = te.placeholder((n, 5), name="A")
    T = te.compute((n, 5), lambda i, j: A[i, j] * A[i, j], name="T")
    k = te.reduce_axis((0, n), name="k")
    S = te.compute((5,), lambda j: te.sum(T[k, j], axis=k), name="S")
    s = te.create_schedule(S)
    s[S].split(k, 8)
    for target in ("llvm", "c"):
        f = te.build(s, [A, S], target=target)
        for rows in (0, 1, 9, 300, 70000):  # the last one's T is over the stack's limit: on the heap
            a = rng.standard_normal((rows, 5)).astype("float32")
            out = np.empty(5, "float32")
            f(a, out)
            np.testing.assert_allclose(out, (a * a).sum(0), rtol=1e-4, atol=1e-6)


def test_dimensions_that_are_expressions_of_variables(rng):
    n = te.var("n")
    A = te.placeholder((n, 3), name="A")
    B = te.compute((n * 3,), lambda i: A[i // 3, i % 3] + 1.0, name="B")
    C = te.compute((n + 1, 3), lambda i, j: te.if_then_else(i < n, A[te.min(i, n - 1), j], 0.0), name="C")
    f = te.build(te.create_schedule([B, C]), [A, B, C])
    for rows in (0, 1, 4):
        a = rng.standard_normal((rows, 3)).astype("float32")
        b, c = np.empty(rows * 3, "float32"), np.empty((rows + 1, 3), "float32")
        f(a, b, c)
        np.testing.assert_array_equal(b, a.ravel() + 1)
        np.testing.assert_array_equal(c, np.concatenate([a, np.zeros((1, 3), "float32")]))
    with pytest.raises(tessera.Error, match=r"argument 'B' \(#1\): dimension 0 must be n\*3 = 12 \(n = 4 from "
                                            r"argument 'A' dimension 0\), got 11"):
        f(np.zeros((4, 3), "float32"), np.zeros(11, "float32"), np.zeros((5, 3), "float32"))


def test_mixed_static_and_symbolic_dimensions_and_strided_inputs(rng):
    n = te.var("n")
    A = te.placeholder((n, 7), name="A")
    B = te.compute((n, 7), lambda i, j: A[i, j] - 1.0, name="B")
    f = te.build(te.create_schedule(B), [A, B])
    a = rng.standard_normal((10, 14)).astype("float32")[:, ::2]  # strided: through an aligned copy
    b = np.empty((10, 7), "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a - 1)
    with pytest.raises(tessera.Error, match=r"argument 'A' \(#0\): dimension 1 must be 7, got 6"):
        f(np.zeros((3, 6), "float32"), np.zeros((3, 7), "float32"))
    with pytest.raises(tessera.Error, match=r"expected shape \(n, 7\) float32, got \(3,\) float32"):
        f(np.zeros(3, "float32"), np.zeros((3, 7), "float32"))


def test_a_size_variable_is_read_from_one_argument_and_checked_in_the_others():
    f = scale_kernel("llvm")
    with pytest.raises(tessera.Error, match=r"argument 'B' \(#1\): dimension 0 must be n = 3 \(from argument 'A' "
                                            r"dimension 0\), got 4"):
        f(np.zeros(3, "float32"), np.zeros(4, "float32"))


def test_int32_size_variables():
    f = scale_kernel("llvm", te.var("n", "int32"))
    a = np.arange(20, dtype="float32")
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


def test_a_variable_a_constant_multiplies_is_bound_from_the_shapes():
    # [N*4, L, 64]: an attention's heads; the call tells n from the first dimension.
    n = te.var("n")
    A = te.placeholder((n * 2, 3), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n * 2, 3), lambda i, j: A[i, j] + B[i // 2], name="C")
    f = te.build(te.create_schedule(C), [A, C, B])
    a = np.arange(30, dtype="float32").reshape(10, 3)
    b = np.arange(5, dtype="float32")
    c = np.empty_like(a)
    f(a, c, b)
    np.testing.assert_array_equal(c, a + np.repeat(b, 2)[:, None])
    with pytest.raises(tessera.Error, match="dimension 0 must be n\\*2 = 8"):
        f(np.zeros((9, 3), "float32"), np.zeros((9, 3), "float32"), np.zeros(4, "float32"))


def test_what_symbolic_kernels_cannot_do_is_an_error_that_says_so():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n * m,), name="A")
    B = te.compute((n * m,), lambda i: A[i], name="B")
    f = te.build(te.create_schedule(B), [A, B])
    with pytest.raises(tessera.Error, match="no argument has the dimension n by itself or times a constant"):
        f(np.zeros(6, "float32"), np.zeros(6, "float32"))

    A = te.placeholder((n,), name="A")
    B = te.compute((te.var("n"),), lambda i: A[i], name="B")
    with pytest.raises(tessera.Error, match="two different dimension variables are named n"):
        te.build(te.create_schedule(B), [A, B])

    A = te.placeholder((n, 4), name="A")
    T = te.compute((n, 4), lambda i, j: A[i, j] + 1.0, name="T")
    B = te.compute((n, 4), lambda i, j: T[i, j] * 2.0, name="B")
    s = te.create_schedule(B)
    s[T].storage_align(T.op.axis[0], 16, 4)
    with pytest.raises(tessera.Error, match="storage_align of T: its buffer's dimension 0 has the symbolic extent n"):
        te.build(s, [A, B])


# --- devices: the grid follows the sizes, each kernel takes the dimensions it reads ----------

def device_targets():
    """OpenCL (PoCL here) and CUDA where a device is found; every kernel compiles for sm_80 with
    NVRTC and ptxas wherever the toolkit is (checked by the callers)."""
    return ["opencl"] + (["cuda"] if tessera.device("cuda").exists else [])


def check_cuda_compiles(s, tensors):
    assert "registers" in te.build(s, tensors, target="cuda -arch=sm_80").get_source("ptxas")


def test_device_elementwise_grid_of_symbolic_size(rng):
    n = te.var("n")
    A = te.placeholder((n, 3), name="A")
    B = te.compute((n, 3), lambda i, j: A[i, j] * 2.0 - 1.0, name="B")
    s = te.create_schedule(B)
    bx, tx = s[B].split(s[B].fuse(*B.op.axis), factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    check_cuda_compiles(s, [A, B])
    for target in device_targets():
        f = te.build(s, [A, B], target=target)
        (name, grid, block), = f.kernels
        assert grid[0] == "floordiv((n*3 + 63), 64)" and block == (64, 1, 1), f.kernels
        for rows in (0, 1, 21, 22, 1000):
            a = rng.standard_normal((rows, 3)).astype("float32")
            b = np.full((rows, 3), np.nan, "float32")
            f(a, b)
            np.testing.assert_array_equal(b, a * 2 - 1)
        with pytest.raises(tessera.Error, match=r"argument 'B' \(#1\): dimension 0 must be n = 4"):
            f(np.zeros((4, 3), "float32"), np.zeros((5, 3), "float32"))


def test_device_row_reductions_across_threads_and_a_workspace_of_symbolic_size(rng):
    rows, cols = te.var("rows"), te.var("cols")
    X = te.placeholder((rows, cols), name="X")
    E = te.compute((rows, cols), lambda i, j: te.exp(X[i, j]), name="E")  # a kernel of its own
    k = te.reduce_axis((0, cols), name="k")
    S = te.compute((rows,), lambda i: te.sum(E[i, k], axis=k), name="S")
    s = te.create_schedule(S)
    eb, et = s[E].split(s[E].fuse(*E.op.axis), factor=128)
    s[E].bind(eb, te.thread_axis("blockIdx.x"))
    s[E].bind(et, te.thread_axis("threadIdx.x"))
    ko, ki = s[S].split(k, factor=32)
    SF = s.rfactor(S, ki)
    s[S].bind(S.op.axis[0], te.thread_axis("blockIdx.x"))
    s[S].bind(s[S].op.reduce_axis[0], te.thread_axis("threadIdx.x"))
    s[SF].compute_at(s[S], s[S].op.reduce_axis[0])
    check_cuda_compiles(s, [X, S])
    for target in device_targets():
        f = te.build(s, [X, S], target=target)
        for r, c in [(1, 1), (3, 31), (5, 33), (2, 200), (4, 0)]:  # the workspace E changes size
            x = rng.standard_normal((r, c)).astype("float32")
            out = np.empty(r, "float32")
            f(x, out)
            np.testing.assert_allclose(out, np.exp(x).sum(1), rtol=1e-5, atol=1e-5)


def test_device_gemm_with_shared_tiles_at_symbolic_sizes(rng):
    M, N, K = te.var("M"), te.var("N"), te.var("K")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    r = te.reduce_axis((0, K), name="r")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = schedule_gemm(A, B, C, tile=16, thread_tile=2, k_tile=4)
    check_cuda_compiles(s, [A, B, C])
    for target in device_targets():
        f = te.build(s, [A, B, C], target=target)
        for m, n, k in [(1, 1, 1), (17, 33, 9), (32, 16, 64), (0, 5, 3)]:
            a = rng.standard_normal((m, k)).astype("float32")
            b = rng.standard_normal((k, n)).astype("float32")
            c = np.empty((m, n), "float32")
            f(a, b, c)
            np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
