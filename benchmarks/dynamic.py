#!/usr/bin/env python3
"""Models as people export them today (issue 25). For now, conformance on the current ONNX
release's node suite: Tessera against ONNX Runtime, through the same runner
(tests/onnx/run_node_tests.py) on the same cases (tests/onnx/write_current_cases.py), counted by
opset band, one RESULT line per band. Run with the venv that has that onnx and ONNX Runtime:

    source scripts/setup.sh; ensure_onnx_current
    build/onnx-current/bin/python benchmarks/dynamic.py [-j 2]
"""
import argparse
import json
import os
import re
import subprocess
import sys

import common

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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--cases", default=os.path.join(common.BUILD, "onnx-node-cases"))
    args = parser.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())
