// Shape and data-movement operators. Index-driven ones (take, gather, scatter) are in
// transform_index.cc, resize and topk in transform_resize.cc.
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/transform_common.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/ops/transform.h"

namespace tessera::relay_ir {

namespace transform {

const TensorTypeNode& arg(const std::vector<Type>& args, size_t i, const char* what) { return as_tensor(args.at(i), what); }

void require_integer(const TensorTypeNode& t, const char* what) {
  if (!t.dtype.is_integer()) fail(what, " must be an integer tensor, got ", t.dtype.str());
}

}  // namespace transform

namespace {

namespace ops = tensor_ir::ops;
using namespace transform;
using Tensors = std::vector<tensor_ir::Tensor>;

// An op whose output has the input's dtype and the shape `shape_fn` computes from the input
// shape and the attributes.
TypeRelation unary_shape(std::function<ops::Shape(const ops::Shape&, const Attrs&)> shape_fn) {
  return [shape_fn](const std::vector<Type>& args, const Attrs& attrs) {
    const auto& x = arg(args, 0, "input");
    return tensor_type(shape_fn(x.shape, attrs), x.dtype);
  };
}

Type concat_rel(const std::vector<Type>& args, const Attrs& attrs) {
  std::vector<ops::Shape> shapes;
  const auto& first = arg(args, 0, "input 0");
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& t = arg(args, i, "concat input");
    if (t.dtype != first.dtype) fail("input ", i, " is ", t.dtype.str(), ", input 0 is ", first.dtype.str());
    shapes.push_back(t.shape);
  }
  return tensor_type(ops::concat_shape(shapes, attrs.get_int("axis")), first.dtype);
}

Type split_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = arg(args, 0, "input");
  std::vector<Type> parts;
  for (const auto& s : ops::split_shapes(x.shape, attrs.get_int("axis"), attrs.get_ints("sizes"))) parts.push_back(tensor_type(s, x.dtype));
  return tuple_type(parts);
}

ops::Shape slice_shape(const ops::Shape& in, const Attrs& a) {
  ops::Shape out;
  for (const auto& d : ops::slice_dims(in, a.get_ints("starts"), a.get_ints("ends"), a.get_ints("axes"), a.get_ints("steps")))
    out.push_back(d.length);
  return out;
}

Type one_hot_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& indices = arg(args, 0, "indices");
  const auto& values = arg(args, 1, "values");
  if (!indices.dtype.is_integer() && !indices.dtype.is_float()) fail("indices must be numeric, got ", indices.dtype.str());
  if (values.shape != ops::Shape{2}) fail("values must be [off_value, on_value] (shape [2]), got shape ", runtime::shape_str(values.shape));
  return tensor_type(ops::one_hot_shape(indices.shape, attrs.get_int("depth"), attrs.get_int("axis")), values.dtype);
}

Type reverse_sequence_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = arg(args, 0, "input");
  const auto& lengths = arg(args, 1, "sequence lengths");
  require_integer(lengths, "sequence lengths");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank < 2) fail("the input must have rank >= 2, got ", runtime::shape_str(x.shape));
  int64_t ba = ops::normalize_axis(attrs.get_int("batch_axis"), rank, "batch_axis");
  int64_t ta = ops::normalize_axis(attrs.get_int("time_axis"), rank, "time_axis");
  if (ba == ta) fail("batch_axis and time_axis are both ", ba);
  if (lengths.shape != ops::Shape{x.shape[ba]})
    fail("sequence lengths must have shape [", x.shape[ba], "], got ", runtime::shape_str(lengths.shape));
  return args[0];
}

bool parse_depth_to_space_mode(const std::string& mode) {
  if (mode == "DCR") return false;
  if (mode == "CRD") return true;
  fail("depth_to_space: mode '", mode, "' is not DCR or CRD");
}

}  // namespace

