// pad (begins of every axis, then ends; negative crops) with a constant, the reflection or the
// edge, and its gradient. Constant padding is undone by the opposite pad (cropping what was
// added, zero-filling what was cropped). Reflect and edge padding read some input elements
// several times, so their cotangents are folded back: axis by axis (padding is separable),
// the padded axis is cut into runs that map onto the input contiguously (forwards, backwards,
// or all onto one edge element), and each run's slice of the cotangent is added at its place.
#include <algorithm>

#include "relay_ir/ops/transform_common.h"
#include "relay_ir/ops/grad_util.h"
#include "runtime/error.h"
#include "tensor_ir/ops/transform.h"
#include "tensor_ir/ops/transform_shape.h"

namespace tessera::relay_ir::transform {

namespace {

namespace ops = tensor_ir::ops;
using E = const Expr&;
using Ints = std::vector<int64_t>;

// The input index each output index of one axis reads (n input elements, b and e padded).
Ints sources(int64_t n, int64_t b, int64_t e, ops::PadMode mode) {
  Ints m;
  for (int64_t o = 0; o < n + b + e; ++o) {
    int64_t p = o - b;
    if (mode == ops::PadMode::Wrap) {  // around what negative pads leave, as the forward op
      const int64_t cropped = std::max<int64_t>(0, -b), kept = n - cropped - std::max<int64_t>(0, -e);
      const int64_t q = o - std::max<int64_t>(b, 0);
      m.push_back(cropped + ((q % kept) + kept) % kept);
    } else if (mode == ops::PadMode::Edge || n == 1) {
      m.push_back(std::clamp<int64_t>(p, 0, n - 1));
    } else {  // reflection repeats with period 2 (n - 1), as the forward op
      int64_t period = 2 * (n - 1), q = ((p % period) + period) % period;
      m.push_back(q < n ? q : period - q);
    }
  }
  return m;
}

// g's cotangent folded along axis d from the padded length to n, given each index's source.
Expr fold_axis(E g, size_t d, int64_t n, const Ints& m) {
  auto rank = tensor_of(g).ndim();
  auto axis = static_cast<int64_t>(d), length = static_cast<int64_t>(m.size());
  Expr total;
  for (int64_t o0 = 0; o0 < length;) {
    int64_t step = o0 + 1 < length ? m[o0 + 1] - m[o0] : 1;
    if (step < -1 || step > 1) step = 1;  // a jump (where wrapping starts over): the element alone
    int64_t o1 = o0 + 1;
    while (o1 < length && m[o1] - m[o1 - 1] == step) ++o1;
    Expr piece;
    int64_t first;  // the input index the piece's first element goes to
    if (step == -1) {
      // Backwards: the slice reversed (an end of -length - 1 reaches index 0).
      Ints end{o0 == 0 ? -length - 1 : o0 - 1};
      piece = call("slice", {g}, {{"starts", Ints{o1 - 1}}, {"ends", end}, {"axes", Ints{axis}}, {"steps", Ints{-1}}});
      first = m[o1 - 1];
    } else {
      piece = call("slice", {g}, {{"starts", Ints{o0}}, {"ends", Ints{o1}}, {"axes", Ints{axis}}});
      if (step == 0) piece = call("reduce_sum", {piece}, {{"axes", Ints{axis}}, {"keepdims", int64_t{1}}});
      first = m[o0];
    }
    int64_t width = step == 0 ? 1 : o1 - o0;
    if (first != 0 || width != n) {
      Ints pads(2 * rank, 0);
      pads[d] = first;
      pads[d + rank] = n - first - width;
      piece = call("pad", {piece}, {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}});
    }
    total = total ? add(total, piece) : piece;
    o0 = o1;
  }
  if (total) return total;
  Ints shape = tensor_of(g).shape;  // the whole axis was cropped away: nothing flows back
  shape[d] = n;
  return zeros_like(tensor_type(shape, tensor_of(g).dtype));
}

std::vector<Expr> pad_gradient(const Expr& c, const Expr& g) {
  const Attrs& a = as_call(c).attrs;
  const auto& x = tensor_of(arg(c, 0));
  Ints pads = a.get_ints("pads");
  ops::PadMode mode = ops::parse_pad_mode(a.get_str("mode"));
  if (mode == ops::PadMode::Constant) {
    for (auto& p : pads) p = -p;
    Expr gx = call("pad", {g}, {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}});
    if (as_call(c).args.size() == 1) return std::vector<Expr>{gx};
    // A value given as a tensor fills what x does not: the rest of g sums into it.
    const Attrs all{{"axes", Ints{}}, {"keepdims", int64_t{0}}};
    Expr rest = sub(call("reduce_sum", {g}, all), call("reduce_sum", {gx}, all));
    return std::vector<Expr>{gx, call("reshape", {rest}, {{"shape", tensor_of(arg(c, 1)).shape.ints()}})};
  }
  size_t rank = x.ndim();
  Expr folded = g;
  for (size_t d = 0; d < rank; ++d)
    if (pads[d] != 0 || pads[d + rank] != 0)
      folded = fold_axis(folded, d, x.shape[d], sources(x.shape[d], pads[d], pads[d + rank], mode));
  return std::vector<Expr>{folded};
}

