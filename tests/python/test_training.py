"""Training: the compiled training step against PyTorch's optimizers on an MLP, and fine-tuning
the last layer of an imported ONNX model."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera
from tessera import relay, train


def mlp_loss_module(batch, sizes):
    """mean((relu(x @ w1 + b1) @ w2 + b2 - y)^2)"""
    x = relay.var("x", (batch, sizes[0]))
    y = relay.var("y", (batch, sizes[2]))
    w1, b1 = relay.var("w1", (sizes[0], sizes[1])), relay.var("b1", (sizes[1],))
    w2, b2 = relay.var("w2", (sizes[1], sizes[2])), relay.var("b2", (sizes[2],))
    h = relay.op.relu(relay.op.add(relay.op.matmul(x, w1), b1))
    d = relay.op.sub(relay.op.add(relay.op.matmul(h, w2), b2), y)
    loss = relay.op.reduce_mean(relay.op.mul(d, d), axes=[], keepdims=0)
    return relay.function([x, y, w1, b1, w2, b2], loss)


@pytest.mark.parametrize("optimizer", ["sgd", "sgd_momentum", "adam"])
def test_mlp_matches_pytorch(optimizer):
    torch = pytest.importorskip("torch")
    import torch_numpy
    rng = np.random.default_rng(0)
    sizes, batch = (7, 13, 3), 9
    params = {"w1": rng.standard_normal((7, 13)).astype("float32") * 0.3, "b1": np.zeros(13, "float32"),
              "w2": rng.standard_normal((13, 3)).astype("float32") * 0.3, "b2": np.full(3, 0.1, "float32")}
    opt = {"sgd": train.SGD(lr=0.05), "sgd_momentum": train.SGD(lr=0.05, momentum=0.9, weight_decay=1e-3),
           "adam": train.Adam(lr=0.01, weight_decay=1e-4)}[optimizer]
    trainer = train.Trainer(mlp_loss_module(batch, sizes), params, opt)

    tp = {k: torch_numpy.tensor(v, requires_grad=True) for k, v in params.items()}
    if optimizer == "adam":
        topt = torch.optim.Adam(tp.values(), lr=0.01, weight_decay=1e-4)
    else:
        topt = torch.optim.SGD(tp.values(), lr=0.05, momentum=opt.momentum, weight_decay=opt.weight_decay)
    for step in range(6):
        x = rng.standard_normal((batch, 7)).astype("float32")
        y = rng.standard_normal((batch, 3)).astype("float32")
        loss = trainer.step(x=x, y=y)
        topt.zero_grad()
        h = torch.relu(torch_numpy.tensor(x) @ tp["w1"] + tp["b1"])
        tloss = (((h @ tp["w2"] + tp["b2"]) - torch_numpy.tensor(y)) ** 2).mean()
        tloss.backward()
        topt.step()
        assert loss == pytest.approx(float(tloss), rel=1e-5), f"step {step}"
    for k in params:
        np.testing.assert_allclose(trainer.params[k], torch_numpy.array(tp[k]), rtol=1e-4, atol=1e-6)


def test_training_step_is_one_compiled_graph():
    step = tessera._t.training_step(mlp_loss_module(4, (3, 5, 2)), ["w1", "b1", "w2", "b2"], "sgd", 0.1, 0.9, 0.0, 0.9, 0.999, 1e-8)
    assert step.input_names == ["x", "y", "w1", "b1", "w2", "b2", "w1.velocity", "b1.velocity", "w2.velocity", "b2.velocity"]
    lib = tessera.build(step)
    assert len(lib.kernels) < 30  # forward, backward and update, fused


def test_errors():
    with pytest.raises(tessera.Error, match="the loss must be a scalar"):
        x = relay.var("x", (3,))
        train.Trainer(relay.function([x], relay.op.mul(x, x)), {"x": np.ones(3, "float32")}, train.SGD(lr=0.1))
    with pytest.raises(tessera.Error, match="learning rate must be positive"):
        train.Trainer(mlp_loss_module(2, (2, 2, 2)), {"w1": np.ones((2, 2), "float32")}, train.SGD(lr=0))
    trainer = train.Trainer(mlp_loss_module(2, (2, 2, 2)), {"w1": np.ones((2, 2), "float32")}, train.SGD(lr=0.1))
    with pytest.raises(TypeError, match="needs the input"):
        trainer.step(x=np.ones((2, 2), "float32"))


def test_fine_tune_last_layer_of_an_onnx_model(tmp_path):
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((6, 8)).astype("float32")
    w2 = rng.standard_normal((8, 2)).astype("float32") * 0.1
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["out"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 6])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [16, 2])],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    path = os.path.join(str(tmp_path), "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)

    mod = tessera.onnx.load(path, trainable=["w2"])
    assert mod.input_names == ["x", "w2"]
    # A loss on the imported model's output: its graph, then mean squared error to a target.
    x, target, w2_var = relay.var("x", (16, 6)), relay.var("t", (16, 2)), relay.var("w2", (8, 2))
    d = relay.op.sub(relay.apply(mod, x, w2_var), target)
    loss_mod = relay.function([x, target, w2_var], relay.op.reduce_mean(relay.op.mul(d, d), axes=[], keepdims=0))
    (w2_init,) = tessera.onnx.initializer_values(path, ["w2"])
    trainer = train.Trainer(loss_mod, {"w2": w2_init}, train.Adam(lr=0.05))
    xv = rng.standard_normal((16, 6)).astype("float32")
    tv = np.maximum(xv @ w1, 0) @ rng.standard_normal((8, 2)).astype("float32")
    losses = [trainer.step(x=xv, t=tv) for _ in range(150)]
    assert losses[-1] < 0.05 * losses[0]
    # The fine-tuned weights drop into the imported model as its input.
    out = tessera.build(mod).run({"x": xv, "w2": trainer.params["w2"]})[0]
    np.testing.assert_allclose(np.mean((out - tv) ** 2), losses[-1], rtol=0.2)


def test_train_digits_example_reaches_95_percent():
    """examples/train_digits.py, shortened: a CNN trained on scikit-learn's digits."""
    pytest.importorskip("sklearn")
    pytest.importorskip("torch")
    import json
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_digits.py")
    proc = subprocess.run([sys.executable, example, "--epochs", "5"], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1].removeprefix("RESULT "))
    assert result["test_accuracy"] >= 0.95 and result["tessera_epoch_ms"] > 0 and result["torch_epoch_ms"] > 0
