#!/usr/bin/env python3
"""Apache TVM's MetaSchedule, tuned head to head: what TVM's own search finds for the workloads
benchmarks/tune.py tunes with Tessera, with its peers timed in the same process.

    benchmarks/.venv/bin/python benchmarks/tvm_tune.py gemm [--size 1024] [--trials 1000]
    benchmarks/.venv/bin/python benchmarks/tvm_tune.py convs [--trials 64] [--layers s1_3x3 s4_expand]
    benchmarks/.venv/bin/python benchmarks/tvm_tune.py model [--model resnet18] [--trials 2000]
    (all: [--threads 2] [--repeat 20] [--work-dir benchmarks/results/tvm_WHAT])

gemm   tunes C = A @ B (fp32, a TE matmul) with --trials trials, builds the best schedule, checks it
       against numpy and times it against numpy (OpenBLAS).
convs  the distinct batch-1 convolutions of ResNet-50 (RESNET50_CONVS: fp32, NCHW, no bias, padding
       kernel // 2), each tuned with --trials trials, checked against and timed against
       torch.nn.functional.conv2d; --layers picks some of them by name.
model  models/MODEL.onnx imported with relax's ONNX frontend, legalized and fused as relax's
       static_shape_tuning_pipeline does, every fused kernel extracted as a task and the tasks tuned
       together with --trials trials in all (the gradient task scheduler; each task gets
       --trials / tasks trials per round, so a budget under the task count leaves kernels
       untuned, compiled without a schedule); built with the best schedules, checked against
       ONNX Runtime and timed against it.

One RESULT line per case: tvm_ms / tvm_min_ms (median / min of --repeat runs of the tuned kernel or
model), the same for each peer, speedup_vs_<peer> = peer median / TVM median, tune_s (tuning wall
time: search, builds and measurements; for model also import, fusion and task extraction), trials
(the budget) and measured (the candidates MetaSchedule built and ran). Candidates run at --threads
threads (TVM_NUM_THREADS, set with every other library's thread count before anything loads) in
MetaSchedule's one runner process; at most two builder processes. The work directory is emptied
of MetaSchedule's database and logs first: every run tunes from scratch."""
import argparse
import atexit
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import common

RESULTS = os.path.join(common.ROOT, "benchmarks", "results")
MODEL_DIR = os.path.join(common.ROOT, "models")
sys.path.insert(0, os.path.join(common.ROOT, "scripts"))

RESNET50_CONVS = common.RESNET50_CONVS


def builder_runner():
    """At most two builder processes; MetaSchedule's one runner process, which inherits
    TVM_NUM_THREADS and so runs every candidate at --threads threads."""
    from tvm.s_tir import meta_schedule as ms
    builder = ms.builder.LocalBuilder(max_workers=min(2, os.cpu_count() or 1), timeout_sec=60)
    runner = ms.runner.LocalRunner(
        timeout_sec=60,
        evaluator_config=ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=100, enable_cpu_cache_flush=False))
    return builder, runner


def import_tvm():
    """Imports tvm as on a machine without PyTorch (which TVM's tuning never uses): where PyTorch
    is there, importing tvm_ffi and then tvm.relax each try to JIT-compile a PyTorch extension,
    which against Debian's PyTorch 1.13 fails after ~14 s of compiling (0.6 s for all of tvm
    without it). PyTorch is importable again afterwards. MetaSchedule's tensor intrinsics (~250
    TVMScript functions) are registered here too, outside every tuning clock: ~12 s here, which the
    first TuneContext would spend inside it."""
    hidden = "torch" not in sys.modules
    if hidden:
        sys.modules["torch"] = None  # `import torch` raises ImportError
    try:
        import tvm
        import tvm.s_tir.tensor_intrin  # noqa: F401
    finally:
        if hidden:
            del sys.modules["torch"]
    return tvm


