#!/usr/bin/env python3
"""Models as people export them today (issue 25), in seven parts.

--conformance: the current ONNX release's node suite, Tessera against ONNX Runtime through the
same runner (tests/onnx/run_node_tests.py) on the same cases (tests/onnx/write_current_cases.py),
counted by opset band, one RESULT line per band. Run with the venv that has that onnx and ONNX
Runtime:

    source scripts/setup.sh; ensure_onnx_current
    build/onnx-current/bin/python benchmarks/dynamic.py --conformance [-j 2]

--models: models exported with symbolic dimensions (scripts/make_models.py --dynamic: the
transformer encoder with batch N and sequence L, resnet18 with batch N, and resnet18_hw and
mobilenet_v2_hw: those networks with batch N, height H and width W, from make_models.py
--images), loaded without shapes=
and run at several sizes by one DynamicLibrary, against a static build at each size
(tessera.onnx.load(shapes=)) and ONNX Runtime on the same dynamic model, in the same process,
taking turns in rounds, at 2 threads. A model whose operators all take symbolic sizes is built
once, on the first run, for every size (tiles chosen for that first size); otherwise each size's
first run builds the model for it. The first run's time at each size is reported as first_run_s,
and each RESULT line says which build served it ("build": "symbolic" or "per size"). Run with the
benchmark peers' venv (benchmarks/setup.sh):

    benchmarks/.venv/bin/python benchmarks/dynamic.py --models [--repeat 20]

--control-flow: models a static graph cannot express, run as programs (tessera.ProgramLibrary)
against ONNX Runtime on the same model, in turns, at 2 threads: a greedy decoding Loop (a
recurrent cell and an argmax per step, stopping at an end token: data-dependent termination),
the same Loop adding row i of a position table at step i (a Slice by the step's number, run on
the host between the step's stages) and detection post-processing (NonMaxSuppression over 80 classes, then gathering the kept
boxes). Written here with onnx's helper, weights random:

    benchmarks/.venv/bin/python benchmarks/dynamic.py --control-flow [--repeat 20]

--hot-sizes: the transformer exported as one module holding the hot size 1x128 beside the build
for every size (tessera.build(..., specialize=[...]).export), loaded by the runtime, against its
module without hot sizes, at the hot size and at one it does not hold, in turns at 2 threads (both
builds' tiles chosen at 1x16, as the --models first run chooses them):

    benchmarks/.venv/bin/python benchmarks/dynamic.py --hot-sizes [--repeat 20]

--decoder-step: one decoding step of a GPT-style decoder (2 layers, hidden 256, 4 heads, vocabulary
1000) as torch.onnx.export writes it for generation, with a key/value cache of P past tokens per
layer (dynamic N, L, P; the causal mask's diagonal P + 1): one build for every size against a static
build of each size and ONNX Runtime, at a prompt of 64 tokens and single tokens after 64 and 512:

    benchmarks/.venv/bin/python benchmarks/dynamic.py --decoder-step [--repeat 20]

--resize: an image (1x3x224x224) resized by scales (1, 1, 2, 2), linear and cubic: the scales a
model input (one build and a module for every scale; a step computes the output size, the kernel
reads the scales), and linear with the image's two scales an input after constant ones (a Concat,
as exporters write them), against the scales a constant and ONNX Runtime on the input-scales model:

    benchmarks/.venv/bin/python benchmarks/dynamic.py --resize [--repeat 20]

--recurrent: an LSTM encoder (2 bidirectional layers, hidden 256) exported with a dynamic batch
and length, built once for every length (each LSTM runs as a Scan over steps of one: a program)
against a static build of each size (the LSTMs unrolled) and ONNX Runtime, at lengths 16 to 250:

    benchmarks/.venv/bin/python benchmarks/dynamic.py --recurrent [--repeat 20]
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
         "resnet18": [(1, 3, 224, 224), (4, 3, 224, 224), (16, 3, 224, 224)],
         "resnet18_hw": [(1, 3, 224, 224), (1, 3, 320, 240), (4, 3, 160, 160), (1, 3, 97, 131)],
         "mobilenet_v2_hw": [(1, 3, 224, 224), (1, 3, 320, 240), (4, 3, 160, 160), (1, 3, 97, 131)]}

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
        images = name.endswith("_hw")  # batch, height and width symbolic
        path = make_models.ensure(name[:-3] if images else name, MODEL_DIR, dynamic=True, images=images)
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
            extra = {"first_run_s": round(first_run_s, 2), "static_build_s": round(static_build_s, 2),
                     "build": "symbolic" if dynamic.symbolic else "per size"}
            print(common.result_line("dynamic", case, args.threads, times, ["static", "ort"], extra=extra), flush=True)
        if dynamic.symbolic:
            print(f"  {name}: one build for every size")
        else:
            print(f"  {name}: sizes built by the dynamic library: {dynamic.built} "
                  f"(per size because {dynamic.symbolic_reason})")
    return 1 if failed else 0


def hot_sizes_worker(args):
    """The transformer's module with a hot size against its module without, both loaded from files."""
    import tempfile

    import numpy as np
    import make_models
    import tessera
    path = make_models.ensure("transformer", MODEL_DIR, dynamic=True)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        modules = {}
        for name, hot in (("tessera", [{"N": 1, "L": 128}]), ("every_size", [])):
            lib = tessera.build(tessera.onnx.load(path), db=False, size_hints={"N": 1, "L": 16}, specialize=hot)
            lib.export(os.path.join(tmp, name + ".so"))
            modules[name] = tessera.load(os.path.join(tmp, name + ".so"))
        for shape in [(1, 128, 256), (1, 384, 256)]:
            x = np.random.default_rng(1).standard_normal(shape).astype("float32")
            got, want = modules["tessera"].run([x])[0], modules["every_size"].run([x])[0]
            err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
            if err > 1e-4:
                print(f"  transformer {shape}: the module with hot sizes differs by {err:.2e} (relative)")
                failed = True
            runs = {name: (lambda m=m: m.run([x])[0]) for name, m in modules.items()}
            times = common.measure_rounds(runs, args.repeat)
            case = f"transformer module input {'x'.join(map(str, shape))}"
            for lib, (best, median) in times.items():
                print(f"  {case:40s} {lib:10s} min {best * 1e3:9.2f} ms  median {median * 1e3:9.2f} ms", flush=True)
            served = modules["tessera"].served_by([shape])
            print(common.result_line("dynamic", case, args.threads, times, ["every_size"], extra={"served_by": served}),
                  flush=True)
    return 1 if failed else 0


