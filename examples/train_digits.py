"""Trains a small CNN on scikit-learn's digits (8x8 images, 10 classes) with forward, backward and
update all compiled by Tessera, and the same model with PyTorch for comparison.

    PYTHONPATH=build/python /usr/bin/python3 examples/train_digits.py [--epochs 15]

Prints loss and accuracy per epoch, the time per epoch of both, and a RESULT line."""
import argparse
import json
import time

import numpy as np
from sklearn.datasets import load_digits

import tessera
from tessera import relay, train

BATCH = 32


def init_params(rng):
    """He-initialized weights, the same for Tessera and PyTorch."""
    def he(*shape):
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype("float32")
    return {"w1": he(16, 1, 3, 3), "b1": np.zeros(16, "float32"),
            "w2": he(32, 16, 3, 3), "b2": np.zeros(32, "float32"),
            "w3": he(10, 128), "b3": np.zeros(10, "float32")}


def logits(x, p, n):
    """conv 3x3 (16) -> relu -> maxpool 2 -> conv 3x3 (32) -> relu -> maxpool 2 -> linear (10), for n images."""
    op = relay.op
    h = op.max_pool(op.relu(op.conv(x, p["w1"], p["b1"], pads=[1, 1, 1, 1])), kernel=[2, 2], strides=[2, 2])
    h = op.max_pool(op.relu(op.conv(h, p["w2"], p["b2"], pads=[1, 1, 1, 1])), kernel=[2, 2], strides=[2, 2])
    h = op.reshape(h, shape=[n, 128])
    return op.gemm(h, p["w3"], p["b3"], trans_b=1)


def graph_params(shapes):
    return {name: relay.var(name, shape) for name, shape in shapes.items()}


def loss_module(shapes):
    x, y = relay.var("x", (BATCH, 1, 8, 8)), relay.var("y", (BATCH,), "int64")
    p = graph_params(shapes)
    loss = relay.op.nll_loss(relay.op.log_softmax(logits(x, p, BATCH), axis=1), y)
    return relay.function([x, y, *p.values()], loss)


def predict_module(shapes, n):
    x = relay.var("x", (n, 1, 8, 8))
    p = graph_params(shapes)
    return relay.function([x, *p.values()], logits(x, p, n))


def torch_epoch_ms(params, x_train, y_train, epochs, lr):
    import torch
    # DLPack, not torch.from_numpy: it works whichever numpy torch was built against.
    from torch.utils.dlpack import from_dlpack
    torch.set_num_threads(tessera.num_threads())
    p = {k: from_dlpack(v.copy()).requires_grad_() for k, v in params.items()}
    opt = torch.optim.Adam(p.values(), lr=lr)

    def forward(x):
        h = torch.nn.functional.max_pool2d(torch.relu(torch.nn.functional.conv2d(x, p["w1"], p["b1"], padding=1)), 2)
        h = torch.nn.functional.max_pool2d(torch.relu(torch.nn.functional.conv2d(h, p["w2"], p["b2"], padding=1)), 2)
        return h.reshape(x.shape[0], 128) @ p["w3"].T + p["b3"]

    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        for i in range(0, len(x_train) - BATCH + 1, BATCH):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(forward(from_dlpack(x_train[i:i + BATCH])), from_dlpack(y_train[i:i + BATCH]))
            loss.backward()
            opt.step()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()

    digits = load_digits()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(digits.images))
    images = (digits.images[order] / 16.0).astype("float32").reshape(-1, 1, 8, 8)
    labels = digits.target[order].astype("int64")
    n_test = 360
    x_test, y_test, x_train, y_train = images[:n_test], labels[:n_test], images[n_test:], labels[n_test:]

    params = init_params(np.random.default_rng(1))
    shapes = {k: v.shape for k, v in params.items()}
    start = time.perf_counter()
    trainer = train.Trainer(loss_module(shapes), params, train.Adam(lr=args.lr))
    predict = tessera.build(predict_module(shapes, n_test))
    print(f"compiled the training step and the predictor in {time.perf_counter() - start:.1f} s")

    epoch_ms = []
    for epoch in range(args.epochs):
        perm = rng.permutation(len(x_train))
        start = time.perf_counter()
        losses = [trainer.step(x=x_train[perm[i:i + BATCH]], y=y_train[perm[i:i + BATCH]])
                  for i in range(0, len(x_train) - BATCH + 1, BATCH)]
        epoch_ms.append((time.perf_counter() - start) * 1e3)
        (scores,) = predict.run({"x": x_test, **trainer.params})
        accuracy = float(np.mean(np.argmax(scores, axis=1) == y_test))
        print(f"epoch {epoch + 1:2d}: loss {np.mean(losses):.4f}, test accuracy {accuracy:.3f}, {epoch_ms[-1]:.0f} ms")

    torch_ms = torch_epoch_ms(init_params(np.random.default_rng(1)), x_train, y_train, 3, args.lr)
    tessera_ms = float(np.median(epoch_ms))
    print(f"time per epoch: Tessera {tessera_ms:.0f} ms, PyTorch {torch_ms:.0f} ms ({tessera.num_threads()} threads)")
    print("RESULT " + json.dumps({"bench": "train_digits", "test_accuracy": round(accuracy, 4), "tessera_epoch_ms": round(tessera_ms, 1),
                                  "torch_epoch_ms": round(torch_ms, 1), "threads": tessera.num_threads()}))
    return 0 if accuracy >= 0.95 else 1


if __name__ == "__main__":
    raise SystemExit(main())
