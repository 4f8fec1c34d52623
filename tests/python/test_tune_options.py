"""Tuning and build options as Python classes (tessera.autotune.TuneOptions, tessera.BuildOptions):
keyword arguments with the C++ defaults, one validation shared with `tessera tune`, and the same
tuning summary from the command line and from Python."""
import inspect
import re
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from package_under_test import program
import tessera
from tessera.autotune import TuneOptions

TUNE_FIELDS = ["target", "db", "trials", "batch", "policy", "early_stopping", "timeout", "opt_level", "seed", "repeat",
               "flush_cache", "fresh_inputs", "model_check", "report"]


def fields(options, names):
    return {name: getattr(options, name) for name in names}


def test_tune_options_have_the_tuners_defaults():
    o = TuneOptions()
    assert fields(o, TUNE_FIELDS) == dict(target="llvm", db="", trials=1000, batch=16, policy="evolutionary",
                                          early_stopping=0, timeout=None, opt_level=tessera.BuildOptions().opt_level,
                                          seed=0, repeat=5, flush_cache=False, fresh_inputs=True, model_check=True,
                                          report="")
    # tune() and tasks() take their defaults from the same place.
    defaults = {p.name: p.default for p in inspect.signature(tessera.autotune.tune).parameters.values()}
    for name in TUNE_FIELDS:
        if name in defaults and name != "db":  # db: None there, the default database
            assert defaults[name] == getattr(o, name), name
    assert inspect.signature(tessera.autotune.tasks).parameters["opt_level"].default == o.opt_level


def test_build_options_have_the_drivers_defaults():
    b = tessera.BuildOptions()
    assert (b.opt_level, b.db, b.jit, b.transfer) == (3, "", True, True)
    defaults = {p.name: p.default for p in inspect.signature(tessera.build).parameters.values()}
    assert (defaults["opt_level"], defaults["jit"], defaults["transfer"]) == (b.opt_level, b.jit, b.transfer)


def test_options_take_keywords_only_and_repr_rebuilds_them():
    o = TuneOptions(trials=12, policy="random", timeout=2.5, seed=7, model_check=False, db="x.db")
    assert (o.trials, o.policy, o.timeout, o.seed, o.model_check, o.db, o.batch) == (12, "random", 2.5, 7, False, "x.db", 16)
    again = eval(repr(o), {"TuneOptions": TuneOptions})
    assert fields(again, TUNE_FIELDS) == fields(o, TUNE_FIELDS)
    assert repr(o).startswith("TuneOptions(target='llvm', db='x.db', trials=12, batch=16, policy='random'")
    o.trials = 3
    assert o.trials == 3
    b = tessera.BuildOptions(opt_level=1, jit=False, size_hints={"N": 4})
    assert repr(b) == "BuildOptions(opt_level=1, db='', jit=False, transfer=True, size_hints={'N': 4})"
    assert eval(repr(b), {"BuildOptions": tessera.BuildOptions}).size_hints == {"N": 4}
    with pytest.raises(TypeError):
        TuneOptions(12)
    with pytest.raises(TypeError):
        TuneOptions(trails=12)


# Each invalid option and the words naming it in the error, the same from Python and the CLI.
INVALID = [
    (dict(trials=0), ["--trials", "0"], "trials must be at least 1 (got 0)"),
    (dict(trials=-3), ["--trials=-3"], "trials must be at least 1 (got -3)"),
    (dict(batch=0), ["--batch", "0"], "batch must be at least 1 (got 0)"),
    (dict(policy="annealing"), ["--policy", "annealing"], "policy 'annealing' is unknown"),
    (dict(early_stopping=-1), ["--early-stopping=-1"], "early_stopping (--early-stopping) must be 0 (never) or more"),
    (dict(timeout=0), ["--timeout", "0"], "timeout must be more than 0 seconds (got 0)"),
    (dict(timeout=-1.5), ["--timeout=-1.5"], "timeout must be more than 0 seconds (got -1.5)"),
    (dict(repeat=0), ["--repeat", "0"], "repeat must be at least 1 (got 0)"),
    (dict(target="tpu"), ["-t", "tpu"], "target: target 'tpu': unknown kind 'tpu'"),
]


