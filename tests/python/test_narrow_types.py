"""The narrow element types (bfloat16, the float8 formats, float4_e2m1fn, int4, uint4, int2,
uint2): kernels decode every code and encode floats bit for bit as ml_dtypes does, on every
target; the runtime's own conversions (constants) agree; graphs compute on them in their compute
types. Arrays of these types are ml_dtypes arrays, so the tests need ml_dtypes (the numpy-2
environment of scripts/test.sh has it)."""
import numpy as np
import pytest

import tessera
from tessera import relay, te

ml_dtypes = pytest.importorskip("ml_dtypes")

FLOATS = ["bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
          "float4_e2m1fn"]
INTS = ["int4", "uint4", "int2", "uint2"]
TARGETS = ["llvm", "c", "opencl"]


def bits_of(name):
    if name == "bfloat16":
        return 16
    if name.startswith("float4") or name in ("int4", "uint4"):
        return 4
    return 2 if name in ("int2", "uint2") else 8


def all_codes(name):
    """Every value of the type, from its codes."""
    bits = bits_of(name)
    return np.arange(2**bits, dtype=np.uint16 if bits == 16 else np.uint8).view(np.dtype(name))


def storage(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)


def elementwise(target, n, in_dtype, out_dtype):
    """A kernel casting n elements of in_dtype to out_dtype, vectorized or on threads."""
    if target == "opencl" and not tessera.device("opencl").exists:
        pytest.skip("no OpenCL device")
    A = te.placeholder((n,), in_dtype, name="A")
    B = te.compute((n,), lambda i: te.cast(A[i], out_dtype), name="B")
    s = te.create_schedule(B)
    if target == "opencl":
        xo, xi = s[B].split(B.op.axis[0], factor=64)
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        s[B].bind(xi, te.thread_axis("threadIdx.x"))
    else:
        xo, xi = s[B].split(B.op.axis[0], factor=16)
        s[B].vectorize(xi)
    return te.build(s, [A, B], target=target)


def floats_to_encode(name, rng):
    """Random values over the type's range and around its subnormals, every value, the midpoints
    between neighbours (ties), and the special values."""
    values = all_codes(name).astype(np.float32)
    finite = values[np.isfinite(values)]
    info = ml_dtypes.finfo(np.dtype(name))
    with np.errstate(over="ignore", invalid="ignore"):
        sweep = [rng.standard_normal(2000) * float(info.max) / 4, rng.standard_normal(2000) * float(info.tiny) * 4,
                 finite, finite * 1.0625, finite * 0.97, (finite[:-1] + finite[1:]) / 2, finite * 1.5,
                 [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-30, 2.0**-127, 1.5 * 2.0**-127, 2.0**-128]]
    return np.concatenate([np.asarray(v, np.float64) for v in sweep]).astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", FLOATS + INTS)
def test_kernels_decode_every_code_as_ml_dtypes(target, name):
    x = all_codes(name)
    wide = "int32" if name in INTS else "float32"
    f = elementwise(target, x.size, name, wide)
    got = np.zeros(x.size, wide)
    f(x, got)
    want = x.astype(wide)
    if wide == "float32":  # bit for bit: signed zeros and NaN's sign included
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", FLOATS)
def test_kernels_encode_floats_as_ml_dtypes(rng, target, name):
    y = floats_to_encode(name, rng)
    f = elementwise(target, y.size, "float32", name)
    got = np.zeros(y.size, np.dtype(name))
    f(y, got)
    with np.errstate(invalid="ignore", over="ignore"):
        want = y.astype(np.dtype(name))
    bad = storage(got) != storage(want)
    assert not bad.any(), f"{y[bad][:8]} -> {storage(got)[bad][:8]}, ml_dtypes gives {storage(want)[bad][:8]}"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", INTS)