def decoder_loop_model(path, hidden, vocab, steps, positions=False):
    """tokens = Loop(steps, cond=True, h=h0): h = tanh(h W + b); token = argmax(h V); stop when the
    token is the end token (-1 here, never: the condition is still computed from the data). With
    `positions`, each step first adds row i of a position table P (Slice(P, i, i + 1): bounds the
    data gives, so the slice is a step of the program, not a stage built for each i)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    consts = {"W": rng.standard_normal((hidden, hidden)).astype("float32") / np.sqrt(hidden),
              "b": rng.standard_normal(hidden).astype("float32") * 0.1,
              "V": rng.standard_normal((hidden, vocab)).astype("float32") / np.sqrt(hidden),
              "eos": np.array([-1], np.int64), "M": np.array(steps, np.int64), "true": np.array(True),
              "zero_axis": np.array([0], np.int64)}
    added = []
    if positions:
        consts.update({"P": rng.standard_normal((steps, hidden)).astype("float32"), "one": np.array([1], np.int64)})
        added = [helper.make_node("Unsqueeze", ["i", "zero_axis"], ["start"]),
                 helper.make_node("Add", ["start", "one"], ["end"]),
                 helper.make_node("Slice", ["P", "start", "end", "zero_axis"], ["position"]),
                 helper.make_node("Add", ["h_in", "position"], ["h_at"])]
    body = helper.make_graph(
        added + [helper.make_node("MatMul", ["h_at" if positions else "h_in", "W"], ["hw"]),
                 helper.make_node("Add", ["hw", "b"], ["hb"]),
                 helper.make_node("Tanh", ["hb"], ["h_out"]), helper.make_node("MatMul", ["h_out", "V"], ["logits"]),
                 helper.make_node("ArgMax", ["logits"], ["token"], axis=1, keepdims=0),
                 helper.make_node("Equal", ["token", "eos"], ["at_end"]),
                 helper.make_node("Not", ["at_end"], ["go_v"]), helper.make_node("Squeeze", ["go_v", "zero_axis"], ["go"])],
        "step", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, hidden])],
        [helper.make_tensor_value_info("go", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("token", TensorProto.INT64, [1])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "true", "h0"], ["h", "tokens"], body=body)], "decoder",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, hidden])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("tokens", TensorProto.INT64, [None, 1])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"h0": rng.standard_normal((1, hidden)).astype("float32")}


def nms_model(path, boxes, classes):
    """The kept boxes: NonMaxSuppression (at most 100 per class, IOU 0.5, score 0.3), then Gather."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    consts = {"max_out": np.array([100], np.int64), "iou": np.array([0.5], np.float32),
              "score": np.array([0.3], np.float32), "two": np.array([2], np.int64)}
    graph = helper.make_graph(
        [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score"], ["sel"]),
         helper.make_node("Gather", ["sel", "two"], ["box_col"], axis=1),
         helper.make_node("Squeeze", ["box_col", "one"], ["box_idx"]),
         helper.make_node("Squeeze", ["boxes", "zero"], ["all_boxes"]),
         helper.make_node("Gather", ["all_boxes", "box_idx"], ["kept"], axis=0)], "nms",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, boxes, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, classes, boxes])],
        [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3]),
         helper.make_tensor_value_info("kept", TensorProto.FLOAT, [None, 4])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()] +
        [numpy_helper.from_array(np.array([1], np.int64), "one"), numpy_helper.from_array(np.array([0], np.int64), "zero")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    corner = rng.uniform(0, 600, (1, boxes, 2)).astype("float32")
    return {"boxes": np.concatenate([corner, corner + rng.uniform(10, 100, (1, boxes, 2)).astype("float32")], axis=2),
            "scores": rng.uniform(0, 1, (1, classes, boxes)).astype("float32")}


def control_flow_worker(args):
    """Each program against ONNX Runtime: outputs compared, then timed in turns, in this process
    (built on the first run for every size) and exported as a module (every stage built for every
    size), loaded back."""
    import tempfile
    import numpy as np
    import tessera
    failed = False
    # (make the model, export it too). The position table's slice has rows only the data tells, and
    # the step's Squeeze needs them to be 1, which a build for every size cannot check yet: that
    # case runs in this process only (its stages built once, for the shapes the loop meets).
    cases = {"decoder Loop, hidden 256, vocab 1000, 32 steps": (lambda p: decoder_loop_model(p, 256, 1000, 32), True),
             "decoder Loop slicing a position table by its step, 32 steps":
                 (lambda p: decoder_loop_model(p, 256, 1000, 32, positions=True), False),
             "NonMaxSuppression, 1000 boxes, 80 classes": (lambda p: nms_model(p, 1000, 80), True)}
    with tempfile.TemporaryDirectory() as d:
        for case, (make, exported) in cases.items():
            path = os.path.join(d, "model.onnx")
            feed = make(path)
            lib = tessera.build(tessera.onnx.load(path), db=False)
            session = ort_session(path, args.threads)
            start = time.time()
            got = lib.run(feed)
            first_run_s = time.time() - start
            for g, w in zip(got, session.run(None, feed)):
                if g.shape != w.shape or not np.allclose(g, w, rtol=1e-4, atol=1e-5):
                    print(f"  {case}: Tessera differs from ONNX Runtime ({g.shape} vs {w.shape})")
                    failed = True
            runs = {"tessera": lambda: lib.run(feed), "ort": lambda: session.run(None, feed)}
            extra = {"first_run_s": round(first_run_s, 2), "stage_builds": sum(len(b) for _, b in lib.builds)}
            if exported:  # the same program exported (every stage built for every size) and loaded back
                start = time.time()
                lib.export(os.path.join(d, "model.so"))
                extra["export_s"] = round(time.time() - start, 2)
                start = time.time()
                module = tessera.load(os.path.join(d, "model.so"))
                extra["module_load_and_first_run_s"] = round((module.run(feed), time.time() - start)[1], 3)
                for g, w in zip(module.run(feed), got):
                    if g.shape != w.shape or not np.array_equal(g, w):
                        print(f"  {case}: the exported module differs from the library that wrote it")
                        failed = True
                runs["module"] = lambda: module.run(feed)
            times = common.measure_rounds(runs, args.repeat)
            for name, (best, median) in times.items():
                print(f"  {case:48s} {name:8s} min {best * 1e3:9.3f} ms  median {median * 1e3:9.3f} ms", flush=True)
            peers = ["module", "ort"] if exported else ["ort"]
            print(common.result_line("dynamic", case, args.threads, times, peers, extra=extra), flush=True)
    return 1 if failed else 0


def decoder_step_model(path, hidden=256, heads=4, vocab=1000, layers=2):
    """One decoding step of a GPT-style decoder as torch.onnx.export writes it for generation: L
    new tokens after a cache of P past keys and values per layer (dynamic N, L, P), positions
    arange(P, P + L), the cache extended by Concat, the causal mask triu(ones(L, P + L), P + 1).
    Returns the input names."""
    import torch

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.positions = torch.nn.Embedding(vocab, hidden), torch.nn.Embedding(1024, hidden)
            self.qkv = torch.nn.ModuleList(torch.nn.Linear(hidden, 3 * hidden) for _ in range(layers))
            self.ff = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(),
                                                              torch.nn.Linear(4 * hidden, hidden)) for _ in range(layers))
            self.out = torch.nn.Linear(hidden, vocab)

        def forward(self, ids, *cache):
            n, length, past = ids.shape[0], ids.shape[1], cache[0].shape[2]
            h = self.tokens(ids) + self.positions(torch.arange(past, past + length))[None]
            mask = torch.triu(torch.ones(length, past + length, dtype=torch.bool), diagonal=past + 1)
            new_cache = []
            for layer in range(layers):
                d = hidden // heads
                q, k, v = (t.view(n, length, heads, d).transpose(1, 2) for t in self.qkv[layer](h).split(hidden, -1))
                k, v = torch.cat([cache[2 * layer], k], 2), torch.cat([cache[2 * layer + 1], v], 2)
                a = (q @ k.transpose(-1, -2) / d ** 0.5).masked_fill(mask, float("-inf")).softmax(-1)
                h = h + (a @ v).transpose(1, 2).reshape(n, length, hidden)
                h = h + self.ff[layer](h)
                new_cache += [k, v]
            return (self.out(h[:, -1]), *new_cache)

    torch.manual_seed(0)
    names = ["ids"] + [f"past_{kv}{layer}" for layer in range(layers) for kv in "kv"]
    axes = {"ids": {0: "N", 1: "L"}, **{name: {0: "N", 2: "P"} for name in names[1:]}}
    example = [torch.zeros(1, 3, dtype=torch.long)] + [torch.zeros(1, heads, 4, hidden // heads)] * (2 * layers)
    torch.onnx.export(Step().eval(), tuple(example), path, input_names=names, dynamic_axes=axes, opset_version=17)
    return names, heads, hidden // heads


def recurrent_model(path):
    """A speech-style encoder as torch.onnx.export writes it with a dynamic batch N and length L:
    2 bidirectional LSTM layers (80 features in, hidden 256), a linear layer to 32 outputs."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(80, 256, num_layers=2, batch_first=True, bidirectional=True)
            self.out = torch.nn.Linear(512, 32)

        def forward(self, x):
            return self.out(self.lstm(x)[0])

    torch.manual_seed(0)
    torch.onnx.export(Encoder().eval(), (torch.randn(1, 20, 80),), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N", 1: "L"}}, opset_version=17)


def recurrent_worker(args):
    """The LSTM encoder built once for every length (each LSTM a Scan of one step: a program)
    against a static build of each size (the LSTMs unrolled over the length) and ONNX Runtime."""
    import tempfile
    import numpy as np
    import tessera
    failed = False
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "encoder.onnx")
        recurrent_model(path)
        dynamic = tessera.build(tessera.onnx.load(path), db=False)
        session = ort_session(path, args.threads)
        for n, length in [(1, 16), (1, 100), (8, 100), (1, 250)]:
            x = np.random.default_rng(1).standard_normal((n, length, 80)).astype("float32")
            start = time.time()
            got = dynamic.run([x])[0]
            first_run_s = time.time() - start
            start = time.time()
            static = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape}), db=False)
            static_build_s = time.time() - start
            ref = session.run(None, {"x": x})[0]
            for label, out in (("dynamic", got), ("static", static.run([x])[0])):
                err = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30))
                if err > 1e-4:
                    print(f"  LSTM encoder {(n, length)}: Tessera ({label}) differs from ONNX Runtime by {err:.2e}")
                    failed = True
            runs = {"tessera": lambda: dynamic.run([x]), "static": lambda: static.run([x]),
                    "ort": lambda: session.run(None, {"x": x})}
            times = common.measure_rounds(runs, args.repeat)
            case = f"LSTM encoder N={n} L={length}"
            for lib, (best, median) in times.items():
                print(f"  {case:32s} {lib:8s} min {best * 1e3:9.3f} ms  median {median * 1e3:9.3f} ms", flush=True)
            extra = {"first_run_s": round(first_run_s, 2), "static_build_s": round(static_build_s, 2),
                     "build": "every size" if dynamic.symbolic else "per size"}
            print(common.result_line("dynamic", case, args.threads, times, ["static", "ort"], extra=extra), flush=True)
    return 1 if failed else 0


def decoder_step_worker(args):
    """The decoding step built once for every size against a static build of each size and ONNX
    Runtime's session of the same model: a prompt of 64 tokens, then single tokens after caches of
    64 and 512, and a batch of 4 after 128."""
    import tempfile
    import numpy as np
    import tessera
    failed = False
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "step.onnx")
        names, heads, head_dim = decoder_step_model(path)
        dynamic = tessera.build(tessera.onnx.load(path), db=False)
        session = ort_session(path, args.threads)
        rng = np.random.default_rng(1)
        for n, length, past in [(1, 64, 0), (1, 1, 64), (1, 1, 512), (4, 1, 128)]:
            feed = {"ids": rng.integers(0, 1000, (n, length)).astype("int64")}
            for name in names[1:]:
                feed[name] = rng.standard_normal((n, heads, past, head_dim)).astype("float32")
            inputs = [feed[name] for name in names]
            start = time.time()
            got = dynamic.run(inputs)
            first_run_s = time.time() - start
            static = tessera.build(tessera.onnx.load(path, shapes={k: v.shape for k, v in feed.items()}), db=False)
            for label, out in (("dynamic", got), ("static", static.run(inputs))):
                for g, w in zip(out, session.run(None, feed)):
                    err = float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-30))
                    if err > 1e-4:
                        print(f"  decoder step {(n, length, past)}: Tessera ({label}) differs from ONNX Runtime by {err:.2e}")
                        failed = True
            runs = {"tessera": lambda: dynamic.run(inputs), "static": lambda: static.run(inputs),
                    "ort": lambda: session.run(None, feed)}
            times = common.measure_rounds(runs, args.repeat)
            case = f"decoder step N={n} L={length} P={past}"
            for lib, (best, median) in times.items():
                print(f"  {case:32s} {lib:8s} min {best * 1e3:9.3f} ms  median {median * 1e3:9.3f} ms", flush=True)
            extra = {"first_run_s": round(first_run_s, 2), "build": "symbolic" if dynamic.symbolic else "per size"}
            print(common.result_line("dynamic", case, args.threads, times, ["static", "ort"], extra=extra), flush=True)
    return 1 if failed else 0


def resize_model(path, mode, scales, image_only=False):
    """Resize of x [1, 3, 224, 224] by `scales`: a constant, or (None) the model's input s; with
    `image_only`, s holds the image's two scales, after constant ones (a Concat)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])]
    if scales is None:
        inputs.append(helper.make_tensor_value_info("s", TensorProto.FLOAT, [2 if image_only else 4]))
    inits = [] if scales is None else [numpy_helper.from_array(np.array(scales, np.float32), "s")]
    nodes = [helper.make_node("Resize", ["x", "", "scales" if image_only else "s"], ["y"], mode=mode)]
    if image_only:
        nodes.insert(0, helper.make_node("Concat", ["ones", "s"], ["scales"], axis=0))
        inits.append(numpy_helper.from_array(np.ones(2, np.float32), "ones"))
    graph = helper.make_graph(nodes, "resize", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def resize_worker(args):
    """Scales read as the model runs against constant scales and ONNX Runtime."""
    import tempfile
    import numpy as np
    import tessera
    failed = False
    scales = np.array([1, 1, 2, 2], np.float32)
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype("float32")
    with tempfile.TemporaryDirectory() as d:
        for mode, image_only in [("linear", False), ("cubic", False), ("linear", True)]:
            given, constant = os.path.join(d, f"{mode}_given.onnx"), os.path.join(d, f"{mode}_constant.onnx")
            resize_model(given, mode, None, image_only)
            resize_model(constant, mode, scales)
            feed = scales[2:] if image_only else scales
            dynamic = tessera.build(tessera.onnx.load(given), db=False)
            static = tessera.build(tessera.onnx.load(constant), db=False)
            session = ort_session(given, args.threads)
            want = session.run(None, {"x": x, "s": feed})[0]
            for label, out in (("scales given", dynamic.run([x, feed])[0]), ("constant", static.run([x])[0])):
                err = float(np.abs(out - want).max())
                if err > 1e-4:
                    print(f"  resize {mode} ({label}) differs from ONNX Runtime by {err:.2e}")
                    failed = True
            runs = {"tessera": lambda: dynamic.run([x, feed]), "static": lambda: static.run([x]),
                    "ort": lambda: session.run(None, {"x": x, "s": feed})}
            times = common.measure_rounds(runs, args.repeat)
            given_as = "(2, 2) given after ones" if image_only else "(1, 1, 2, 2) given"
            case = f"resize {mode} 1x3x224x224 by scales {given_as} at run time"
            for lib, (best, median) in times.items():
                print(f"  {case:62s} {lib:8s} min {best * 1e3:9.3f} ms  median {median * 1e3:9.3f} ms", flush=True)
            extra = {"build": "symbolic" if dynamic.symbolic else "per size"}
            print(common.result_line("dynamic", case, args.threads, times, ["static", "ort"], extra=extra), flush=True)
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
    parser.add_argument("--models", nargs="*", help="the dynamic models (none named: all of SIZES)")
    parser.add_argument("--control-flow", action="store_true", help="programs: decoding Loops, NonMaxSuppression")
    parser.add_argument("--hot-sizes", action="store_true", help="a module holding a hot size against one without")
    parser.add_argument("--decoder-step", action="store_true", help="a decoding step with a key/value cache")
    parser.add_argument("--recurrent", action="store_true", help="an LSTM encoder of dynamic length")
    parser.add_argument("--resize", action="store_true", help="Resize by scales given at run time")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--cases", default=os.path.join(common.BUILD, "onnx-node-cases"))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.models is not None and not args.models:
        args.models = list(SIZES)
    if args.worker:
        if args.hot_sizes:
            return hot_sizes_worker(args)
        if args.decoder_step:
            return decoder_step_worker(args)
        if args.recurrent:
            return recurrent_worker(args)
        if args.resize:
            return resize_worker(args)
        return control_flow_worker(args) if args.control_flow else models_worker(args)
    if not (args.conformance or args.models is not None or args.control_flow or args.hot_sizes or args.decoder_step
            or args.recurrent or args.resize):
        parser.error("choose --conformance, --models, --control-flow, --hot-sizes, --decoder-step, --recurrent, "
                     "--resize or several")
    failed = conformance(args) if args.conformance else 0
    if args.models is not None:
        failed |= common.run_workers(__file__, [2], ["--models", *args.models, "--repeat", str(args.repeat)])
    if args.control_flow:
        failed |= common.run_workers(__file__, [2], ["--control-flow", "--repeat", str(args.repeat)])
    if args.hot_sizes:
        failed |= common.run_workers(__file__, [2], ["--hot-sizes", "--repeat", str(args.repeat)])
    if args.decoder_step:
        failed |= common.run_workers(__file__, [2], ["--decoder-step", "--repeat", str(args.repeat)])
    if args.recurrent:
        failed |= common.run_workers(__file__, [2], ["--recurrent", "--repeat", str(args.repeat)])
    if args.resize:
        failed |= common.run_workers(__file__, [2], ["--resize", "--repeat", str(args.repeat)])
    return failed


if __name__ == "__main__":
    sys.exit(main())
