#!/usr/bin/env python3
"""GEMM benchmark: fp32 C = A @ B with Tessera's hand-written DSL schedule (examples/gemm.py)
against numpy (OpenBLAS) and, if installed, PyTorch, in the same process, at each thread count.

    /usr/bin/python3 benchmarks/gemm.py [--sizes 512 1024 2048] [--threads 1 2] [--repeat 20] [--symbolic]

Prints min/median milliseconds and GFLOP/s per library, and one RESULT line per case. With
--symbolic, the same schedule compiled once for symbolic sizes (te.var M, N, K) runs beside the
static kernel of each size (subject "symbolic")."""
import argparse
import os
import sys

import common

sys.path.insert(0, os.path.join(common.ROOT, "examples"))


def worker(args):
    import numpy as np
    import tessera
    from tessera import te
    from gemm import gemm_schedule

    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    print(f"== {args.threads} thread(s); numpy BLAS: {common.blas_library() or 'none'}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}; tessera pool: {tessera.num_threads()}", flush=True)
    failed = False
    symbolic = te.build(*gemm_schedule(te.var("M"), te.var("N"), te.var("K"))) if args.symbolic else None
    for n in args.sizes:
        a, b, c = tessera.empty((n, n)), tessera.empty((n, n)), tessera.empty((n, n))
        a[:] = rng.standard_normal((n, n))
        b[:] = rng.standard_normal((n, n))
        s, tensors = gemm_schedule(n, n, n)
        f = te.build(s, tensors)
        f(a, b, c)
        ref = a @ b
        error = float(np.abs(c - ref).max() / np.abs(ref).max())
        if error > 1e-5:
            print(f"  {n}: WRONG RESULT, relative error {error:.2e}")
            failed = True
            continue
        repeat = max(3, args.repeat // (1 if n <= 1024 else 4))
        times = {"tessera": common.measure(lambda: f(a, b, c), repeat)}
        if symbolic is not None:
            common.pause()
            c[:] = 0
            symbolic(a, b, c)
            if float(np.abs(c - ref).max() / np.abs(ref).max()) > 1e-5:
                print(f"  {n}: WRONG RESULT from the symbolic kernel")
                failed = True
            times["symbolic"] = common.measure(lambda: symbolic(a, b, c), repeat)
        common.pause()
        out = np.empty_like(ref)
        times["numpy"] = common.measure(lambda: np.matmul(a, b, out=out), repeat)
        if torch is not None:
            common.pause()
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            times["torch"] = common.measure(lambda: torch.matmul(ta, tb), repeat)
        flops = 2.0 * n ** 3
        for name, (best, median) in times.items():
            print(f"  {n:5d}^3 {name:8s} min {best * 1e3:8.2f} ms  median {median * 1e3:8.2f} ms  "
                  f"{flops / median / 1e9:7.1f} GFLOP/s (median)", flush=True)
        print(f"  {n:5d}^3 tessera / numpy speed ratio (median): {times['numpy'][1] / times['tessera'][1]:.2f}")
        print(common.result_line("gemm", f"{n}x{n}x{n}", args.threads, times, ["numpy", "torch", "symbolic"]), flush=True)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--symbolic", action="store_true", help="also time one kernel compiled for symbolic sizes")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.threads = args.threads[0]
        return worker(args)
    extra = ["--sizes", *map(str, args.sizes), "--repeat", str(args.repeat)] + (["--symbolic"] if args.symbolic else [])
    return common.run_workers(os.path.abspath(__file__), args.threads, extra)


if __name__ == "__main__":
    sys.exit(main())
