"""Operators written in the DSL, each with three schedules: the naive one and one hand-optimized
for a CPU, run on this CPU, and one for a GPU (threads bound, cross-thread reductions, shared
memory), run on OpenCL (PoCL here) and on CUDA where a device is found (scripts/test_gpu.sh), and
compiled for sm_80 and sm_90 through NVRTC and ptxas everywhere. Each is checked against numpy on
shapes that split factors do not divide and with size-1 dimensions."""
import numpy as np
import pytest

import tessera
from tessera import te
from gemm_gpu import schedule_gemm

SCHEDULES = ["naive", "cpu", "gpu"]
BX, TX = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")


def run(s, tensors, inputs, out_shapes, target="llvm"):
    f = te.build(s, tensors, target=target)
    outs = [np.zeros(shape, "float32") for shape in out_shapes]
    f(*inputs, *outs)
    return outs


def runs(schedule, s, tensors, inputs, out_shapes):
    """The outputs of `s` on each target its schedule is for, to check each against numpy: this
    CPU; or for a GPU schedule, OpenCL and CUDA where a device is found, after compiling it for
    sm_80 and sm_90 (ptxas accepting each kernel)."""
    if schedule != "gpu":
        return [run(s, tensors, inputs, out_shapes)]
    for arch in ("sm_80", "sm_90"):
        assert "registers" in te.build(s, tensors, target="cuda -arch=" + arch).get_source("ptxas")
    targets = ["opencl"] + (["cuda"] if tessera.device("cuda").exists else [])
    return [run(s, tensors, inputs, out_shapes, target) for target in targets]


def bind_elements(s, T, threads=64):
    """A GPU thread per element of T (its reductions run in the thread): its loops fused, split by
    `threads`, bound to blocks and threads."""
    outer, inner = s[T].split(s[T].fuse(*T.op.axis), factor=threads)
    s[T].bind(outer, BX)
    s[T].bind(inner, TX)


def bind_rows(s, R, threads=32):
    """A block per element of R, a reduction over one axis: rfactor gives each of `threads` threads
    a strided share, and the threads reduce together (on cuda, one warp of shuffles)."""
    ko, ki = s[R].split(R.op.reduce_axis[0], factor=threads)
    RF = s.rfactor(R, ki)
    s[R].bind(s[R].fuse(*s[R].op.axis), BX)
    s[R].bind(s[R].op.reduce_axis[0], TX)
    s[RF].compute_at(s[R], s[R].op.reduce_axis[0])


# --- matmul ------------------------------------------------------------------------------

def matmul_def(n, m, k):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def matmul_optimized(A, B, C):
    s = te.create_schedule(C)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 32)
    s[CC].compute_at(s[C], jo)
    i, j = s[CC].op.axis
    (r,) = s[CC].op.reduce_axis
    ro, ri = s[CC].split(r, factor=4)
    s[CC].reorder(ro, ri, i, j)
    s[CC].unroll(ri)
    s[CC].vectorize(j)
    s[C].vectorize(ji)
    s[C].parallel(io)
    return s


@pytest.mark.parametrize("n,m,k", [(37, 45, 19), (1, 33, 7), (64, 64, 64), (5, 1, 3)])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_matmul(rng, n, m, k, schedule):
    A, B, C = matmul_def(n, m, k)
    s = {"naive": lambda: te.create_schedule(C), "cpu": lambda: matmul_optimized(A, B, C),
         "gpu": lambda: schedule_gemm(A, B, C, tile=16, thread_tile=2, k_tile=4)}[schedule]()
    a = rng.standard_normal((n, k), dtype="float32")
    b = rng.standard_normal((k, m), dtype="float32")
    for (c,) in runs(schedule, s, [A, B, C], [a, b], [(n, m)]):
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# --- convolution -------------------------------------------------------------------------

def conv2d_def(shape, kshape, stride, pad, dilation, groups=1):
    n, c, h, w = shape
    f, cg, kh, kw = kshape
    oh = (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    X = te.placeholder(shape, name="X")
    W = te.placeholder(kshape, name="W")
    P = te.compute((n, c, h + 2 * pad, w + 2 * pad),
                   lambda b, ch, y, x: te.select(te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
                                                 X[b, ch, y - pad, x - pad], 0.0), name="P")
    rc = te.reduce_axis((0, cg), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    fpg = f // groups
    Y = te.compute((n, f, oh, ow), lambda b, o, y, x: te.sum(
        P[b, (o // fpg) * cg + rc, y * stride + ry * dilation, x * stride + rx * dilation] * W[o, rc, ry, rx],
        axis=[rc, ry, rx]), name="Y")
    return X, W, P, Y


def conv2d_reference(x, w, stride, pad, dilation, groups=1):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, f, oh, ow), np.float64)
    fpg = f // groups
    for o in range(f):
        g = o // fpg
        for ry in range(kh):
            for rx in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg,
                           ry * dilation: ry * dilation + stride * (oh - 1) + 1: stride,
                           rx * dilation: rx * dilation + stride * (ow - 1) + 1: stride]
                out[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, ry, rx])
    return out


