// Converters of ONNX shape and data-movement operators. Values that set shapes (Reshape's
// shape, Slice's starts, axes given as inputs, ...) must be constants (or bound inputs).
#include "frontend/onnx/ops_transform.h"

#include <algorithm>

#include "relay_ir/ops/type_relations.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/op.h"
#include "runtime/error.h"
#include "runtime/view_shapes.h"

namespace tessera::frontend::onnx {

std::vector<int64_t> reshape_target(const ConvertContext& c, const std::vector<int64_t>& in, std::vector<int64_t> shape,
                                    bool allowzero) {
  try {
    return runtime::reshape_target(in, std::move(shape), allowzero, /*check_count=*/false);
  } catch (const Error& e) {
    c.error(e.what());
  }
}

using relay_ir::Attrs;
using relay_ir::Expr;
using Exprs = std::vector<Expr>;

namespace {

// Axes given as an attribute before `opset_as_input`, as input `input` from it on; empty when
// absent.
std::vector<int64_t> axes_of(const ConvertContext& c, int opset_as_input, size_t input) {
  if (c.opset() < opset_as_input) return c.attr_ints("axes", {});
  if (c.has_attr("axes"))
    c.error("axes is an input from opset " + std::to_string(opset_as_input) + " on, not an attribute");
  return c.has_input(input) ? c.constant_ints(input, "axes") : std::vector<int64_t>{};
}

// reshape_target for a symbolic input shape or target (frontend/onnx/dim_values.h): a -1 is the
// element count divided by the other dimensions' product, which must divide it provably (or once
// an input dimension is declared a multiple: tensor_ir/dimension_must_equal.h).
relay_ir::Shape symbolic_reshape_target(const ConvertContext& c, const relay_ir::Shape& in,
                                        std::vector<tensor_ir::Expr> shape, bool allowzero) {
  tensor_ir::Expr known = int64_t{1};
  int64_t infer = -1;
  auto str = [&] { return relay_ir::Shape(shape).str(); };
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t* v = tensor_ir::as_const_int(shape[i]);
    if (v && *v == 0 && !allowzero) {
      if (i >= in.size())
        c.error("shape entry " + std::to_string(i) + " is 0 (copy the input dimension), but the input has rank " +
                std::to_string(in.size()));
      shape[i] = in.dim(i);
    } else if (v && *v == -1) {
      if (infer >= 0) c.error("the shape " + str() + " has more than one -1");
      infer = static_cast<int64_t>(i);
      continue;
    } else if (v && *v < 0) {
      c.error("the shape " + str() + " has the invalid dimension " + std::to_string(*v));
    }
    known = known * shape[i];
  }
  if (infer >= 0) {
    std::optional<tensor_ir::Expr> inferred = tensor_ir::arith::exact_quotient(in.numel(), known);
    if (!inferred) {
      const std::string why = "cannot infer the -1 of shape " + str() + " for an input of shape " + in.str() +
                              ": the other dimensions do not provably divide its element count";
      tensor_ir::require_multiple_for_exact_quotient(in.numel(), known, why);
      c.error(why);
    }
    shape[infer] = *inferred;
  }
  return relay_ir::Shape(shape);
}

Exprs convert_reshape(ConvertContext& c) {
  c.check_attrs({"allowzero"});
  const auto& in = c.input_type(0).shape;
  const bool allowzero = c.attr_int("allowzero", 0) != 0;
  if (in.is_static() && !c.is_dim_input(1)) {
    std::vector<int64_t> shape = reshape_target(c, in, c.constant_ints(1, "the target shape"), allowzero);
    return {c.call("reshape", {c.input(0)}, {{"shape", shape}})};
  }
  relay_ir::Shape shape = symbolic_reshape_target(c, in, c.dim_ints(1, "the target shape"), allowzero);
  return {c.call("reshape", {c.input(0)}, {{"shape", shape}})};
}

Exprs convert_flatten(ConvertContext& c) {
  c.check_attrs({"axis"});
  const auto& in = c.input_type(0).shape;
  int64_t rank = static_cast<int64_t>(in.size()), axis = c.attr_int("axis", 1);
  if (axis < -rank || axis > rank)
    c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  tensor_ir::Expr outer = int64_t{1}, inner = int64_t{1};
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) = (d < axis ? outer : inner) * in.dim(d);
  return {c.call("reshape", {c.input(0)}, {{"shape", relay_ir::Shape({outer, inner})}})};
}

Exprs convert_squeeze(ConvertContext& c) {
  c.check_attrs({"axes"});
  return {c.call("squeeze", {c.input(0)}, {{"axes", axes_of(c, 13, 1)}})};
}

Exprs convert_unsqueeze(ConvertContext& c) {
  c.check_attrs({"axes"});
  std::vector<int64_t> axes = axes_of(c, 13, 1);
  if (axes.empty()) c.error("missing axes");
  return {c.call("expand_dims", {c.input(0)}, {{"axes", axes}})};
}

