#!/usr/bin/env python3
"""The ONNX node conformance suite (ONNX 1.12's in /usr/share/libonnx-testdata/data/node, or the
current onnx release's as write_current_cases.py writes it) through Tessera's Python API, or
through ONNX Runtime's for comparison (--backend onnxruntime, same runner). Tests run in batches in child processes with a timeout; a batch that crashes or
hangs is rerun one test at a time. Tests outside Tessera's scope (training, string, sequence,
optional and random-number operators) are skipped; expected failures are listed with a reason
in expected_failures.txt. Exits nonzero when an unlisted test fails or a listed one passes.

    /usr/bin/python3 tests/onnx/run_node_tests.py [-k REGEX] [-j 2] [--opt-levels 0,1,2,3] [--target TARGET]
                                                  [--data DIR --expected FILE] [--write-expected]
                                                  [--backend onnxruntime] [--export [--export-expected FILE]]

The current suite runs in the venv that has its onnx (scripts/setup.sh: ensure_onnx_current):
    build/onnx-current/bin/python tests/onnx/run_node_tests.py --data build/onnx-node-cases \
        --expected tests/onnx/expected_failures_current.txt --opt-levels 2

Each test is built for TARGET (default: llvm, the host; opencl runs on PoCL's device) and checked
at every listed graph optimization level. The expected failures are the same on every target.
The summary counts the tests passed by opset band (a test's opset: its model's default domain).
With --export each library is written as a module and loaded back (tessera.load), and the module
runs the test; the tests whose model cannot be exported are expected failures of their own
(expected_failures_export.txt; the current release's: --export-expected
tests/onnx/expected_failures_current_export.txt), beside the suite's.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DATA = "/usr/share/libonnx-testdata/data/node"
EXPECTED = os.path.join(HERE, "expected_failures.txt")
EXPORT_EXPECTED = os.path.join(HERE, "expected_failures_export.txt")
BATCH, BATCH_TIMEOUT, SINGLE_TIMEOUT = 16, 240, 60

OUT_OF_SCOPE = {
    "random numbers": {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"},
    "string tensors": {"StringNormalizer", "TfIdfVectorizer", "RegexFullMatch"},
}


def scope_of(test_dir):
    """None if the test is in scope, else why not."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    if any(o.domain == "ai.onnx.preview.training" for o in model.opset_import):
        return "training operators"
    for node in model.graph.node:
        for reason, ops in OUT_OF_SCOPE.items():
            if node.op_type in ops:
                return reason
    for v in list(model.graph.input) + list(model.graph.output):
        t = v.type
        if t.HasField("map_type"):
            return "map values"
        if t.HasField("tensor_type") and t.tensor_type.elem_type == onnx.TensorProto.STRING:
            return "string tensors"
    return None


def read_expected(path):
    expected = {}
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, reason = line.partition(" ")
                expected[name] = reason.strip().lstrip("#").strip()
    return expected


OPSET_BANDS = [("opsets up to 17", 0, 17), ("opsets 18 to 21", 18, 21), ("opsets 22 and later", 22, 10 ** 6)]


def opset_of(test_dir):
    model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)


def reason_of(message):
    """A failure message as one line of the expected list: without the model's path, at most 160
    characters."""
    message = re.sub(r"^Error: \S+/model\.onnx: ", "", message)
    return " ".join(message.split())[:160]


def run_batch(tests, timeout):
    env = dict(os.environ)
    build = env.get("TESSERA_BUILD_DIR", os.path.join(ROOT, "build"))
    env["PYTHONPATH"] = os.path.join(build, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TESSERA_NUM_THREADS", "1")  # the runner already runs batches in parallel
    env["TESSERA_DB"] = "/nonexistent/tessera-conformance.db"  # default schedules only
    cmd = [sys.executable, os.path.join(HERE, "node_test_worker.py")] + [os.path.join(DATA, t) for t in tests]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        out, crashed = proc.stdout, proc.returncode != 0
        why = f"exit code {proc.returncode}: {proc.stderr.strip()[-300:]}"
    except subprocess.TimeoutExpired as e:
        out, crashed, why = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), True, f"timed out after {timeout} s"
    results = {}
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["test"]] = r
    if crashed:
        missing = [t for t in tests if t not in results]
        if len(tests) == 1:
            results[tests[0]] = {"test": tests[0], "status": "fail", "message": "crashed or hung: " + why}
        else:
            for t in missing:  # which one crashed? rerun them one at a time
                results.update(run_batch([t], SINGLE_TIMEOUT))
    return results


