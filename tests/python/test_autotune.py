"""Tuning sessions end to end, with a handful of trials: tasks, the database they fill, builds
that replay its records, resuming, interruption, custom schedules and schedule transfer."""
import json
import re
import sqlite3

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import host_cpu
import nn_testing
from package_under_test import program
import tessera

FAST = dict(repeat=2, batch=4, seed=1)


def mlp(path, rows, inner=24, cols=40, seed=0):
    """x[rows, inner] @ W + b -> relu -> @ W2: a fused matmul epilogue and a plain matmul."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((inner, cols)).astype("float32"), "w")
    b = numpy_helper.from_array(rng.standard_normal(cols).astype("float32"), "b")
    w2 = numpy_helper.from_array(rng.standard_normal((cols, 7)).astype("float32"), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["y"])]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, inner])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 7])], [w, b, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return tessera.onnx.load(path)


def records(db):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT workload, trace, kind, error, median_seconds FROM records").fetchall()


def labels(lib):
    return {k["op"]: k["schedule"] for k in lib.kernels}


def test_tasks_are_the_models_distinct_kernels(tmp_path):
    tasks = tessera.autotune.tasks(mlp(tmp_path / "m.onnx", 9))
    assert [t["description"] for t in tasks] == ["fused_matmul_add_relu", "matmul"]
    assert all(len(t["workload"]) == 64 and len(t["structure"]) == 64 and t["weight"] == 1 for t in tasks)
    assert tasks[0]["flops"] >= 2 * 9 * 24 * 40
    # Another shape: another workload, the same structure (what schedule transfer matches on).
    other = tessera.autotune.tasks(mlp(tmp_path / "n.onnx", 13))
    assert other[0]["workload"] != tasks[0]["workload"] and other[0]["structure"] == tasks[0]["structure"]


def test_a_pointwise_convolutions_work_is_its_multiply_adds():
    """The GFLOP/s a session reports: 2 x M x K per output, the operand reads (x - 0 without a zero
    point) not counted as work; they made it 1.5 times this before."""
    # 96 output channels: whole tiles of rows on every CPU (8 with 32 registers, 6 with 16).
    x, w = np.zeros((1, 256, 28, 32), "float32"), np.ones((96, 256, 1, 1), "float32")
    mod = nn_testing.load(nn_testing.model("Conv", [x, w], constants=[1]))
    for opt_level in (2, 3):
        (task,) = tessera.autotune.tasks(mod, opt_level=opt_level)
        assert task["flops"] == pytest.approx(2 * 96 * 256 * 28 * 32, rel=0.03), opt_level


def test_a_winograd_convolutions_work_is_its_own_arithmetic():
    """A Winograd convolution's transforms pick one expression per tile position (a select of 36
    branches): a point counts the one it takes, not all 36, which made the task 2.3 times the
    direct convolution's work. Its own: 36 products per 4x4 tile instead of 16 x 9 (a quarter),
    and the transforms."""
    x, w = np.zeros((1, 64, 28, 28), "float32"), np.ones((64, 64, 3, 3), "float32")
    mod = nn_testing.load(nn_testing.model("Conv", [x, w], {"pads": [1, 1, 1, 1]}, constants=[1]))
    (task,) = tessera.autotune.tasks(mod, opt_level=3)
    assert "float32[36, " in task["kernel"], task["kernel"]  # the weight transformed for Winograd
    direct = 2 * 64 * 64 * 9 * 28 * 28
    assert 0.3 * direct < task["flops"] < 0.6 * direct, task["flops"] / direct


def test_every_kernel_gets_a_first_batch_before_any_gets_a_second(tmp_path):
    """Ansor's warm-up round: a kernel not searched yet has no gain to rank it by, and on its
    share of the latency alone the small one here would get no batch until the large one had two."""
    mod = mlp(tmp_path / "m.onnx", 200, inner=64, cols=128)
    report = tessera.autotune.tune(mod, db=tmp_path / "t.db", trials=2 + 2 * FAST["batch"], progress=False, **FAST)
    assert [t["trials"] for t in report.tasks] == [1 + FAST["batch"]] * 2


def test_a_model_of_symbolic_sizes_is_tuned_at_representative_sizes(tmp_path, rng):
    mod = mlp(tmp_path / "m.onnx", "N")
    assert isinstance(mod, tessera.DynamicModule)
    db = tmp_path / "t.db"
    reports = tessera.autotune.tune_sizes(mod, [{"x": (4, 24)}, {"x": (64, 24)}], db=db, trials=8, progress=False,
                                          model_check=False, **FAST)
    assert [sum(t["trials"] for t in r.tasks) for r in reports] == [4, 4]  # the trials shared
    lib = tessera.build(mod, db=db, transfer=False)
    x = rng.standard_normal((64, 24)).astype("float32")
    lib.run([x])
    origins = {k["schedule"].split(" (")[0] + " (" + k["schedule"].split(" (")[1].split(" ")[0]
               for k in lib.specialize({"x": (64, 24)}).kernels}
    assert origins <= {"tuned (record", "default (measured"}, origins  # every kernel from the database
    # The build for every size, its tiles chosen at the first run's N = 64, replays the records of
    # its static kernels at N = 64, and is right at every size.
    assert lib.symbolic and all(" at N = 64)" in k["schedule"] for k in lib.kernels), labels(lib)
    plain = tessera.build(mod, db=False)
    for n in [64, 1, 5, 100, 0]:
        x = rng.standard_normal((n, 24)).astype("float32")
        np.testing.assert_allclose(lib.run([x])[0], plain.run([x])[0], rtol=1e-5, atol=1e-5)
    elsewhere = tessera.build(mod, db=db, transfer=False, size_hints={"N": 5})
    elsewhere.run([x])
    assert all("no record of its own, nor of its static kernel at N = 5" in k["schedule"] for k in elsewhere.kernels)
    with pytest.raises(ValueError, match="at least one size"):
        tessera.autotune.tune_sizes(mod, [], db=db)


def test_records_measured_at_a_batch_of_one_reach_the_build_for_every_size(tmp_path, rng):
    """relu(x * y) of (N, 64): at N = 1 the static kernel reads row 0 of both (a dimension of size 1
    broadcasts), where the build for every size reads row i; its static kernel at the size hint
    N = 1 is found all the same, so the records of a session at N = 1 serve it."""
    g = helper.make_graph([helper.make_node("Mul", ["x", "y"], ["p"]), helper.make_node("Relu", ["p"], ["r"])], "g",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 64]) for n in "xy"],
                          [helper.make_tensor_value_info("r", TensorProto.FLOAT, ["N", 64])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "m.onnx"))
    mod = tessera.onnx.load(tmp_path / "m.onnx")
    db = tmp_path / "t.db"
    tessera.autotune.tune_sizes(mod, [{"x": (1, 64), "y": (1, 64)}], db=db, trials=4, progress=False,
                                model_check=False, **FAST)
    lib = tessera.build(mod, db=db, transfer=False)
    x, y = rng.standard_normal((2, 1, 64)).astype("float32")
    np.testing.assert_array_equal(lib.run([x, y])[0], np.maximum(x * y, 0))
    assert lib.symbolic and all(re.search(r"record \d+ at N = 1\)$", k["schedule"]) for k in lib.kernels), labels(lib)
    for n in [3, 0]:
        x, y = rng.standard_normal((2, n, 64)).astype("float32")
        np.testing.assert_array_equal(lib.run([x, y])[0], np.maximum(x * y, 0))


def test_each_form_of_a_convolution_of_symbolic_batch_replays_its_static_kernels_records(tmp_path, rng):
    """A 7x7 convolution of 64 channels (with a residual) over a symbolic batch keeps both forms on
    16-lane vectors (direct below 3 images, Winograd from there): each form's version is the static
    kernel of its sizes, so a session at N = 1 serves the direct one and one at N = 4 the Winograd
    one, and the build matches the static builds bit for bit."""
    if host_cpu.float_lanes() < 16:
        pytest.skip("on vectors of fewer than 16 lanes a 7x7 convolution takes Winograd from one image")
    w, b = rng.standard_normal((64, 64, 3, 3)).astype("float32"), rng.standard_normal(64).astype("float32")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Add", ["c", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64, 7, 7])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "m.onnx"))
    mod = tessera.onnx.load(tmp_path / "m.onnx")
    db = tmp_path / "t.db"
    tessera.autotune.tune_sizes(mod, [{"x": (1, 64, 7, 7)}, {"x": (4, 64, 7, 7)}], db=db, trials=8, progress=False,
                                model_check=False, **FAST)
    lib = tessera.build(mod, db=db, transfer=False)
    for n in [1, 4, 2, 16]:
        x = rng.standard_normal((n, 64, 7, 7)).astype("float32")
        static = tessera.build(tessera.onnx.load(tmp_path / "m.onnx", shapes={"x": x.shape}), db=db, transfer=False)
        np.testing.assert_array_equal(lib.run([x])[0], static.run([x])[0])
    (kernel,) = lib.kernels
    assert re.search(r"record \d+ at N = 1\); where Winograd's form pays: .*record \d+ at N = 4\)$", kernel["schedule"]), \
        kernel["schedule"]


def test_tune_fills_the_database_builds_replay_it_and_a_rerun_resumes(tmp_path, rng):
    mod = mlp(tmp_path / "m.onnx", 9)
    db = tmp_path / "t.db"
    lines = []
    report = tessera.autotune.tune(mod, db=db, trials=14, progress=lines.append, **FAST)
    assert len(report.tasks) == 2 and sum(t["trials"] for t in report.tasks) == 14
    assert lines and "trials" in lines[-1] and "GFLOP/s" in lines[-1] and "est. latency" in lines[-1]
    assert 0 < report.estimated_latency_ms <= report.default_latency_ms
    html = open(report.report_path).read()
    assert report.report_path == str(tmp_path / "t.report.html") and html.count("<svg") >= 3

    # The model check timed each kernel whose best is not its default inside the model, beside
    # that default, and stored both times as in-model records.
    check = report.model_check
    in_model = [r for r in records(db) if r[2] == "in-model"]
    assert len(in_model) == 2 * len(check["kernels"]) and check["default_seconds"] > 0
    assert all(k["default_seconds"] > 0 and k["tuned_seconds"] > 0 for k in check["kernels"])
    assert "model check" in check["text"]

    # One record per trial, and two more per task whose best candidate was timed again beside
    # the default at the end (its default then has two records).
    rows = [r for r in records(db) if r[2] != "in-model"]
    retimed = [w for w in {r[0] for r in rows} if sum(r[0] == w and r[2] == "default" for r in rows) == 2]
    assert len({(r[0], r[1]) for r in rows}) == 14 and len(rows) == 14 + 2 * len(retimed)
    assert sum(r[2] == "default" for r in rows) == 2 + len(retimed)
    assert all((r[3] == "") == (r[4] is not None) for r in rows)

    x = rng.standard_normal((9, 24)).astype("float32")
    tuned = tessera.build(mod, db=db)
    kept = {k["op"]: k["tuned_kept"] for k in check["kernels"]}
    for op, label in labels(tuned).items():
        if op in kept:
            assert label.startswith("tuned (record" if kept[op] else "default (faster in the model"), label
        else:
            assert label.startswith(("tuned (record", "default (measured fastest")), label
    expected = tessera.build(mod, db=False).run([x])[0]
    np.testing.assert_allclose(tuned.run([x])[0], expected, rtol=1e-5, atol=1e-5)

    # Resuming: the stored trials count and no trace is searched twice.
    again = tessera.autotune.tune(mod, db=db, trials=8, progress=False, **FAST)
    assert sum(t["trials"] for t in again.tasks) == 22
    assert len({(r[0], r[1]) for r in records(db)}) == 22
    # Each searched record keeps the sketch and decisions that made it: a later session seeds its
    # search with the best ones as they are, searching nothing to recover them.
    with sqlite3.connect(db) as c:
        searched = c.execute("SELECT sketch, decisions FROM records WHERE kind = 'tuned'").fetchall()
    assert searched and all(sketch and isinstance(json.loads(values), list) for sketch, values in searched)


def test_random_policy_and_bad_options(tmp_path):
    mod = mlp(tmp_path / "m.onnx", 5)
    report = tessera.autotune.tune(mod, db=tmp_path / "r.db", trials=6, policy="random", progress=False, **FAST)
    assert sum(t["trials"] for t in report.tasks) == 6
    assert {r[2] for r in records(tmp_path / "r.db")} <= {"default", "tuned", "in-model"}
    with sqlite3.connect(tmp_path / "r.db") as c:
        assert {p for (p,) in c.execute("SELECT policy FROM records WHERE kind = 'tuned'")} == {"random"}
    with pytest.raises(tessera.Error, match="policy"):
        tessera.autotune.tune(mod, db=tmp_path / "r.db", trials=6, policy="annealing", progress=False, **FAST)
    with pytest.raises(tessera.Error, match="trials"):
        tessera.autotune.tune(mod, db=tmp_path / "r.db", trials=0, progress=False)


def test_an_interrupted_session_keeps_its_batches_and_its_report(tmp_path):
    mod = mlp(tmp_path / "m.onnx", 6)
    db = tmp_path / "i.db"
    calls = []

    def stop_after_three(line):
        calls.append(line)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tessera.autotune.tune(mod, db=db, trials=40, progress=stop_after_three, **FAST)
    # Two defaults and one searched batch of four were committed before the interruption.
    assert len(records(db)) == 6
    assert (tmp_path / "i.report.html").exists()


def test_a_custom_schedule_is_used_unless_a_faster_record_exists(tmp_path, rng):
    def x_input(shape):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
        g = helper.make_graph([helper.make_node("Tanh", ["x"], ["y"])], "g", [x], [y])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "tanh.onnx"))
        return tessera.onnx.load(tmp_path / "tanh.onnx")

    mod = x_input([37, 531])  # a workload no other test has
    (task,) = tessera.autotune.tasks(mod)
    used = []

    def rows_in_parallel(s, out):
        used.append(out.name)
        s[out].parallel(out.op.axis[0])

    tessera.autotune.register_schedule(task["workload"], rows_in_parallel)
    lib = tessera.build(mod, db=False)
    assert labels(lib)["tanh"] == f"custom ({task['workload']})" and used
    x = rng.standard_normal((37, 531)).astype("float32")
    np.testing.assert_allclose(lib.run([x])[0], np.tanh(x), rtol=1e-6, atol=1e-6)

    # Tuning measures the custom schedule first; build() keeps it unless a record beat it.
    db = tmp_path / "c.db"
    tessera.autotune.tune(mod, db=db, trials=10, progress=False, **FAST)
    rows = [r for r in records(db) if r[3] == ""]
    custom = min(r[4] for r in rows if r[2] == "custom")
    others = min(r[4] for r in rows if r[2] != "custom")
    label = labels(tessera.build(mod, db=db))["tanh"]
    # A record that beat it is used, or the default where the model check found that faster in
    # the model than the tuned schedule.
    beaten = ("tuned", "default (measured fastest", "default (faster in the model")
    assert label.startswith("custom" if custom <= others else beaten), label


def test_schedule_transfer_from_another_shape(tmp_path, rng):
    db = tmp_path / "x.db"
    tessera.autotune.tune(mlp(tmp_path / "a.onnx", 16), db=db, trials=12, progress=False, **FAST)
    before = len(records(db))
    other = mlp(tmp_path / "b.onnx", 11)
    lib = tessera.build(other, db=db, transfer=False)
    assert all(label.startswith("default (no record") for label in labels(lib).values())

    lib = tessera.build(other, db=db)
    got = labels(lib)
    assert all(label.startswith(("transferred (record", "default (measured fastest")) for label in got.values()), got
    rows = records(db)
    assert len(rows) > before and {r[2] for r in rows[before:]} <= {"transfer", "default"}
    # The default is timed before and after the candidates (see below) but committed once.
    new_defaults = [r[0] for r in rows[before:] if r[2] == "default"]
    assert new_defaults and len(new_defaults) == len(set(new_defaults))
    x = rng.standard_normal((11, 24)).astype("float32")
    np.testing.assert_allclose(lib.run([x])[0], tessera.build(other, db=False).run([x])[0], rtol=1e-5, atol=1e-5)
    # The transfer was committed: the next build measures nothing and picks the same schedules.
    assert labels(tessera.build(other, db=db)) == got and len(records(db)) == len(rows)


def test_tuning_times_the_default_again_beside_the_best_candidate(tmp_path, monkeypatch):
    """A stretch at half speed while the default is first timed must not hand its place to a
    candidate: the session ends by timing the two again, side by side. A proxy around the worker
    logs the requests and makes each kernel's first timing, the default's, a hundred times slower
    (the check leaves a loaded machine's noise a factor of ten)."""
    log, proxy = tmp_path / "requests.jsonl", tmp_path / "worker.py"
    proxy.write_text(f"""#!/usr/bin/python3
import json, subprocess, sys
worker = subprocess.Popen(["{program('tessera-measure')}"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
seen = set()
for line in sys.stdin:
    with open("{log}", "a") as f:
        f.write(line)
    request = json.loads(line)
    worker.stdin.write(line)
    worker.stdin.flush()
    slowed = request["kernel"] not in seen
    seen.add(request["kernel"])
    ready = worker.stdout.readline()
    print(ready, end="", flush=True)
    for _ in request["candidates"] if json.loads(ready)["ready"] else []:
        answer = json.loads(worker.stdout.readline())
        answer["costs"] = [c * (100 if slowed else 1) for c in answer["costs"]]
        print(json.dumps(answer), flush=True)
""")
    proxy.chmod(0o755)
    monkeypatch.setenv("TESSERA_MEASURE_WORKER", str(proxy))
    db = tmp_path / "x.db"
    tessera.autotune.tune(mlp(tmp_path / "a.onnx", 16), db=db, trials=12, progress=False, **FAST)
    by_kernel = {}
    for line in log.read_text().splitlines():
        request = json.loads(line)
        by_kernel.setdefault(request["kernel"], []).append(request["candidates"])
    searched = [batches for batches in by_kernel.values() if len(batches) > 1]
    assert searched
    for batches in searched:
        default, best = batches[0][0], batches[-1][1]
        assert batches[-1] == [default, best, default, best] and best != default
        assert any(best in b for b in batches[1:-1])
    # The database ranks the default by its second timing, not by its slowed first.
    for workload in {w for w, *_ in records(db)}:
        default_times = [t for w, _, kind, _, t in records(db) if w == workload and kind == "default"]
        if len(default_times) > 1:
            assert min(default_times) < default_times[0] / 10


def test_schedule_transfer_times_the_default_before_and_after_the_candidates(tmp_path, monkeypatch):
    """So that a stretch of seconds at half speed cannot make the default look slower than the
    candidates timed after it. The requests to the worker are logged by a wrapper around it."""
    db = tmp_path / "x.db"
    tessera.autotune.tune(mlp(tmp_path / "a.onnx", 16), db=db, trials=12, progress=False, **FAST)
    # Each workload's best record a candidate, so there is something to borrow: the session's
    # closing re-timing often leaves the default the best, and the order of requests is the point.
    with sqlite3.connect(db) as c:
        c.execute("UPDATE records SET median_seconds = median_seconds / 100 WHERE kind != 'default' AND error = ''")
    log, wrapper = tmp_path / "requests.jsonl", tmp_path / "worker.sh"
    wrapper.write_text(f"#!/bin/sh\ntee -a '{log}' | '{program('tessera-measure')}'\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("TESSERA_MEASURE_WORKER", str(wrapper))
    tessera.build(mlp(tmp_path / "b.onnx", 11), db=db)
    batches = [json.loads(line)["candidates"] for line in log.read_text().splitlines()]
    # A batch of the default alone is a workload whose borrowed traces all replay as its default.
    assert any(len(b) >= 3 for b in batches) and all(b[0] == b[-1] for b in batches), batches


def test_records_of_one_target_never_reach_another(tmp_path, rng):
    """One database tuned for two x86 targets: a build for each replays only the records made for
    it (the layouts differ too: packed for 32-byte registers on AVX2, 16-byte on SSE4.2)."""
    mod = mlp(tmp_path / "m.onnx", 40, inner=32, cols=64)
    db = tmp_path / "t.db"
    avx2, sse = "llvm -mcpu=x86-64-v3", "llvm -mcpu=x86-64-v2"

    def record_ids(target):
        with sqlite3.connect(db) as c:
            return {r[0] for r in c.execute("SELECT id FROM records WHERE target LIKE ?", (f"%{target.split('=')[1]}%",))}

    tessera.autotune.tune(mod, target=avx2, db=db, trials=6, progress=False, model_check=False, **FAST)
    assert record_ids(avx2) and not record_ids(sse)
    sse_lib = tessera.build(mod, target=sse, db=db)
    assert all(k["schedule"].startswith("default (no record") for k in sse_lib.kernels), [k["schedule"] for k in sse_lib.kernels]
    tessera.autotune.tune(mod, target=sse, db=db, trials=6, progress=False, model_check=False, **FAST)
    x = rng.standard_normal((40, 32)).astype("float32")
    want = tessera.build(mod, db=False).run([x])[0]
    for target in (avx2, sse):
        lib = tessera.build(mod, target=target, db=db)
        used = {int(k["schedule"].split("record ")[1].rstrip(")")) for k in lib.kernels if "record " in k["schedule"]}
        assert used and used <= record_ids(target), (target, [k["schedule"] for k in lib.kernels])
        np.testing.assert_allclose(lib.run([x])[0], want, rtol=1e-4, atol=1e-4)


def test_the_report_renders_to_pictures_that_show_the_session(tmp_path):
    """The report's plots as a person sees them: each SVG rendered by librsvg (which refuses
    malformed SVG) to a PNG, kept beside the report for a look. The end-to-end curve (blue) and
    the default latency's dashed line (gray) are drawn; each task shows its candidates (light
    blue) under its best-so-far line, with the machine's peak where known (orange, or a note)."""
    import re
    import shutil
    import subprocess

    from PIL import Image

    assert shutil.which("rsvg-convert"), "rsvg-convert is missing: scripts/setup.sh installs librsvg2-bin"
    mod = mlp(tmp_path / "m.onnx", 64, inner=96, cols=128)
    report = tessera.autotune.tune(mod, db=tmp_path / "t.db", trials=20, progress=False, **FAST)
    assert report.latency_history[0][0] == 0
    estimates = [seconds for _, seconds in report.latency_history]
    assert estimates == sorted(estimates, reverse=True) and estimates[-1] * 1e3 == pytest.approx(
        report.estimated_latency_ms)
    assert all(len(t["measured"]) == t["trials"] for t in report.tasks)

    def colors(png):
        pixels = Image.open(png).convert("RGB").getdata()
        return {"#%02x%02x%02x" % p for p in pixels}

    svgs = re.findall(r"<svg.*?</svg>", open(report.report_path).read(), re.S)
    assert len(svgs) == 1 + len(report.tasks)
    pictures = []
    for i, svg in enumerate(svgs):
        (tmp_path / f"plot{i}.svg").write_text(svg)
        subprocess.run(["rsvg-convert", tmp_path / f"plot{i}.svg", "-o", tmp_path / f"plot{i}.png"], check=True)
        pictures.append(colors(tmp_path / f"plot{i}.png"))
    assert {"#1f77b4", "#777777"} <= pictures[0]
    for task, seen in zip(report.tasks, pictures[1:]):
        assert {"#1f77b4", "#9cc3e4"} <= seen, task["description"]
        peak_drawn = "#ff7f0e" in seen
        assert peak_drawn == (report.peak_gflops is not None and report.peak_gflops <= 3 * max(
            task["flops"] / s / 1e9 for s in task["measured"] if s > 0))