Exprs convert_transpose(ConvertContext& c) {
  c.check_attrs({"perm"});
  return {c.call("transpose", {c.input(0)}, {{"perm", c.attr_ints("perm", {})}})};
}

// Expand of a symbolic input or to a target computed from symbolic sizes: each dimension of 1
// takes the other side's, and the others must be provably equal (an undecided pair, N against 5,
// is an error, so the model is built per size).
Exprs convert_symbolic_expand(ConvertContext& c) {
  const relay_ir::Shape& in = c.input_type(0).shape;
  const std::vector<tensor_ir::Expr> target = c.dim_ints(1, "the target shape");
  const size_t rank = std::max(in.size(), target.size());
  std::vector<tensor_ir::Expr> out;
  for (size_t d = 0; d < rank; ++d) {
    const tensor_ir::Expr a = d < rank - in.size() ? tensor_ir::Expr(1) : in.dim(d - (rank - in.size()));
    const tensor_ir::Expr b = d < rank - target.size() ? tensor_ir::Expr(1) : target[d - (rank - target.size())];
    if (tensor_ir::is_const_int(a, 1) || relay_ir::dims_equal(a, b)) out.push_back(b);
    else if (tensor_ir::is_const_int(b, 1)) out.push_back(a);
    else
      c.error("dimension " + std::to_string(d) + " of the input " + in.str() + " and of the target shape " +
              relay_ir::Shape(target).str() + " are neither 1 nor provably equal");
  }
  return {c.call("broadcast_to", {c.input(0)}, {{"shape", relay_ir::Shape(out)}})};
}

Exprs convert_expand(ConvertContext& c) {
  c.check_attrs({});
  const auto& in = c.input_type(0).shape;
  if (!in.is_static() || c.is_dim_input(1)) return convert_symbolic_expand(c);
  std::vector<int64_t> shape = c.constant_ints(1, "the target shape");
  std::vector<int64_t> out;
  try {
    out = relay_ir::broadcast_shapes(in.ints(), shape);  // ONNX Expand broadcasts both ways
  } catch (const Error& e) {
    c.error(e.what());
  }
  return {c.call("broadcast_to", {c.input(0)}, {{"shape", out}})};
}

Exprs convert_tile(ConvertContext& c) {
  c.check_attrs({});
  if (c.is_dim_input(1))  // repeat counts computed from the sizes
    return {c.call("tile", {c.input(0)}, {{"repeats", relay_ir::Shape(c.dim_ints(1, "repeats"))}})};
  return {c.call("tile", {c.input(0)}, {{"repeats", c.constant_ints(1, "repeats")}})};
}

Exprs convert_concat(ConvertContext& c) {
  c.check_attrs({"axis"});
  Exprs inputs;
  for (size_t i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.input(i));
  return {c.call("concat", inputs, {{"axis", c.attr_int("axis")}})};
}

Exprs convert_split(ConvertContext& c) {
  c.check_attrs({"axis", "split", "num_outputs"});
  const auto& in = c.input_type(0).shape;
  int64_t axis = c.attr_int("axis", 0), rank = static_cast<int64_t>(in.size());
  if (axis < -rank || axis >= rank)
    c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  int64_t dim = in[axis < 0 ? axis + rank : axis], parts = c.node().output_size();
  std::vector<int64_t> sizes;
  if (c.opset() < 13) {
    sizes = c.attr_ints("split", {});
  } else {
    if (c.has_attr("split")) c.error("split is an input from opset 13 on, not an attribute");
    if (c.has_input(1)) sizes = c.constant_ints(1, "split sizes");
  }
  if (c.has_attr("num_outputs")) {
    if (c.opset() < 18) c.error("num_outputs is an attribute from opset 18 on");
    if (!sizes.empty()) c.error("num_outputs and the split sizes exclude each other");
    if (c.attr_int("num_outputs", 0) != parts)
      c.error("num_outputs " + std::to_string(c.attr_int("num_outputs", 0)) + " but the node has " +
              std::to_string(parts) + " outputs");
  }
  if (sizes.empty()) {
    // Equal parts; when the size does not divide, every part but the last is rounded up.
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    c.error(std::to_string(sizes.size()) + " split sizes for " + std::to_string(parts) + " outputs");
  Expr s = c.call("split", {c.input(0)}, {{"axis", axis}, {"sizes", sizes}});
  Exprs outs;
  for (int64_t i = 0; i < parts; ++i) outs.push_back(relay_ir::tuple_get(s, i));
  return outs;
}

Exprs convert_slice(ConvertContext& c) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    c.check_attrs({"starts", "ends", "axes"});
    if (!c.has_attr("starts") || !c.has_attr("ends")) c.error("missing starts or ends attribute");
    starts = c.attr_ints("starts", {});
    ends = c.attr_ints("ends", {});
    axes = c.attr_ints("axes", {});
  } else {
    c.check_attrs({});
    if (c.has_input(3)) axes = c.constant_ints(3, "axes");
    if (c.has_input(4)) steps = c.constant_ints(4, "steps");
    if (c.is_dim_input(1) || c.is_dim_input(2))  // computed from the sizes: a crop to another's size
      return {c.call("slice", {c.input(0)},
                     {{"starts", relay_ir::Shape(c.dim_ints(1, "starts"))},
                      {"ends", relay_ir::Shape(c.dim_ints(2, "ends"))},
                      {"axes", axes},
                      {"steps", steps}})};
    starts = c.constant_ints(1, "starts");
    ends = c.constant_ints(2, "ends");
  }
  return {c.call("slice", {c.input(0)}, {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}})};
}

