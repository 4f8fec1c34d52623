// ConvertLayout (CPU): a depthwise-separable network (MobileNet's depthwise and 1x1
// convolutions) runs channels-last. Why: on two cores, a kernel reading data the other core has
// just written runs a third to a half slower than on data its own core wrote, and in NCHW the
// kernels of such a network cannot agree on who writes what: a depthwise layer splits the
// threads by channels, the 1x1 layer after it by positions, which in NCHW are interleaved runs
// of every channel's plane. Channels-last, every kernel splits by rows of positions, and each
// thread's rows are one contiguous block in every tensor, and a chain of layers runs as fast as
// its layers alone (benchmarks/NOTES.md, "Channels-last MobileNets").
//
// Which functions: those whose convolutions are all float 2-D ones with a compile-time weight
// that are depthwise (one input channel per group), pointwise (1x1, stride 1, unpadded, one
// group) or stems (at most 4 input channels: an image's colours), with at least one depthwise.
// A function with any other convolution keeps NCHW throughout: its 3x3 layers have faster NCHW
// forms (blocked, Winograd), and every boundary between the layouts costs a transpose.
//
// How: each convolution becomes its channels-last form between transposes,
//   conv(x, W, b) -> to_nchw(conv_nhwc(to_nhwc(x), W as [KH, KW, C / groups, M], b))
//   pointwise     -> to_nchw(add(matmul(to_nhwc(x), W as [C, M]), b))
// (a stem reading a value not in NHWC reads it as it is, data_layout "NCHW"), then the
// transposes sink through elementwise ops whose tensor operands all carry one (scalars need
// none) and through global_avg_pool (a mean over the rows and columns), and to_nhwc(to_nchw(y))
// is y: inside the region no transpose is left. FoldConstant then rearranges the weights once.
#include <unordered_map>
#include <utility>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/ops/nn_ops.h"
#include "relay_ir/transforms/constant_values.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/match.h"
#include "relay_ir/transforms/passes.h"

namespace tessera::relay_ir {

namespace {

const std::vector<int64_t> kToNhwc{0, 2, 3, 1}, kToNchw{0, 3, 1, 2};

const TensorTypeNode& tensor(const Expr& e) { return as_tensor(e->checked_type, "operand"); }

// The y of to_nchw(y), or undefined.
Expr nhwc_source(const Expr& e) {
  const auto* t = call_of(e, "transpose");
  return t && t->attrs.get_ints("perm") == kToNchw ? t->args[0] : Expr();
}

Expr transpose(const Expr& x, const std::vector<int64_t>& perm) { return call("transpose", {x}, {{"perm", perm}}); }

Expr to_nhwc(const Expr& x) {
  Expr y = nhwc_source(x);
  return y.defined() ? y : transpose(x, kToNhwc);
}

enum class ConvKind { Other, Depthwise, Pointwise, Stem };

ConvKind conv_kind(const CallNode& c, const ConstantValues& constants) {
  if (c.attrs.get_int("packed_channels") || !constants.contains(c.args[1])) return ConvKind::Other;
  infer_type(c.args[0]);
  infer_type(c.args[1]);
  const auto& x = tensor(c.args[0]);
  const auto& w = tensor(c.args[1]);
  if (x.ndim() != 4 || !x.dtype.is_float()) return ConvKind::Other;
  auto g = nn::conv_geometry(c.attrs, 2, false);
  if (w.shape[1] == 1 && g.groups == x.shape[1]) return ConvKind::Depthwise;
  if (g.groups != 1) return ConvKind::Other;
  bool unit = w.shape[2] == 1 && w.shape[3] == 1;
  for (int64_t v : g.strides) unit = unit && v == 1;
  for (int64_t v : g.pads) unit = unit && v == 0;
  if (unit) return ConvKind::Pointwise;
  return x.shape[1] <= 4 ? ConvKind::Stem : ConvKind::Other;
}

// The function's convolutions by kind, when all are ones this pass converts and one of them is
// depthwise; empty otherwise (the function keeps NCHW).
using ConvKinds = std::unordered_map<const ExprNode*, ConvKind>;
ConvKinds conversions(const Expr& root) {
  ConstantValues constants;
  ConvKinds kinds;
  bool depthwise = false;
  for (const Expr& e : post_order(root)) {
    constants.record(e);
    const auto* c = e.as<CallNode>();
    if (!c || !c->op_def()) continue;
    const std::string& name = c->op_def()->name;
    if (name == "conv") {
      ConvKind kind = conv_kind(*c, constants);
      if (kind == ConvKind::Other) return {};
      kinds[e.get()] = kind;
      depthwise = depthwise || kind == ConvKind::Depthwise;
    } else if (name.find("conv") != std::string::npos && name != "conv_nhwc") {
      return {};  // conv_transpose, integer and quantized convolutions stay NCHW
    }
  }
  return depthwise ? kinds : ConvKinds();
}

class LayoutConverter : public ExprMutator {
 public:
  explicit LayoutConverter(ConvKinds kinds) : kinds_(std::move(kinds)) {}