def test_kernels_encode_ints_as_ml_dtypes(rng, target, name):
    # From floats: truncated toward zero, 0 when out of range; from integers: wrapped.
    y = np.concatenate([rng.uniform(-20, 20, 3000), [7.5, -8.5, 8, -9, 3.99, -0.0, 1e9, np.nan, np.inf]]).astype("float32")
    f = elementwise(target, y.size, "float32", name)
    got = np.zeros(y.size, np.dtype(name))
    f(y, got)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(storage(got), storage(y.astype(np.dtype(name))))
    k = np.arange(-300, 300, dtype=np.int32)
    g = elementwise(target, k.size, "int32", name)
    got = np.zeros(k.size, np.dtype(name))
    g(k, got)
    np.testing.assert_array_equal(storage(got), storage(k.astype(np.dtype(name))))


@pytest.mark.parametrize("name", FLOATS + INTS)
def test_cuda_kernels_compile(name):
    for in_dtype, out_dtype in [(name, "float32"), ("float32", name)]:
        A = te.placeholder((256,), in_dtype, name="A")
        B = te.compute((256,), lambda i: te.cast(A[i], out_dtype), name="B")
        s = te.create_schedule(B)
        xo, xi = s[B].split(B.op.axis[0], factor=64)
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        s[B].bind(xi, te.thread_axis("threadIdx.x"))
        f = te.build(s, [A, B], target="cuda -arch=sm_80")
        assert "registers" in f.get_source("ptxas")


@pytest.mark.parametrize("name", FLOATS + INTS)
def test_constants_print_and_parse_as_ml_dtypes(name):
    # The runtime's conversions (constants, the graph's text) against ml_dtypes: printing decodes
    # every code; parsing the printed values encodes them back to the same codes.
    x = all_codes(name)
    if x.size > 256:
        x = x[np.r_[0:64, 0x7F00:0x8100, 0xFF40:0x10000]]  # bfloat16: zeros, the top and the NaNs
    mod = relay.function([], relay.const(x))
    text = mod.text(max_constant_elements=-1)
    listed = text.split("], [", 1)[1].rsplit("])", 1)[0]  # constant(type[n], [values])
    printed = np.array([float(v) for v in listed.replace("\n", " ").split(",")], np.float32)  # shortest float32 text
    want = x.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(printed), np.isnan(want))
    np.testing.assert_array_equal(printed[~np.isnan(want)], want[~np.isnan(want)])
    lib = tessera.build(relay.parse(text))
    (back,) = lib.run({})
    assert back.dtype == x.dtype
    keep = ~np.isnan(want)  # a NaN parses back as the type's first NaN code
    np.testing.assert_array_equal(storage(back)[keep], storage(x)[keep])