// Opset 18's axes input: `pads` holds the begins then the ends of those axes only; the others
// are not padded.
std::vector<int64_t> pads_of_axes(const ConvertContext& c, const std::vector<int64_t>& pads,
                                  const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(c.input_type(0).ndim()), n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * n)
    c.error("pads must hold 2 values per axis of axes (" + std::to_string(2 * n) + "), got " +
            std::to_string(pads.size()));
  std::vector<int64_t> full(2 * rank, 0);
  const std::vector<int64_t> normalized = normalized_axes(c, axes, rank);
  for (int64_t i = 0; i < n; ++i) {
    full[normalized[i]] = pads[i];
    full[normalized[i] + rank] = pads[i + n];
  }
  return full;
}

Exprs convert_pad(ConvertContext& c) {
  std::string mode = c.attr_string("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  Exprs args{c.input(0)};
  if (c.opset() < 11) {
    c.check_attrs({"mode", "pads", "value"});
    if (!c.has_attr("pads")) c.error("missing pads attribute");
    pads = c.attr_ints("pads", {});
    value = c.attr_float("value", 0);
  } else {
    c.check_attrs({"mode"});
    // A value the data gives is read as the kernel runs; in other modes ONNX ignores it.
    const bool value_at_run_time =
        mode == "constant" && c.has_input(2) && !c.is_dim_input(2) && !c.try_constant_input(2);
    if (value_at_run_time) args.push_back(c.input(2));
    else if (c.has_input(2) && mode == "constant") value = constant_scalar(c, 2, "constant_value");
    if (c.is_dim_input(1) && !c.has_input(3))  // pads computed from symbolic sizes
      return {
          c.call("pad", args, {{"pads", relay_ir::Shape(c.dim_ints(1, "pads"))}, {"mode", mode}, {"value", value}})};
    pads = c.constant_ints(1, "pads");
    if (c.has_input(3)) pads = pads_of_axes(c, pads, c.constant_ints(3, "axes"));
  }
  return {c.call("pad", args, {{"pads", pads}, {"mode", mode}, {"value", value}})};
}

// CenterCropPad (18): each of `axes` (all, by default) cropped or zero-padded to its size in the
// shape input, around the center (an odd difference leaves the extra element at the end).
Exprs convert_center_crop_pad(ConvertContext& c) {
  c.check_attrs({"axes"});
  const auto& in = c.input_type(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = normalized_axes(c, c.attr_ints("axes", {}), rank);
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  const std::vector<int64_t> sizes = c.constant_ints(1, "shape");
  if (sizes.size() != axes.size())
    c.error("shape holds " + std::to_string(sizes.size()) + " sizes for " + std::to_string(axes.size()) + " axes");
  std::vector<int64_t> starts, ends, slice_axes, pads(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i];
    const int64_t dim = in[axis], size = sizes[i];
    if (size < 0) c.error("sizes must not be negative, got " + std::to_string(size));
    if (size < dim) {
      slice_axes.push_back(axis);
      starts.push_back((dim - size) / 2);
      ends.push_back((dim - size) / 2 + size);
    } else {
      pads[axis] = (size - dim) / 2;
      pads[axis + rank] = size - dim - (size - dim) / 2;
    }
  }
  Expr x = c.input(0);
  if (!slice_axes.empty())
    x = c.call("slice", {x}, {{"starts", starts}, {"ends", ends}, {"axes", slice_axes}, {"steps", std::vector<int64_t>{}}});
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
    x = c.call("pad", {x}, {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}});
  return {x};
}

Exprs convert_depth_to_space(ConvertContext& c) {
  c.check_attrs({"blocksize", "mode"});
  return {c.call("depth_to_space", {c.input(0)},
                 {{"blocksize", c.attr_int("blocksize")}, {"mode", c.attr_string("mode", "DCR")}})};
}

