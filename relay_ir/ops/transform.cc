// Shape and data-movement operators, each with its gradient (data movement run backwards).
// pad is in transform_pad.cc, the index-driven ones (take, gather, scatter) in
// transform_index.cc, resize and topk in transform_resize.cc, the ops only gradients build in
// transform_grad_ops.cc.
#include <numeric>

#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/transform_common.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/transform.h"
#include "tensor_ir/printer.h"

namespace tessera::relay_ir {

namespace transform {

void require_integer(const TensorTypeNode& t, const char* what) {
  if (!t.dtype.is_integer()) fail(what, " must be an integer tensor, got ", t.dtype.str());
}

namespace {

template <typename F>
auto with_element_type(DataType t, F f) {
  if (t.is_float() && t.bits == 64) return f(double{});
  if (t.is_float() && t.bits == 32) return f(float{});
  if (t.is_int() && t.bits == 64) return f(int64_t{});
  if (t.is_int() && t.bits == 32) return f(int32_t{});
  if (t.is_int() && t.bits == 16) return f(int16_t{});
  if (t.is_int() && t.bits == 8) return f(int8_t{});
  if (t.is_uint() && t.bits == 64) return f(uint64_t{});
  if (t.is_uint() && t.bits == 32) return f(uint32_t{});
  if (t.is_uint() && t.bits == 16) return f(uint16_t{});
  if (t.is_uint() && t.bits == 8) return f(uint8_t{});
  fail("gradient: arrays of ", t.str(), " are not supported here");
}

template <typename V>
Expr constant_of(const std::vector<int64_t>& shape, DataType dtype, const std::vector<V>& values) {
  runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
  if (static_cast<int64_t>(values.size()) != a.numel())
    fail("internal error: ", values.size(), " values for a constant of ", a.shape_str());
  with_element_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < a.numel(); ++i) a.data_as<T>()[i] = static_cast<T>(values[i]);
    return 0;
  });
  return constant(a);
}

}  // namespace

int64_t int_at(const runtime::NDArray& a, int64_t i) {
  return with_element_type(a.dtype(), [&](auto zero) { return static_cast<int64_t>(a.data_as<decltype(zero)>()[i]); });
}

double float_at(const runtime::NDArray& a, int64_t i) {
  return with_element_type(a.dtype(), [&](auto zero) { return static_cast<double>(a.data_as<decltype(zero)>()[i]); });
}

Expr int_constant(const std::vector<int64_t>& shape, DataType dtype, const std::vector<int64_t>& values) {
  return constant_of(shape, dtype, values);
}

Expr float_constant(const std::vector<int64_t>& shape, DataType dtype, const std::vector<double>& values) {
  return constant_of(shape, dtype, values);
}

}  // namespace transform

namespace {

namespace ops = tensor_ir::ops;
using namespace transform;
using Tensors = std::vector<tensor_ir::Tensor>;

// An op whose output has the input's dtype and the shape `dims_fn` computes from the input's
// dimensions (which may be symbolic) and the attributes.
TypeRelation unary_dims(
    std::function<std::vector<tensor_ir::Expr>(const std::vector<tensor_ir::Expr>&, const Attrs&)> dims_fn) {
  return [dims_fn](const std::vector<Type>& args, const Attrs& attrs) {
    const auto& x = tensor_arg(args, 0, "input");
    return tensor_type(Shape(dims_fn(x.shape.dims(), attrs)), x.dtype);
  };
}

// A target with symbolic dimensions must have as many elements as the input, provably.
Type reshape_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "input");
  const Shape target = attrs.get_shape("shape");
  if (x.shape.is_static() && target.is_static()) return tensor_type(ops::reshape_shape(x.shape, target), x.dtype);
  for (size_t d = 0; d < target.size(); ++d)
    if (target.is_static(d) && target[d] < 0)
      fail("reshape: the target shape ", target.str(), " has a negative dimension (give the full shape)");
  if (!dims_equal(x.shape.numel(), target.numel()))
    fail("reshape: cannot reshape ", x.shape.str(), " to ", target.str(), ": their element counts (",
         tensor_ir::to_string(x.shape.numel()), " and ", tensor_ir::to_string(target.numel()),
         ") are not provably equal");
  return tensor_type(target, x.dtype);
}

