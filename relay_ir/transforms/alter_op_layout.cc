// AlterOpLayout (CPU): a convolution or matrix product whose weight is known at compile time
// takes it already in the layout its kernel reads (conv_pack_weight, conv_winograd_weight,
// matmul_pack_weight, with packed_channels / packed_columns on the call), so FoldConstant packs
// it once instead of the kernel repacking it on every call, which costs more than the arithmetic
// when the weight is large and the other operand small. Only where the kernel reads a packed
// layout: the blocked, pointwise and Winograd convolution forms (not the depthwise or direct
// ones, which read the weight as it is), and products whose right operand has at least a vector
// of columns (packed ahead, it pays at any row count). Where the kernel packed per call before
// (blocked convolutions, products of 4 rows or more) it runs the same loops on the same values,
// and a pointwise convolution reads the same values from other addresses: results are
// bit-identical. Products of fewer rows move from the unpacked kernel to the packed
// one; both sum in k order, but LLVM may reassociate them differently (fast-math), so the last
// bit may differ. A 3x3 stride-1 convolution with enough output tiles moves to the Winograd form,
// which only a precomputed weight transform makes pay (ops/nn_conv_winograd.cc): it rounds
// differently from the direct sum, by about 1e-6 relative to the output's scale. Where it pays
// at some of a convolution's symbolic sizes only (7x7 outputs over a batch of N, an image of H x
// W), the blocked packing goes beside the Winograd one (after a bias, zeros if it had none) and
// each call takes the form its sizes pay for (driver/conv_form_versions.h). Layouts are
// sized for the target's vector registers (the pass context's options "vector_bytes" and
// "vector_registers", which the driver sets from the target); the rewritten calls and packing ops
// name them, so the kernels reading a packed weight are sized the same whatever they are built
// for.
#include <cstring>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/ops/nn_ops.h"
#include "relay_ir/transforms/constant_values.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/passes.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;

namespace {

const TensorTypeNode& tensor(const Expr& e) { return as_tensor(e->checked_type, "operand"); }

Expr zeros(std::vector<int64_t> shape, DataType dtype) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), dtype);
  std::memset(a.data(), 0, a.nbytes());
  return constant(a);
}

class LayoutAlterer : public ExprMutator {
 public:
  explicit LayoutAlterer(const Attrs& options) : regs_(registers_of(options, "AlterOpLayout")) {}

 protected:
  Expr rewrite(const Expr&, const Expr& node) override { return constants_.record(alter(node)); }

 private:
  Expr alter(const Expr& node) {
    const auto* c = node.as<CallNode>();
    if (!c || !c->op_def() || c->args.size() < 2 || !constants_.contains(c->args[1])) return node;
    const std::string& name = c->op_def()->name;
    if (name != "conv" && name != "matmul" && name != "gemm") return node;
    infer_type(node);
    const auto& x = tensor(c->args[0]);
    const auto& w = tensor(c->args[1]);
    // A weight computed from constants to a symbolic shape (DeBERTa's relative positions
    // broadcast to the batch) is packed at each call by the kernel reading it, if at all.
    if (!w.shape.is_static()) return node;
    std::vector<Expr> args = c->args;
    Attrs attrs = set_registers(c->attrs, regs_);
    if (name == "conv") {
      if (c->attrs.get_int("packed_channels")) return node;
      auto packing = ops::conv_weight_packing(x.shape.dims(), w.shape,
                                              nn::conv_geometry(attrs, x.ndim() - 2, false), x.dtype, regs_);
      if (packing.kind == ops::ConvWeightPacking::Unpacked) return node;
      const Expr weight = args[1];
      args[1] = packing.kind == ops::ConvWeightPacking::Winograd
                    ? call("conv_winograd_weight", {weight}, set_registers({}, regs_))
                    : call("conv_pack_weight", {weight}, {{"block", packing.block}});
      attrs.set("packed_channels", w.shape[0]);
      if (packing.winograd_at_some_sizes) {
        if (args.size() == 2) args.push_back(constants_.record(zeros({w.shape[0]}, x.dtype)));
        args.push_back(constants_.record(call("conv_pack_weight", {weight}, {{"block", packing.block}})));
      }
    } else {
      bool trans = attrs.get_int("trans_b");
      if (c->attrs.get_int("packed_columns") || !ops::matmul_weight_packable(x.ndim(), w.shape, trans, x.dtype, regs_))
        return node;
      args[1] = call("matmul_pack_weight", {args[1]}, set_registers({{"trans", int64_t(trans)}}, regs_));
      attrs.set("packed_columns", w.shape[w.ndim() - (trans ? 2 : 1)]);
      attrs.set("trans_b", int64_t(0));
    }
    constants_.record(args[1]);
    return call(name, args, attrs, c->origin);
  }

  tensor_ir::ops::Registers regs_;
  ConstantValues constants_;
};

}  // namespace

Pass alter_op_layout_pass() {
  return function_pass("AlterOpLayout", 3,
                       [](const Function& f, PassContext& ctx) { return LayoutAlterer(ctx.options).mutate(f); });
}

}  // namespace tessera::relay_ir
