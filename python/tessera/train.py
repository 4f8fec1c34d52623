"""Training with compiled graphs: a loss module (its main returns a scalar loss) and the names of
its parameters become one compiled training step — forward, gradient and optimizer update fused
and compiled together by tessera.build.

    loss = relay.function([x, y, w, b], relay.op.nll_loss(...))
    trainer = train.Trainer(loss, params={"w": w0, "b": b0}, optimizer=train.SGD(lr=0.1, momentum=0.9))
    for xb, yb in batches:
        value = trainer.step(x=xb, y=yb)
    trainer.params["w"]            # current values (numpy)
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import _tessera as _t
from . import build
from ._tessera import Module

__all__ = ["SGD", "Adam", "Trainer"]


@dataclass
class SGD:
    """Stochastic gradient descent, as torch.optim.SGD: g += weight_decay * w (L2);
    v = momentum * v + g; w -= lr * v (v = g without momentum)."""
    lr: float = 0.01
    momentum: float = 0.0
    weight_decay: float = 0.0
    kind = "sgd"


@dataclass
class Adam:
    """Adam (Kingma & Ba), as torch.optim.Adam: learning rate `lr`, moment decay rates `beta1`
    and `beta2`, `eps` added to the denominator, L2 `weight_decay` added to the gradient."""
    lr: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0
    kind = "adam"
    momentum = 0.0


class Trainer:
    """Holds the parameters and optimizer state; step() runs one compiled training step.

    `loss_module`'s main returns a scalar loss; `params` maps the names of its parameters to
    initial values (its other inputs are the data, given to step()); `optimizer` is SGD or Adam.
    The step is compiled once, here, with tessera.build(target=target, opt_level=opt_level).
    Attributes: `params` (name -> current value), `state` (the optimizer's buffers, e.g.
    "w.v"), `optimizer`.
    """

    def __init__(self, loss_module: Module, params: Mapping[str, npt.ArrayLike], optimizer: SGD | Adam,
                 opt_level: int = _t.BuildOptions().opt_level, target: str = "llvm") -> None:
        self.params = {k: np.ascontiguousarray(v) for k, v in params.items()}
        self.optimizer = optimizer
        self._wrt = list(self.params)
        step = _t.training_step(loss_module, self._wrt, optimizer.kind, optimizer.lr, optimizer.momentum,
                                optimizer.weight_decay, getattr(optimizer, "beta1", 0.9), getattr(optimizer, "beta2", 0.999),
                                getattr(optimizer, "eps", 1e-8))
        self._lib = build(step, target=target, opt_level=opt_level)
        self._inputs = [n for n in self._lib.input_names if n not in self.params and "." not in n and n != "step"]
        self.state = {}
        for name in self._wrt:
            for s in _t.optimizer_state_names(optimizer.kind, optimizer.momentum):
                self.state[f"{name}.{s}"] = np.zeros_like(self.params[name])
        if optimizer.kind == "adam":
            self.state["step"] = np.zeros((), self.params[self._wrt[0]].dtype)

    def step(self, **inputs: npt.ArrayLike) -> float:
        """One optimizer step on a batch (the loss module's data inputs by name); returns the loss
        before the update. Raises TypeError when a data input is missing."""
        missing = [n for n in self._inputs if n not in inputs]
        if missing:
            raise TypeError(f"step() needs the input(s) {missing}")
        feed = dict(inputs)
        feed.update(self.params)
        feed.update(self.state)
        outputs = self._lib.run(feed)
        loss = outputs[0]
        k = 1
        for name in self._wrt:
            self.params[name] = outputs[k]
            k += 1
        for name in self.state:
            self.state[name] = outputs[k]
            k += 1
        return float(loss)