// numpy broadcasting; with symbolic dimensions each input dimension is 1 or provably the target's.
Type broadcast_to_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "input");
  const Shape target = attrs.get_shape("shape");
  if (x.shape.is_static() && target.is_static()) {
    ops::check_broadcast_to(x.shape, target.ints());
    return tensor_type(target, x.dtype);
  }
  bool ok = x.shape.size() <= target.size();
  const size_t offset = ok ? target.size() - x.shape.size() : 0;
  for (size_t d = 0; ok && d < x.shape.size(); ++d)
    ok = (x.shape.is_static(d) && x.shape[d] == 1) || dims_equal(x.shape.dim(d), target.dim(offset + d));
  if (!ok) fail("broadcast_to: shape ", x.shape.str(), " does not provably broadcast to ", target.str());
  return tensor_type(target, x.dtype);
}

Type arange_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& start = tensor_arg(args, 0, "start");
  const auto& delta = tensor_arg(args, 1, "delta");
  if (!start.shape.empty() || !delta.shape.empty() || start.dtype != delta.dtype)
    fail("arange: start and delta must be scalars of one dtype, got ", start.dtype.str(), start.shape.str(), " and ",
         delta.dtype.str(), delta.shape.str());
  const Shape shape = attrs.get_shape("shape");
  if (shape.size() != 1) fail("arange: the output shape must have one dimension, got ", shape.str());
  return tensor_type(shape, start.dtype);
}

Type shape_values_rel(const std::vector<Type>&, const Attrs& attrs) {
  const Shape dims = attrs.get_shape("dims");
  const bool scalar = attrs.get_int("scalar") != 0;
  if (dims.size() == 0 || (scalar && dims.size() != 1))
    fail("shape_values: ", dims.size(), " values for a ", scalar ? "scalar" : "vector");
  const runtime::DataType dtype = runtime::DataType::parse(attrs.get_str("dtype"));
  if (!dtype.is_int() && !dtype.is_uint()) fail("shape_values: the dtype must be an integer type, got ", dtype.str());
  return tensor_type(scalar ? Shape() : Shape({static_cast<int64_t>(dims.size())}), dtype);
}

Type transpose_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "input");
  std::vector<tensor_ir::Expr> out;
  for (int64_t d : ops::transpose_perm(attrs.get_ints("perm"), static_cast<int64_t>(x.shape.size())))
    out.push_back(x.shape.dim(d));
  return tensor_type(Shape(out), x.dtype);
}

Type concat_rel(const std::vector<Type>& args, const Attrs& attrs) {
  std::vector<std::vector<tensor_ir::Expr>> shapes;
  const auto& first = tensor_arg(args, 0, "input 0");
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& t = tensor_arg(args, i, "concat input");
    if (t.dtype != first.dtype) fail("input ", i, " is ", t.dtype.str(), ", input 0 is ", first.dtype.str());
    shapes.push_back(t.shape.dims());
  }
  return tensor_type(Shape(ops::concat_dims(shapes, attrs.get_int("axis"))), first.dtype);
}

Type split_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "input");
  std::vector<Type> parts;
  for (const auto& s : ops::split_dims(x.shape.dims(), attrs.get_int("axis"), attrs.get_ints("sizes")))
    parts.push_back(tensor_type(Shape(s), x.dtype));
  return tuple_type(parts);
}

Type slice_rel(const std::vector<Type>& args, const Attrs& a) {
  const auto& x = tensor_arg(args, 0, "input");
  std::vector<tensor_ir::Expr> shape;
  for (const ops::SliceAxis& d : ops::slice_axes(x.shape.dims(), a.get_shape("starts").dims(),
                                                 a.get_shape("ends").dims(), a.get_ints("axes"), a.get_ints("steps")))
    shape.push_back(d.length);
  return tensor_type(Shape(shape), x.dtype);
}

Type one_hot_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& indices = tensor_arg(args, 0, "indices");
  const auto& values = tensor_arg(args, 1, "values");
  if (!indices.dtype.is_integer() && !indices.dtype.is_float())
    fail("indices must be numeric, got ", indices.dtype.str());
  if (values.shape != ops::Shape{2})
    fail("values must be [off_value, on_value] (shape [2]), got shape ", runtime::shape_str(values.shape));
  return tensor_type(Shape(ops::one_hot_dims(indices.shape.dims(), attrs.get_dim("depth"), attrs.get_int("axis"))),
                     values.dtype);
}

