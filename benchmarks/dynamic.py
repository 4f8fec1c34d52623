#!/usr/bin/env python3
"""Models as people export them today (issue 25), in two parts.

--conformance: the current ONNX release's node suite, Tessera against ONNX Runtime through the
same runner (tests/onnx/run_node_tests.py) on the same cases (tests/onnx/write_current_cases.py),
counted by opset band, one RESULT line per band. Run with the venv that has that onnx and ONNX
Runtime:

    source scripts/setup.sh; ensure_onnx_current
    build/onnx-current/bin/python benchmarks/dynamic.py --conformance [-j 2]

--models: models exported with symbolic dimensions (scripts/make_models.py --dynamic: the
transformer encoder with batch N and sequence L, resnet18 with batch N), loaded without shapes=
and run at several sizes by one DynamicLibrary, against a static build at each size
(tessera.onnx.load(shapes=)) and ONNX Runtime on the same dynamic model, in the same process,
taking turns in rounds, at 2 threads. Each size's first run builds the model for it: its time is
reported as first_run_s. Run with the benchmark peers' venv (benchmarks/setup.sh):

    benchmarks/.venv/bin/python benchmarks/dynamic.py --models [--repeat 20]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import common

sys.path.insert(0, os.path.join(common.ROOT, "scripts"))
MODEL_DIR = os.path.join(common.ROOT, "models")
# model: (input shapes the dynamic build runs at, in order)
SIZES = {"transformer": [(1, 16, 256), (1, 128, 256), (1, 384, 256), (8, 128, 256)],
         "resnet18": [(1, 3, 224, 224), (4, 3, 224, 224), (16, 3, 224, 224)]}

RUNNER = os.path.join(common.ROOT, "tests", "onnx", "run_node_tests.py")
WRITER = os.path.join(common.ROOT, "tests", "onnx", "write_current_cases.py")
EXPECTED = os.path.join(common.ROOT, "tests", "onnx", "expected_failures_current.txt")


def run(backend, cases, jobs):
    """{band: (passed, tests)} from the runner's summary line, and the tests that failed."""
    cmd = [sys.executable, RUNNER, "--data", cases, "--expected", EXPECTED, "--opt-levels", "2", "-j", str(jobs),
           "--backend", backend, "-v"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, TESSERA_BUILD_DIR=common.BUILD)).stdout
    line = next(l for l in out.splitlines() if l.startswith(f"{backend} passes, by opset: "))
    bands = {}
    for part in line.split(": ", 1)[1].split("; "):
        label, counts = part.rsplit(": ", 1)
        passed, total = re.fullmatch(r"(\d+) of (\d+)", counts).groups()
        bands[label] = (int(passed), int(total))
    failed = {m.group(1) for m in re.finditer(r"^FAIL (\S+):", out, re.M)}
    return bands, failed


def ort_session(path, threads):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def models_worker(args):
    """One DynamicLibrary per model run at every size, beside a static build of each size and ONNX
    Runtime's session of the same dynamic model."""
    import numpy as np
    import make_models
    import tessera
    failed = False
    for name in args.models:
        path = make_models.ensure(name, MODEL_DIR, dynamic=True)
        dynamic = tessera.build(tessera.onnx.load(path), db=False)
        session = ort_session(path, args.threads)
        for shape in SIZES[name]:
            x = np.random.default_rng(1).standard_normal(shape).astype("float32")
            start = time.time()
            out = dynamic.run([x])[0]
            first_run_s = time.time() - start
            start = time.time()
            static = tessera.build(tessera.onnx.load(path, shapes={"input": shape}), db=False)
            static_build_s = time.time() - start
            ref = session.run(None, {"input": x})[0]
            for label, got in (("dynamic", out), ("static", static.run([x])[0])):
                err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
                if err > 1e-3:
                    print(f"  {name} {shape}: Tessera ({label}) differs from ONNX Runtime by {err:.2e} (relative)")
                    failed = True
            runs = {"tessera": lambda: dynamic.run([x])[0], "static": lambda: static.run([x])[0],
                    "ort": lambda: session.run(None, {"input": x})[0]}
            times = common.measure_rounds(runs, args.repeat)
            case = f"{name} input {'x'.join(map(str, shape))}"
            for lib, (best, median) in times.items():
                print(f"  {case:32s} {lib:8s} min {best * 1e3:9.2f} ms  median {median * 1e3:9.2f} ms", flush=True)
            # speedup_vs_static is the dynamic build's speed relative to the static one (goal: >= 0.9).
            extra = {"first_run_s": round(first_run_s, 2), "static_build_s": round(static_build_s, 2)}
            print(common.result_line("dynamic", case, args.threads, times, ["static", "ort"], extra=extra), flush=True)
        print(f"  {name}: sizes built by the dynamic library: {dynamic.built}")
    return 1 if failed else 0


def conformance(args):
    import onnx
    import onnxruntime
    subprocess.run([sys.executable, WRITER, args.cases], check=True, capture_output=True)
    results = {backend: run(backend, args.cases, args.jobs) for backend in ("tessera", "onnxruntime")}
    gap = sorted(results["tessera"][1] - results["onnxruntime"][1])
    gap_path = os.path.join(common.BUILD, "conformance_gap.txt")
    with open(gap_path, "w") as f:
        f.write("".join(t + "\n" for t in gap))
    print(f"{len(gap)} tests pass on ONNX Runtime and fail on Tessera: {gap_path}")
    for band, (passed, total) in results["tessera"][0].items():
        ort = results["onnxruntime"][0][band][0]
        print(f"  {band:22s} tessera {passed:5d}  onnxruntime {ort:5d}  of {total}")
        print("RESULT " + json.dumps({"bench": "dynamic", "case": f"conformance, {band}", "tests": total,
                                      "tessera_passed": passed, "onnxruntime_passed": ort,
                                      "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}), flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conformance", action="store_true", help="the node-suite counts")
    parser.add_argument("--models", nargs="*", help="the dynamic models (default: transformer resnet18)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--cases", default=os.path.join(common.BUILD, "onnx-node-cases"))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.models is not None and not args.models:
        args.models = list(SIZES)
    if args.worker:
        return models_worker(args)
    if not args.conformance and args.models is None:
        parser.error("choose --conformance, --models or both")
    failed = conformance(args) if args.conformance else 0
    if args.models is not None:
        failed |= common.run_workers(__file__, [2], ["--models", *args.models, "--repeat", str(args.repeat)])
    return failed


if __name__ == "__main__":
    sys.exit(main())