void register_transform_ops(OpRegistry& r) {
  const auto injective = OpPattern::Injective;
  r.add({"reshape", "the same elements in a new shape (the full static output shape)", 1, 1, {required_ints("shape")},
         unary_shape([](const auto& in, const Attrs& a) { return ops::reshape_shape(in, a.get_ints("shape")); }), injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::reshape(in[0], a.get_ints("shape")); }), /*is_view=*/true});
  r.add({"transpose", "permutes the axes: out.shape[i] = x.shape[perm[i]]; empty perm reverses", 1, 1, {optional_ints("perm")},
         unary_shape([](const auto& in, const Attrs& a) { return ops::transpose_shape(in, a.get_ints("perm")); }), injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::transpose(in[0], a.get_ints("perm")); })});
  r.add({"concat", "joins tensors along an axis", 1, -1, {{"axis", int64_t{0}}}, concat_rel, injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::concat(in, a.get_int("axis")); })});
  r.add({"split", "splits along an axis into parts of the given sizes (a tuple)", 1, 1, {{"axis", int64_t{0}}, required_ints("sizes")},
         split_rel, injective,
         [](const Tensors& in, const Attrs& a, const Type&) { return ops::split(in[0], a.get_int("axis"), a.get_ints("sizes")); }});
  r.add({"squeeze", "removes size-1 axes (all of them when axes is empty)", 1, 1, {optional_ints("axes")},
         unary_shape([](const auto& in, const Attrs& a) { return ops::squeeze_shape(in, a.get_ints("axes")); }), injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::squeeze(in[0], a.get_ints("axes")); }), /*is_view=*/true});
  r.add({"expand_dims", "inserts size-1 axes at the given output positions (ONNX Unsqueeze)", 1, 1, {required_ints("axes")},
         unary_shape([](const auto& in, const Attrs& a) { return ops::expand_dims_shape(in, a.get_ints("axes")); }), injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::expand_dims(in[0], a.get_ints("axes")); }), /*is_view=*/true});
  r.add({"broadcast_to", "numpy broadcasting to a shape", 1, 1, {required_ints("shape")},
         unary_shape([](const auto& in, const Attrs& a) {
           ops::check_broadcast_to(in, a.get_ints("shape"));
           return a.get_ints("shape");
         }),
         OpPattern::Broadcast, single_output([](const Tensors& in, const Attrs& a) { return ops::broadcast_to(in[0], a.get_ints("shape")); })});
  r.add({"tile", "repeats the tensor along every axis", 1, 1, {required_ints("repeats")},
         unary_shape([](const auto& in, const Attrs& a) { return ops::tile_shape(in, a.get_ints("repeats")); }), injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::tile(in[0], a.get_ints("repeats")); })});
  r.add({"slice", "ONNX Slice: starts/ends clamped, negative ones from the end, any nonzero steps", 1, 1,
         {required_ints("starts"), required_ints("ends"), optional_ints("axes"), optional_ints("steps")}, unary_shape(slice_shape), injective,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::slice(in[0], a.get_ints("starts"), a.get_ints("ends"), a.get_ints("axes"), a.get_ints("steps"));
         })});
  r.add({"pad", "pads (begins of every axis, then ends; negative crops) with a constant, the reflection or the edge", 1, 1,
         {required_ints("pads"), {"mode", std::string("constant")}, {"value", 0.0}},
         unary_shape([](const auto& in, const Attrs& a) { return ops::pad_shape(in, a.get_ints("pads"), ops::parse_pad_mode(a.get_str("mode"))); }),
         injective, single_output([](const Tensors& in, const Attrs& a) {
           return ops::pad(in[0], a.get_ints("pads"), ops::parse_pad_mode(a.get_str("mode")), a.get_float("value"));
         })});
  r.add({"depth_to_space", "moves channel blocks into spatial blocks (NCHW; mode DCR or CRD)", 1, 1,
         {{"blocksize", int64_t{0}, true}, {"mode", std::string("DCR")}},
         unary_shape([](const auto& in, const Attrs& a) {
           parse_depth_to_space_mode(a.get_str("mode"));
           return ops::depth_to_space_shape(in, a.get_int("blocksize"));
         }),
         injective, single_output([](const Tensors& in, const Attrs& a) {
           return ops::depth_to_space(in[0], a.get_int("blocksize"), parse_depth_to_space_mode(a.get_str("mode")));
         })});
  r.add({"space_to_depth", "moves spatial blocks into channels (NCHW)", 1, 1, {{"blocksize", int64_t{0}, true}},
         unary_shape([](const auto& in, const Attrs& a) { return ops::space_to_depth_shape(in, a.get_int("blocksize")); }), injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::space_to_depth(in[0], a.get_int("blocksize")); })});
  r.add({"trilu", "keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes", 1, 1,
         {{"upper", int64_t{1}}, {"k", int64_t{0}}},
         unary_shape([](const auto& in, const Attrs&) {
           if (in.size() < 2) fail("the input must have rank >= 2, got ", runtime::shape_str(in));
           return in;
         }),
         injective, single_output([](const Tensors& in, const Attrs& a) { return ops::trilu(in[0], a.get_int("upper") != 0, a.get_int("k")); })});
  r.add({"one_hot", "one_hot(indices, values=[off, on]): a new axis of length depth", 2, 2,
         {{"depth", int64_t{0}, true}, {"axis", int64_t{-1}}}, one_hot_rel, injective,
         single_output([](const Tensors& in, const Attrs& a) { return ops::one_hot(in[0], in[1], a.get_int("depth"), a.get_int("axis")); })});
  r.add({"reverse_sequence", "reverse_sequence(x, lengths): reverses the first lengths[b] steps of each batch entry", 2, 2,
         {{"batch_axis", int64_t{1}}, {"time_axis", int64_t{0}}}, reverse_sequence_rel, injective,
         single_output([](const Tensors& in, const Attrs& a) {
           return ops::reverse_sequence(in[0], in[1], a.get_int("batch_axis"), a.get_int("time_axis"));
         })});
  transform::register_index_ops(r);
  transform::register_resize_ops(r);
}

}  // namespace tessera::relay_ir
