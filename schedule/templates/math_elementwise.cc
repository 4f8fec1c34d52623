// The CPU schedule of elementwise and broadcasting stages: the trailing axes along which every
// input is read either contiguously or not at all are fused into one loop and vectorized, so a
// vector never straddles a broadcast boundary (no gathers) and an uneven size leaves one tail
// per outer iteration instead of a guard in every vector.
#include <functional>

#include "schedule/templates/cpu.h"
#include "schedule/templates/element_cost.h"
#include "schedule/templates/extent_hint.h"
#include "schedule/templates/math.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;
using tensor_ir::ProducerLoad;

namespace {

// Below this many output elements (each a sum or a product: element_cost.h) a parallel loop
// costs more than it saves.
constexpr int64_t kMinParallelElements = 16384;

class LeafLoads : public tensor_ir::IRVisitor {
 public:
  LeafLoads(Schedule& s, std::vector<Expr>& out) : s_(s), out_(out) {}

 protected:
  void visit_(const ProducerLoad* op) override {
    const auto* c = op->tensor.as<ComputeOp>();
    if (!c || s_[op->tensor].attach_kind() != AttachKind::Inline) {
      out_.emplace_back(op);
      IRVisitor::visit_(op);
      return;
    }
    tensor_ir::VarMap map;
    for (size_t d = 0; d < c->axis.size(); ++d) map[c->axis[d].var().get()] = op->indices[d];
    visit(tensor_ir::substitute(c->body, map));
  }

 private:
  Schedule& s_;
  std::vector<Expr>& out_;
};

// How many trailing axes of `c` (one or two) every leaf load reads contiguously or not at all: a
// load qualifies for the last k axes if its last indices are exactly those axes' variables (a 0
// standing for a size-1 axis) and no other index uses them, or if no index uses them at all.
// Two at most: the simplifier turns (f // c) * c + f % c back into f, but not the index
// arithmetic of three fused axes, which would leave vector divisions and gathers.
size_t fusable_suffix(const ComputeOp* c, const std::vector<Expr>& loads) {
  size_t n = c->axis.size();
  auto extent = [&](size_t d) { return extent_hint(c->axis[d]->dom.extent); };
  auto qualifies = [&](const ProducerLoad* load, size_t k) {
    const auto& idx = load->indices;
    bool any = false;
    for (size_t d = n - k; d < n; ++d)
      for (const auto& e : idx) any |= tensor_ir::uses_var(e, c->axis[d].var().get());
    if (!any) return true;
    if (idx.size() < k) return false;
    for (size_t j = 0; j < k; ++j) {
      size_t d = n - k + j;
      const Expr& e = idx[idx.size() - k + j];
      bool same = e.as<tensor_ir::VarNode>() == c->axis[d].var().get();
      if (!same && !(extent(d) == 1 && tensor_ir::is_zero(e))) return false;
      if (!same_extent(load->tensor->shape[idx.size() - k + j], c->axis[d]->dom.extent)) return false;
    }
    for (size_t j = 0; j + k < idx.size(); ++j)
      for (size_t d = n - k; d < n; ++d)
        if (tensor_ir::uses_var(idx[j], c->axis[d].var().get())) return false;
    return true;
  };
  if (n < 2) return n;
  for (const auto& l : loads)
    if (!qualifies(l.as<ProducerLoad>(), 2)) return 1;
  return 2;
}

}  // namespace

std::vector<Expr> leaf_loads(Schedule& s, const Expr& e) {
  std::vector<Expr> out;
  LeafLoads(s, out).visit(e);
  return out;
}

void schedule_elementwise_stage(Schedule& s, const Tensor& t) {
  Stage& st = s[t];
  const auto* c = st.op().as<ComputeOp>();
  if (!c || c->axis.empty() || c->body.as<tensor_ir::Reduce>() || st.leaf_loops().size() != c->axis.size()) {
    schedule_generic_stage(s, t);
    return;
  }
  std::vector<Expr> loads = leaf_loads(s, c->body);
  size_t n = c->axis.size(), k = fusable_suffix(c, loads);
  int64_t elements = 1, inner_extent = 1;
  for (size_t d = 0; d < n; ++d) {
    int64_t e = extent_hint(c->axis[d]->dom.extent);
    elements *= e;
    if (d >= n - k) inner_extent *= e;
  }
  std::vector<Loop> loops = st.leaf_loops();
  Loop inner = loops[n - k];
  for (size_t d = n - k + 1; d < n; ++d) inner = st.fuse(inner, loops[d]);
  std::vector<Loop> outer(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(n - k));
  int lanes = s.hardware().lanes(c->dtype);
  if (inner_extent >= lanes) {
    auto [o, i] = st.split(inner, lanes);
    st.vectorize(i);
    // An uneven split keeps its outer loop apart, so partitioning peels one tail per row.
    if (inner_extent % lanes == 0 || outer.empty()) outer.push_back(o);
  } else if (inner_extent > 1) {
    st.vectorize(inner);
  } else {
    outer.push_back(inner);
  }
  if (outer.empty()) return;
  const int64_t cost = element_cost(s, t);
  parallel_if_worth(st, fuse_for_parallel(st, outer), st.op(), elements, kMinParallelElements / cost);
}

}  // namespace tessera::schedule
