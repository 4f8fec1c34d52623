"""Tuning for a GPU target (PoCL's OpenCL device here; CUDA where scripts/test_gpu.sh runs):
records keyed by the device (an OpenCL device's name, a CUDA device's -arch), builds replaying
them, and a workload's CPU and device records side by side in one database."""
import sqlite3
import subprocess

import numpy as np
import pytest

from package_under_test import program
from test_autotune import FAST, mlp
import tessera

GPUS = [pytest.param(kind, marks=pytest.mark.skipif(not tessera.device(kind).exists, reason=f"no {kind} device"))
        for kind in ("opencl", "cuda")]


def targets_of(db):
    with sqlite3.connect(db) as c:
        return dict(c.execute("SELECT target, COUNT(*) FROM records GROUP BY target").fetchall())


@pytest.mark.parametrize("kind", GPUS)
def test_records_name_the_device_and_builds_for_it_replay_them(kind, tmp_path, rng):
    mod = mlp(tmp_path / "m.onnx", 64, inner=32, cols=64)
    db = tmp_path / "t.db"
    report = tessera.autotune.tune(mod, target=kind, db=db, trials=16, progress=False, **FAST)
    assert sum(t["trials"] for t in report.tasks) == 16
    assert all(t["default_seconds"] > 0 for t in report.tasks)  # timed on the device, by its events
    (key,) = targets_of(db)
    if kind == "opencl":
        assert key.startswith("opencl -device=") and key.endswith(tessera.device("opencl").name.split()[-1].lower())
    else:
        assert key.startswith("cuda -arch=sm_"), key

    x = rng.standard_normal((64, 32)).astype("float32")
    lib = tessera.build(mod, target=kind, db=db)
    assert any(k["schedule"].startswith(("tuned (record", "default (")) for k in lib.kernels)
    assert all("no record" not in k["schedule"] for k in lib.kernels), [k["schedule"] for k in lib.kernels]
    np.testing.assert_allclose(lib.run([x])[0], tessera.build(mod, db=False).run([x])[0], rtol=1e-4, atol=1e-4)
    # Another device's records would not be this one's: a build naming one finds none.
    other = tessera.build(mod, target="opencl -device=another-gpu" if kind == "opencl" else "cuda -arch=sm_50",
                          db=db, jit=False)
    assert all(k["schedule"].startswith("default (no record") for k in other.kernels)

    # The CPU's records of the same workloads join them in the database, each under its target.
    tessera.autotune.tune(mod, target="llvm", db=db, trials=4, progress=False, model_check=False, **FAST)
    assert len(targets_of(db)) == 2
    listed = subprocess.run([program("tessera"), "db", "--db", str(db), "list"], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    by_workload = {}
    for line in listed[1:]:
        by_workload.setdefault(line.split()[0], []).append(line)
    both = [lines for lines in by_workload.values() if len(lines) == 2]
    assert both and any(key in line for line in both[0]) and any("llvm" in line for line in both[0]), listed


@pytest.mark.skipif(not tessera.device("opencl").exists, reason="no OpenCL device")
def test_tuning_refuses_a_device_the_machine_lacks(tmp_path):
    mod = mlp(tmp_path / "m.onnx", 8)
    with pytest.raises(tessera.Error, match="no such opencl device here"):
        tessera.autotune.tune(mod, target="opencl -device=another-gpu", db=tmp_path / "t.db", trials=4, progress=False,
                              **FAST)
