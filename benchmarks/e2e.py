#!/usr/bin/env python3
"""End-to-end batch-1 latency of whole models: Tessera against PyTorch, ONNX Runtime and
Apache TVM (its ONNX importer and default, untuned schedules), in the same process, at each
thread count, the libraries taking turns in rounds (common.measure_rounds). Models come from
scripts/make_models.py (generated on first use).

    benchmarks/.venv/bin/python benchmarks/e2e.py [--models resnet18 mobilenet_v2 transformer]
                                                  [--threads 1 2] [--repeat 20] [--peers torch ort tvm]
                                                  [--opt-levels 3] [--db tuning.db]
                                                  [--targets llvm "llvm -mcpu=x86-64-v3"]

Run benchmarks/setup.sh once for the peers; with /usr/bin/python3 only PyTorch is available.
Prints min/median ms per library, Tessera's kernel count and memory plan, and RESULT lines. With
--targets, Tessera runs once per target in the same rounds (other x86 targets run here too:
"llvm -mcpu=x86-64-v3" is what an AVX2 server gets); each gets its own RESULT line, its case named
model@target for any but the first. Likewise with several --opt-levels (model@-O2), e.g. to
measure what the default level gains: --opt-levels 2 3."""
import argparse
import os
import sys
import time
import warnings

import common

sys.path.insert(0, os.path.join(common.ROOT, "scripts"))
MODEL_DIR = os.path.join(common.ROOT, "models")


def tessera_runner(path, x, opt_level, db=None, target="llvm"):
    """Default schedules, or with `db` those of a tuning database (and schedule transfer)."""
    import tessera
    start = time.time()
    lib = tessera.build(tessera.onnx.load(path), target=target, opt_level=opt_level, db=db or False)
    info = {"compile_s": round(time.time() - start, 2), "kernels": len(lib.kernels), "steps": lib.num_steps,
            "arena_mib": round(lib.arena_bytes / 2 ** 20, 2)}
    if db:  # where the kernels' schedules came from: tuned, transferred, default, custom
        origins = [k["schedule"].split(" ")[0] for k in lib.kernels]
        info.update({f"{o}_kernels": origins.count(o) for o in sorted(set(origins))})
    return (lambda: lib.run([x])[0]), info


def torch_runner(name, x, threads):
    import torch
    import make_models
    torch.set_num_threads(threads)
    model, _ = make_models.build_model(name)
    tx = torch.from_numpy(x)

    def run():
        with torch.no_grad():
            return model(tx).numpy()
    return run


def ort_runner(path, x, threads):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return lambda: sess.run(None, {name: x})[0]


def tvm_runner(path, x, threads):
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    mod = from_onnx(onnx.load(path), shape_dict={"input": x.shape}, keep_params_in_input=False)
    target = common.tvm_target(threads)
    with target:
        mod = relax.get_pipeline("zero")(mod)
    vm = relax.VirtualMachine(relax.build(mod, target=target), tvm.cpu())
    tx = tvm.runtime.tensor(x)
    return lambda: vm["main"](tx).numpy()


def worker(args):
    import numpy as np
    import make_models
    warnings.filterwarnings("ignore")
    print(f"== {args.threads} thread(s)", flush=True)
    failed = False
    for name in args.models:
        path = make_models.ensure(name, MODEL_DIR)
        x = np.load(os.path.join(MODEL_DIR, f"{name}.input.npy"))
        ref = np.load(os.path.join(MODEL_DIR, f"{name}.output.npy"))
        runners, infos = {}, {}
        # Each (target, level) is a subject of its own: "tessera" for the first, "tessera[label]" after.
        variants = [(t, o) for t in args.targets for o in args.opt_levels]
        labels = [" ".join(([t] if len(args.targets) > 1 else []) + ([f"-O{o}"] if len(args.opt_levels) > 1 else []))
                  for t, o in variants]
        subjects = ["tessera"] + [f"tessera[{label}]" for label in labels[1:]]
        try:
            for subject, (target, level) in zip(subjects, variants):
                runners[subject], infos[subject] = tessera_runner(path, x, level, args.db, target)
        except Exception as e:
            print(f"  {name}: tessera failed: {str(e)[:300]}")
            failed = True
            continue
        makers = {"torch": lambda: torch_runner(name, x, args.threads), "ort": lambda: ort_runner(path, x, args.threads),
                  "tvm": lambda: tvm_runner(path, x, args.threads)}
        for peer in args.peers:
            try:
                runners[peer] = makers[peer]()
            except ImportError as e:
                print(f"  {name}: {peer} unavailable ({e}); run benchmarks/setup.sh and use benchmarks/.venv/bin/python")
            except Exception as e:
                print(f"  {name}: {peer} failed: {str(e)[:200]}")
        for lib, run in runners.items():
            out = run()
            err = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30))
            if err > 1e-3:
                print(f"  {name}: {lib} output differs from PyTorch's by {err:.2e} (relative)")
                failed |= lib.startswith("tessera")
        times = common.measure_rounds(runners, args.repeat)
        for lib, (best, median) in times.items():
            print(f"  {name:13s} {lib:8s} min {best * 1e3:9.2f} ms  median {median * 1e3:9.2f} ms", flush=True)
        for subject, label in zip(subjects, labels):
            print(f"  {name:13s} {subject}: {infos[subject]}")
            timed = dict(times, tessera=times[subject])
            case = name if subject == "tessera" else f"{name}@{label}"
            line = common.result_line("e2e", case, args.threads, timed, ["torch", "ort", "tvm"])
            print(line[:-1] + ", " + ", ".join(f'"{k}": {v}' for k, v in infos[subject].items()) + "}", flush=True)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["resnet18", "mobilenet_v2", "transformer"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--opt-levels", type=int, nargs="+", default=[3], help="graph optimization levels, each timed")
    parser.add_argument("--targets", nargs="+", default=["llvm"], help="Tessera targets, each timed in the same rounds")
    parser.add_argument("--peers", nargs="*", default=["torch", "ort", "tvm"])
    parser.add_argument("--db", help="tuning database to build with (benchmarks/tune.py model fills one); default: none")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.threads = args.threads[0]
        return worker(args)
    extra = ["--models", *args.models, "--repeat", str(args.repeat), "--opt-levels", *map(str, args.opt_levels), "--peers", *args.peers,
             "--targets", *args.targets]
    if args.db:
        extra += ["--db", os.path.abspath(args.db)]
    return common.run_workers(os.path.abspath(__file__), args.threads, extra)


if __name__ == "__main__":
    sys.exit(main())