Type pad_rel(const std::vector<Type>& args, const Attrs& a) {
  const auto& x = tensor_arg(args, 0, "input");
  const ops::PadMode mode = ops::parse_pad_mode(a.get_str("mode"));
  if (args.size() == 2) {
    const auto& value = tensor_arg(args, 1, "value");
    if (mode != ops::PadMode::Constant) fail("a value is given to pad in mode '", a.get_str("mode"), "'");
    if (value.dtype != x.dtype)
      fail("the value must be of the input's type ", x.dtype.str(), ", got ", value.dtype.str());
    if (!value.shape.is_static() || value.numel() != 1)
      fail("the value must be one element, got shape ", value.shape.str());
  }
  return tensor_type(Shape(ops::pad_dims(x.shape.dims(), a.get_shape("pads").dims(), mode)), x.dtype);
}

// Edge, reflect and wrap padding read an element of a dimension of symbolic size where the output
// has any (of what negative pads leave of it, for wrap).
std::vector<OpDef::NonEmptyDim> pad_nonempty(const CallNode& call) {
  const Shape& shape = tensor_of(call.args.at(0)).shape;
  const ops::PadMode mode = ops::parse_pad_mode(call.attrs.get_str("mode"));
  const std::vector<tensor_ir::Expr> pads = call.attrs.get_shape("pads").dims();
  if (mode == ops::PadMode::Constant) return {};
  const tensor_ir::Expr out = Shape(ops::pad_dims(shape.dims(), pads, mode)).numel();
  std::vector<OpDef::NonEmptyDim> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape.is_static(d) && call.attrs.get_shape("pads").is_static()) continue;
    const tensor_ir::Expr& n = shape.dim(d);
    dims.push_back({mode == ops::PadMode::Wrap ? ops::wrapped_length(n, pads[d], pads[d + shape.size()]) : n, out,
                    "pads by reading elements of a dimension that must have one"});
  }
  return dims;
}

}  // namespace

void register_pad_ops(OpRegistry& r) {
  r.add({"pad",
         "pad(x) or pad(x, value): pads (begins of every axis, then ends; negative crops) with a constant (the "
         "attribute, or the one element of the second input), the reflection or the edge",
         1,
         2,
         {required_ints("pads"), {"mode", std::string("constant")}, {"value", 0.0}},
         pad_rel,
         OpPattern::Injective,
         single_output([](const std::vector<tensor_ir::Tensor>& in, const Attrs& a) {
           const ops::PadMode mode = ops::parse_pad_mode(a.get_str("mode"));
           if (in.size() == 2) return ops::pad(in[0], a.get_shape("pads").dims(), mode, in[1]);
           return ops::pad(in[0], a.get_shape("pads").dims(), mode, a.get_float("value"));
         }),
         "transform",
         pad_gradient,
         /*is_view=*/false,
         pad_nonempty});
}

}  // namespace tessera::relay_ir::transform
