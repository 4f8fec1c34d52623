#include "driver/conv_width_versions.h"

#include <algorithm>

#include "driver/kernel_versions.h"
#include "tensor_ir/bind_sizes.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/size_hint.h"
#include "tensor_ir/substitute.h"

namespace tessera::driver {

using namespace tensor_ir;

namespace {

// Widths a dimension variable is tried at (a stride-2 network's last stage is 32 times narrower).
constexpr int64_t kMostHint = 1 << 14;

}  // namespace

BlockedConvWidth blocked_conv_width(const std::vector<Tensor>& outputs) {
  const std::vector<Tensor> order = topological_order(outputs);
  Tensor product, epilogue;
  for (const Tensor& t : order) {
    const auto* c = t.as<ComputeOp>();
    if (c && c->tag == "conv" && !c->reduce_axis().empty()) product = t;
    if (c && c->tag == "conv_epilogue") epilogue = t;
  }
  // The product is [N, blocks, spatial.., lanes of channels]; the epilogue [N, M, spatial..].
  if (!product.defined() || !epilogue.defined() || product.ndim() < 4) return {};
  const Expr& width = epilogue->shape.back();
  if (as_const_int(width)) return {};
  return {width, product->shape[product.ndim() - 2]};
}

std::optional<std::map<std::string, int64_t>> hints_for_width(const std::vector<Tensor>& outputs, const Expr& width,
                                                              int64_t target) {
  std::map<std::string, int64_t> hints;
  for (const Var& v : size_vars(outputs)) hints[v.name()] = size_hint(v.name());
  const std::vector<Var> vars = vars_of(width);
  if (vars.empty()) return std::nullopt;
  // The width grows with its variable: the first value reaching the target gives it or none does.
  for (int64_t h = 1; h <= kMostHint; ++h) {
    hints[vars.front().name()] = h;
    SizeHintScope scope(hints);
    const int64_t w = size_hint(width);
    if (w == target) return hints;
    if (w > target) return std::nullopt;
  }
  return std::nullopt;
}

LoweredFunc choose_by_padded_width(std::vector<WidthVersion> versions) {
  std::sort(versions.begin(), versions.end(),
            [](const WidthVersion& a, const WidthVersion& b) { return a.tile > b.tile; });
  // if (version 0 pads least) { 0 } else if (version 1 does) { 1 } ... else { the last }: a
  // version is taken where it pads less than each wider tile and no more than each narrower one.
  LoweredFunc out = versions.back().func;
  for (size_t i = versions.size() - 1; i-- > 0;) {
    Expr least;
    for (size_t j = 0; j < versions.size(); ++j) {
      if (j == i) continue;
      Expr better = j < i ? versions[i].padded < versions[j].padded : versions[i].padded <= versions[j].padded;
      least = least.defined() ? logical_and(least, better) : better;
    }
    out = choose_by_condition(with_arguments_of(versions[i].func, out), out, least);
  }
  return out;
}

}  // namespace tessera::driver
