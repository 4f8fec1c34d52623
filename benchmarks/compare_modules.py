#!/usr/bin/env python3
"""Exported modules of one model (lib.export(), `tessera compile -o`) timed side by side in one
process, for A/B checks of a compiler change: export the model before and after it. The modules
take turns in short rounds, so the stretches in which this machine runs at half speed (seconds
with one core taken) fall on all of them alike; per module the end-to-end time, and per kernel
the best round's median, since noise only ever slows a round down.

    /usr/bin/python3 benchmarks/compare_modules.py before.so after.so [--input x.npy] [--rounds 24]
                                                   [--threads 2]

Inputs are --input (one .npy per model input, in order) or uniform random values."""
import argparse
import collections
import json
import os
import statistics
import sys

import common


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="+")
    parser.add_argument("--input", nargs="*", default=[], help=".npy files, one per model input")
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--runs", type=int, default=10, help="timed runs per module per round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.worker:
        return common.run_workers(__file__, [args.threads], sys.argv[1:])

    import numpy as np
    import tessera
    modules = [tessera.load(path) for path in args.modules]
    if args.input:
        inputs = [np.load(path) for path in args.input]
    else:
        rng = np.random.default_rng(0)
        inputs = [rng.uniform(-1, 1, i["shape"]).astype(i["dtype"]) for i in modules[0].inputs]
    end_to_end = [[] for _ in modules]
    kernels = [collections.defaultdict(list) for _ in modules]
    for _ in range(args.rounds):
        for m, module in enumerate(modules):
            times = common.timed_calls(lambda: module.run(inputs), args.runs, warmup=3)
            end_to_end[m].append(statistics.median(times))
            for name, ms in module.profile(inputs, repeat=5):
                kernels[m][name].append(ms)

    names = [os.path.basename(p) for p in args.modules]
    print(f"== {args.threads} thread(s), {args.rounds} rounds: the best round's median (the median of rounds)")
    for name, rounds in zip(names, end_to_end):
        print(f"  {name:24s} end to end {min(rounds) * 1e3:8.3f} ms ({statistics.median(rounds) * 1e3:.3f})")
    print(f"  {'kernel (us)':24s} " + " ".join(f"{n[:10]:>10s}" for n in names))
    order = sorted({k for per in kernels for k in per}, key=lambda k: -min(kernels[0].get(k, [0])))
    for k in order:
        print(f"  {k[:24]:24s} " + " ".join(f"{min(per[k]) * 1e3:10.1f}" if k in per else f"{'-':>10s}" for per in kernels))
    record = {"bench": "compare_modules", "threads": args.threads,
              "modules": {n: round(min(r) * 1e3, 3) for n, r in zip(names, end_to_end)}}
    print("RESULT " + json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
