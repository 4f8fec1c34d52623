"""The tessera.te API: data types, zero-copy calls, errors with clear messages, lowering text,
traces from Python."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tessera
from tessera import te
from test_te_ops import matmul_def


def elementwise(shape, dtype, fn, name="B"):
    A = te.placeholder(shape, dtype, name="A")
    B = te.compute(shape, lambda *i: fn(A[i]), name=name)
    return A, B


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8"])
def test_dtypes_roundtrip_arithmetic(rng, dtype):
    A, B = elementwise((37,), dtype, lambda x: x * 3 + 1)
    s = te.create_schedule(B)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = te.build(s, [A, B])
    a = (rng.integers(-20, 20, 37) if "int" in dtype else rng.standard_normal(37)).astype(dtype)
    if dtype == "uint8":
        a = rng.integers(0, 80, 37).astype(dtype)
    b = np.zeros(37, dtype)
    f(a, b)
    expected = (a.astype("float32") * 3 + 1).astype(dtype) if dtype == "float16" else a * np.asarray(3, dtype) + np.asarray(1, dtype)
    np.testing.assert_allclose(b.astype("float64"), expected.astype("float64"), rtol=1e-3 if dtype == "float16" else 1e-6)


def test_float16_computes_in_float32(rng):
    # 2048 + 1 is not representable in float16, but the sum is formed in float32 first.
    A = te.placeholder((4,), "float16", name="A")
    B = te.compute((4,), lambda i: (A[i] + 1.0) - 2048.0, name="B")
    f = te.build(te.create_schedule(B), [A, B])
    a = np.full(4, 2048, "float16")
    b = np.zeros(4, "float16")
    f(a, b)
    np.testing.assert_array_equal(b, np.ones(4, "float16"))


def test_bool_and_casts(rng):
    A = te.placeholder((10,), "float32", name="A")
    M = te.compute((10,), lambda i: A[i] > 0.0, name="M")
    C = te.compute((10,), lambda i: te.cast(M[i], "int32") * 5 + te.cast(A[i], "int32"), name="C")
    f = te.build(te.create_schedule([M, C]), [A, M, C])
    a = rng.standard_normal(10).astype("float32") * 10
    m, c = np.zeros(10, bool), np.zeros(10, "int32")
    f(a, m, c)
    np.testing.assert_array_equal(m, a > 0)
    np.testing.assert_array_equal(c, (a > 0) * 5 + a.astype("int32"))


def test_integer_division_follows_python():
    A = te.placeholder((8,), "int32", name="A")
    B = te.compute((8,), lambda i: A[i] // 3 + A[i] % 3 * 100 + te.truncdiv(A[i], 3) * 10000, name="B")
    f = te.build(te.create_schedule(B), [A, B])
    a = np.array([-7, -6, -1, 0, 1, 5, 6, 7], "int32")
    b = np.zeros(8, "int32")
    f(a, b)
    np.testing.assert_array_equal(b, a // 3 + a % 3 * 100 + np.trunc(a / 3).astype("int32") * 10000)


@pytest.mark.parametrize("name,ref", [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("tanh", np.tanh), ("abs", np.abs),
    ("floor", np.floor), ("ceil", np.ceil), ("round", np.round), ("sin", np.sin), ("cos", np.cos),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("rsqrt", lambda x: 1 / np.sqrt(x)),
])
def test_intrinsics_vectorized(rng, name, ref):
    A, B = elementwise((35,), "float32", getattr(te, name))
    s = te.create_schedule(B)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = te.build(s, [A, B])
    a = rng.uniform(0.1, 5, 35).astype("float32")
    b = np.zeros(35, "float32")
    f(a, b)
    np.testing.assert_allclose(b, ref(a.astype("float64")), rtol=2e-6, atol=1e-6)


def test_zero_copy_and_unaligned_arrays(rng):
    A, B = elementwise((1000,), "float32", lambda x: x + 1)
    f = te.build(te.create_schedule(B), [A, B])
    aligned = tessera.empty((1000,))
    assert aligned.ctypes.data % 64 == 0
    aligned[:] = rng.standard_normal(1000)
    out = tessera.empty((1000,))
    f(aligned, out)
    np.testing.assert_allclose(out, aligned + 1)
    # Misaligned and strided arrays go through an aligned copy, outputs are copied back.
    buf = np.zeros(1001, "float32")
    shifted_in = buf[1:]
    shifted_in[:] = rng.standard_normal(1000)
    strided_out = np.zeros(2000, "float32")[::2]
    f(shifted_in, strided_out)
    np.testing.assert_allclose(strided_out, shifted_in + 1)


def test_call_errors_name_the_argument():
    A, B = elementwise((4, 5), "float32", lambda x: x * 2)
    f = te.build(te.create_schedule(B), [A, B])
    good = np.zeros((4, 5), "float32")
    with pytest.raises(tessera.Error, match=r"argument 'A' \(#0\): expected shape \(4, 5\) float32, got \(5, 4\) float32"):
        f(np.zeros((5, 4), "float32"), good)
    with pytest.raises(tessera.Error, match=r"argument 'B' \(#1\): expected shape \(4, 5\) float32, got \(4, 5\) float64"):
        f(good, np.zeros((4, 5)))
    with pytest.raises(TypeError, match="takes 2 arrays, got 1"):
        f(good)
    with pytest.raises(TypeError, match="expected a numpy array"):
        f(good, [[0.0] * 5] * 4)
    readonly = np.zeros((4, 5), "float32")
    readonly.setflags(write=False)
    with pytest.raises(tessera.Error, match="read-only"):
        f(good, readonly)


def test_schedule_errors_name_stage_and_axis():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    S = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="S")
    s = te.create_schedule(S)
    with pytest.raises(tessera.Error, match="stage S has no loop 'nope'"):
        s[S].split("nope", factor=2)
    with pytest.raises(ValueError, match="exactly one of factor= and nparts="):
        s[S].split(S.op.axis[0])
    other = te.compute((8,), lambda i: A[i, 0], name="Other")
    with pytest.raises(tessera.Error, match="stage S has no axis 'i'"):
        s[S].split(other.op.axis[0], factor=2)
    with pytest.raises(tessera.Error, match="operand types differ"):
        te.compute((8,), lambda i: A[i, 0] + te.cast(i, "int32"), name="Bad")
    with pytest.raises(TypeError, match="no truth value"):
        bool(A[0, 0] > 1.0)


def test_lower_returns_the_loop_nest():
    A, B = elementwise((64,), "float32", lambda x: x * 2)
    s = te.create_schedule(B)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    s[B].parallel(xo)
    text = te.lower(s, [A, B])
    assert "parallel (i.outer, 0, 4)" in text
    assert "B[ramp(i.outer*16, 1, 16)] = A[ramp(i.outer*16, 1, 16)]*x16(2.0f)" in text


def test_trace_from_python_replays():
    def define():
        A = te.placeholder((50, 30), name="A")
        B = te.compute((50, 30), lambda i, j: A[i, j] * 2.0, name="B")
        return A, B

    A, B = define()
    s = te.create_schedule(B)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 8, 16)
    s[B].vectorize(yi)
    trace = s.trace
    parsed = te.Trace.from_json(trace.to_json())
    assert parsed == trace and len(parsed) == 4
    assert json.loads(trace.to_json())[0]["kind"] == "split"
    A2, B2 = define()
    s2 = te.create_schedule(B2)
    s2.replay(parsed)
    assert te.lower(s2, [A2, B2]) == te.lower(s, [A, B])
    assert 's["B"].vectorize("j.inner")' in str(trace)


def test_printed_trace_is_runnable_code():
    A, B, C = matmul_def(40, 36, 24)
    s = te.create_schedule(C)
    BL = s.cache_read(B, "local", [C])
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[CC].compute_at(s[C], jo)
    s[BL].compute_inline()
    s[C].vectorize(ji)
    A2, B2, C2 = matmul_def(40, 36, 24)
    s2 = te.create_schedule(C2)
    exec(str(s.trace), {"s": s2})
    assert te.lower(s2, [A2, B2, C2]) == te.lower(s, [A, B, C])


def every_primitive(define):
    """Three schedules of define()'s matmul that between them apply every primitive of the trace table
    (rfactor comes before compute_at, so it has its own; the device primitives have theirs), and the
    tensors of each."""
    A, B, C = define()
    s = te.create_schedule(C)
    BL = s.cache_read(B, "local", [C])
    CC = s.cache_write(C, "local")
    io, ii = s[C].split(C.op.axis[0], nparts=2)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(io, jo, ii, ji)
    fused = s[C].fuse(io, jo)
    s[C].parallel(fused)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].pragma(ii, "unroll_explicit", 0)
    s[CC].compute_at(s[C], fused)
    s[CC].storage_align(0, 16, 1)
    s[BL].compute_inline()
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=4)
    s[CC].prefetch(A, ko, s[C], fused, 1)
    A2, B2, C2 = define()
    s2 = te.create_schedule(C2)
    ko, ki = s2[C2].split(C2.op.reduce_axis[0], factor=4)
    RF = s2.rfactor(C2, ki, factor_axis=1)
    s2[RF].compute_root()
    # The device primitives: a block's rows of A in shared memory, filled by its threads.
    A3, B3, C3 = define()
    s3 = te.create_schedule(C3)
    AS = s3.cache_read(A3, "local", [C3])
    s3[AS].set_scope("shared")
    io, ii = s3[C3].split(C3.op.axis[0], factor=4)
    jo, ji = s3[C3].split(C3.op.axis[1], factor=8)
    s3[C3].bind(io, te.thread_axis("blockIdx.x"))
    s3[C3].bind(ii, te.thread_axis("threadIdx.x"))
    s3[C3].bind(jo, te.thread_axis("vthread"))
    s3[AS].compute_at(s3[C3], ji)
    fo, fi = s3[AS].split(s3[AS].fuse(*s3[AS].op.axis), factor=4)
    s3[AS].bind(fi, "threadIdx.x")
    return [(s, [A, B, C]), (s2, [A2, B2, C2]), (s3, [A3, B3, C3])]


def test_every_trace_primitive_prints_as_runnable_code():
    define = lambda: matmul_def(16, 16, 16)
    kinds = set()
    for s, tensors in every_primitive(define):
        kinds |= {i["kind"] for i in json.loads(s.trace.to_json())}
        fresh = define()
        replayed = te.create_schedule(fresh[2])
        exec(str(s.trace), {"s": replayed})
        assert replayed.trace == s.trace
        assert te.lower(replayed, fresh) == te.lower(s, tensors)
    assert kinds == {p["name"] for p in te.Trace.primitives()}


def pybind_params(method):
    """The parameter names after self in a pybind11 method's signature line."""
    line = method.__doc__.splitlines()[0]
    start = line.index("(") + 1
    depth, end = 0, start
    while depth or line[end] != ")":
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(line[end], 0)
        end += 1
    parts, depth, piece = [], 0, ""
    for ch in line[start:end]:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and not depth:
            parts.append(piece)
            piece = ""
        else:
            piece += ch
    parts.append(piece)
    names = [p.split(":")[0].split("=")[0].strip() for p in parts]
    return ["*loops" if n == "*args" else n for n in names[1:]]


