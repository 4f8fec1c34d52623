// The template of window reductions ("pool", "pool_epilogue", "pool_indices"): each window
// reduction vectorized along the last output dimension (a vector of outputs reads a vector of
// inputs per window position, with masked loads at the borders), its small window loops unrolled
// inside, outer loops parallel. Stages another output of the same kernel (max_pool's indices)
// already scheduled are left alone.
#include "schedule/templates/nn.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {

void schedule_window_stage(Schedule& s, const Tensor& t) {
  schedule_generic_stage(s, t);
  const auto* c = s[t].op().as<ComputeOp>();
  int64_t window = 1;
  for (const auto& r : c->reduce_axis()) window *= *tensor_ir::as_const_int(r->dom.extent);
  if (window > 16) return;
  for (const auto& r : c->reduce_axis()) s[t].unroll(s[t].loop(r));
}

void schedule_pool(Schedule& s, const Tensor& out) {
  nn::inline_injective_except(s, out, {});
  for (const Tensor& t : nn::unscheduled_stages(s, out)) schedule_window_stage(s, t);
}

}  // namespace

void add_nn_pool_templates(std::map<std::string, CpuTemplate>& t) {
  for (const char* tag : {"pool", "pool_epilogue", "pool_indices"}) t[tag] = schedule_pool;
}

}  // namespace tessera::schedule
