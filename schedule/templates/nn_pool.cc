// The template of window reductions ("pool", "pool_epilogue", "pool_indices"): rows (every
// dimension but the last) fused and spread over the threads, each row vectorized along the last
// output dimension (a vector of outputs reads a vector of inputs per window position, with
// masked loads at the borders), the small window loops unrolled inside. The steps of a
// separable max pool ("pool_partial") are computed per output row, right before the row reads
// them from the cache. Stages another output of the same kernel (max_pool's indices) already
// scheduled are left alone.
#include "schedule/templates/cpu.h"
#include "schedule/templates/nn.h"
#include "schedule/templates/extent_hint.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {

// The output of a separable max pool may be a plain selection of its last step; it stays a
// stage of its own (not inlined into a fused epilogue) so the steps have a row to live in.
void schedule_pool(Schedule& s, const Tensor& out) {
  nn::inline_injective_except(s, out, {out});
  std::vector<Tensor> steps;
  int64_t window = 1;
  for (const Tensor& t : nn::unscheduled_stages(s, out)) {
    const auto* c = t.as<ComputeOp>();
    if (c->tag == "pool_partial") steps.push_back(t);
    if (c->tag == "pool_partial" || t.same_as(out)) window *= nn::reduction_volume(c);
  }
  for (const Tensor& t : nn::unscheduled_stages(s, out)) {
    const auto* c = t.as<ComputeOp>();
    if (c->tag == "pool_partial") continue;
    if (!t.same_as(out) || steps.empty()) {
      nn::schedule_rows_of_vectors(s, t, nn::reduction_volume(c));
      continue;
    }
    Loop rows = nn::schedule_rows_of_vectors(s, t, window);
    for (const Tensor& p : steps) {
      s[p].compute_at(s[t], rows);
      nn::schedule_rows_of_vectors(s, p, 0);
    }
  }
}

}  // namespace

void add_nn_pool_templates(std::map<std::string, TunableTemplate>& t) {
  for (const char* tag : {"pool", "pool_epilogue", "pool_indices"}) t[tag] = without_knobs(schedule_pool);
}

namespace nn {

int64_t reduction_volume(const ComputeOp* c) {
  int64_t v = 1;
  for (const auto& r : c->reduce_axis()) v *= extent_hint(r->dom.extent);
  return v;
}

Loop schedule_rows_of_vectors(Schedule& s, const Tensor& t, int64_t work_per_element) {
  Stage& st = s[t];
  const auto* c = st.op().as<ComputeOp>();
  std::vector<Loop> rows;
  for (size_t d = 0; d + 1 < c->axis.size(); ++d) rows.push_back(st.loop(c->axis[d]));
  std::vector<Loop> order = rows;
  Loop vec = split_into_vectors(st, st.loop(c->axis.back()), dim_hint(c, c->axis.size() - 1),
                                s.hardware().lanes(c->dtype), order);
  for (const auto& r : c->reduce_axis()) order.push_back(st.loop(r));
  if (vec) order.push_back(vec);
  st.reorder(order);
  if (vec) st.vectorize(vec);
  if (reduction_volume(c) <= 16)
    for (const auto& r : c->reduce_axis()) st.unroll(st.loop(r));
  if (rows.empty()) return nullptr;
  size_t joined = 0;
  Loop fused = fuse_for_parallel(st, rows, &joined);
  if (num_elements(t) * work_per_element >= nn::kMinParallelWork) st.parallel(fused);
  return joined == rows.size() ? fused : rows.back();
}

}  // namespace nn
}  // namespace tessera::schedule
