// softmax, log_softmax, hardmax (along axis; trailing=1 also over every later dimension, as
// ONNX before opset 13) and nll_loss.
#include <limits>

#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

namespace {

Type softmax_rel(const std::vector<Type>& args, const Attrs& attrs, bool float_only) {
  const auto& x = nn::arg(args, 0, "x");
  if (float_only) nn::require_float(x, "x");
  else if (x.dtype.is_bool()) fail("x must be numeric, got bool");
  ops::normalize_axis(attrs.get_int("axis"), x.ndim(), "axis");
  int64_t t = attrs.get_int("trailing");
  if (t != 0 && t != 1) fail("trailing must be 0 or 1, got ", t);
  return args[0];
}

Type nll_loss_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& in = nn::arg(args, 0, "input");
  const auto& target = nn::arg(args, 1, "target");
  nn::require_float(in, "input");
  nn::require_dtype(target, "target", {"int32", "int64"});
  if (in.ndim() < 2) fail("input must be [N, C, d...], got ", runtime::shape_str(in.shape));
  std::vector<int64_t> want{in.shape[0]};
  want.insert(want.end(), in.shape.begin() + 2, in.shape.end());
  if (target.shape != want)
    fail("target must have shape ", runtime::shape_str(want), " for input ", runtime::shape_str(in.shape), ", got ",
         runtime::shape_str(target.shape));
  if (args.size() > 2) {
    const auto& w = nn::arg(args, 2, "weight");
    if (w.dtype != in.dtype) fail("weight dtype ", w.dtype.str(), " differs from input's ", in.dtype.str());
    if (w.shape != std::vector<int64_t>{in.shape[1]})
      fail("weight must have shape [", in.shape[1], "] (one per class), got ", runtime::shape_str(w.shape));
  }
  const std::string& red = attrs.get_str("reduction");
  if (red == "none") return tensor_type(target.shape, in.dtype);
  if (red != "sum" && red != "mean") fail("reduction must be none, sum or mean, got '", red, "'");
  return tensor_type({}, in.dtype);
}

std::vector<AttrSpec> axis_attrs() { return {{"axis", int64_t(-1)}, {"trailing", int64_t(0)}}; }

}  // namespace

void register_nn_softmax_ops(OpRegistry& r) {
  r.add({"softmax", "exp(x - max) / sum(exp(x - max)) along axis (trailing=1: over axis and every later dimension)", 1, 1,
         axis_attrs(), [](const auto& args, const Attrs& a) { return softmax_rel(args, a, true); }, OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) { return ops::softmax(in[0], a.get_int("axis"), a.get_int("trailing")); })});
  r.add({"log_softmax", "x - max - log(sum(exp(x - max))) along axis (trailing=1: over axis and every later dimension)", 1, 1,
         axis_attrs(), [](const auto& args, const Attrs& a) { return softmax_rel(args, a, true); }, OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) { return ops::log_softmax(in[0], a.get_int("axis"), a.get_int("trailing")); })});
  r.add({"hardmax", "1 at the first maximum along axis (trailing=1: over axis and every later dimension), 0 elsewhere", 1, 1,
         axis_attrs(), [](const auto& args, const Attrs& a) { return softmax_rel(args, a, false); }, OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) { return ops::hardmax(in[0], a.get_int("axis"), a.get_int("trailing")); })});
  r.add({"nll_loss",
         "negative log-likelihood of log-probabilities input [N, C, d...] at integer targets [N, d...], optional class weights [C]; "
         "targets equal to ignore_index (default -2^63: none) count for nothing; reduction none, sum or mean (by the summed weights)",
         2, 3, {{"reduction", std::string("mean")}, {"ignore_index", std::numeric_limits<int64_t>::min()}}, nll_loss_rel,
         OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::nll_loss(in[0], in[1], nn::optional_input(in, 2), a.get_str("reduction"), a.get_int("ignore_index"));
         })});
}

}  // namespace tessera::relay_ir