@pytest.mark.parametrize("kwargs,_,message", INVALID)
def test_an_invalid_option_is_named(kwargs, _, message):
    with pytest.raises(tessera.Error) as e:
        TuneOptions(**kwargs)
    assert message in str(e.value)
    with pytest.raises(tessera.Error, match=re.escape(message)):
        tessera.autotune.tune(None, progress=False, **kwargs)  # refused before the module is looked at


def test_python_refuses_an_opt_level_or_seed_out_of_range():
    with pytest.raises(tessera.Error, match=re.escape("opt_level (-O) must be 0, 1, 2 or 3 (got 4)")):
        TuneOptions(opt_level=4)
    with pytest.raises(tessera.Error, match="seed must be 0 or more"):
        TuneOptions(seed=-1)


def test_build_refuses_an_invalid_opt_level(tmp_path):
    with pytest.raises(tessera.Error, match=re.escape("opt_level (-O) must be 0, 1, 2 or 3 (got 5)")):
        tessera.BuildOptions(opt_level=5)
    mod = tessera.onnx.load(matmul_model(tmp_path))
    with pytest.raises(tessera.Error, match=re.escape("opt_level (-O) must be 0, 1, 2 or 3 (got -1)")):
        tessera.build(mod, db=False, opt_level=-1)


def matmul_model(tmp_path):
    w = helper.make_tensor("w", TensorProto.FLOAT, [48, 40], list(np.linspace(-1, 1, 48 * 40)))
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 48])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 40])], [w])
    path = tmp_path / "mm.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def tessera_cli(*args):
    return subprocess.run([program("tessera"), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_the_cli_refuses_the_same_options_with_the_same_words(tmp_path):
    model = matmul_model(tmp_path)
    for kwargs, flags, message in INVALID:
        proc = tessera_cli("tune", model, "--db", tmp_path / "never.db", *flags)
        assert proc.returncode != 0 and message in proc.stderr, (flags, proc.stderr)
        with pytest.raises(tessera.Error) as e:
            TuneOptions(**kwargs)
        assert str(e.value) in proc.stderr
    assert not (tmp_path / "never.db").exists()


def masked(text, *folders):
    """`text` with the folders named DIR and every measured number as #: what must agree."""
    for folder in folders:
        text = text.replace(str(folder), "DIR")
    text = re.sub(r"\d+\.\d+|after \d+ s|\d+s\]", "#", text)
    return [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]


def test_the_cli_and_python_print_the_same_summary(tmp_path):
    """One small session each (one kernel, three trials, no model check), each in its own
    database: the same table, trials and lines, measured times aside."""
    model = matmul_model(tmp_path)
    (tmp_path / "cli").mkdir()
    (tmp_path / "py").mkdir()
    settings = ["--trials", 3, "--batch", 2, "--repeat", 1, "--seed", 1, "--no-model-check"]
    proc = tessera_cli("tune", model, "--db", tmp_path / "cli" / "t.db", *settings)
    assert proc.returncode == 0, proc.stderr
    lines = []
    report = tessera.autotune.tune(tessera.onnx.load(model), db=tmp_path / "py" / "t.db", trials=3, batch=2, repeat=1, seed=1,
                                   model_check=False, progress=lines.append)
    assert report.summary == report.summary.rstrip("\n") + "\n" and "model check" not in report.summary
    assert masked(proc.stdout, tmp_path / "cli") == masked(report.summary, tmp_path / "py")
    assert [t["trials"] for t in report.tasks] == [3]
    # Off a terminal the CLI writes the opening line, then each batch's progress line as Python gets it.
    opening, *progress = proc.stderr.splitlines()
    assert opening.startswith("tuning 1 tasks of ") and ", 3 trials, database " in opening
    assert masked("\n".join(progress)) == masked("\n".join(lines)) and len(lines) == 2
    assert report.options.trials == 3 and report.options.db == str(tmp_path / "py" / "t.db")