// Opset 28's mode CRD orders the channels (channel, row, column) instead of DCR's (row, column,
// channel): the same blocks with the channels regrouped.
Exprs convert_space_to_depth(ConvertContext& c) {
  c.check_attrs({"blocksize", "mode"});
  const int64_t b = c.attr_int("blocksize");
  Expr dcr = c.call("space_to_depth", {c.input(0)}, {{"blocksize", b}});
  const std::string mode = c.attr_string("mode", "DCR");
  if (mode == "DCR") return {dcr};
  if (mode != "CRD") c.error("mode must be DCR or CRD, got '" + mode + "'");
  // [N, b * b * C, h, w] regrouped as [N, C * b * b, h, w] (the op checked the sizes).
  const relay_ir::Shape& y = relay_ir::as_tensor(dcr->checked_type, "space_to_depth").shape;
  const tensor_ir::Expr n = y.dim(0), h = y.dim(2), w = y.dim(3), blocks(b * b), channels(y[1] / (b * b));
  Expr split = c.call("reshape", {dcr}, {{"shape", relay_ir::Shape({n, blocks, channels, h, w})}});
  Expr regrouped = c.call("transpose", {split}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}});
  return {c.call("reshape", {regrouped}, {{"shape", y}})};
}

Exprs convert_trilu(ConvertContext& c) {
  c.check_attrs({"upper"});
  relay_ir::AttrValue k = int64_t{0};
  if (c.has_input(1) && !c.is_dim_input(1) && !c.try_constant_input(1))  // computed from the data
    return {c.call("trilu", {c.input(0), c.input(1)}, {{"upper", c.attr_int("upper", 1)}})};
  if (c.has_input(1)) {
    const std::vector<tensor_ir::Expr> ks = c.dim_ints(1, "k");  // symbolic after a cache of past tokens
    if (ks.size() != 1) c.error("k must hold one value, got " + std::to_string(ks.size()));
    const int64_t* constant = tensor_ir::as_const_int(ks[0]);
    k = constant ? relay_ir::AttrValue(*constant) : relay_ir::AttrValue(relay_ir::Shape(ks));
  }
  return {c.call("trilu", {c.input(0)}, {{"upper", c.attr_int("upper", 1)}, {"k", k}})};
}

// A depth the data gives is a size (frontend/onnx/sizes_from_data.h casts a float one to int64 before).
Exprs convert_one_hot(ConvertContext& c) {
  c.check_attrs({"axis"});
  relay_ir::AttrValue depth;
  if (c.is_dim_input(1)) {
    const std::vector<tensor_ir::Expr> d = c.dim_ints(1, "depth");
    if (d.size() != 1) c.error("depth must hold one value, got " + std::to_string(d.size()));
    const int64_t* constant = tensor_ir::as_const_int(d[0]);
    depth = constant ? relay_ir::AttrValue(*constant) : relay_ir::AttrValue(relay_ir::Shape(d));
  } else {
    const double value = constant_scalar(c, 1, "depth");
    if (value < 0 || value != static_cast<double>(static_cast<int64_t>(value)))
      c.error("depth must be a non-negative integer, got " + std::to_string(value));
    depth = static_cast<int64_t>(value);
  }
  return {c.call("one_hot", {c.input(0), c.input(2)}, {{"depth", depth}, {"axis", c.attr_int("axis", -1)}})};
}

Exprs convert_reverse_sequence(ConvertContext& c) {
  c.check_attrs({"batch_axis", "time_axis"});
  return {c.call("reverse_sequence", {c.input(0), c.input(1)},
                 {{"batch_axis", c.attr_int("batch_axis", 1)}, {"time_axis", c.attr_int("time_axis", 0)}})};
}

}  // namespace

void register_transform_converters(ConverterTable& t) {
  t.add("Reshape", convert_reshape, {1});
  t.add("Flatten", convert_flatten);
  t.add("Squeeze", convert_squeeze, {1});
  t.add("Unsqueeze", convert_unsqueeze, {1});
  t.add("Transpose", convert_transpose);
  t.add("Expand", convert_expand, {1});
  t.add("Tile", convert_tile, {1});
  t.add("Concat", convert_concat);
  t.add("Split", convert_split, {1});
  t.add("Slice", convert_slice, {1, 2, 3, 4});
  t.add("Pad", convert_pad, {1, 2, 3}, {2});
  t.add("CenterCropPad", convert_center_crop_pad, {1});
  t.add("DepthToSpace", convert_depth_to_space);
  t.add("SpaceToDepth", convert_space_to_depth);
  t.add("Trilu", convert_trilu, {1}, {1});
  t.add("OneHot", convert_one_hot, {1});
  t.add("ReverseSequence", convert_reverse_sequence);
  register_transform_const_converters(t);
  register_transform_index_converters(t);
  register_transform_resize_converters(t);
}

}  // namespace tessera::frontend::onnx
