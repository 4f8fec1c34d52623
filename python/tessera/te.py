"""The tensor-expression DSL: define what an operator computes, then how its loops run.

    A = te.placeholder((n, k), "float32", name="A")
    k_ = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k_] * B[k_, j], axis=k_), name="C")
    s = te.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], 32)
    f = te.build(s, [A, B, C], target="llvm"); f(a, b, c)
"""
import builtins
import inspect

from . import _tessera as _t
from ._tessera import Expr, IterVar, Tensor, Schedule, Stage, Loop, Trace, Function

__all__ = [
    "placeholder", "compute", "reduce_axis", "sum", "prod", "max", "min", "create_schedule",
    "lower", "build", "const", "var", "cast", "select", "if_then_else", "all", "any",
    "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "pow", "abs", "floor", "ceil",
    "round", "trunc", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
    "acosh", "atanh", "isnan", "isinf", "truncdiv", "truncmod", "Expr", "IterVar", "Tensor",
    "Schedule", "Stage", "Loop", "Trace", "Function",
]


def placeholder(shape, dtype="float32", name="placeholder"):
    """An input tensor of a static shape."""
    return _t.placeholder(_as_tuple(shape), dtype, name)


def compute(shape, fcompute, name="compute", tag=""):
    """A tensor whose element at index (i, j, ...) is fcompute(i, j, ...). The lambda's
    parameter names become the names of the axes (C.op.axis)."""
    shape = _as_tuple(shape)
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    if params and builtins.all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params):
        if len(params) != len(shape):
            raise ValueError(f"compute {name}: the function takes {len(params)} indices, the shape has {len(shape)} dimensions")
        names = [p.name for p in params]
    return _t.compute(shape, fcompute, name, tag, names)


def reduce_axis(dom, name="k"):
    """A reduction loop over [begin, end)."""
    return _t.reduce_axis(tuple(dom), name)


def sum(expr, axis, where=None):
    return _t.sum(expr, axis, where)


def prod(expr, axis, where=None):
    return _t.prod(expr, axis, where)


def max(a, b=None, axis=None, where=None):
    """max(a, b) elementwise, or max(expr, axis=k) as a reduction."""
    if axis is not None or isinstance(b, (IterVar, list, tuple)):
        return _t.max_reduce(a, axis if axis is not None else b, where)
    return _t.max(a, b)


def min(a, b=None, axis=None, where=None):
    """min(a, b) elementwise, or min(expr, axis=k) as a reduction."""
    if axis is not None or isinstance(b, (IterVar, list, tuple)):
        return _t.min_reduce(a, axis if axis is not None else b, where)
    return _t.min(a, b)


def create_schedule(outputs):
    """A schedule with default (naive, row-major, serial) loops for `outputs`."""
    return Schedule(outputs)


def lower(schedule, args, name="main"):
    """The lowered loop nest as text."""
    return _t.lower(schedule, list(args), name)


def build(schedule, args, target="llvm", name="main"):
    """Compiles the schedule into a Function called with numpy arrays in the order of `args`."""
    return _t.build(schedule, list(args), target, name)


const = _t.const
var = _t.var
cast = _t.cast
select = _t.select
if_then_else = _t.select
truncdiv = _t.truncdiv
truncmod = _t.truncmod


def all(*conds):
    result = conds[0]
    for c in conds[1:]:
        result = result & c
    return result


def any(*conds):
    result = conds[0]
    for c in conds[1:]:
        result = result | c
    return result


def _intrinsic(name):
    def f(*args):
        return _t.intrinsic(name, *args)
    f.__name__ = name
    f.__doc__ = f"{name}(x): elementwise intrinsic (float arguments)."
    return f


for _name in ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "pow", "abs", "floor", "ceil",
              "round", "trunc", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
              "acosh", "atanh", "isnan", "isinf"]:
    globals()[_name] = _intrinsic(_name)
del _name


def _as_tuple(shape):
    if isinstance(shape, (list, tuple)):
        return tuple(shape)
    return (shape,)