def test_every_trace_primitive_is_a_method_with_the_tables_parameters():
    # The trace prints each primitive as a call of this method with these parameters, so the
    # binding and the table (schedule/primitive_table.cc) must agree.
    for p in te.Trace.primitives():
        owner = {"Stage": te.Stage, "Schedule": te.Schedule}[p["method_of"]]
        assert hasattr(owner, p["name"]), p
        assert pybind_params(getattr(owner, p["name"])) == p["params"], p


def assert_40x24x70_product_computes_and_replays(s, tensors, rng):
    """The schedule `s` of matmul_def(40, 70, 24) computes A @ B, and its printed trace, run as
    code on a fresh definition, lowers to the same program."""
    f = te.build(s, tensors)
    a, b = rng.standard_normal((40, 24), dtype=np.float32), rng.standard_normal((24, 70), dtype=np.float32)
    c = np.empty((40, 70), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    A2, B2, C2 = matmul_def(40, 70, 24)
    s2 = te.create_schedule(C2)
    exec(str(s.trace), {"s": s2})
    assert te.lower(s2, [A2, B2, C2]) == te.lower(s, tensors)


def test_prefetch_streams_the_next_panel(rng):
    # The product computed per tile fetches the B columns of the next tile along the row, a
    # share per step of its reduction; the result is unchanged and the trace replays as code.
    A, B, C = matmul_def(40, 70, 24)
    s = te.create_schedule(C)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[CC].compute_at(s[C], jo)
    s[CC].prefetch(B, s[CC].op.reduce_axis[0], s[C], jo, 1)
    text = te.lower(s, [A, B, C])
    assert "prefetch(B[" in text
    assert_40x24x70_product_computes_and_replays(s, [A, B, C], rng)
    assert 's["C.local"].prefetch(s["B"], "r", s["C"], "j.outer", 1)' in str(s.trace)
    with pytest.raises(tessera.Error, match="offset must be at least 1"):
        s[CC].prefetch(B, "r", s[C], jo, 0)


def test_prefetch_along_a_loop_fused_into_the_tile_loop(rng):
    # The next block of 8 rows of A is one step of i.outer, fused outside j.outer's 5 tiles: the
    # prefetch names i.outer (by its loop, and by its name in the trace) and reads 5 tiles ahead.
    A, B, C = matmul_def(40, 70, 24)
    s = te.create_schedule(C)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    fused = s[C].fuse(io, jo)
    s[CC].compute_at(s[C], fused)
    s[CC].prefetch(A, s[CC].op.reduce_axis[0], s[C], io, 1)
    text = te.lower(s, [A, B, C])
    assert "prefetch(A[i.outer.j.outer.fused // 5*192 + " in text, text
    assert_40x24x70_product_computes_and_replays(s, [A, B, C], rng)
    assert 's["C.local"].prefetch(s["A"], "r", s["C"], "i.outer", 1)' in str(s.trace)
    with pytest.raises(tessera.Error, match="stage C has no loop 'i'"):  # split, not fused
        s[CC].prefetch(A, "r", s[C], "i", 1)


@pytest.mark.parametrize("how", ["vector_lanes", "threads"])
def test_rfactor_reduction(rng, how):
    n = 10007
    X = te.placeholder((n,), name="X")
    k = te.reduce_axis((0, n), name="k")
    S = te.compute((1,), lambda i: te.sum(X[k] * X[k], axis=k), name="S")
    s = te.create_schedule(S)
    if how == "vector_lanes":  # 16 partial sums in one vector register, combined as a tree
        ko, ki = s[S].split(k, factor=16)
        SF = s.rfactor(S, ki)
        s[SF].vectorize(SF.op.axis[0])
        s[S].vectorize(s[S].op.reduce_axis[0])
        text = te.lower(s, [X, S])
        assert "S[0] = S[0] + (S.rf[0] + S.rf[8] + (S.rf[4] + S.rf[12])" in text and "k.inner" not in text.split("S[0] = 0")[1]
    else:  # one partial sum per thread
        ko, ki = s[S].split(k, nparts=4)
        SF = s.rfactor(S, ko)
        s[SF].parallel(SF.op.axis[0])
    f = te.build(s, [X, S])
    x = rng.standard_normal(n).astype("float32")
    out = np.zeros(1, "float32")
    f(x, out)
    np.testing.assert_allclose(out[0], np.dot(x.astype("float64"), x), rtol=1e-4)


def test_dump_ir_and_sources(tmp_path):
    A, B = elementwise((32,), "float32", lambda x: x + 1)
    s = te.create_schedule(B)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = te.build(s, [A, B], name="add_one")
    assert "<16 x float>" in f.get_source("ll")
    assert "zmm" in f.get_source("asm") or "ymm" in f.get_source("asm")
    assert "func add_one" in f.get_source("tir")
    # TESSERA_DUMP_IR=<folder> writes every lowering step, in a fresh process.
    code = ("from tessera import te\n"
            "A = te.placeholder((8,), name='A'); B = te.compute((8,), lambda i: A[i] + 1, name='B')\n"
            "te.lower(te.create_schedule(B), [A, B], name='k')\n")
    env = dict(os.environ, TESSERA_DUMP_IR=str(tmp_path), PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.check_call([sys.executable, "-c", code], env=env)
    steps = sorted(os.listdir(tmp_path))
    assert steps[0].startswith("k.1.schedule_ops") and any("vectorize" in s for s in steps)


def test_thread_count_from_environment():
    env = dict(os.environ, TESSERA_NUM_THREADS="3", PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.check_output([sys.executable, "-c", "import tessera; print(tessera.num_threads())"], env=env)
    assert out.strip() == b"3"
