// CPU templates of the transform family's compute definitions, by tag. Data movement is memory
// bound, so the templates keep per-element index arithmetic low:
//  - "transform", "resize", "scatter", "topk": rows. The innermost axis runs whole inside (its
//    vector lanes contiguous), the outer axes are fused into one parallel loop, so the
//    multi-dimensional index is decomposed once per row rather than once per vector.
//    Reductions (scatter's and topk's) run between the row and its vector lanes. Stages shared
//    by several outputs (topk's selection steps) are scheduled once.
//  - "transpose" (as an output, also of a fused group led by another op): when the innermost
//    input axis moves, the output is walked in square tiles so that the strided reads stay in
//    cache while the writes are contiguous.
#include <tuple>

#include "schedule/templates/cpu.h"
#include "schedule/templates/element_cost.h"
#include "schedule/templates/extent_hint.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {

constexpr int64_t kMinParallelElements = 16384;  // as the generic template
// With fewer rows than this, the row's vector loop joins the parallel loop so that every
// thread gets work.
constexpr int64_t kMinParallelRows = 64;

bool scheduled(const Stage& st) {
  if (!st.relations().empty()) return true;
  for (const auto& l : st.leaf_loops())
    if (l->for_kind != ForKind::Serial) return true;
  return false;
}

int64_t elements_of(const ComputeOp* c) {
  int64_t n = 1;
  for (size_t d = 0; d < c->axis.size(); ++d) n *= dim_hint(c, d);
  return n;
}

// Fuses `outer` (adjacent, in order; see fuse_for_parallel) and parallelizes the result when the
// stage's work (elements, each of element_cost `cost`) is big enough.
void fuse_parallel(Stage& st, const std::vector<Loop>& outer, int64_t elements, int64_t cost) {
  if (outer.empty()) return;
  parallel_if_worth(st, fuse_for_parallel(st, outer), st.op(), elements, kMinParallelElements / cost);
}

// Rows: [fused outer axes (parallel)] [row: innermost axis / lanes] [reductions] [lanes (vector)].
// The row loop stays a loop of its own, so that the guard of a ragged last vector depends on
// it alone and loop partitioning can peel that vector off; it joins the parallel loop only
// when there are too few rows to share and the vectors divide the row evenly.
void schedule_rows(Schedule& s, const Tensor& t) {
  const auto* c = t.as<ComputeOp>();
  size_t rank = c->axis.size();
  if (rank == 0) return;
  Stage& st = s[t];
  int lanes = s.hardware().lanes(c->dtype);
  int64_t extent = dim_hint(c, rank - 1), elements = elements_of(c);
  std::vector<Loop> outer, reduce;
  for (size_t d = 0; d + 1 < rank; ++d) outer.push_back(st.loop(c->axis[d]));
  int64_t work = elements;  // for the parallel threshold: reductions multiply the work
  for (const auto& r : c->reduce_axis()) {
    reduce.push_back(st.loop(r));
    if (const int64_t* n = tensor_ir::as_const_int(r->dom.extent)) work *= *n;
  }
  Loop last = st.loop(c->axis[rank - 1]), row, vec;
  if (extent >= lanes) {
    std::tie(row, vec) = st.split(last, lanes);
  } else if (extent > 1) {
    vec = last;
  } else {
    row = last;
  }
  std::vector<Loop> order = outer;
  if (row) order.push_back(row);
  order.insert(order.end(), reduce.begin(), reduce.end());
  if (vec) order.push_back(vec);
  if (order.size() > 1) st.reorder(order);
  if (vec) st.vectorize(vec);
  int64_t rows = elements / std::max<int64_t>(extent, 1);
  if (row && (outer.empty() || (rows < kMinParallelRows && extent % lanes == 0))) outer.push_back(row);
  fuse_parallel(st, outer, work, element_cost(s, t));
}

bool is_output(const Schedule& s, const Tensor& t) {
  for (const auto& o : s.outputs())
    if (o.same_as(t)) return true;
  return false;
}

// Walks an output transpose in square tiles where its innermost input axis moves (the
// transpose of a slice of attention's fused projections too); false where it does not.
bool tile_transpose(Schedule& s, const Tensor& output) {
  const auto* c = output.as<ComputeOp>();
  if (c->tag != "transpose" || !is_output(s, output)) return false;
  size_t rank = c->axis.size();
  // The output axis that walks the input's innermost axis (the last index of the read).
  const auto* load = c->body.as<tensor_ir::ProducerLoad>();
  size_t q = rank;
  if (load && !load->indices.empty())
    for (size_t d = 0; d < rank; ++d)
      if (load->indices.back().get() == c->axis[d].var().get()) q = d;
  int lanes = s.hardware().lanes(c->dtype);
  if (q + 1 >= rank || dim_hint(c, q) < lanes || dim_hint(c, rank - 1) < lanes) return false;
  Stage& st = s[output];
  auto [qo, qi] = st.split(st.loop(c->axis[q]), lanes);
  auto [lo, li] = st.split(st.loop(c->axis[rank - 1]), lanes);
  std::vector<Loop> outer;
  for (size_t d = 0; d + 1 < rank; ++d)
    if (d != q) outer.push_back(st.loop(c->axis[d]));
  outer.push_back(qo);
  outer.push_back(lo);
  std::vector<Loop> order = outer;
  order.push_back(qi);
  order.push_back(li);
  st.reorder(order);
  st.vectorize(li);
  fuse_parallel(st, outer, elements_of(c), 1);
  return true;
}

// Every root stage of `output` that no earlier output of the same schedule has scheduled.
// Called for the anchor of a fused group whose output is an elementwise epilogue (transpose
// then relu), it schedules the group's outputs instead, with everything injective inlined:
// data movement has no loop nest worth keeping apart. An output transpose is tiled, others
// walked in rows.
void schedule_data_movement(Schedule& s, const Tensor& output) {
  if (!is_output(s, output)) {
    for (const auto& o : s.outputs()) schedule_data_movement(s, o);
    return;
  }
  inline_injective_producers(s, output);
  for (const Tensor& t : tensor_ir::topological_order({output})) {
    if (!t.as<ComputeOp>()) continue;
    Stage& st = s[t];
    if (st.attach_kind() == AttachKind::Root && !scheduled(st) && !tile_transpose(s, t)) schedule_rows(s, t);
  }
}

}  // namespace

void add_transform_templates(std::map<std::string, TunableTemplate>& t) {
  for (const char* tag : {"transform", "resize", "scatter", "topk", "transpose"})
    t[tag] = without_knobs(schedule_data_movement);
}

}  // namespace tessera::schedule
