#!/usr/bin/env python3
"""GPU kernels written with tessera.te (examples/gemm_gpu.py, examples/gpu_kernels.py) and whole
models under the default GPU schedules, timed on a device beside the CPU target's own kernels for
the same computation, in one process, taking turns.

    /usr/bin/python3 benchmarks/gpu.py [--target opencl|cuda] [--gemm 1024] [--softmax 256 4096]
                                       [--models resnet18 transformer] [--tune TRIALS [--db PATH]]

A model's inputs and outputs stay on the device between calls (what a serving loop does); its
output is checked against the CPU build first. With --tune, each model is first tuned on the
device for TRIALS measurements (resuming what the database, build/gpu_tuning.db by default,
holds), and its tuned build is timed beside the untuned one: speedup_vs_untuned is the figure.
On OpenCL (PoCL here, which runs work-groups on the CPU) the ratio to the CPU kernels is a sanity
figure, not a goal. On CUDA it reports GEMM GFLOP/s against cuBLAS (through PyTorch) where
present, and the kernel's ptxas register count. Prints min/median ms and one RESULT line per case.
"""
import argparse
import os
import sys
import time

import numpy as np

import common

sys.path.insert(0, os.path.join(common.ROOT, "examples"))
sys.path.insert(0, os.path.join(common.ROOT, "scripts"))

import tessera  # noqa: E402
from tessera import te  # noqa: E402
from gemm import gemm_schedule as cpu_gemm_schedule  # noqa: E402
from gemm_gpu import gemm_schedule  # noqa: E402
from gpu_kernels import softmax, softmax_compute  # noqa: E402


def cpu_softmax(n, m):
    """The same softmax for the CPU: rows spread over the thread pool, each row's max and sum
    computed with the row, the normalization vectorized."""
    A, M, E, S, Y = softmax_compute(n, m)
    s = te.create_schedule(Y)
    i, j = Y.op.axis
    s[Y].parallel(i)
    for stage in (M, E, S):
        s[stage].compute_at(s[Y], i)
    jo, ji = s[Y].split(j, factor=16)
    s[Y].vectorize(ji)
    return s, [A, Y]


def report(case, times, peers, extra=None, subject="device"):
    for name, (best, median) in times.items():
        print(f"  {case:18s} {name:10s} min {best * 1e3:9.3f} ms  median {median * 1e3:9.3f} ms", flush=True)
    print(common.result_line("gpu", case, tessera.num_threads(), times, peers, subject=subject, extra=extra),
          flush=True)


def bench_gemm(n, target, device, repeat, rng):
    a, b = rng.standard_normal((n, n)).astype("float32"), rng.standard_normal((n, n)).astype("float32")
    s, tensors = gemm_schedule(n, n, n)
    f = te.build(s, tensors, target=target)
    arrays = [tessera.nd.array(a, device=device), tessera.nd.array(b, device=device),
              tessera.nd.empty((n, n), "float32", device=device)]
    f(*arrays)
    error = float(np.abs(arrays[2].numpy() - a @ b).max() / np.abs(a @ b).max())
    assert error < 1e-5, f"gemm {n}: wrong result, relative error {error:.2e}"
    runs = {"device": lambda: f(*arrays)}  # a call returns when its kernels are done
    cs, ctensors = cpu_gemm_schedule(n, n, n)
    cpu = te.build(cs, ctensors, target="llvm")
    ca, cb, cc = tessera.empty((n, n)), tessera.empty((n, n)), tessera.empty((n, n))
    ca[:], cb[:] = a, b
    runs["cpu"] = lambda: cpu(ca, cb, cc)
    peers = ["cpu"]
    if device.kind == "cuda":
        try:
            import torch
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            runs["cublas"] = lambda: (torch.matmul(ta, tb), torch.cuda.synchronize())
            peers.append("cublas")
        except (ImportError, RuntimeError, AssertionError):
            pass
    times = common.measure_rounds(runs, repeat)
    extra = {"device_gflops": round(2 * n ** 3 / times["device"][1] / 1e9, 1), "device_name": device.name}
    if device.kind == "cuda":
        extra["ptxas"] = f.get_source("ptxas").strip()
    report(f"gemm {n}^3", times, peers, extra)


