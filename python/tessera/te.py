"""The tensor-expression DSL: define what an operator computes, then how its loops run.

    A = te.placeholder((n, k), "float32", name="A")
    k_ = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k_] * B[k_, j], axis=k_), name="C")
    s = te.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], 32)
    f = te.build(s, [A, B, C], target="llvm"); f(a, b, c)

Data types are strings: "float16", "float32", "float64", "int8" ... "int64", "uint8" ... "uint64",
"bool", and the narrow storage types "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
"float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "int4", "uint4", "int2", "uint2" (computed
in float32, int8 or uint8; their numpy arrays are ml_dtypes arrays). Where an expression is expected, Python numbers are accepted and take the type of the
other operand.
"""
from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Sequence

from . import _tessera as _t
from ._tessera import Expr, IterVar, Tensor, Schedule, Stage, Loop, Trace, Function, DeviceFunction

# What the DSL takes where it expects an expression (an axis reads as its loop variable).
ExprLike = Expr | IterVar | int | float | bool
# A shape: one dimension or a sequence of them (constants, or expressions of te.var()).
ShapeLike = int | Expr | Sequence[int | Expr]
Axes = IterVar | Sequence[IterVar]

__all__ = [
    "placeholder", "compute", "reduce_axis", "sum", "prod", "max", "min", "create_schedule",
    "lower", "build", "thread_axis", "ThreadAxis", "const", "var", "cast", "select", "if_then_else", "all", "any", "likely",
    "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "pow", "abs", "floor", "ceil",
    "round", "trunc", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
    "acosh", "atanh", "isnan", "isinf", "truncdiv", "truncmod", "Expr", "IterVar", "Tensor",
    "Schedule", "Stage", "Loop", "Trace", "Function", "DeviceFunction",
]


