"""The graph IR from Python: build graphs from registered ops, or write them as text.

    x = relay.var("x", (2, 3))
    w = relay.const(np.ones((3, 4), "float32"))
    mod = relay.function([x], relay.op.relu(relay.op.matmul(x, w)))
    print(mod)                                   # the text form; relay.parse reads it back
    lib = tessera.build(mod)"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _tessera as _t
from ._tessera import GraphExpr, Module

__all__ = ["parse", "gradient", "var", "const", "call", "tuple_", "function", "apply", "op", "Module", "GraphExpr"]


def var(name: str, shape: Sequence[int], dtype: str = "float32") -> GraphExpr:
    """A function parameter (a graph input) of a static shape; dtype as in numpy ("float32",
    "int64", "bool", ...)."""
    return _t.graph_var(name, [int(d) for d in shape], dtype)


def const(value: npt.ArrayLike, dtype: npt.DTypeLike = None) -> GraphExpr:
    """A constant from a numpy array (or anything np.asarray takes), converted to `dtype` when
    given. The value is copied."""
    return _t.graph_const(np.ascontiguousarray(np.asarray(value, dtype=dtype)))


def call(op_name: str, *args: GraphExpr, **attrs: Any) -> GraphExpr:
    """A call of a registered op: call("conv", x, w, b, strides=[2, 2]). Attributes are bools,
    ints, floats, strings or lists of numbers. Types are checked here: tessera.Error names an
    unknown op or attribute and a shape or dtype mismatch."""
    return _t.graph_call(op_name, list(args), attrs)


def tuple_(*elements: GraphExpr) -> GraphExpr:
    """A tuple of graph values (several outputs); t[i] is its i-th element."""
    return _t.graph_tuple(list(elements))


def apply(mod: Module, *args: GraphExpr) -> GraphExpr:
    """The output of module `mod`'s main function on `args` (graph values): a model used as a
    piece of a larger graph, e.g. under a loss for training."""
    return _t.graph_apply(mod, list(args))


def function(params: Sequence[GraphExpr], body: GraphExpr | Sequence[GraphExpr]) -> Module:
    """A module whose main function takes `params` (vars) and returns `body` (a tuple for several)."""
    if isinstance(body, (list, tuple)):
        body = tuple_(*body)
    return _t.graph_module(list(params), body)


class _Ops:
    """relay.op.<name>(*args, **attrs) calls the registered op <name>."""

    def __getattr__(self, name: str) -> Callable[..., GraphExpr]:
        if name not in _t.op_names():
            raise AttributeError(f"no operator {name!r}")

        def op_call(*args: GraphExpr, **attrs: Any) -> GraphExpr:
            return call(name, *args, **attrs)
        op_call.__name__ = op_call.__qualname__ = name
        op_call.__doc__ = f"relay.op.{name}(*args, **attrs): a call of the registered op {name!r} (see relay.call)."
        return op_call

    def __dir__(self) -> list[str]:
        return _t.op_names()


op = _Ops()


def parse(text: str) -> Module:
    """A module from its text form (str(mod) prints it); a syntax or type error raises
    tessera.Error saying line:column and what was expected."""
    return _t.relay_parse(text)


def gradient(mod: Module, wrt: str | Sequence[str], cotangents: bool = False) -> Module:
    """Reverse-mode autodiff: a module of the same inputs (followed, with `cotangents`, by one
    cotangent per output; otherwise ones) returning the original outputs followed by the gradient
    of each parameter named in `wrt`. It builds and runs like any module."""
    if isinstance(wrt, str):
        wrt = [wrt]
    return _t.relay_gradient(mod, list(wrt), cotangents)
