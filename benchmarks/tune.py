#!/usr/bin/env python3
"""Tuning benchmarks: what Tessera's search finds, against peers in the same run.

    benchmarks/.venv/bin/python benchmarks/tune.py gemm [--size 1024] [--trials 1000]
    benchmarks/.venv/bin/python benchmarks/tune.py policies [--trials 64]
    benchmarks/.venv/bin/python benchmarks/tune.py model --model resnet18 [--trials 2000]
    benchmarks/.venv/bin/python benchmarks/tune.py transfer --db results/resnet18.db --model resnet34
    benchmarks/.venv/bin/python benchmarks/tune.py batch --model mobilenet_v2 --db results/mobilenet_v2.db --batch 4
    benchmarks/.venv/bin/python benchmarks/tune.py convs [--trials 16] [--layers s1_3x3 ...]

gemm      tunes C = A @ B (fp32) and times the tuned kernel against numpy (OpenBLAS) and PyTorch.
policies  the cost-model-guided search against random search, same trial budget, on three tasks
          (a GEMM and a 3x3 and a 1x1 convolution of ResNet-50): best latency found.
model     tunes a model (scripts/make_models.py), then times a second `tessera compile` with the
          database (no measurement) and runs benchmarks/e2e.py tuned, against ONNX Runtime and
          PyTorch.
transfer  builds a model with a database tuned for another (schedule transfer, zero new trials)
          and runs e2e.py with it.
batch     a model at another batch size: with the database tuned at batch 1 (transfer, zero new
          trials), untuned, and tuned at that batch size with --trials.
convs     each distinct ResNet-50 convolution (batch 1) as a one-kernel model, tuned with --trials,
          against PyTorch's conv2d in the same process.
Databases go to benchmarks/results/ (rerunning resumes a session; --fresh starts over). All
tuning and timing runs at --threads (default 2) threads; Tessera and its peers are timed in
turns (common.measure_rounds), Tessera's kernels alone (no input or output copies)."""
import argparse
import os
import shutil
import subprocess
import sys
import time

import common

RESULTS = os.path.join(common.ROOT, "benchmarks", "results")
E2E = os.path.join(common.ROOT, "benchmarks", "e2e.py")
sys.path.insert(0, os.path.join(common.ROOT, "scripts"))


def onnx_model(path, nodes, inputs, output, initializers=()):
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph(nodes, "bench", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])], list(initializers))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def gemm_model(n):
    from onnx import helper
    path = os.path.join(RESULTS, f"gemm{n}.onnx")
    return onnx_model(path, [helper.make_node("MatMul", ["a", "b"], ["c"])], [("a", [n, n]), ("b", [n, n])], ("c", [n, n]))


def conv_model(name, channels, out_channels, size, kernel, stride=1):
    """A ResNet-50 convolution (batch 1, no bias) as a one-kernel model; returns (path, weight)."""
    import numpy as np
    from onnx import helper, numpy_helper
    w = np.random.default_rng(0).standard_normal((out_channels, channels, kernel, kernel)).astype("float32") * 0.05
    path = os.path.join(RESULTS, f"{name}.onnx")
    out = common.conv_output_size(size, kernel, stride)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[kernel // 2] * 4, strides=[stride] * 2)
    onnx_model(path, [node], [("x", [1, channels, size, size])], ("y", [1, out_channels, out, out]),
               [numpy_helper.from_array(w, "w")])
    return path, w


def fresh_db(name, fresh):
    """benchmarks/results/NAME.db, deleted first (with its WAL files and cost model) if `fresh`."""
    path = os.path.join(RESULTS, f"{name}.db")
    for p in (path, path + "-wal", path + "-shm", path[:-3] + ".costmodel.json", path[:-3] + ".costmodel.json.data"):
        if fresh and os.path.exists(p):
            os.remove(p)
    return path


def tune(mod, db, trials, timeout, seed=0, policy="evolutionary", opt_level=2):
    """A tuning session printing a progress line every few batches; returns (report, seconds)."""
    import tessera
    every = [0]

    def progress(line):
        every[0] += 1
        if every[0] % 10 == 1:
            print("   ", line, flush=True)
    start = time.time()
    # --timeout 0 means no limit here; tune() takes None for that.
    report = tessera.autotune.tune(mod, db=db, trials=trials, timeout=timeout or None, seed=seed, policy=policy,
                                   progress=progress, opt_level=opt_level)
    return report, time.time() - start


def bench_gemm(args):
    import numpy as np
    import tessera
    n = args.size
    db = fresh_db(f"gemm{n}", args.fresh)
    mod = tessera.onnx.load(gemm_model(n))
    print(f"== GEMM {n}^3 fp32, {args.threads} threads, tuning {args.trials} trials into {db}", flush=True)
    report, seconds = tune(mod, db, args.trials, args.timeout)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)).astype("float32"), rng.standard_normal((n, n)).astype("float32")
    libs = {"tessera": tessera.build(mod, db=db), "untuned": tessera.build(mod, db=False)}
    ref = a @ b
    for name, lib in libs.items():
        err = float(np.abs(lib.run([a, b])[0] - ref).max() / np.abs(ref).max())
        assert err < 1e-4, f"{name}: relative error {err}"
    print(f"  kernel: {libs['tessera'].kernels[0]['schedule']}; tuning took {seconds:.0f} s for "
          f"{sum(t['trials'] for t in report.tasks)} trials (database included)")
    runs = {name: common.kernels_alone(lib, [a, b]) for name, lib in libs.items()}
    out = np.empty_like(ref)
    runs["numpy"] = lambda: np.matmul(a, b, out=out)
    try:
        import torch
        torch.set_num_threads(args.threads)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        runs["torch"] = lambda: torch.matmul(ta, tb)
    except ImportError:
        pass
    times = common.measure_rounds(runs, args.repeat)
    for name, (best, median) in times.items():
        print(f"  {name:8s} min {best * 1e3:8.2f} ms  median {median * 1e3:8.2f} ms  {2 * n ** 3 / median / 1e9:7.1f} GFLOP/s")
    print(f"  tuned tessera / numpy speed ratio (median): {times['numpy'][1] / times['tessera'][1]:.2f}")
    print(common.result_line("tune_gemm", f"{n}x{n}x{n}", args.threads, times, ["numpy", "torch", "untuned"]), flush=True)
    return 0