Type reverse_sequence_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "input");
  const auto& lengths = tensor_arg(args, 1, "sequence lengths");
  require_integer(lengths, "sequence lengths");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank < 2) fail("the input must have rank >= 2, got ", x.shape.str());
  int64_t ba = ops::normalize_axis(attrs.get_int("batch_axis"), rank, "batch_axis");
  int64_t ta = ops::normalize_axis(attrs.get_int("time_axis"), rank, "time_axis");
  if (ba == ta) fail("batch_axis and time_axis are both ", ba);
  if (lengths.shape != Shape(std::vector<tensor_ir::Expr>{x.shape.dim(ba)}))
    fail("sequence lengths must have shape (", x.shape.dim(ba), "), got ", lengths.shape.str());
  return args[0];
}

// A slice's start or end of symbolic value that the sizes do not place within its axis.
std::vector<OpDef::NonEmptyDim> slice_checks(const CallNode& call) {
  const auto& a = call.attrs;
  if (a.get_shape("starts").is_static() && a.get_shape("ends").is_static()) return {};
  std::vector<OpDef::NonEmptyDim> checks;
  const std::vector<ops::SliceAxis> axes =
      ops::slice_axes(tensor_of(call.args.at(0)).shape.dims(), a.get_shape("starts").dims(), a.get_shape("ends").dims(),
                      a.get_ints("axes"), a.get_ints("steps"));
  for (size_t d = 0; d < axes.size(); ++d)
    for (const tensor_ir::Expr& e : axes[d].within)
      checks.push_back({e, tensor_ir::Expr(int64_t{1}),
                        "slices axis " + std::to_string(d) +
                            " at a start or end the sizes give, which must lie within "
                            "it (from 0 to its size; its distance to the nearer end, plus 1, must be positive)"});
  return checks;
}

// space_to_depth's symbolic height and width must divide by the blocksize: 1 - size % blocksize
// must be at least 1.
std::vector<OpDef::NonEmptyDim> space_to_depth_checks(const CallNode& call) {
  const Shape& x = tensor_of(call.args.at(0)).shape;
  const tensor_ir::Expr b(call.attrs.get_int("blocksize")), one(int64_t{1});
  std::vector<OpDef::NonEmptyDim> checks;
  for (size_t d = 2; d < 4 && x.size() == 4; ++d)
    if (!x.is_static(d))
      checks.push_back({one - tensor_ir::floormod(x.dim(d), b), one,
                        std::string("needs the ") + (d == 2 ? "height" : "width") + " a multiple of the blocksize " +
                            std::to_string(call.attrs.get_int("blocksize"))});
  return checks;
}

bool parse_depth_to_space_mode(const std::string& mode) {
  if (mode == "DCR") return false;
  if (mode == "CRD") return true;
  fail("depth_to_space: mode '", mode, "' is not DCR or CRD");
}

}  // namespace

