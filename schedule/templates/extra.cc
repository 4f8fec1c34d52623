// CPU templates of the extra family's compute definitions, by tag.
#include "schedule/templates/cpu.h"
#include "tensor_ir/graph.h"

namespace tessera::schedule {

namespace {

// det: every elimination step reads its predecessor's block at data-dependent rows, several
// times per element; inlining the blocks into each other would grow the expression
// exponentially with the matrix size, so each stage keeps its own (generic) loop nest.
void schedule_det(Schedule& s, const Tensor& output) {
  for (const Tensor& t : tensor_ir::topological_order({output}))
    if (t.as<tensor_ir::ComputeOp>() && !s[t].has_loop_schedule()) schedule_generic_stage(s, t);
}

// roi_align: the sample loops of an adaptive sampling_ratio run to bounds computed from the
// roi, which name the roi axis by its own variable; that axis therefore stays one whole loop,
// outermost, with the reductions inside it and the bins' width axis vectorized innermost.
void schedule_roi_align(Schedule& s, const Tensor& output) {
  for (const Tensor& t : tensor_ir::topological_order({output})) {
    const auto* c = t.as<tensor_ir::ComputeOp>();
    if (!c || s[t].has_loop_schedule()) continue;
    if (c->reduce_axis().empty()) {
      schedule_generic_stage(s, t);
      continue;
    }
    Stage& st = s[t];
    std::vector<Loop> loops = st.leaf_loops();  // roi, channel, bin row, bin column, ky, kx
    Loop roi = loops[0], channel = loops[1], row = loops[2], col = loops[3];
    std::vector<Loop> order = {roi, channel, row, loops[4], loops[5]};
    int lanes = s.hardware().lanes(c->dtype);
    Loop vec = col;
    if (c->dim(3) > lanes) {
      auto [o, i] = st.split(col, lanes);
      order.insert(order.begin() + 3, o);
      vec = i;
    }
    order.push_back(vec);
    st.reorder(order);
    if (c->dim(3) > 1) st.vectorize(vec);
    Loop rows = st.fuse(channel, row);
    if (c->dim(1) * c->dim(2) * c->dim(3) >= 1024) st.parallel(rows);
  }
}

// deform_conv: the sampled columns and the bias epilogue are generic stages; the contraction runs
// its output rows in parallel (batch and output channel fused) with the reduction over input
// channels and taps outside the output columns, which are vectorized.
void schedule_deform_conv(Schedule& s, const Tensor& output) {
  for (const Tensor& t : tensor_ir::topological_order({output})) {
    const auto* c = t.as<tensor_ir::ComputeOp>();
    if (!c || s[t].has_loop_schedule()) continue;
    if (c->reduce_axis().empty()) {
      schedule_generic_stage(s, t);
      continue;
    }
    Stage& st = s[t];
    std::vector<Loop> loops = st.leaf_loops();  // batch, out channel, row, column, in channel, tap
    std::vector<Loop> order = {loops[0], loops[1], loops[2], loops[4], loops[5]};
    const int lanes = s.hardware().lanes(c->dtype);
    Loop vec = loops[3];
    if (c->dim(3) > lanes) {
      auto [o, i] = st.split(vec, lanes);
      order.insert(order.begin() + 3, o);
      vec = i;
    }
    order.push_back(vec);
    st.reorder(order);
    if (c->dim(3) > 1) st.vectorize(vec);
    Loop rows = st.fuse(loops[0], loops[1]);
    if (c->dim(0) * c->dim(1) * c->dim(2) >= 16) st.parallel(rows);
  }
}

}  // namespace

void add_extra_templates(std::map<std::string, TunableTemplate>& t) {
  t["det"] = without_knobs(schedule_det);
  t["roi_align"] = without_knobs(schedule_roi_align);
  t["deform_conv"] = without_knobs(schedule_deform_conv);
}

}  // namespace tessera::schedule