def bench_policies(args):
    import tessera
    tasks = {"gemm512": gemm_model(512), "r50_conv3x3": conv_model("r50_conv3x3", 64, 64, 56, 3)[0],
             "r50_conv1x1": conv_model("r50_conv1x1", 256, 64, 56, 1)[0]}
    print(f"== evolutionary (cost model) vs random search, {args.trials} trials per task, {args.threads} threads")
    for name, path in tasks.items():
        mod = tessera.onnx.load(path)
        best = {}
        for policy in ("evolutionary", "random"):
            db = fresh_db(f"policy_{name}_{policy}", True)
            report, seconds = tune(mod, db, args.trials, args.timeout, policy=policy)
            (task,) = report.tasks
            best[policy] = task["best_seconds"]
            print(f"  {name:12s} {policy:12s} best {task['best_seconds'] * 1e3:8.3f} ms ({task['gflops']:6.1f} GFLOP/s), "
                  f"default {task['default_seconds'] * 1e3:8.3f} ms, {seconds:.0f} s", flush=True)
        print(f"  {name:12s} random best / evolutionary best: {best['random'] / best['evolutionary']:.2f}", flush=True)
    return 0


def model_path(name):
    import make_models
    return make_models.ensure(name, os.path.join(common.ROOT, "models"))


def run_e2e(name, db, args):
    cmd = [sys.executable, E2E, "--models", name, "--threads", str(args.threads), "--repeat", str(args.repeat),
           "--opt-levels", str(args.opt_level), "--peers", "torch", "ort"]
    return subprocess.call(cmd + (["--db", db] if db else []))


def bench_model(args):
    import tessera
    db = fresh_db(args.model, args.fresh)
    path = model_path(args.model)
    mod = tessera.onnx.load(path)
    print(f"== tuning {args.model}: {args.trials} trials, {args.threads} threads, database {db}", flush=True)
    report, seconds = tune(mod, db, args.trials, args.timeout, opt_level=args.opt_level)
    print(f"  {report}\n  tuning wall time {seconds:.0f} s (the model check included)")
    print(report.model_check["text"], end="")
    start = time.time()
    subprocess.run([os.path.join(common.BUILD, "bin", "tessera"), "compile", path, "--db", db, "-O", str(args.opt_level)],
                   check=True, stdout=subprocess.DEVNULL)
    print(f"  second compile with the database (no measurement): {time.time() - start:.1f} s", flush=True)
    return run_e2e(args.model, db, args)


def bench_transfer(args):
    """Copies the database first: the transferred records the build commits stay out of it."""
    db = os.path.join(RESULTS, f"transfer_to_{args.model}.db")
    shutil.copyfile(args.db, db)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    print(f"== {args.model} with schedules transferred from {args.db} (zero tuning trials)", flush=True)
    start = time.time()
    status = run_e2e(args.model, db, args)
    print(f"  (the first build measured the transferred candidates; e2e run took {time.time() - start:.0f} s)")
    print(f"== {args.model} untuned")
    return status | run_e2e(args.model, None, args)


