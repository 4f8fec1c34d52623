#include "driver/conv_form_versions.h"

#include "relay_ir/compute_of_call.h"
#include "relay_ir/functor.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/op.h"
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/bind_sizes.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/size_hint.h"
#include "tensor_ir/substitute.h"

namespace tessera::driver {

using namespace relay_ir;

namespace {

// The scales tried, as powers of two: a batch of 1 to 1024, an image a thousandth of its hint.
constexpr int kMaxDoublings = 10;

const CallNode* conv_of_two_packings(const CallNode* call) {
  std::vector<const CallNode*> calls{call};
  if (const auto* f = call->op.as<FunctionNode>()) calls = member_calls(f);
  for (const CallNode* c : calls)
    if (c->op_def() && c->op_def()->name == "conv" && c->args.size() == 4) return c;
  return nullptr;
}

}  // namespace

tensor_ir::Expr winograd_condition(const CallNode* call) {
  const CallNode* conv = conv_of_two_packings(call);
  if (!conv) return tensor_ir::Expr();
  const auto& data = as_tensor(conv->args[0]->checked_type, "conv data");
  const tensor_ir::ops::ConvGeometry g = nn::conv_geometry(conv->attrs, data.ndim() - 2, false);
  const std::vector<int64_t> weight{conv->attrs.get_int("packed_channels"), data.shape[1] / g.groups, 3, 3};
  return tensor_ir::ops::conv_winograd_condition(data.shape.dims(), weight, g, data.dtype,
                                                 registers_of(conv->attrs, "conv"));
}

OnePackingCall with_one_packing(const CallNode* call, bool winograd) {
  const CallNode* conv = conv_of_two_packings(call);
  const size_t kept = winograd ? 1 : 3;
  Expr one = relay_ir::call("conv", {conv->args[0], conv->args[kept], conv->args[2]}, conv->attrs, conv->origin);
  const auto* f = call->op.as<FunctionNode>();
  if (!f) {
    infer_type(one);
    return {one, {0, kept, 2}};
  }
  // In a fused function both packings are parameters: the kept one takes the first one's place.
  auto param = [&](const Expr& e) {
    for (size_t i = 0; i < f->params.size(); ++i)
      if (f->params[i].get() == e.get()) return i;
    fail("internal error: a packed weight of ", call_description(call), " is not a parameter of its function");
  };
  const size_t first = param(conv->args[1]), second = param(conv->args[3]);
  OnePackingCall out;
  std::vector<Var> params;
  std::vector<Expr> args;
  for (size_t i = 0; i < f->params.size(); ++i) {
    if (i == second) continue;
    const size_t from = i == first && !winograd ? second : i;
    params.push_back(f->params[from]);
    args.push_back(call->args[from]);
    out.from.push_back(from);
  }
  class ReplaceConv : public ExprMutator {
   public:
    ReplaceConv(const CallNode* conv, Expr by) : conv_(conv), by_(std::move(by)) {}

   protected:
    Expr rewrite(const Expr& original, const Expr& node) override { return original.get() == conv_ ? by_ : node; }

   private:
    const CallNode* conv_;
    Expr by_;
  };
  out.call = call_function(function(params, ReplaceConv(conv, one).mutate(f->body), f->attrs), args);
  infer_type(out.call);
  return out;
}

std::optional<std::map<std::string, int64_t>> hints_where(const std::vector<tensor_ir::Tensor>& outputs,
                                                          const tensor_ir::Expr& condition, bool holds) {
  std::map<std::string, int64_t> given;
  for (const tensor_ir::Var& v : tensor_ir::size_vars(outputs)) given[v.name()] = tensor_ir::size_hint(v.name());
  for (int doublings = 1; doublings <= kMaxDoublings; ++doublings) {
    std::map<std::string, int64_t> hints = given;
    for (const tensor_ir::Var& v : tensor_ir::vars_of(condition)) {
      int64_t& h = hints[v.name()];
      h = holds ? h << doublings : std::max<int64_t>(1, h >> doublings);
    }
    tensor_ir::SizeHintScope scope(hints);
    if ((tensor_ir::size_hint(condition) != 0) == holds) return hints;
  }
  return std::nullopt;
}

}  // namespace tessera::driver
