"""Matrix multiplication in Tessera's DSL: the definition is one line; the schedule makes it
fast. Run: PYTHONPATH=build/python /usr/bin/python3 examples/gemm.py [size]

The schedule is the classic one of BLIS and OpenBLAS, written as schedule primitives:
  * both operands are repacked (Ap, Bp) so the inner loop reads them contiguously;
  * C is computed in mr x nr tiles held in registers (cache_write + compute_at, the tile's rows
    unrolled and its columns vectorized: 8 x 32 floats = 16 AVX-512 registers);
  * the reduction is unrolled by 4, tiles are spread over the thread pool.
"""
import sys
import time

import numpy as np

import tessera
from tessera import te


def gemm(M, N, K, dtype="float32"):
    """C = A @ B as a compute definition (no schedule)."""
    A = te.placeholder((M, K), dtype, name="A")
    B = te.placeholder((K, N), dtype, name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def gemm_packed(M, N, K, mr=8, nr=32, dtype="float32"):
    """C = A @ B reading packed panels: Ap[io, k, ii] = A[io*mr + ii, k], Bp[jo, k, ji] = B[k, jo*nr + ji],
    zero-padded where M or N is not a multiple of the tile."""
    A = te.placeholder((M, K), dtype, name="A")
    B = te.placeholder((K, N), dtype, name="B")
    # likely: the padding is at the edges only, so lowering splits it off and the rest of the packing
    # runs unchecked (which matters for symbolic sizes, where it cannot be proved away).
    Ap = te.compute(((M + mr - 1) // mr, K, mr),
                    lambda io, k, ii: te.select(te.likely(io * mr + ii < M), A[te.min(io * mr + ii, M - 1), k], 0.0),
                    name="Ap")
    Bp = te.compute(((N + nr - 1) // nr, K, nr),
                    lambda jo, k, ji: te.select(te.likely(jo * nr + ji < N), B[k, te.min(jo * nr + ji, N - 1)], 0.0),
                    name="Bp")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(Ap[i // mr, k, i % mr] * Bp[j // nr, k, j % nr], axis=k), name="C")
    return A, B, C


def gemm_schedule(M, N, K, mr=8, nr=32, k_unroll=4):
    A, B, C = gemm_packed(M, N, K, mr, nr)
    Ap, Bp = C.op.input_tensors
    s = te.create_schedule(C)
    CC = s.cache_write(C, "local")                      # the register tile
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], mr, nr)
    s[CC].compute_at(s[C], jo)
    i, j = s[CC].op.axis
    (kk,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kk, factor=k_unroll)
    s[CC].reorder(ko, ki, i, j)
    s[CC].unroll(ki)
    s[CC].unroll(i)
    s[CC].vectorize(j)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(io)
    s[Ap].parallel(Ap.op.axis[0])
    s[Bp].vectorize(Bp.op.axis[2])
    s[Bp].parallel(Bp.op.axis[0])
    return s, [A, B, C]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    s, args = gemm_schedule(n, n, n)
    f = te.build(s, args, target="llvm")
    rng = np.random.default_rng(0)
    a, b, c = tessera.empty((n, n)), tessera.empty((n, n)), tessera.empty((n, n))
    a[:] = rng.standard_normal((n, n))
    b[:] = rng.standard_normal((n, n))
    f(a, b, c)
    error = np.abs(c - a @ b).max() / np.abs(a @ b).max()
    times = []
    for _ in range(10):
        start = time.perf_counter()
        f(a, b, c)
        times.append(time.perf_counter() - start)
    best = min(times)
    print(f"C = A @ B, {n}x{n}x{n} float32 on {tessera.num_threads()} threads")
    print(f"relative error vs numpy: {error:.1e}")
    print(f"best of 10: {best * 1e3:.2f} ms = {2 * n ** 3 / best / 1e9:.1f} GFLOP/s")
    print("the schedule as a trace:")
    print(str(s.trace), end="")


if __name__ == "__main__":
    main()
