// Templates of the nn family's gradient ops:
//  * "conv_weight_grad": the output [M, C / groups, kernel...] is tiled as the product's
//    register tile (TM output channels x TC input channels x TK kernel positions of the last
//    dimension); tiles run in parallel, and each computes its product right there with the
//    reduction (batch, then the flattened output positions) outside the unrolled tile and the
//    vector lanes innermost, so the TM x TC x TK accumulators stay in registers while every step
//    loads TM cotangent vectors and TC x TK input vectors, all contiguous. The padded copies of
//    the input and the cotangent are rows in parallel, vectorized along their last dimension.
//  * "pool_grad" (and its phases, the argmax of max pooling and its padded input): each stage
//    rows in parallel, vectorized along the last dimension, the few covering windows (or the
//    window) unrolled inside each vector.
//  * "batch_norm_train": per-channel statistics stay stages of their own (each channel's
//    reduction runs over contiguous memory), the rest is elementwise.
#include "schedule/templates/math.h"
#include "schedule/templates/extent_hint.h"
#include "schedule/templates/nn.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {

void schedule_conv_weight_grad(Schedule& s, const Tensor& out) {
  Tensor lanes_sum = nn::find_tagged(out, "conv_weight_grad_lanes");  // float16: a cast follows
  Tensor w = lanes_sum.defined() ? lanes_sum : out;
  Tensor product = nn::find_tagged(out, "conv_weight_grad_product");
  std::vector<Tensor> copies;
  for (const Tensor& t : tensor_ir::topological_order({out})) {
    const auto* c = t.as<ComputeOp>();
    if (c && c->tag == "conv_weight_grad_pad") copies.push_back(t);
  }
  std::vector<Tensor> keep = copies;
  keep.push_back(product);
  keep.push_back(w);
  nn::inline_injective_except(s, out, keep);
  for (const Tensor& t : copies) nn::schedule_rows_of_vectors(s, t, 1);
  if (!w.same_as(out)) schedule_elementwise_stage(s, out);

  // The product's dimensions: [mo, co, k_0 .. k_{rank-2}, ko, TM, TC, TK, lanes].
  const auto* pc = product.as<ComputeOp>();
  size_t pr = pc->axis.size();
  int64_t tm = dim_hint(product, pr - 4), tc = dim_hint(product, pr - 3), tk = dim_hint(product, pr - 2);
  const auto* wc = w.as<ComputeOp>();
  size_t rank = wc->axis.size() - 2;
  Stage& y = s[w];
  auto [mo, mi] = y.split(y.loop(wc->axis[0]), tm);
  auto [co, ci] = y.split(y.loop(wc->axis[1]), tc);
  auto [ko, ki] = y.split(y.loop(wc->axis.back()), tk);
  std::vector<Loop> outer{mo, co};
  for (size_t d = 0; d + 1 < rank; ++d) outer.push_back(y.loop(wc->axis[2 + d]));
  outer.push_back(ko);
  std::vector<Loop> order = outer;
  for (const Loop& l : {mi, ci, ki}) order.push_back(l);
  y.reorder(order);
  Loop tiles = nn::fuse_all(y, outer);
  if (nn::num_elements(product) * nn::reduction_volume(pc) >= nn::kMinParallelWork) y.parallel(tiles);

  Stage& r = s[product];
  r.compute_at(y, tiles);
  std::vector<Loop> inner;
  for (const auto& a : pc->reduce_axis()) inner.push_back(r.loop(a));
  for (size_t d = pr - 4; d < pr; ++d) inner.push_back(r.loop(pc->axis[d]));
  r.reorder(inner);
  for (size_t d = pr - 4; d + 1 < pr; ++d) r.unroll(r.loop(pc->axis[d]));
  r.vectorize(r.loop(pc->axis.back()));
}

void schedule_pool_grad(Schedule& s, const Tensor& out) {
  nn::inline_injective_except(s, out, {nn::find_tagged(out, "pool_grad_pad")});
  for (const Tensor& t : nn::unscheduled_stages(s, out))
    nn::schedule_rows_of_vectors(s, t, nn::reduction_volume(s[t].op().as<ComputeOp>()));
}

void schedule_batch_norm_train(Schedule& s, const Tensor& out) {
  std::vector<Tensor> per_channel;
  for (const Tensor& t : tensor_ir::topological_order({out}))
    if (t.as<ComputeOp>() && t.ndim() == 1) per_channel.push_back(t);
  nn::inline_injective_except(s, out, per_channel);
  for (const Tensor& t : nn::unscheduled_stages(s, out)) {
    if (s[t].op().as<ComputeOp>()->body.as<tensor_ir::Reduce>()) schedule_reduction_stage(s, t);
    else schedule_elementwise_stage(s, t);
  }
}

}  // namespace

void add_nn_grad_templates(std::map<std::string, TunableTemplate>& t) {
  t["conv_weight_grad"] = without_knobs(schedule_conv_weight_grad);
  t["pool_grad"] = without_knobs(schedule_pool_grad);
  t["batch_norm_train"] = without_knobs(schedule_batch_norm_train);
}

}  // namespace tessera::schedule
