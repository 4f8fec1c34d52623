// Converters of ONNX Softmax, LogSoftmax and Hardmax (opset < 13: over `axis` and every later
// dimension, the input coerced to 2-D; from 13: along `axis`), NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (log_softmax along the classes, then nll_loss).
#include <limits>

#include "frontend/onnx/ops_nn.h"
#include "runtime/error.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;

namespace {

Converter softmax_like(const std::string& op) {
  return nn::one([op](ConvertContext& c) {
    c.check_attrs({"axis"});
    bool legacy = c.opset() < 13;
    return c.call(op, {c.input(0)},
                  {{"axis", c.attr_int("axis", legacy ? 1 : -1)}, {"trailing", int64_t(legacy ? 1 : 0)}});
  });
}

Attrs loss_attrs(const ConvertContext& c) {
  return {
      {"reduction", c.attr_string("reduction", "mean")},
      {"ignore_index", c.has_attr("ignore_index") ? c.attr_int("ignore_index") : std::numeric_limits<int64_t>::min()}};
}

std::vector<Expr> loss_args(const ConvertContext& c, Expr first) {
  std::vector<Expr> args{std::move(first), c.input(1)};
  if (c.has_input(2)) args.push_back(c.input(2));
  return args;
}

}  // namespace

void register_nn_softmax_converters(ConverterTable& t) {
  t.add("Softmax", softmax_like("softmax"));
  t.add("LogSoftmax", softmax_like("log_softmax"));
  t.add("Hardmax", softmax_like("hardmax"));
  t.add("NegativeLogLikelihoodLoss", nn::one([](ConvertContext& c) {
          c.check_attrs({"ignore_index", "reduction"});
          return c.call("nll_loss", loss_args(c, c.input(0)), loss_attrs(c));
        }));
  t.add("SoftmaxCrossEntropyLoss", [](ConvertContext& c) {
    c.check_attrs({"ignore_index", "reduction"});
    if (c.input_type(0).ndim() < 2)
      c.error("scores must be [N, C, d...], got rank " + std::to_string(c.input_type(0).ndim()));
    Expr log_prob = c.call("log_softmax", {c.input(0)}, {{"axis", int64_t(1)}, {"trailing", int64_t(0)}});
    std::vector<Expr> outs{c.call("nll_loss", loss_args(c, log_prob), loss_attrs(c))};
    if (c.node().output_size() > 1 && !c.node().output(1).empty()) outs.push_back(log_prob);
    return outs;
  });
}

}  // namespace tessera::frontend::onnx