def placeholder(shape: ShapeLike, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of `shape` and `dtype`, named `name` in lowered code and traces."""
    return _t.placeholder(_as_tuple(shape), dtype, name)


def compute(shape: ShapeLike, fcompute: Callable[..., ExprLike], name: str = "compute", tag: str = "") -> Tensor:
    """A tensor whose element at index (i, j, ...) is fcompute(i, j, ...).

    fcompute takes one index expression per dimension and returns an expression (reductions
    such as te.sum included). Its parameter names become the names of the axes (C.op.axis);
    with *args they are i, j, k, l (i0, i1, ... beyond four). `tag` labels the operation
    (C.op.tag) for schedules. Raises ValueError when fcompute takes a different number of
    indices than `shape` has dimensions.
    """
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


def reduce_axis(dom: tuple[ExprLike, ExprLike] | Sequence[ExprLike], name: str = "k") -> IterVar:
    """A reduction loop over [begin, end) given as `dom` = (begin, end), for te.sum & co."""
    return _t.reduce_axis(tuple(dom), name)


def sum(expr: ExprLike, axis: Axes, where: ExprLike | None = None) -> Expr:
    """The sum of `expr` over the reduction axes `axis` (te.reduce_axis), counting only the
    iterations where the boolean expression `where` holds (all of them when None)."""
    return _t.sum(expr, axis, where)


def prod(expr: ExprLike, axis: Axes, where: ExprLike | None = None) -> Expr:
    """The product of `expr` over the reduction axes `axis`, where `where` holds (see sum)."""
    return _t.prod(expr, axis, where)


def max(a: ExprLike, b: ExprLike | Axes | None = None, axis: Axes | None = None, where: ExprLike | None = None) -> Expr:
    """max(a, b) elementwise, or max(expr, axis=k) (also max(expr, k)) as a reduction over
    the reduction axes `axis`, where `where` holds (see sum)."""
    if axis is not None or isinstance(b, (IterVar, list, tuple)):
        return _t.max_reduce(a, axis if axis is not None else b, where)
    return _t.max(a, b)


def min(a: ExprLike, b: ExprLike | Axes | None = None, axis: Axes | None = None, where: ExprLike | None = None) -> Expr:
    """min(a, b) elementwise, or min(expr, axis=k) (also min(expr, k)) as a reduction over
    the reduction axes `axis`, where `where` holds (see sum)."""
    if axis is not None or isinstance(b, (IterVar, list, tuple)):
        return _t.min_reduce(a, axis if axis is not None else b, where)
    return _t.min(a, b)


def create_schedule(outputs: Tensor | Sequence[Tensor]) -> Schedule:
    """A schedule for `outputs` (a tensor or a list) and every tensor they read, with default
    (naive, row-major, serial) loops; s[T] is the Stage of tensor T."""
    return Schedule(outputs)


class ThreadAxis:
    """A thread axis of a device launch (te.thread_axis), for Stage.bind: `tag` is one of
    blockIdx.x/y/z, threadIdx.x/y/z and vthread."""

    def __init__(self, tag: str, name: str | None = None) -> None:
        if tag not in _t.thread_axis_tags():
            raise ValueError(f"thread_axis: unknown tag {tag!r} (expected one of {', '.join(_t.thread_axis_tags())})")
        self.tag = tag
        self.name = name or tag

    def __repr__(self) -> str:
        return f"ThreadAxis({self.tag!r})" if self.name == self.tag else f"ThreadAxis({self.tag!r}, name={self.name!r})"


def thread_axis(tag: str, name: str | None = None) -> ThreadAxis:
    """The thread axis `tag` to bind loops to, as TVM's: bx = te.thread_axis("blockIdx.x");
    s[C].bind(xo, bx). Tags: blockIdx.x/y/z and threadIdx.x/y/z (a block of the launch grid, a
    thread of a block) and vthread (a virtual thread: its loop is unrolled in one thread). `name`
    only labels the axis (TVM's vthread axes are told apart by it)."""
    return ThreadAxis(tag, name)


def lower(schedule: Schedule, args: Sequence[Tensor], name: str = "main", for_device: bool | None = None,
          target: str | None = None) -> str:
    """The lowered loop nest, as text, of a function `name` whose buffers are `args` in order
    (the inputs and outputs it is called with). `for_device`: lower for a GPU (thread-bound loops
    become launch_thread statements, buffers live in their scopes, no CPU vectorization); None
    lowers for a device exactly when a loop is bound to blockIdx or threadIdx. `target` (a target
    string) lowers as te.build does for it: for cuda, reductions across threads shuffle within
    warps. Raises tessera.Error for an invalid schedule."""
    if for_device is None:
        for_device = builtins.any(l.thread_tag.startswith(("blockIdx", "threadIdx"))
                                  for st in schedule.stages for l in st.leaf_loops)
    return _t.lower(schedule, list(args), name, for_device, target or "")


def build(schedule: Schedule, args: Sequence[Tensor], target: str = "llvm", name: str = "main") -> Function | DeviceFunction:
    """Compiles the schedule into a Function called with arrays (numpy, tessera.nd, or any with
    __dlpack__ such as PyTorch tensors) in the order of `args`.

    `target` is a target string: "llvm" (this CPU), "llvm -mcpu=NAME -mattr=+FEATURE,...";
    the Function runs in this process, so it must describe this machine. "c" prints C99 and
    compiles it with the system's C compiler (get_source("c")). "opencl" and "cuda -arch=sm_XX"
    return a DeviceFunction whose kernels run on the device: it takes tessera.nd arrays on the
    device, or numpy arrays, copied there and back (get_source() is the OpenCL C or CUDA C;
    "ptx" and "ptxas" for CUDA). Calls write the outputs into the arrays given for them. Raises
    tessera.Error for an invalid schedule or target, naming the kernel and loop the device
    verifier refuses.
    """
    return _t.build(schedule, list(args), target, name)


const = _t.const
var = _t.var
cast = _t.cast
select = _t.select
if_then_else = _t.select
truncdiv = _t.truncdiv
truncmod = _t.truncmod


def all(*conds: ExprLike) -> Expr:
    """The logical and of one or more boolean expressions (Python's `and` cannot be used)."""
    result = conds[0]
    for c in conds[1:]:
        result = result & c
    return result


def any(*conds: ExprLike) -> Expr:
    """The logical or of one or more boolean expressions (Python's `or` cannot be used)."""
    result = conds[0]
    for c in conds[1:]:
        result = result | c
    return result


def likely(cond: ExprLike) -> Expr:
    """`cond`, marked as holding almost everywhere: lowering splits the loops it depends on into a
    main part where it holds, with the check dropped (so the loop can vectorize), and a tail that
    keeps it, as tvm.tir.likely does. For guards that fail only at the edges, such as a tile running
    past the end of a symbolic size: te.select(te.likely(i < n), A[i], 0.0)."""
    return _t.intrinsic("likely", cond)


def _intrinsic(name: str) -> Callable[..., Expr]:
    def f(*args: ExprLike) -> Expr:
        return _t.intrinsic(name, *args)
    f.__name__ = f.__qualname__ = name
    if name == "pow":
        f.__doc__ = "pow(x, y): x to the power y, elementwise (float arguments)."
    elif name in ("isnan", "isinf"):
        f.__doc__ = f"{name}(x): whether x is {name[2:]}, elementwise (a bool expression; float argument)."
    else:
        f.__doc__ = f"{name}(x): the elementwise intrinsic {name} (float argument)."
    return f


for _name in ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "pow", "abs", "floor", "ceil",
              "round", "trunc", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
              "acosh", "atanh", "isnan", "isinf"]:
    globals()[_name] = _intrinsic(_name)
del _name


def _as_tuple(shape: ShapeLike) -> tuple:
    if isinstance(shape, (list, tuple)):
        return tuple(shape)
    return (shape,)