def main():
    global DATA, EXPECTED
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", "--filter", default="", help="only tests whose name matches this regex")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failure message")
    parser.add_argument("--opt-levels", default="0,1,2,3", help="comma-separated graph optimization levels to check")
    parser.add_argument("--target", default="llvm", help='target to build for, e.g. "llvm -mcpu=x86-64-v3"')
    parser.add_argument("--data", default=DATA, help="the folder of test cases")
    parser.add_argument("--expected", default=EXPECTED, help="the expected failures")
    parser.add_argument("--backend", default="tessera", choices=["tessera", "onnxruntime"],
                        help="onnxruntime: run the same tests through ONNX Runtime (no expected failures)")
    parser.add_argument("--write-expected", action="store_true", help="write the current failures as the expected list")
    parser.add_argument("--export", action="store_true",
                        help="export each test's library and run the module loaded back with the runtime alone; the "
                             "tests that cannot be exported are listed in expected_failures_export.txt")
    parser.add_argument("--export-expected", default=EXPORT_EXPECTED,
                        help="the tests that cannot be exported (with --export; default: ONNX 1.12's, "
                             "expected_failures_export.txt)")
    args = parser.parse_args()
    DATA, EXPECTED = args.data, args.expected
    os.environ["TESSERA_NODE_BACKEND"] = args.backend
    os.environ["TESSERA_NODE_EXPORT"] = "1" if args.export else "0"

    start = time.time()
    tests, skipped = [], {}
    for name in sorted(os.listdir(DATA)):
        if (args.filter and not re.search(args.filter, name)) or not os.path.isdir(os.path.join(DATA, name)):
            continue
        reason = scope_of(os.path.join(DATA, name))
        if reason:
            skipped[name] = reason
        else:
            tests.append(name)
    batches = [tests[i:i + BATCH] for i in range(0, len(tests), BATCH)]
    results = {}
    os.environ["TESSERA_OPT_LEVELS"] = args.opt_levels
    os.environ["TESSERA_TARGET"] = args.target
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for r in pool.map(lambda b: run_batch(b, BATCH_TIMEOUT), batches):
            results.update(r)

    expected = read_expected(EXPECTED) if args.backend == "tessera" else {}
    if args.export:
        expected.update(read_expected(args.export_expected))
    passed = sorted(t for t in tests if results[t]["status"] == "pass")
    failed = sorted(t for t in tests if results[t]["status"] != "pass")
    unexpected = [t for t in failed if t not in expected]
    fixed = [t for t in passed if t in expected]
    for t in failed:
        if args.verbose or t in unexpected:
            print(f"FAIL {t}: {results[t]['message'][:400]}")
    for t in fixed:
        print(f"PASSES NOW (remove from expected_failures.txt): {t}")
    if args.write_expected:
        with open(EXPECTED, "w") as f:
            f.write("# ONNX node tests expected to fail, each with the reason. run_node_tests.py fails when a\n"
                    "# test not listed here fails, or a listed one passes.\n")
            for t in failed:
                if not (args.export and t in read_expected(args.export_expected)):
                    f.write(f"{t}  # {expected.get(t) or reason_of(results[t]['message'])}\n")
    ran = f"target {args.target}{' (exported)' if args.export else ''}" if args.backend == "tessera" else args.backend
    print(f"{ran}, opt levels {args.opt_levels}: {len(unexpected)} unexpected failures, "
          f"{len(fixed)} newly passing, {len(failed) - len(unexpected)} expected failures, {len(skipped)} out of scope, "
          f"in {time.time() - start:.0f} s")
    print(f"{len(passed)} passed, {len(unexpected) + len(fixed)} failed")
    opsets = {t: opset_of(os.path.join(DATA, t)) for t in tests}
    bands = []
    for label, lo, hi in OPSET_BANDS:
        in_band = [t for t in tests if lo <= opsets[t] <= hi]
        bands.append(f"{label}: {sum(t in passed for t in in_band)} of {len(in_band)}")
    print(f"{args.backend} passes, by opset: " + "; ".join(bands))
    if args.backend != "tessera":
        return 0
    return 1 if (unexpected or fixed) and not args.write_expected else 0


if __name__ == "__main__":
    sys.exit(main())