def conv2d_optimized(X, W, P, Y):
    s = te.create_schedule(Y)
    s[P].compute_inline()
    b, o, y, x = Y.op.axis
    rc, ry, rx = Y.op.reduce_axis
    xo, xi = s[Y].split(x, factor=8)
    oo, oi = s[Y].split(o, factor=4)
    s[Y].reorder(b, oo, y, xo, rc, ry, rx, oi, xi)
    s[Y].unroll(oi)
    s[Y].vectorize(xi)
    s[Y].parallel(s[Y].fuse(b, oo))
    return s


@pytest.mark.parametrize("shape,kshape,stride,pad,dilation", [
    ((1, 3, 13, 11), (5, 3, 3, 3), 1, 1, 1),
    ((2, 4, 17, 9), (6, 4, 3, 3), 2, 1, 1),
    ((1, 2, 15, 15), (3, 2, 3, 3), 1, 2, 2),
    ((1, 1, 7, 1), (2, 1, 3, 1), 1, 1, 1),
])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_conv2d(rng, shape, kshape, stride, pad, dilation, schedule):
    X, W, P, Y = conv2d_def(shape, kshape, stride, pad, dilation)
    if schedule == "cpu":
        s = conv2d_optimized(X, W, P, Y)
    else:
        s = te.create_schedule(Y)
        if schedule == "gpu":
            s[P].compute_inline()
            bind_elements(s, Y)
    x = rng.standard_normal(shape, dtype="float32")
    w = rng.standard_normal(kshape, dtype="float32")
    for (y,) in runs(schedule, s, [X, W, Y], [x, w], [tuple(Y.shape)]):
        np.testing.assert_allclose(y, conv2d_reference(x, w, stride, pad, dilation), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_depthwise_conv2d(rng, schedule):
    shape, kshape = (1, 6, 14, 13), (6, 1, 3, 3)
    X, W, P, Y = conv2d_def(shape, kshape, stride=2, pad=1, dilation=1, groups=6)
    s = te.create_schedule(Y)
    if schedule == "gpu":
        s[P].compute_inline()
        bind_elements(s, Y, threads=32)
    if schedule == "cpu":
        s[P].compute_at(s[Y], Y.op.axis[1])
        b, c, y, x = Y.op.axis
        xo, xi = s[Y].split(x, factor=4)
        s[Y].reorder(b, c, y, xo, *Y.op.reduce_axis, xi)
        s[Y].vectorize(xi)
        s[Y].parallel(c)
    x = rng.standard_normal(shape, dtype="float32")
    w = rng.standard_normal(kshape, dtype="float32")
    for (y,) in runs(schedule, s, [X, W, Y], [x, w], [tuple(Y.shape)]):
        np.testing.assert_allclose(y, conv2d_reference(x, w, 2, 1, 1, groups=6), rtol=1e-4, atol=1e-4)


# --- pooling -----------------------------------------------------------------------------

def pool_def(shape, k, stride, pad, kind):
    n, c, h, w = shape
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    X = te.placeholder(shape, name="X")
    ry = te.reduce_axis((0, k), name="ry")
    rx = te.reduce_axis((0, k), name="rx")

    def inside(y, x):
        return te.all(y >= 0, y < h, x >= 0, x < w)

    def at(b, ch, yy, xx):
        return X[b, ch, te.min(te.max(yy, 0), h - 1), te.min(te.max(xx, 0), w - 1)]

    if kind == "max":
        Y = te.compute((n, c, oh, ow), lambda b, ch, y, x: te.max(
            at(b, ch, y * stride + ry - pad, x * stride + rx - pad), axis=[ry, rx],
            where=inside(y * stride + ry - pad, x * stride + rx - pad)), name="Y")
        return X, [Y], Y
    S = te.compute((n, c, oh, ow), lambda b, ch, y, x: te.sum(
        te.select(inside(y * stride + ry - pad, x * stride + rx - pad),
                  at(b, ch, y * stride + ry - pad, x * stride + rx - pad), 0.0), axis=[ry, rx]), name="S")
    Y = te.compute((n, c, oh, ow), lambda b, ch, y, x: S[b, ch, y, x] / float(k * k), name="Y")
    return X, [S, Y], Y


def pool_reference(x, k, stride, pad, kind):
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    out = np.full((n, c, oh, ow), fill)
    for ry in range(k):
        for rx in range(k):
            win = xp[:, :, ry: ry + stride * (oh - 1) + 1: stride, rx: rx + stride * (ow - 1) + 1: stride]
            out = np.maximum(out, win) if kind == "max" else out + win
    return out if kind == "max" else out / (k * k)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("shape,k,stride,pad", [((1, 3, 11, 13), 3, 2, 1), ((2, 1, 8, 5), 2, 2, 0), ((1, 2, 1, 9), 1, 1, 0)])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_pool(rng, kind, shape, k, stride, pad, schedule):
    X, stages, Y = pool_def(shape, k, stride, pad, kind)
    s = te.create_schedule(Y)
    if schedule == "gpu":
        for stage in stages:  # the average's sum and division: a kernel each
            bind_elements(s, stage)
    if schedule == "cpu":
        if kind == "avg":
            s[stages[0]].compute_at(s[Y], Y.op.axis[2])
        b, c, y, x = Y.op.axis
        xo, xi = s[Y].split(x, factor=4)
        s[Y].vectorize(xi)
        s[Y].parallel(s[Y].fuse(b, c))
    x = rng.standard_normal(shape, dtype="float32")
    for (y,) in runs(schedule, s, [X, Y], [x], [tuple(Y.shape)]):
        np.testing.assert_allclose(y, pool_reference(x, k, stride, pad, kind), rtol=1e-5, atol=1e-5)


# --- softmax and layer norm --------------------------------------------------------------

def softmax_def(n, m):
    X = te.placeholder((n, m), name="X")
    k1 = te.reduce_axis((0, m), name="k1")
    k2 = te.reduce_axis((0, m), name="k2")
    M = te.compute((n,), lambda i: te.max(X[i, k1], axis=k1), name="M")
    E = te.compute((n, m), lambda i, j: te.exp(X[i, j] - M[i]), name="E")
    S = te.compute((n,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    Y = te.compute((n, m), lambda i, j: E[i, j] / S[i], name="Y")
    return X, M, E, S, Y


@pytest.mark.parametrize("n,m", [(7, 37), (1, 1), (3, 100)])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_softmax(rng, n, m, schedule):
    X, M, E, S, Y = softmax_def(n, m)
    s = te.create_schedule(Y)
    if schedule == "gpu":
        s[E].compute_inline()
        bind_rows(s, M)
        bind_rows(s, S)
        bind_elements(s, Y)
    if schedule == "cpu":
        i, j = Y.op.axis
        s[M].compute_at(s[Y], i)
        s[E].compute_at(s[Y], i)
        s[S].compute_at(s[Y], i)
        jo, ji = s[Y].split(j, factor=16)
        s[Y].vectorize(ji)
        eo, ei = s[E].split(E.op.axis[1], factor=16)
        s[E].vectorize(ei)
        s[Y].parallel(i)
    x = rng.standard_normal((n, m), dtype="float32") * 4
    e = np.exp(x - x.max(axis=1, keepdims=True))
    for (y,) in runs(schedule, s, [X, Y], [x], [(n, m)]):
        np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n,m", [(5, 33), (1, 7), (4, 1)])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_layer_norm(rng, n, m, schedule):
    eps = 1e-5
    X = te.placeholder((n, m), name="X")
    G = te.placeholder((m,), name="G")
    Bt = te.placeholder((m,), name="Bt")
    k1 = te.reduce_axis((0, m), name="k1")
    k2 = te.reduce_axis((0, m), name="k2")
    Mean = te.compute((n,), lambda i: te.sum(X[i, k1], axis=k1) , name="Mean")
    Var = te.compute((n,), lambda i: te.sum((X[i, k2] - Mean[i] / m) * (X[i, k2] - Mean[i] / m), axis=k2), name="Var")
    Y = te.compute((n, m), lambda i, j: (X[i, j] - Mean[i] / m) * te.rsqrt(Var[i] / m + eps) * G[j] + Bt[j], name="Y")
    s = te.create_schedule(Y)
    if schedule == "gpu":
        bind_rows(s, Mean, threads=64)
        bind_rows(s, Var, threads=64)
        bind_elements(s, Y)
    if schedule == "cpu":
        i, j = Y.op.axis
        s[Mean].compute_at(s[Y], i)
        s[Var].compute_at(s[Y], i)
        jo, ji = s[Y].split(j, factor=8)
        s[Y].vectorize(ji)
        s[Y].parallel(i)
    x = rng.standard_normal((n, m), dtype="float32")
    g = rng.standard_normal((m,), dtype="float32")
    bt = rng.standard_normal((m,), dtype="float32")
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    for (y,) in runs(schedule, s, [X, G, Bt, Y], [x, g, bt], [(n, m)]):
        np.testing.assert_allclose(y, (x - mu) / np.sqrt(var + eps) * g + bt, rtol=1e-4, atol=1e-4)


# --- transpose, broadcasting, reductions -------------------------------------------------

@pytest.mark.parametrize("schedule", SCHEDULES)
def test_transpose(rng, schedule):
    shape = (3, 17, 1, 29)
    X = te.placeholder(shape, name="X")
    Y = te.compute((29, 3, 17, 1), lambda a, b, c, d: X[b, c, d, a], name="Y")
    s = te.create_schedule(Y)
    if schedule == "gpu":
        bind_elements(s, Y, threads=128)
    if schedule == "cpu":
        a, b, c, d = Y.op.axis
        ao, bo, ai, bi = s[Y].tile(a, b, 8, 2)
        s[Y].parallel(ao)
        s[Y].unroll(bi)
    x = rng.standard_normal(shape, dtype="float32")
    for (y,) in runs(schedule, s, [X, Y], [x], [(29, 3, 17, 1)]):
        np.testing.assert_array_equal(y, x.transpose(3, 0, 1, 2))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_broadcast_elementwise_chain(rng, schedule):
    n, m = 13, 35
    A = te.placeholder((n, m), name="A")
    B = te.placeholder((1, m), name="B")
    C = te.placeholder((n, 1), name="C")
    T1 = te.compute((n, m), lambda i, j: A[i, j] + B[0, j], name="T1")
    T2 = te.compute((n, m), lambda i, j: T1[i, j] * C[i, 0], name="T2")
    T3 = te.compute((n, m), lambda i, j: te.max(T2[i, j], 0.0), name="T3")
    Y = te.compute((n, m), lambda i, j: te.tanh(T3[i, j]) + te.exp(-T3[i, j]) * 0.5, name="Y")
    s = te.create_schedule(Y)
    if schedule == "gpu":
        for t in (T1, T2, T3):
            s[t].compute_inline()
        bind_elements(s, Y)
    if schedule == "cpu":
        for t in (T1, T2, T3):
            s[t].compute_inline()
        f = s[Y].fuse(*Y.op.axis)
        fo, fi = s[Y].split(f, factor=16)
        s[Y].vectorize(fi)
        s[Y].parallel(fo)
    a = rng.standard_normal((n, m), dtype="float32")
    b = rng.standard_normal((1, m), dtype="float32")
    c = rng.standard_normal((n, 1), dtype="float32")
    t = np.maximum((a + b) * c, 0)
    for (y,) in runs(schedule, s, [A, B, C, Y], [a, b, c], [(n, m)]):
        np.testing.assert_allclose(y, np.tanh(t) + np.exp(-t) * 0.5, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_multi_axis_reductions(rng, schedule):
    shape = (6, 1, 19, 7)
    X = te.placeholder(shape, name="X")
    r0 = te.reduce_axis((0, 6), name="r0")
    r2 = te.reduce_axis((0, 19), name="r2")
    S = te.compute((1, 7), lambda a, d: te.sum(X[r0, a, r2, d], axis=[r0, r2]), name="S")
    q0 = te.reduce_axis((0, 6), name="q0")
    q3 = te.reduce_axis((0, 7), name="q3")
    M = te.compute((1, 19), lambda a, c: te.max(X[q0, a, c, q3], axis=[q0, q3]), name="M")
    s = te.create_schedule([S, M])
    if schedule == "gpu":
        bind_elements(s, S, threads=32)
        bind_rows(s, M)  # a block per output, its threads sharing the first of two reduction axes
    if schedule == "cpu":
        r2o, r2i = s[S].split(r2, factor=4)
        s[S].reorder(r0, r2o, r2i, S.op.axis[1])
        s[S].vectorize(S.op.axis[1])
        co, ci = s[M].split(M.op.axis[1], factor=8)
        s[M].reorder(M.op.axis[0], co, q0, q3, ci)
        s[M].vectorize(ci)
    x = rng.standard_normal(shape, dtype="float32")
    for sv, mv in runs(schedule, s, [X, S, M], [x], [(1, 7), (1, 19)]):
        np.testing.assert_allclose(sv, x.sum(axis=(0, 2)), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(mv, x.max(axis=(0, 3)), rtol=0, atol=0)