namespace {
using E = const Expr&;

Expr reshape(E x, const std::vector<int64_t>& shape) { return call("reshape", {x}, {{"shape", shape}}); }

int64_t normalized_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

// reshape, squeeze, expand_dims: a reshape of the cotangent back to the input's shape.
std::vector<Expr> reshape_back(E c, E g) { return {reshape(g, tensor_of(arg(c, 0)).shape)}; }

// tile: the input's shape interleaved with the repeats ([r0, n0, r1, n1, ...], axes repeated
// once left out), summed over the repeats.
std::vector<Expr> tile_gradient(E c, E g) {
  const auto& x = tensor_of(arg(c, 0));
  const auto& repeats = as_call(c).attrs.get_ints("repeats");
  std::vector<int64_t> split, summed;
  for (size_t d = 0; d < x.ndim(); ++d) {
    if (repeats[d] != 1) {
      summed.push_back(static_cast<int64_t>(split.size()));
      split.push_back(repeats[d]);
    }
    split.push_back(x.shape[d]);
  }
  if (summed.empty()) return {g};
  Expr sum = call("reduce_sum", {reshape(g, split)}, {{"axes", summed}, {"keepdims", int64_t{0}}});
  return {reshape(sum, x.shape)};
}

// depth_to_space in CRD mode has no inverse op: undo its reshape-transpose-reshape.
Expr crd_depth_to_space_gradient(E g, const std::vector<int64_t>& x_shape, int64_t b) {
  const auto& gs = tensor_of(g).shape;  // [N, C, H b, W b]
  Expr blocks = reshape(g, {gs[0], gs[1], x_shape[2], b, x_shape[3], b});
  return reshape(call("transpose", {blocks}, {{"perm", std::vector<int64_t>{0, 1, 3, 5, 2, 4}}}), x_shape);
}

std::vector<Expr> transpose_gradient(const Expr& c, const Expr& g) {
  std::vector<int64_t> perm = as_call(c).attrs.get_ints("perm");
  size_t n = tensor_of(arg(c, 0)).ndim();
  if (perm.empty()) {
    perm.resize(n);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<int64_t> inverse(n);
  for (size_t i = 0; i < n; ++i) inverse[normalized_axis(perm[i], n)] = static_cast<int64_t>(i);
  return std::vector<Expr>{call("transpose", {g}, {{"perm", inverse}})};
}

std::vector<Expr> broadcast_to_gradient(const Expr& c, const Expr& g) {
  return std::vector<Expr>{collapse_sum_to(g, arg(c, 0)->checked_type)};
}

std::vector<Expr> concat_gradient(const Expr& c, const Expr& g) {
  const auto& args = as_call(c).args;
  if (args.size() == 1) return std::vector<Expr>{g};
  int64_t axis = normalized_axis(as_call(c).attrs.get_int("axis"), tensor_of(g).ndim());
  std::vector<int64_t> sizes;
  for (const auto& a : args) sizes.push_back(tensor_of(a).shape[axis]);
  Expr parts = call("split", {g}, {{"axis", axis}, {"sizes", sizes}});
  std::vector<Expr> grads;
  for (size_t i = 0; i < args.size(); ++i) grads.push_back(tuple_get(parts, static_cast<int64_t>(i)));
  return grads;
}

// The cotangent of a tuple arrives as a Tuple (zeros for the parts nobody used).
std::vector<Expr> split_gradient(const Expr& c, const Expr& g) {
  std::vector<Expr> parts;
  if (const auto* t = g.as<TupleNode>()) parts = t->elements;
  else
    for (size_t i = 0; i < as_call(c).attrs.get_ints("sizes").size(); ++i)
      parts.push_back(tuple_get(g, static_cast<int64_t>(i)));
  return std::vector<Expr>{call("concat", parts, {{"axis", as_call(c).attrs.get_int("axis")}})};
}

std::vector<Expr> slice_gradient(const Expr& c, const Expr& g) {
  Attrs attrs = as_call(c).attrs;
  attrs.set("shape", tensor_of(arg(c, 0)).shape);
  return std::vector<Expr>{call("unslice", {g}, attrs)};
}

// space_to_depth is the inverse of depth_to_space in DCR mode.
std::vector<Expr> depth_to_space_gradient(const Expr& c, const Expr& g) {
  const Attrs& a = as_call(c).attrs;
  int64_t b = a.get_int("blocksize");
  if (a.get_str("mode") == "CRD")
    return std::vector<Expr>{crd_depth_to_space_gradient(g, tensor_of(arg(c, 0)).shape, b)};
  return std::vector<Expr>{call("space_to_depth", {g}, {{"blocksize", b}})};
}

std::vector<Expr> space_to_depth_gradient(const Expr& c, const Expr& g) {
  return std::vector<Expr>{call("depth_to_space", {g},
                                {{"blocksize", as_call(c).attrs.get_int("blocksize")}, {"mode", std::string("DCR")}})};
}

// The same triangle of g; k, given as a tensor, has no cotangent.
std::vector<Expr> trilu_gradient(const Expr& c, const Expr& g) {
  const CallNode& call_node = as_call(c);
  if (call_node.args.size() == 1) return std::vector<Expr>{call("trilu", {g}, call_node.attrs)};
  return std::vector<Expr>{call("trilu", {g, call_node.args[1]}, call_node.attrs), Expr()};
}

// trilu(x) with k an attribute, or trilu(x, k) with k one integer read while the model runs.
Type trilu_rel(const std::vector<Type>& args, const Attrs&) {
  const auto& x = tensor_arg(args, 0, "input");
  if (x.shape.size() < 2) fail("the input must have rank >= 2, got ", x.shape.str());
  if (args.size() == 2) {
    const auto& k = tensor_arg(args, 1, "k");
    require_integer(k, "k");
    if (!k.shape.is_static() || k.numel() != 1) fail("k must hold one value, got shape ", k.shape.str());
  }
  return tensor_type(x.shape, x.dtype);
}

// Reversing the first lengths[b] steps is its own inverse; the lengths have no cotangent.
std::vector<Expr> reverse_sequence_gradient(const Expr& c, const Expr& g) {
  return std::vector<Expr>{call("reverse_sequence", {g, arg(c, 1)}, as_call(c).attrs), Expr()};
}

// one_hot(indices, [off, on]): on's cotangent sums g over the hot positions, off's the rest.
std::vector<Expr> one_hot_gradient(const Expr& c, const Expr& g) {
  const Expr& values = arg(c, 1);
  DataType dt = tensor_of(values).dtype;
  Expr hot = call("one_hot", {arg(c, 0), float_constant({2}, dt, {0.0, 1.0})}, as_call(c).attrs);
  Attrs all{{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t{0}}};
  Expr on = call("reduce_sum", {mul(g, hot)}, all);
  Expr off = sub(call("reduce_sum", {g}, all), on);
  std::vector<int64_t> one{1};
  return std::vector<Expr>{
      Expr(), call("concat", {call("reshape", {off}, {{"shape", one}}), call("reshape", {on}, {{"shape", one}})},
                   {{"axis", int64_t{0}}})};
}

}  // namespace

void register_transform_ops(OpRegistry& r) {
  const auto injective = OpPattern::Injective;
  r.add({"reshape",
         "the same elements in a new shape (the full static output shape)",
         1,
         1,
         {required_ints("shape")},
         reshape_rel,
         injective,
         single_output([](const Tensors& in, const Attrs& a) {
           const Shape target = a.get_shape("shape");
           return target.is_static() ? ops::reshape(in[0], target.ints()) : ops::reshape(in[0], target.dims());
         }),
         "transform",
         reshape_back,
         /*is_view=*/true});
  r.add({"transpose",
         "permutes the axes: out.shape[i] = x.shape[perm[i]]; empty perm reverses",
         1,
         1,
         {optional_ints("perm")},
         transpose_rel,
         injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::transpose(in[0], a.get_ints("perm")); }),
         "transpose",
         transpose_gradient});
  r.add({"concat",
         "joins tensors along an axis",
         1,
         -1,
         {{"axis", int64_t{0}}},
         concat_rel,
         injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::concat(in, a.get_int("axis")); }),
         "transform",
         concat_gradient});
  r.add({"split",
         "splits along an axis into parts of the given sizes (a tuple)",
         1,
         1,
         {{"axis", int64_t{0}}, required_ints("sizes")},
         split_rel,
         injective,
         [](const Tensors& in, const Attrs& a, const Type&) {
           return ops::split(in[0], a.get_int("axis"), a.get_ints("sizes"));
         },
         "transform",
         split_gradient});
  r.add({"squeeze",
         "removes size-1 axes (all of them when axes is empty)",
         1,
         1,
         {optional_ints("axes")},
         [](const std::vector<Type>& args, const Attrs& a) {
           const auto& x = tensor_arg(args, 0, "input");
           return tensor_type(Shape(ops::squeeze_dims(x.shape.dims(), a.get_ints("axes"))), x.dtype);
         },
         injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::squeeze(in[0], a.get_ints("axes")); }),
         "transform",
         reshape_back,
         /*is_view=*/true});
  r.add({"expand_dims",
         "inserts size-1 axes at the given output positions (ONNX Unsqueeze)",
         1,
         1,
         {required_ints("axes")},
         [](const std::vector<Type>& args, const Attrs& a) {
           const auto& x = tensor_arg(args, 0, "input");
           return tensor_type(Shape(ops::expand_dims_dims(x.shape.dims(), a.get_ints("axes"))), x.dtype);
         },
         injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::expand_dims(in[0], a.get_ints("axes")); }),
         "transform",
         reshape_back,
         /*is_view=*/true});
  r.add({"broadcast_to",
         "numpy broadcasting to a shape",
         1,
         1,
         {required_ints("shape")},
         broadcast_to_rel,
         OpPattern::Broadcast,
         single_output([](const Tensors& in, const Attrs& a) {
           const Shape target = a.get_shape("shape");
           return target.is_static() ? ops::broadcast_to(in[0], target.ints())
                                     : ops::broadcast_to(in[0], target.dims());
         }),
         "transform",
         broadcast_to_gradient});
  r.add({"arange",
         "start + i * delta for i below the length, the output shape's one dimension (ONNX Range whose length "
         "depends on symbolic sizes; a static one is a constant)",
         2,
         2,
         {required_ints("shape")},
         arange_rel,
         injective,
         single_output(
             [](const Tensors& in, const Attrs& a) { return ops::arange(in[0], in[1], a.get_shape("shape").dim(0)); }),
         "transform"});
  r.add({"shape_values",
         "the values of dimensions of symbolic size (ONNX Shape of such a tensor, or arithmetic on it) as an integer "
         "tensor, for an operator that computes with them; a static one is a constant",
         0,
         0,
         {required_ints("dims"), {"dtype", std::string("int64")}, {"scalar", int64_t{0}}},
         shape_values_rel,
         injective,
         single_output([](const Tensors&, const Attrs& a) {
           return ops::shape_values(a.get_shape("dims").dims(), runtime::DataType::parse(a.get_str("dtype")),
                                    a.get_int("scalar") != 0);
         }),
         "transform"});
  r.add(
      {"tile",
       "repeats the tensor along every axis",
       1,
       1,
       {required_ints("repeats")},
       [](const std::vector<Type>& args, const Attrs& a) {
         const auto& x = tensor_arg(args, 0, "input");
         return tensor_type(Shape(ops::tile_dims(x.shape.dims(), a.get_shape("repeats").dims())), x.dtype);
       },
       injective,
       single_output([](const Tensors& in, const Attrs& a) { return ops::tile(in[0], a.get_shape("repeats").dims()); }),
       "transform",
       tile_gradient});
  r.add({"slice",
         "ONNX Slice: starts/ends clamped, negative ones from the end, any nonzero steps; starts and ends may be "
         "expressions of the sizes, of a sign the sizes tell, with positive steps",
         1,
         1,
         {required_ints("starts"), required_ints("ends"), optional_ints("axes"), optional_ints("steps")},
         slice_rel,
         injective,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::slice(in[0], a.get_shape("starts").dims(), a.get_shape("ends").dims(), a.get_ints("axes"),
                             a.get_ints("steps"));
         }),
         "transform",
         slice_gradient,
         /*is_view=*/false,
         slice_checks});
  r.add({"depth_to_space",
         "moves channel blocks into spatial blocks (NCHW; mode DCR or CRD)",
         1,
         1,
         {{"blocksize", int64_t{0}, true}, {"mode", std::string("DCR")}},
         unary_dims([](const auto& in, const Attrs& a) {
           parse_depth_to_space_mode(a.get_str("mode"));
           return ops::depth_to_space_shape(in, a.get_int("blocksize"));
         }),
         injective,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::depth_to_space(in[0], a.get_int("blocksize"), parse_depth_to_space_mode(a.get_str("mode")));
         }),
         "transform",
         depth_to_space_gradient});
  r.add(
      {"space_to_depth",
       "moves spatial blocks into channels (NCHW)",
       1,
       1,
       {{"blocksize", int64_t{0}, true}},
       unary_dims([](const auto& in, const Attrs& a) { return ops::space_to_depth_shape(in, a.get_int("blocksize")); }),
       injective,
       single_output(
           [](const Tensors& in, const Attrs& a) { return ops::space_to_depth(in[0], a.get_int("blocksize")); }),
       "transform",
       space_to_depth_gradient,
       /*is_view=*/false,
       space_to_depth_checks});
  r.add({"trilu",
         "trilu(x) or trilu(x, k): keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two "
         "axes; k the attribute, or the one value of the second input",
         1,
         2,
         {{"upper", int64_t{1}}, {"k", int64_t{0}}},
         trilu_rel,
         injective,
         single_output([](const Tensors& in, const Attrs& a) {
           const bool upper = a.get_int("upper") != 0;
           return in.size() == 2 ? ops::trilu(in[0], upper, in[1]) : ops::trilu(in[0], upper, a.get_dim("k"));
         }),
         "transform",
         trilu_gradient});
  r.add({"one_hot",
         "one_hot(indices, values=[off, on]): a new axis of length depth",
         2,
         2,
         {{"depth", int64_t{0}, true}, {"axis", int64_t{-1}}},
         one_hot_rel,
         injective,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::one_hot(in[0], in[1], a.get_dim("depth"), a.get_int("axis"));
         }),
         "transform",
         one_hot_gradient});
  r.add({"reverse_sequence",
         "reverse_sequence(x, lengths): reverses the first lengths[b] steps of each batch entry",
         2,
         2,
         {{"batch_axis", int64_t{1}}, {"time_axis", int64_t{0}}},
         reverse_sequence_rel,
         injective,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::reverse_sequence(in[0], in[1], a.get_int("batch_axis"), a.get_int("time_axis"));
         }),
         "transform",
         reverse_sequence_gradient});
  transform::register_pad_ops(r);
  transform::register_index_ops(r);
  transform::register_resize_ops(r);
  transform::register_grad_ops(r);
}

}  // namespace tessera::relay_ir
