"""Runs ONNX node tests in this process and prints one JSON line per test:
{"test": name, "status": "pass" | "fail", "message": ...}. Used by run_node_tests.py, which
runs batches of tests in child processes so a crash or hang costs one batch."""
import glob
import json
import os
import sys
import tempfile
import traceback

import numpy as np
import onnx
from onnx import numpy_helper

import tessera

RTOL, ATOL = 1e-3, 1e-5


def read_pb(path, type_proto):
    """The value in `path`, as its declared type says: an array, a list of arrays (a sequence), or
    (an optional) None or its value."""
    kind = type_proto.WhichOneof("value")
    proto = {"sequence_type": onnx.SequenceProto, "optional_type": onnx.OptionalProto}.get(kind, onnx.TensorProto)()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    if kind == "sequence_type":
        return numpy_helper.to_list(proto)
    if kind == "optional_type":
        return numpy_helper.to_optional(proto)
    return numpy_helper.to_array(proto)


def compare(name, got, want):
    if want is None or got is None:
        return None if got is None and want is None else f"output {name}: {got!r}, expected {want!r}"
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"output {name}: {type(got).__name__} of {len(got)}, expected a sequence of {len(want)}"
        return next((p for i, (g, w) in enumerate(zip(got, want)) if (p := compare(f"{name}[{i}]", g, w))), None)
    if got.shape != want.shape:
        return f"output {name}: shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return f"output {name}: dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.name.startswith(("float8", "float4", "bfloat16")):
        # ml_dtypes' floats, compared in float32 as ONNX's backend runner does (NaN equals NaN;
        # bfloat16 within two of its ulps).
        rtol = max(RTOL, 2**-6) if want.dtype.name == "bfloat16" else RTOL
        got, want = got.astype(np.float32), want.astype(np.float32)
        if not np.allclose(got, want, rtol=rtol, atol=ATOL, equal_nan=True):
            err = np.abs(got.astype("float64") - want.astype("float64"))
            return f"output {name}: max abs error {np.nanmax(err):.3g} exceeds rtol {rtol} atol {ATOL}"
    elif want.dtype.kind == "f":
        if not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
            err = np.abs(got.astype("float64") - want.astype("float64"))
            return f"output {name}: max abs error {np.nanmax(err):.3g} exceeds rtol {RTOL} atol {ATOL}"
    elif not np.array_equal(got, want):
        return f"output {name}: values differ ({int(np.sum(got != want))} of {want.size})"
    return None


OPT_LEVELS = [int(x) for x in os.environ.get("TESSERA_OPT_LEVELS", "2").split(",")]
TARGET = os.environ.get("TESSERA_TARGET", "llvm")
BACKEND = os.environ.get("TESSERA_NODE_BACKEND", "tessera")
EXPORT = os.environ.get("TESSERA_NODE_EXPORT") == "1"


def built(mod, level):
    """The library of `mod`; with --export, written as a module and loaded back with the runtime
    alone, which then runs it."""
    lib = tessera.build(mod, target=TARGET, opt_level=level)
    if not EXPORT:
        return lib
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.so")
        lib.export(path)
        return tessera.load(path)  # the module stays mapped after its file is removed


def run_onnxruntime(model_path, feed, output_names):
    """The outputs ONNX Runtime computes (for the comparison run_node_tests.py --backend onnxruntime)."""
    import onnxruntime
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return session.run(output_names, feed)


def run_test(test_dir):
    model_path = os.path.join(test_dir, "model.onnx")
    model = onnx.load(model_path)
    initializers = {t.name for t in model.graph.initializer}
    inputs_declared = [i for i in model.graph.input if i.name not in initializers]
    input_names = [i.name for i in inputs_declared]
    output_names = [o.name for o in model.graph.output]
    data_sets = sorted(glob.glob(os.path.join(test_dir, "test_data_set_*")))
    for data_set in data_sets:
        def values(prefix, declared):
            paths = sorted(glob.glob(os.path.join(data_set, prefix + "_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
            return [read_pb(p, v.type) for p, v in zip(paths, declared)]
        inputs, outputs = values("input", inputs_declared), values("output", model.graph.output)
        feed = dict(zip(input_names, inputs))
        if BACKEND == "onnxruntime":
            got = run_onnxruntime(model_path, feed, output_names)
            for name, g, w in zip(output_names, got, outputs):
                problem = compare(name, g if g is None or isinstance(g, list) else np.asarray(g), w)
                if problem:
                    return problem
            continue
        # Inputs that set shapes or counts are given at run time like the others: the library
        # builds for their values (a ProgramLibrary).
        mod = tessera.onnx.load(model_path)
        # Every optimization level must reproduce the reference outputs (and so level 0's).
        for level in OPT_LEVELS:
            got = built(mod, level).run(feed)
            if len(got) != len(outputs):
                return f"opt level {level}: {len(got)} outputs, expected {len(outputs)}"
            for name, g, w in zip(output_names, got, outputs):
                problem = compare(name, g, w)
                if problem:
                    return f"opt level {level}: {problem}"
    return None


def main():
    for test_dir in sys.argv[1:]:
        name = os.path.basename(test_dir)
        try:
            problem = run_test(test_dir)
        except Exception as e:  # the runner reports every kind of failure the same way
            problem = f"{type(e).__name__}: {e}".strip()
            if not isinstance(e, tessera.Error):
                problem += " | " + traceback.format_exc(limit=3).replace("\n", " ")
        print(json.dumps({"test": name, "status": "fail" if problem else "pass", "message": problem or ""}), flush=True)


if __name__ == "__main__":
    main()