def bench_batch(args):
    """The model at --batch: transferred from the batch-1 database (a copy: the records the build
    commits stay out of it), untuned, and tuned at that batch size."""
    import numpy as np
    import tessera
    path = model_path(args.model)
    mod = tessera.onnx.load(path, shapes={"input": (args.batch, 3, 224, 224)})
    x = np.random.default_rng(0).standard_normal((args.batch, 3, 224, 224)).astype("float32")
    copy = os.path.join(RESULTS, f"transfer_to_{args.model}_b{args.batch}.db")
    shutil.copyfile(args.db, copy)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(copy + suffix):
            os.remove(copy + suffix)
    libs = {}
    start = time.time()
    libs["tessera"] = tessera.build(mod, db=copy, opt_level=args.opt_level)
    origins = [k["schedule"].split(" ")[0] for k in libs["tessera"].kernels]
    print(f"== {args.model} batch {args.batch}, built with {args.db} (batch 1) in {time.time() - start:.0f} s: "
          + ", ".join(f"{origins.count(o)} {o}" for o in sorted(set(origins))), flush=True)
    libs["untuned"] = tessera.build(mod, db=False, opt_level=args.opt_level)
    db = fresh_db(f"{args.model}_b{args.batch}", args.fresh)
    print(f"== tuning {args.model} at batch {args.batch}: {args.trials} trials into {db}", flush=True)
    report, seconds = tune(mod, db, args.trials, args.timeout, opt_level=args.opt_level)
    print(f"  tuning wall time {seconds:.0f} s")
    libs["tuned"] = tessera.build(mod, db=db, opt_level=args.opt_level)
    ref = libs["untuned"].run([x])[0]
    for name, lib in libs.items():
        err = float(np.abs(lib.run([x])[0] - ref).max() / np.abs(ref).max())
        assert err < 1e-3, f"{name}: relative error {err}"
    times = common.measure_rounds({name: (lambda lib=lib: lib.run([x])) for name, lib in libs.items()}, args.repeat)
    for name, (best, median) in times.items():
        print(f"  {name:9s} min {best * 1e3:8.2f} ms  median {median * 1e3:8.2f} ms", flush=True)
    print(common.result_line("transfer_batch", f"{args.model}_b{args.batch}", args.threads, times, ["untuned", "tuned"]), flush=True)
    return 0


def bench_convs(args):
    """One database for every layer (--fresh empties it first); each layer tuned alone."""
    import numpy as np
    import tessera
    import torch
    torch.set_num_threads(args.threads)
    db = fresh_db("r50_convs", args.fresh)
    layers = [l for l in common.RESNET50_CONVS if not args.layers or l[0] in args.layers]
    print(f"== ResNet-50 convolutions, {args.trials} trials each, {args.threads} threads, database {db}", flush=True)
    for name, cin, cout, size, kernel, stride in layers:
        path, w = conv_model(f"r50_{name}", cin, cout, size, kernel, stride)
        mod = tessera.onnx.load(path)
        _, seconds = tune(mod, db, args.trials, args.timeout, opt_level=args.opt_level)
        lib = tessera.build(mod, db=db, opt_level=args.opt_level)
        x = np.random.default_rng(1).standard_normal((1, cin, size, size)).astype("float32")
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        conv = lambda: torch.nn.functional.conv2d(tx, tw, stride=stride, padding=kernel // 2)
        ref = conv().numpy()
        err = float(np.abs(lib.run([x])[0] - ref).max() / np.abs(ref).max())
        assert err < 1e-4, f"{name}: relative error {err}"
        times = common.measure_rounds({"tessera": common.kernels_alone(lib, [x]), "torch": conv}, args.repeat)
        flops = 2 * cin * cout * kernel * kernel * ref.shape[2] * ref.shape[3]
        print(f"  {name:11s} {cin:4d}->{cout:4d} {kernel}x{kernel}/{stride} at {size:3d}: tessera {times['tessera'][1] * 1e3:7.3f} ms "
              f"({flops / times['tessera'][1] / 1e9:6.1f} GFLOP/s, {lib.kernels[0]['schedule']}), torch {times['torch'][1] * 1e3:7.3f} ms; "
              f"tuned in {seconds:.0f} s", flush=True)
        line = common.result_line("tune_conv", f"r50_{name}", args.threads, times, ["torch"])
        print(line[:-1] + f', "tuning_s": {seconds:.0f}}}', flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["gemm", "policies", "model", "transfer", "batch", "convs"])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--db", help="transfer, batch: the database tuned for another model or batch size")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--layers", nargs="*", help="convs: only these layers (names in common.RESNET50_CONVS)")
    parser.add_argument("--trials", type=int)
    parser.add_argument("--timeout", type=float, default=0, help="seconds per tuning session (0: none)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--opt-level", type=int, default=3)
    parser.add_argument("--fresh", action="store_true", help="delete the benchmark's database first")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trials is None:
        args.trials = {"gemm": 1000, "policies": 64, "model": 2000, "transfer": 0, "batch": 600, "convs": 16}[args.what]
    if not args.worker:  # rerun with every library's thread count set before it loads
        cmd = [sys.executable, os.path.abspath(__file__), "--worker"] + sys.argv[1:]
        return subprocess.call(cmd, env=common.peer_environment(args.threads))
    os.makedirs(RESULTS, exist_ok=True)
    benches = {"gemm": bench_gemm, "policies": bench_policies, "model": bench_model, "transfer": bench_transfer, "batch": bench_batch,
               "convs": bench_convs}
    return benches[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