def bench_softmax(n, m, target, device, repeat, rng):
    x = rng.standard_normal((n, m)).astype("float32")
    s, tensors = softmax(n, m)
    f = te.build(s, tensors, target=target)
    arrays = [tessera.nd.array(x, device=device), tessera.nd.empty((n, m), "float32", device=device)]
    f(*arrays)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    error = float(np.abs(arrays[1].numpy() - e / e.sum(axis=1, keepdims=True)).max())
    assert error < 1e-5, f"softmax {n}x{m}: wrong result, error {error:.2e}"
    cs, ctensors = cpu_softmax(n, m)
    cpu = te.build(cs, ctensors, target="llvm")
    cx, cy = tessera.empty((n, m)), tessera.empty((n, m))
    cx[:] = x
    times = common.measure_rounds({"device": lambda: f(*arrays), "cpu": lambda: cpu(cx, cy)}, repeat)
    report(f"softmax {n}x{m}", times, ["cpu"], {"device_name": device.name})


def bench_model(name, target, device, repeat, trials, db):
    import make_models
    path = make_models.ensure(name, os.path.join(common.ROOT, "models"))
    mod = tessera.onnx.load(path)
    x = np.load(os.path.join(common.ROOT, "models", f"{name}.input.npy"))
    builds = {"device": tessera.build(mod, target=target, db=False)}
    extra = {"device_name": device.name}
    if trials:
        t0 = time.perf_counter()
        session = tessera.autotune.tune(mod, target=target, db=db, trials=trials, progress=False)
        extra.update(tuning_seconds=round(time.perf_counter() - t0, 1),
                     trials=sum(t["trials"] for t in session.tasks), db=str(db))
        builds = {"tuned": tessera.build(mod, target=target, db=db), "untuned": builds["device"]}
    cpu = tessera.build(mod, db=False)
    dx = tessera.nd.array(x, device=device)
    expected = cpu.run([x])[0]
    for kind, lib in builds.items():
        error = float(np.abs(lib.run([dx])[0].numpy() - expected).max() / np.abs(expected).max())
        assert error < 1e-4, f"{name}: wrong result on {target} ({kind}), relative error {error:.2e}"
    runs = {kind: (lambda lib=lib: lib.run([dx])) for kind, lib in builds.items()}
    runs["cpu"] = lambda: cpu.run([x])
    times = common.measure_rounds(runs, repeat)
    if trials:
        report(name, times, ["untuned", "cpu"], extra, subject="tuned")
    else:
        report(f"{name} untuned", times, ["cpu"], extra)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="opencl", help="opencl, or cuda [-arch=sm_XX]")
    parser.add_argument("--gemm", type=int, nargs="*", default=[1024])
    parser.add_argument("--softmax", type=int, nargs=2, default=[256, 4096], metavar=("ROWS", "COLS"))
    parser.add_argument("--models", nargs="*", default=["resnet18", "transformer"])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--tune", type=int, default=0, metavar="TRIALS", help="tune each model first (0: untuned only)")
    parser.add_argument("--db", default=os.path.join(common.ROOT, "build", "gpu_tuning.db"))
    args = parser.parse_args()
    device = tessera.device(args.target.split()[0], 0)
    if not device.exists:
        print(f"no {device.kind} device here")
        return 1
    print(f"== {device.name}; CPU target: llvm, {tessera.num_threads()} thread(s)", flush=True)
    rng = np.random.default_rng(0)
    for n in args.gemm:
        bench_gemm(n, args.target, device, args.repeat, rng)
    bench_softmax(*args.softmax, args.target, device, args.repeat, rng)
    for name in args.models:
        bench_model(name, args.target, device, args.repeat, args.tune, args.db)
    return 0


if __name__ == "__main__":
    sys.exit(main())
