"""Matrix multiplication on a GPU in Tessera's DSL, scheduled as in TVM's tutorials. Run:
    PYTHONPATH=build/python /usr/bin/python3 examples/gemm_gpu.py [--target opencl|cuda] [--size N]

The schedule (schedule_gemm):
  * a block computes a tile x tile tile of C: its loops bound to blockIdx.y / blockIdx.x;
  * each of its (tile / thread_tile)^2 threads computes a thread_tile x thread_tile register tile
    (cache_write "local"), its loops bound to threadIdx.y / threadIdx.x;
  * at each k_tile step of the reduction the block's threads fill panels of A and B in shared
    memory together (cache_read "shared" computed at the reduction loop; the panel's loops fused,
    split by the thread count and bound to the threads: a cooperative load), and lowering puts the
    barriers around them.

On OpenCL (PoCL here: the CPU) it runs and is checked against numpy. For CUDA it is compiled by
NVRTC and checked by ptxas (its registers and shared memory are printed); it runs where a CUDA
driver and device are found.
"""
import argparse
import time

import numpy as np

import tessera
from tessera import te


def gemm_schedule(n, m, k, tile=32, thread_tile=4, k_tile=8):
    A = te.placeholder((n, k), "float32", name="A")
    B = te.placeholder((k, m), "float32", name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return schedule_gemm(A, B, C, tile, thread_tile, k_tile), [A, B, C]


def schedule_gemm(A, B, C, tile=32, thread_tile=4, k_tile=8):
    """The schedule above for C = A @ B (C reducing over one axis)."""
    s = te.create_schedule(C)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    threads = tile // thread_tile
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=tile)
    jo, ji = s[C].split(j, factor=tile)
    ity, iti = s[C].split(ii, factor=thread_tile)
    jtx, jti = s[C].split(ji, factor=thread_tile)
    s[C].reorder(io, jo, ity, jtx, iti, jti)
    s[C].bind(io, te.thread_axis("blockIdx.y"))
    s[C].bind(jo, te.thread_axis("blockIdx.x"))
    s[C].bind(ity, te.thread_axis("threadIdx.y"))
    s[C].bind(jtx, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], jtx)
    ci, cj = s[CL].op.axis
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=k_tile)
    s[CL].reorder(ko, ki, ci, cj)
    for panel in (AA, BB):
        s[panel].compute_at(s[CL], ko)
        fused = s[panel].fuse(*s[panel].op.axis)
        _, per_block = s[panel].split(fused, factor=threads * threads)
        fy, fx = s[panel].split(per_block, factor=threads)
        s[panel].bind(fy, te.thread_axis("threadIdx.y"))
        s[panel].bind(fx, te.thread_axis("threadIdx.x"))
    return s


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="opencl", help="opencl, or cuda [-arch=sm_XX]")
    parser.add_argument("--size", type=int, default=512)
    args = parser.parse_args()
    n = args.size
    s, tensors = gemm_schedule(n, n, n)
    f = te.build(s, tensors, target=args.target)
    print(f.get_source()[:1500])
    kind = args.target.split()[0]
    if kind == "cuda":
        print(f.get_source("ptxas"))
    device = tessera.device(kind, 0)
    if not device.exists:
        print(f"no {kind} device here: compiled, not run")
        return
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)).astype("float32"), rng.standard_normal((n, n)).astype("float32")
    da, db = tessera.nd.array(a, device=device), tessera.nd.array(b, device=device)
    dc = tessera.nd.empty((n, n), "float32", device=device)
    f(da, db, dc)
    error = np.abs(dc.numpy() - a @ b).max() / np.abs(a @ b).max()
    assert error < 1e-5, f"wrong result: relative error {error:.2e}"
    times = []
    for _ in range(5):
        start = time.perf_counter()
        f(da, db, dc)  # returns when the kernels are done
        times.append(time.perf_counter() - start)
    print(f"{device.name}: {n}^3 in {min(times) * 1e3:.2f} ms (best of 5), "
          f"{2 * n ** 3 / min(times) / 1e9:.1f} GFLOP/s, relative error {error:.1e}")


if __name__ == "__main__":
    main()