 protected:
  Expr rewrite(const Expr& original, const Expr& node) override {
    auto kind = kinds_.find(original.get());
    return kind != kinds_.end() ? convert_conv(*node.as<CallNode>(), kind->second) : convert(node);
  }

 private:
  Expr convert(const Expr& node) {
    const auto* c = node.as<CallNode>();
    if (!c || !c->op_def()) return node;
    const OpDef& op = *c->op_def();
    if (op.name == "global_avg_pool") {
      Expr y = nhwc_source(c->args[0]);
      if (!y.defined()) return node;
      infer_type(y);
      const auto& t = tensor(y);
      Expr mean = call("reduce_mean", {y}, {{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", int64_t(1)}}, c->origin);
      // [N, 1, 1, C] as [N, C, 1, 1]: a reshape where N is a constant, else a transpose.
      if (!t.shape.is_static(0)) return transpose(mean, kToNchw);
      return call("reshape", {mean}, {{"shape", std::vector<int64_t>{t.shape[0], t.shape[3], 1, 1}}});
    }
    if (op.pattern == OpPattern::Elemwise || op.pattern == OpPattern::Broadcast) return sink(*c, node);
    return node;
  }

  Expr convert_conv(const CallNode& c, ConvKind kind) {
    Expr w = c.args[1];
    infer_type(w);
    const auto& ws = tensor(w).shape;
    Expr y;
    if (kind == ConvKind::Pointwise) {
      Expr matrix = transpose(call("reshape", {w}, {{"shape", std::vector<int64_t>{ws[0], ws[1]}}}), {1, 0});
      y = call("matmul", {to_nhwc(c.args[0]), matrix}, {}, c.origin);
      if (c.args.size() > 2) y = call("add", {y, c.args[2]}, {}, c.origin);
    } else {
      Attrs attrs;
      for (const char* name : {"strides", "pads", "dilations", "groups"}) attrs.set(name, c.attrs.get(name));
      Expr x = c.args[0];
      if (kind == ConvKind::Stem && !nhwc_source(x).defined()) {
        attrs.set("data_layout", std::string("NCHW"));
      } else {
        x = to_nhwc(x);
      }
      std::vector<Expr> args{x, transpose(w, {2, 3, 1, 0})};
      if (c.args.size() > 2) args.push_back(c.args[2]);
      y = call("conv_nhwc", args, attrs, c.origin);
    }
    return transpose(y, kToNchw);
  }

  // op(to_nchw(a), to_nchw(b), scalar) -> to_nchw(op(a, b, scalar)): equal ranks broadcast the
  // same under one permutation.
  Expr sink(const CallNode& c, const Expr& node) {
    std::vector<Expr> args;
    bool any = false;
    for (const Expr& a : c.args) {
      Expr y = nhwc_source(a);
      if (y.defined()) {
        args.push_back(y);
        any = true;
        continue;
      }
      infer_type(a);
      if (!tensor(a).shape.is_static() || tensor(a).numel() != 1) return node;
      args.push_back(a);
    }
    return any ? transpose(call(c.op_def()->name, args, c.attrs, c.origin), kToNchw) : node;
  }

  ConvKinds kinds_;
};

}  // namespace

Pass convert_layout_pass() {
  return function_pass("ConvertLayout", 3, [](const Function& f, PassContext&) {
    ConvKinds kinds = conversions(f);
    return kinds.empty() ? Expr(f) : LayoutConverter(std::move(kinds)).mutate(f);
  });
}

}  // namespace tessera::relay_ir
