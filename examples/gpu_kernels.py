"""GPU kernels scheduled by hand in the manner of TVM's tutorials, each a function returning
(schedule, tensors) for te.build(s, tensors, target="opencl" or "cuda"): GEMM with shared-memory
panels and register tiles (gemm_gpu.py shows and runs it), a 3x3 convolution, a row sum and a
softmax with cross-thread reductions, and an elementwise chain. Sizes need not divide the tiles.
tests/python/test_gpu_kernels.py runs them against numpy, benchmarks/gpu.py times them."""
from tessera import te
from gemm_gpu import gemm_schedule as gemm  # noqa: F401 (one of the kernels; the example shows it)

bx, by = te.thread_axis("blockIdx.x"), te.thread_axis("blockIdx.y")
tx, ty = te.thread_axis("threadIdx.x"), te.thread_axis("threadIdx.y")


def conv3x3(batch, channels, height, width, filters, tile=8):
    """A 3x3 convolution (stride 1, padding 1, NCHW): a block per (image, filter, tile x tile output
    tile), a thread per output pixel; the padded input is inlined into the product."""
    X = te.placeholder((batch, channels, height, width), "float32", name="X")
    W = te.placeholder((filters, channels, 3, 3), "float32", name="W")
    P = te.compute((batch, channels, height + 2, width + 2),
                   lambda b, c, y, x: te.select(te.all(y >= 1, y <= height, x >= 1, x <= width),
                                                X[b, c, te.max(y - 1, 0), te.max(x - 1, 0)], 0.0), name="P")
    rc, ry, rx = te.reduce_axis((0, channels), "rc"), te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    Y = te.compute((batch, filters, height, width),
                   lambda b, f, y, x: te.sum(P[b, rc, y + ry, x + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]), name="Y")
    s = te.create_schedule(Y)
    s[P].compute_inline()
    b, f, y, x = Y.op.axis
    yo, yi = s[Y].split(y, factor=tile)
    xo, xi = s[Y].split(x, factor=tile)
    s[Y].reorder(b, f, yo, xo, yi, xi)
    bf = s[Y].fuse(b, f)
    s[Y].bind(bf, te.thread_axis("blockIdx.z"))
    s[Y].bind(yo, by)
    s[Y].bind(xo, bx)
    s[Y].bind(yi, ty)
    s[Y].bind(xi, tx)
    return s, [X, W, Y]


def elementwise_chain(n, threads=64):
    """D = exp(A * 2 + 1) - A: three elementwise stages, the first two inlined, a thread per element."""
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] * 2 + 1, name="B")
    C = te.compute((n,), lambda i: te.exp(B[i]), name="C")
    D = te.compute((n,), lambda i: C[i] - A[i], name="D")
    s = te.create_schedule(D)
    s[B].compute_inline()
    s[C].compute_inline()
    o, i = s[D].split(D.op.axis[0], factor=threads)
    s[D].bind(o, bx)
    s[D].bind(i, tx)
    return s, [A, D]


def row_sum(n, m, threads=64):
    """B[i] = sum_k A[i, k] with a block per row: rfactor gives each of `threads` threads a strided
    share of the row (k = ko * threads + thread), and the threads reduce their partials together
    (a cross-thread reduction: the reduction loop bound to threadIdx.x)."""
    A = te.placeholder((n, m), "float32", name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B)
    _cross_thread(s, B, threads)
    return s, [A, B]


def softmax_compute(n, m):
    """Y = softmax(A) along rows, as its stages: A, the row maximum M, E = exp(A - M), the row sum S
    of E, and Y = E / S."""
    A = te.placeholder((n, m), "float32", name="A")
    k1 = te.reduce_axis((0, m), name="k1")
    M = te.compute((n,), lambda i: te.max(A[i, k1], axis=k1), name="M")
    E = te.compute((n, m), lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    k2 = te.reduce_axis((0, m), name="k2")
    S = te.compute((n,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    Y = te.compute((n, m), lambda i, j: E[i, j] / S[i], name="Y")
    return A, M, E, S, Y


def softmax(n, m, threads=64):
    """Softmax along rows: the row maximum and the row sum of exp(A - max) each reduced across the
    threads of a block per row (as row_sum), then a kernel normalizing each element."""
    A, M, E, S, Y = softmax_compute(n, m)
    s = te.create_schedule(Y)
    s[E].compute_inline()
    _cross_thread(s, M, threads)
    _cross_thread(s, S, threads)
    i, j = Y.op.axis
    jo, ji = s[Y].split(j, factor=threads)
    s[Y].reorder(i, ji, jo)  # the thread loop outside the serial one: thread extents open each kernel
    s[Y].bind(i, bx)
    s[Y].bind(ji, tx)
    return s, [A, Y]


def _cross_thread(s, R, threads):
    """TVM's row-reduction schedule: a block per output element, its threads sharing the reduction."""
    ko, ki = s[R].split(R.op.reduce_axis[0], factor=threads)
    RF = s.rfactor(R, ki)
    s[R].bind(s[R].op.axis[0], bx)
    s[R].bind(s[R].op.reduce_axis[0], tx)
    s[RF].compute_at(s[R], s[R].op.reduce_axis[0])
