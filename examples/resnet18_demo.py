#!/usr/bin/env python3
"""ResNet-18 from ONNX, end to end (scripts/demo.sh runs it): import and compile the model, check
it against PyTorch, tune it for a minute, build it again from the tuning database with no
measurement, export it as one shared library, and time it untuned and tuned beside PyTorch.

    scripts/make_models.py --out build/demo resnet18     # with Debian's /usr/bin/python3
    python examples/resnet18_demo.py build/demo [--tune-seconds 30]

The folder holds resnet18.onnx, resnet18.input.npy and resnet18.output.npy (PyTorch's output);
the tuning database (tuning.db), its report (tuning.report.html) and the exported module
(resnet18.so) are written there. Run it again and tuning goes on from the database's records.
"""
import argparse
import collections
import contextlib
import io
import os
import sys
import time
import warnings

import numpy as np

import tessera

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "scripts"), os.path.join(ROOT, "benchmarks")]
import common  # noqa: E402  benchmarks/common.py: timing libraries in turns
import make_models  # noqa: E402  scripts/make_models.py: the PyTorch model behind the ONNX file


def step(title):
    print(f"\n== {title}", flush=True)


def check(name, out, ref):
    err = float(np.abs(out - ref).max() / np.abs(ref).max())
    if err > 1e-3:
        sys.exit(f"error: {name}'s output differs from PyTorch's by {err:.2e} (max relative error)")
    print(f"  {name}'s output matches PyTorch's (max relative error {err:.1e})")


def torch_runner(x):
    """ResNet-18 in PyTorch, on the same input and thread count. Debian's torch 1.13 was built
    for numpy 1: under numpy 2 it may warn at import, so it is imported quietly, and its tensors
    cross by DLPack (scripts/torch_numpy.py), which works under both."""
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
        import torch_numpy
        model, _ = make_models.build_model("resnet18")
    torch.set_num_threads(tessera.num_threads())
    tx = torch_numpy.tensor(x)

    def run():
        with torch.no_grad():
            return torch_numpy.array(model(tx))
    return run


def progress_printer():
    """tune() draws a live line on a terminal; elsewhere (a log) one line every 15 s will do."""
    if sys.stderr.isatty():
        return None
    last = [0.0]

    def show(line):
        if time.time() - last[0] >= 15:
            last[0] = time.time()
            print("  " + line, flush=True)
    return show


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="where resnet18.onnx and its .npy files are, and the results go")
    parser.add_argument("--tune-seconds", type=float, default=30, help="the tuning session's search time")
    args = parser.parse_args()
    path = lambda name: os.path.join(args.folder, name)  # noqa: E731
    x, ref = np.load(path("resnet18.input.npy")), np.load(path("resnet18.output.npy"))
    db = path("tuning.db")

    step("2/6 ResNet-18: import from ONNX, compile, check against PyTorch")
    start = time.time()
    mod = tessera.onnx.load(path("resnet18.onnx"))
    untuned = tessera.build(mod, db=False)  # db=False: default schedules only
    print(f"  compiled {len(untuned.kernels)} kernels in {time.time() - start:.1f} s (default schedules)")
    check("Tessera", untuned.run([x])[0], ref)

    step(f"3/6 tuning for about a minute: {args.tune_seconds:.0f} s of search, then the model check")
    start = time.time()
    # The time is the budget (trials only cap it); every batch is committed as it is measured.
    report = tessera.autotune.tune(mod, db=db, trials=100000, timeout=args.tune_seconds,
                                   progress=progress_printer())
    faster = [t for t in report.tasks if 0 < t["best_seconds"] < t["default_seconds"]]
    print(f"  {report.wall_seconds:.0f} s of tuning; the database holds {sum(t['trials'] for t in report.tasks)} "
          f"measurements of the {len(report.tasks)} kernels; {len(faster)} kernels have a schedule faster than their "
          "default, timed alone")
    # Alone a kernel's inputs and weights are hot in cache; in the model they are not. The check
    # times each tuned kernel inside the model and keeps whichever schedule was faster there.
    if report.model_check:
        print("  " + report.model_check["text"].rstrip().replace("\n", "\n  "))
    print(f"  database {db}, report {report.report_path}; {time.time() - start:.0f} s in all")

    step("4/6 building again from the database: its records, no measurement")
    start = time.time()
    # transfer=False: kernels without records keep their defaults rather than being measured.
    tuned = tessera.build(mod, db=db, transfer=False)
    print(f"  compiled in {time.time() - start:.1f} s; where each kernel's schedule came from:")
    for k in tuned.kernels:
        print(f"    {k['name']:28s} {k['schedule']}")
    origins = collections.Counter(k["schedule"].split(" (")[0] for k in tuned.kernels)
    print("  " + ", ".join(f"{n} {origin}" for origin, n in origins.most_common()))
    check("Tessera tuned", tuned.run([x])[0], ref)
    tuned.export(path("resnet18.so"))
    print(f"  exported {path('resnet18.so')} ({os.path.getsize(path('resnet18.so')) / 2**20:.0f} MiB: "
          "kernels, plan and weights in one shared library)")

    step(f"5/6 latency, batch 1, {tessera.num_threads()} threads, in this process, taking turns")
    pytorch = torch_runner(x)
    times = common.measure_rounds({"Tessera untuned": lambda: untuned.run([x]), "Tessera tuned": lambda: tuned.run([x]),
                                   "PyTorch": pytorch}, repeat=30)
    # Both: on a shared machine the median takes in other programs' load; the minimum does not.
    torch_min, torch_median = times["PyTorch"]
    for name, (best, median) in times.items():
        speed = f"{torch_min / best:4.1f}x / {torch_median / median:4.1f}x PyTorch's speed" if name != "PyTorch" else ""
        print(f"  {name:16s} min {best * 1e3:7.2f} ms   median {median * 1e3:7.2f} ms   {speed}".rstrip())
    if not origins.get("tuned"):
        print("  (no kernel took a tuned schedule in a minute: the two builds are the same; tune longer, see below)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