def test_bfloat16_graph_computes_in_float32_and_rounds_its_outputs(rng):
    a = rng.standard_normal((5, 7)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((7, 3)).astype(ml_dtypes.bfloat16)
    x, y = relay.var("x", a.shape, "bfloat16"), relay.var("y", b.shape, "bfloat16")
    wide = [relay.op.cast(v, dtype="float32") for v in (x, y)]
    out = relay.op.cast(relay.op.tanh(relay.op.matmul(*wide)), dtype="bfloat16")
    (got,) = tessera.build(relay.function([x, y], out)).run({"x": a, "y": b})
    want = np.tanh(a.astype(np.float32) @ b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2**-7)


def test_bitcast_reads_bits():
    x = relay.var("x", (3,), "float32")
    as_bfloat16 = relay.op.cast(x, dtype="bfloat16")
    mod = relay.function([x], [relay.op.bitcast(x, dtype="int32"), relay.op.bitcast(as_bfloat16, dtype="uint16")])
    a = np.array([1.0, -0.0, np.nan], np.float32)
    bits, bf = tessera.build(mod).run({"x": a})
    np.testing.assert_array_equal(bits, a.view(np.int32))
    np.testing.assert_array_equal(bf, a.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_bitcast_of_different_widths_is_an_error():
    x = relay.var("x", (3,), "float32")
    with pytest.raises(tessera.Error, match="widths differ"):
        tessera.build(relay.function([x], relay.op.bitcast(x, dtype="int16")))


@pytest.mark.parametrize("name,onnx_type", [("bfloat16", 16), ("float8_e5m2", 19), ("int4", 22)])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_onnx_data_movement_keeps_the_bits(tmp_path, name, onnx_type, opt_level):
    # Transpose, Reshape, Gather and Slice move narrow elements as they are (NaN payloads
    # included), with no conversion in the graph.
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper
    dt = np.dtype(name)
    storage_type = np.uint16 if dt.itemsize == 2 else np.uint8
    codes = (np.arange(30, dtype=np.int64) * 2654435761 % (16 if name == "int4" else 2 ** (8 * dt.itemsize)))
    codes = codes.astype(storage_type)
    codes[3:5] = {"bfloat16": [0x7FC1, 0xFF81], "float8_e5m2": [0x7D, 0xFF], "int4": [8, 15]}[name]
    x = codes.reshape(2, 3, 5).view(dt)
    ints = lambda v, n: numpy_helper.from_array(np.array(v, np.int64), n)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
             helper.make_node("Reshape", ["t", "shape"], ["r"]),
             helper.make_node("Gather", ["r", "idx"], ["g"], axis=1),
             helper.make_node("Slice", ["g", "starts", "ends"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx_type, [2, 3, 5])],
                              [helper.make_tensor_value_info("y", onnx_type, [4, 3])],
                              [ints([5, 6], "shape"), ints([4, 0, 4], "idx"), ints([1], "starts"), ints([5], "ends")])
    path = str(tmp_path / "move.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    mod = tessera.onnx.load(path)
    assert "cast(" not in str(mod)
    (y,) = tessera.build(mod, opt_level=opt_level).run([x])
    want = x.transpose(2, 0, 1).reshape(5, 6)[:, [4, 0, 4]][1:5]
    assert y.dtype == dt
    np.testing.assert_array_equal(storage(y), storage(want))


def test_onnx_concat_pad_and_where_keep_the_bits(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper
    x = np.array([0x3F80, 0x7FC1, 0xFF81, 0x0001, 0x8000, 0x4049], np.uint16).reshape(2, 3).view(ml_dtypes.bfloat16)
    pads = numpy_helper.from_array(np.array([0, 1, 0, 2], np.int64), "pads")
    fill = numpy_helper.from_array(np.array(1.5, np.float32), "fill")
    nodes = [helper.make_node("Concat", ["x", "x"], ["c"], axis=0),
             helper.make_node("CastLike", ["fill", "x"], ["v"]),
             helper.make_node("Pad", ["x", "pads", "v"], ["p"]),
             helper.make_node("Slice", ["c", "s", "e"], ["c2"]),
             helper.make_node("Where", ["m", "x", "c2"], ["w"])]
    ints = lambda v, n: numpy_helper.from_array(np.array(v, np.int64), n)
    bf = 16
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", bf, [2, 3]),
                                           helper.make_tensor_value_info("m", 9, [2, 3])],
                              [helper.make_tensor_value_info(n, bf, s) for n, s in [("c", [4, 3]), ("p", [2, 6]), ("w", [2, 3])]],
                              [pads, fill, ints([2], "s"), ints([4], "e")])
    path = str(tmp_path / "concat.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    mod = tessera.onnx.load(path)
    m = np.array([[True, False, True], [False, True, False]])
    c, p, w = tessera.build(mod).run([x, m])
    np.testing.assert_array_equal(storage(c), storage(np.concatenate([x, x])))
    want_p = np.pad(storage(x), ((0, 0), (1, 2)), constant_values=storage(np.array(1.5, ml_dtypes.bfloat16)))
    np.testing.assert_array_equal(storage(p), want_p)
    np.testing.assert_array_equal(storage(w), storage(x))  # both sides are x's bits
