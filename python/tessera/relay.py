"""The graph IR from Python: build graphs from registered ops, or write them as text.

    x = relay.var("x", (2, 3))
    w = relay.const(np.ones((3, 4), "float32"))
    mod = relay.function([x], relay.op.relu(relay.op.matmul(x, w)))
    print(mod)                                   # the text form; relay.parse reads it back
    lib = tessera.build(mod)"""
import numpy as np

from . import _tessera as _t
from ._tessera import GraphExpr, Module

__all__ = ["parse", "gradient", "var", "const", "call", "tuple_", "function", "apply", "op", "Module", "GraphExpr"]


def var(name, shape, dtype="float32"):
    """A function parameter (a graph input) of a static shape."""
    return _t.graph_var(name, [int(d) for d in shape], dtype)


def const(value, dtype=None):
    """A constant from a numpy array (or anything np.asarray takes)."""
    return _t.graph_const(np.ascontiguousarray(np.asarray(value, dtype=dtype)))


def call(op_name, *args, **attrs):
    """A call of a registered op: call("conv", x, w, b, strides=[2, 2]). Types are checked here."""
    return _t.graph_call(op_name, list(args), attrs)


def tuple_(*elements):
    return _t.graph_tuple(list(elements))


def apply(mod, *args):
    """The output of module `mod`'s main function on `args` (graph values): a model used as a
    piece of a larger graph, e.g. under a loss for training."""
    return _t.graph_apply(mod, list(args))


def function(params, body):
    """A module whose main function takes `params` (vars) and returns `body` (a tuple for several)."""
    if isinstance(body, (list, tuple)):
        body = tuple_(*body)
    return _t.graph_module(list(params), body)


class _Ops:
    """relay.op.<name>(*args, **attrs) calls the registered op <name>."""

    def __getattr__(self, name):
        if name not in _t.op_names():
            raise AttributeError(f"no operator {name!r}")
        return lambda *args, **attrs: call(name, *args, **attrs)

    def __dir__(self):
        return _t.op_names()


op = _Ops()


def parse(text):
    """A module from its text form; errors say line:column and what was expected."""
    return _t.relay_parse(text)


def gradient(mod, wrt, cotangents=False):
    """Reverse-mode autodiff: a module of the same inputs (followed, with `cotangents`, by one
    cotangent per output; otherwise ones) returning the original outputs followed by the gradient
    of each parameter named in `wrt`. It builds and runs like any module."""
    if isinstance(wrt, str):
        wrt = [wrt]
    return _t.relay_gradient(mod, list(wrt), cotangents)