def keep_torch_out_of_workers():
    """The same for MetaSchedule's builder and runner processes, which import tvm when they start;
    LocalBuilder starts new ones for every batch of candidates (and each registers the tensor
    intrinsics again, MetaSchedule's own cost, left inside the clock). The processes started from
    here on (PYTHONPATH is read at their start, not this one's) see a `torch` that cannot be
    imported."""
    stub = tempfile.mkdtemp(prefix="tvm_tune_no_torch_")
    os.makedirs(os.path.join(stub, "torch"))
    with open(os.path.join(stub, "torch", "__init__.py"), "w") as f:
        f.write('raise ImportError("kept out of MetaSchedule\'s worker processes by benchmarks/tvm_tune.py")\n')
    os.environ["PYTHONPATH"] = stub + os.pathsep + os.environ.get("PYTHONPATH", "")
    atexit.register(shutil.rmtree, stub, True)


def clean_work_dir(path):
    """Removes what MetaSchedule keeps in `path` (JSON database and logs) so that tuning starts
    over; nothing else in the folder is touched."""
    os.makedirs(path, exist_ok=True)
    for name in ("database_workload.json", "database_tuning_record.json"):
        if os.path.exists(os.path.join(path, name)):
            os.remove(os.path.join(path, name))
    shutil.rmtree(os.path.join(path, "logs"), ignore_errors=True)


def console_info():
    """MetaSchedule's console shows INFO (task tables after each batch), not the cost model's DEBUG
    lines (its log files in WORK_DIR/logs keep everything). Set before every tuning session: each
    one leaves its logger at DEBUG, and the next takes the console's level from it."""
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.INFO)


def measured(db):
    """Candidates measured into the database (every built and run trial is committed, a failed one
    with a huge or no run time)."""
    return len(db.get_all_tuning_records())


