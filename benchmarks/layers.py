#!/usr/bin/env python3
"""A model's layers side by side: each Tessera kernel's time in the model (lib.profile) against
ONNX Runtime's nodes (its profiler), both summed per kind of convolution layer — (input
channels, output channels, both rounded up to 16 as ORT's NCHWc layout pads them; input and
output size) — so the two libraries' different fusions still meet. Best of rounds, in turns.

    benchmarks/.venv/bin/python benchmarks/layers.py models/mobilenet_v2.onnx [--db tuning.db]
                                                     [--rounds 10] [--threads 2]"""
import argparse
import collections
import json
import os
import re
import sys
import tempfile

import common


def layer_key(inputs, output, channels_last=False):
    """(C in, C out rounded to 16, H in, H out) of a 4-D layer; the shapes themselves otherwise.
    A channels-last kernel's (conv_nhwc, or a matmul over NHWC positions) output is [N, H, W, C],
    and so is its input unless it is a stem's image ([N, C, H, W], at most 4 channels)."""
    if len(inputs) == 4 and len(output) == 4:
        if channels_last:
            image = inputs[1] <= 4 < inputs[3]
            c_in, h_in = (inputs[1], inputs[2]) if image else (inputs[3], inputs[1])
            return (-(-c_in // 16) * 16, -(-output[3] // 16) * 16, h_in, output[1])
        return (-(-inputs[1] // 16) * 16, -(-output[1] // 16) * 16, inputs[2], output[2])
    return (tuple(inputs), tuple(output))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--db", default="", help="a tuning database (default: none)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--opt-level", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.worker:
        return common.run_workers(__file__, [args.threads], sys.argv[1:])

    import numpy as np
    import onnxruntime as ort
    import tessera
    mod = tessera.onnx.load(args.model)
    lib = tessera.build(mod, opt_level=args.opt_level, db=args.db) if args.db else tessera.build(mod, opt_level=args.opt_level)
    x = np.random.default_rng(0).uniform(-1, 1, lib.inputs[0]["shape"]).astype(lib.inputs[0]["dtype"])
    shapes = lambda s: [[int(d) for d in t.split(",")] if t else [] for t in re.findall(r"\[([\d, ]*)\]", s)]
    channels_last = lambda op: "nhwc" in op or "matmul" in op
    kernel_key = {k["name"]: layer_key(shapes(k["signature"])[0], shapes(k["signature"])[-1], channels_last(k["op"]))
                  for k in lib.kernels}
    names = collections.defaultdict(list)
    for k in lib.kernels:
        names[kernel_key[k["name"]]].append(f"{k['name']}x{k['calls']}")

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x}
    tessera_us = collections.defaultdict(lambda: float("inf"))
    for _ in range(args.rounds):
        per_round = collections.defaultdict(float)
        for name, ms in lib.profile([x], repeat=5):
            per_round[kernel_key.get(name, name)] += ms * 1e3
        for key, us in per_round.items():
            tessera_us[key] = min(tessera_us[key], us)
        for _ in range(10):
            session.run(None, feed)
    node_us, node_key = collections.defaultdict(list), {}
    for event in json.load(open(session.end_profiling())):
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        node_us[event["name"]].append(event["dur"])
        a = event["args"]
        first = lambda shapes: list(shapes[0].values())[0] if shapes else []
        node_key[event["name"]] = (layer_key(first(a.get("input_type_shape")), first(a.get("output_type_shape")))
                                   if a.get("op_name") == "Conv" else a.get("op_name"))
    ort_us = collections.defaultdict(float)
    for node, durations in node_us.items():
        ort_us[node_key[node]] += min(durations)

    print(f"== {args.model}, {args.threads} threads: per layer kind, best of {args.rounds} rounds (us)")
    print(f"  sum of kernels: tessera {sum(tessera_us.values()):.0f}, onnxruntime {sum(ort_us.values()):.0f}")
    for key in sorted(set(tessera_us) | set(ort_us), key=lambda k: -max(tessera_us.get(k, 0), ort_us.get(k, 0))):
        t, o = tessera_us.get(key, 0), ort_us.get(key, 0)
        ratio = f"{o / t:5.2f}" if t and o else "     "
        print(f"  {str(key):34s} tessera {t:8.1f}  ort {o:8.1f}  {ratio}  {' '.join(names.get(key, []))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
