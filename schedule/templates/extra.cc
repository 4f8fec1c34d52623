// CPU templates of the extra family's compute definitions, by tag.
#include "schedule/templates/cpu.h"
#include "schedule/templates/extent_hint.h"
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

// roi_align and deform_conv compute [outer, channel, row, column] by reducing over two axes (a
// bin's samples; a group's input channels and taps). The outer axis stays one whole loop,
// outermost (roi_align's adaptive sample loops run to bounds computed from the roi, which name
// the roi axis by its own variable), the reductions inside it and the columns vectorized
// innermost; channel and row are fused and run in parallel when there is enough work. Their
// other stages (deform_conv's sampled columns and bias) are generic.
void schedule_window_reduction(Schedule& s, const Tensor& output) {
  for (const Tensor& t : tensor_ir::topological_order({output})) {
    const auto* c = t.as<tensor_ir::ComputeOp>();
    if (!c || s[t].has_loop_schedule()) continue;
    if (c->reduce_axis().empty()) {
      schedule_generic_stage(s, t);
      continue;
    }
    Stage& st = s[t];
    std::vector<Loop> loops = st.leaf_loops();  // outer, channel, row, column, two reductions
    Loop outer = loops[0], channel = loops[1], row = loops[2], col = loops[3];
    std::vector<Loop> order = {outer, channel, row, loops[4], loops[5]};
    int lanes = s.hardware().lanes(c->dtype);
    Loop vec = col;
    if (dim_hint(c, 3) > lanes) {
      auto [o, i] = st.split(col, lanes);
      order.insert(order.begin() + 3, o);
      vec = i;
    }
    order.push_back(vec);
    st.reorder(order);
    if (dim_hint(c, 3) > 1) st.vectorize(vec);
    Loop rows = st.fuse(channel, row);
    if (dim_hint(c, 1) * dim_hint(c, 2) * dim_hint(c, 3) >= 1024) st.parallel(rows);
  }
}

}  // namespace

void add_extra_templates(std::map<std::string, TunableTemplate>& t) {
  t["det"] = without_knobs(schedule_det);
  t["roi_align"] = without_knobs(schedule_window_reduction);
  t["deform_conv"] = without_knobs(schedule_window_reduction);
}

}  // namespace tessera::schedule