def tune_prim_func(func, target, work_dir, trials, threads):
    """Tunes one TIR function; returns (the compiled best schedule, tuning seconds, measured)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    clean_work_dir(work_dir)
    console_info()
    builder, runner = builder_runner()
    start = time.time()
    db = ms.tune_tir(func, target, work_dir, max_trials_global=trials, num_trials_per_iter=min(64, trials),
                     builder=builder, runner=runner, num_tuning_cores=threads, seed=0)
    seconds = time.time() - start
    sch = ms.tir_integration.compile_tir(db, func, target)
    if sch is None:
        raise RuntimeError(f"MetaSchedule found no valid schedule in {trials} trials (see {work_dir}/logs)")
    return tvm.compile(sch.mod, target=target)["main"], seconds, measured(db)


def tvm_tensors(*arrays):
    import tvm
    return [tvm.runtime.tensor(a, tvm.cpu()) for a in arrays]


def rel_error(out, ref):
    import numpy as np
    return float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30))


def print_times(name, times, flops=None):
    for lib, (best, median) in times.items():
        rate = f"  {flops / median / 1e9:7.1f} GFLOP/s" if flops else ""
        print(f"  {name:13s} {lib:6s} min {best * 1e3:9.3f} ms  median {median * 1e3:9.3f} ms{rate}", flush=True)


def bench_gemm(args, target):
    import numpy as np
    from tvm import te
    n = args.size
    a_ph, b_ph = te.placeholder((n, n), "float32", name="A"), te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    c_ph = te.compute((n, n), lambda i, j: te.sum(a_ph[i, k] * b_ph[k, j], axis=k), name="C")
    func = te.create_prim_func([a_ph, b_ph, c_ph])
    print(f"== GEMM {n}^3 fp32, {args.threads} threads, MetaSchedule {args.trials} trials into {args.work_dir}, "
          f"target {target}", flush=True)
    print(f"  numpy BLAS: {common.blas_library()}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}", flush=True)
    kernel, seconds, count = tune_prim_func(func, target, args.work_dir, args.trials, args.threads)
    print(f"  tuning took {seconds:.1f} s for {count} measured candidates ({seconds / max(count, 1):.2f} s each)",
          flush=True)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)).astype("float32"), rng.standard_normal((n, n)).astype("float32")
    ta, tb, tc = tvm_tensors(a, b, np.zeros((n, n), "float32"))
    ref = a @ b
    kernel(ta, tb, tc)
    err = rel_error(tc.numpy(), ref)
    print(f"  tvm relative error against numpy: {err:.2e}")
    if err > 1e-3:
        print(f"  GEMM {n}: WRONG RESULT from TVM's tuned kernel")
        return 1
    times = {"tvm": common.measure(lambda: kernel(ta, tb, tc), args.repeat)}
    common.pause()
    out = np.empty_like(ref)
    times["numpy"] = common.measure(lambda: np.matmul(a, b, out=out), args.repeat)
    print_times(f"gemm{n}", times, 2 * n ** 3)
    print(common.result_line("tvm_tune_gemm", f"{n}x{n}x{n}", args.threads, times, ["numpy"], "tvm",
                             {"tune_s": round(seconds, 1), "trials": args.trials, "measured": count}), flush=True)
    return 0


def conv_func(cin, cout, size, kernel, stride):
    from tvm import te, topi
    x = te.placeholder((1, cin, size, size), "float32", name="X")
    w = te.placeholder((cout, cin, kernel, kernel), "float32", name="W")
    y = topi.nn.conv2d_nchw(x, w, stride, kernel // 2, 1, out_dtype="float32")
    return te.create_prim_func([x, w, y])


def bench_convs(args, target):
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    layers = [c for c in RESNET50_CONVS if not args.layers or c[0] in args.layers]
    unknown = set(args.layers or ()) - {c[0] for c in RESNET50_CONVS}
    if unknown:
        print(f"unknown layers {sorted(unknown)}; known: {[c[0] for c in RESNET50_CONVS]}")
        return 2
    print(f"== ResNet-50 convolutions ({len(layers)}), {args.threads} threads, MetaSchedule {args.trials} trials each "
          f"into {args.work_dir}/LAYER, target {target}", flush=True)
    rng = np.random.default_rng(0)
    failed = False
    for name, cin, cout, size, kernel, stride in layers:
        out_size = common.conv_output_size(size, kernel, stride)
        flops = 2 * cout * out_size ** 2 * cin * kernel ** 2
        case = f"{name}_{cin}x{size}x{size}_{cout}_k{kernel}s{stride}"
        try:
            func, seconds, count = tune_prim_func(conv_func(cin, cout, size, kernel, stride), target,
                                                  os.path.join(args.work_dir, name), args.trials, args.threads)
        except Exception as e:
            print(f"  {name}: tuning failed: {str(e)[:300]}", flush=True)
            failed = True
            continue
        print(f"  {name}: tuning took {seconds:.1f} s for {count} measured candidates "
              f"({seconds / max(count, 1):.2f} s each)", flush=True)
        x = rng.standard_normal((1, cin, size, size)).astype("float32")
        w = (rng.standard_normal((cout, cin, kernel, kernel)) * (2.0 / (cin * kernel * kernel)) ** 0.5).astype("float32")
        tx, tw, ty = tvm_tensors(x, w, np.zeros((1, cout, out_size, out_size), "float32"))
        px, pw = torch.from_numpy(x), torch.from_numpy(w)

        def torch_conv():
            with torch.no_grad():
                return torch.nn.functional.conv2d(px, pw, stride=stride, padding=kernel // 2)
        ref = torch_conv().numpy()
        func(tx, tw, ty)
        err = rel_error(ty.numpy(), ref)
        if err > 1e-3:
            print(f"  {name}: WRONG RESULT from TVM's tuned kernel, relative error {err:.2e} against PyTorch")
            failed = True
            continue
        times = {"tvm": common.measure(lambda: func(tx, tw, ty), args.repeat)}
        common.pause()
        times["torch"] = common.measure(torch_conv, args.repeat)
        common.pause()
        print_times(name, times, flops)
        print(common.result_line("tvm_tune_conv", case, args.threads, times, ["torch"], "tvm",
                                 {"tune_s": round(seconds, 1), "trials": args.trials, "measured": count}), flush=True)
    return 1 if failed else 0


def bench_model(args, target):
    import numpy as np
    import onnx
    import onnxruntime as ort
    import tvm
    import make_models
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.s_tir import meta_schedule as ms
    path = make_models.ensure(args.model, MODEL_DIR)
    x = np.load(os.path.join(MODEL_DIR, f"{args.model}.input.npy"))
    print(f"== {args.model}: MetaSchedule {args.trials} trials in all, {args.threads} threads, into {args.work_dir}, "
          f"target {target}", flush=True)
    start = time.time()
    mod = from_onnx(onnx.load(path), shape_dict={"input": x.shape}, keep_params_in_input=False)
    # static_shape_tuning_pipeline's steps before tuning; the tuning itself is called here directly
    # for the builder and runner (MetaScheduleTuneIRMod takes neither).
    with target:
        mod = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(), relax.transform.CanonicalizeBindings(),
                                        relax.get_pipeline("zero")])(mod)
    clean_work_dir(args.work_dir)
    console_info()
    extracted = ms.relax_integration.extract_tasks(mod, target)
    per_iter = max(1, min(64, args.trials // max(len(extracted), 1)))
    tasks, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(extracted, args.work_dir,
                                                                           num_threads=args.threads, seed=0)
    prepare_s = time.time() - start
    print(f"  {len(tasks)} tasks ({prepare_s:.1f} s to import, fuse and extract), {per_iter} trials per task and round",
          flush=True)
    builder, runner = builder_runner()
    start = time.time()
    db = ms.tune_tasks(tasks=tasks, task_weights=weights, work_dir=args.work_dir, max_trials_global=args.trials,
                       num_trials_per_iter=per_iter, builder=builder, runner=runner)
    seconds = time.time() - start + prepare_s
    count = measured(db)
    tuned_tasks = sum(1 for t in extracted if db.query_tuning_record(t.dispatched[0], target, "main") is not None)
    print(f"  tuning took {seconds:.1f} s for {count} measured candidates ({seconds / max(count, 1):.2f} s each), "
          f"{tuned_tasks} of {len(tasks)} tasks measured", flush=True)
    start = time.time()
    with target, db, tvm.transform.PassContext(opt_level=3):
        mod = relax.transform.MetaScheduleApplyDatabase()(mod)
        vm = relax.VirtualMachine(tvm.compile(mod, target=target), tvm.cpu())
    print(f"  build with the database: {time.time() - start:.1f} s", flush=True)
    tx = tvm.runtime.tensor(x, tvm.cpu())
    run_tvm = lambda: vm["main"](tx).numpy()  # noqa: E731
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    run_ort = lambda: sess.run(None, {"input": x})[0]  # noqa: E731
    err = rel_error(run_tvm(), run_ort())
    print(f"  tvm relative error against onnxruntime: {err:.2e}")
    if err > 1e-3:
        print(f"  {args.model}: WRONG RESULT from the tuned TVM model")
        return 1
    times = {"tvm": common.measure(run_tvm, args.repeat)}
    common.pause()
    times["ort"] = common.measure(run_ort, args.repeat)
    print_times(args.model, times)
    print(common.result_line("tvm_tune_model", args.model, args.threads, times, ["ort"], "tvm",
                             {"tune_s": round(seconds, 1), "trials": args.trials, "measured": count, "tasks": len(tasks),
                              "tuned_tasks": tuned_tasks}), flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["gemm", "convs", "model"])
    parser.add_argument("--size", type=int, default=1024, help="gemm: M = N = K")
    parser.add_argument("--layers", nargs="*", help="convs: the RESNET50_CONVS names to tune (default: all)")
    parser.add_argument("--model", default="resnet18", help="model: models/MODEL.onnx")
    parser.add_argument("--trials", type=int, help="gemm, model: in all; convs: per layer (default 1000, 64, 2000)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--work-dir", help="MetaSchedule's database and logs (default benchmarks/results/tvm_WHAT)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trials is None:
        args.trials = {"gemm": 1000, "convs": 64, "model": 2000}[args.what]
    args.work_dir = os.path.abspath(args.work_dir or os.path.join(RESULTS, f"tvm_{args.what}"))
    if not args.worker:  # rerun with every library's thread count set before it loads
        cmd = [sys.executable, os.path.abspath(__file__), "--worker"] + sys.argv[1:]
        return subprocess.call(cmd, env=common.peer_environment(args.threads))
    warnings.filterwarnings("ignore")
    os.makedirs(RESULTS, exist_ok=True)
    import_tvm()
    keep_torch_out_of_workers()
    target = common.tvm_target(args.threads)
    return {"gemm": bench_gemm, "convs": bench_convs, "model": bench_model}[args.what](args, target)


if __name__ == "__main__":
    sys.exit(main())
