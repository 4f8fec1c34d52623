#include "driver/memory_plan.h"

#include <algorithm>
#include <map>
#include <string>

#include "tensor_ir/size_hint.h"

namespace tessera::driver {

namespace {

using Info = runtime::GraphPlan::TensorInfo;
using runtime::ShapeExpr;

ShapeExpr folded(ShapeExpr::Op op, const ShapeExpr& a, const ShapeExpr& b) {
  if (a.is_constant() && b.is_constant()) return ShapeExpr::binary(op, a, b).evaluate({});
  if ((op == ShapeExpr::Op::Max || op == ShapeExpr::Op::Min) && a == b) return a;
  if (op == ShapeExpr::Op::Mul && a.is_constant() && a.constant() == 1) return b;
  if (op == ShapeExpr::Op::Mul && b.is_constant() && b.constant() == 1) return a;
  return ShapeExpr::binary(op, a, b);
}

// A tensor's bytes in the arena (every slot starts 64-byte aligned), with its value at the
// sizes that guide choices between slots (a symbolic plan's slots fit every size anyway).
struct Bytes {
  ShapeExpr expr;
  int64_t hint = 0;
};

// The largest of `terms` (at least one) as a balanced tree of max, so a slot that many tensors
// share stays shallow (modules bound how deeply a dimension may nest).
ShapeExpr max_of(const std::vector<ShapeExpr>& terms, size_t begin, size_t end) {
  if (end - begin == 1) return terms[begin];
  const size_t middle = begin + (end - begin) / 2;
  return folded(ShapeExpr::Op::Max, max_of(terms, begin, middle), max_of(terms, middle, end));
}

// The sizes choices are made at (tensor_ir/size_hint.h).
std::map<std::string, int64_t> hint_sizes(const runtime::GraphPlan& plan) {
  std::map<std::string, int64_t> values;
  for (const std::string& v : plan.shape_vars) values[v] = tensor_ir::size_hint(v);
  return values;
}

// The tensor whose storage `id` uses (itself unless it is a view).
int storage_of(const runtime::GraphPlan& plan, int id) {
  while (plan.tensors[id].alias_of >= 0) id = plan.tensors[id].alias_of;
  return id;
}

class Planner {
 public:
  explicit Planner(runtime::GraphPlan& plan)
      : plan_(plan), hints_(hint_sizes(plan)), last_use_(plan.tensors.size(), -1), slot_of_(plan.tensors.size(), -1) {
    if (!plan.is_symbolic())
      for (const Info& t : plan.tensors) static_shapes_.push_back(runtime::symbolic_shape(t.shape));
    // A view keeps its storage alive as long as the view itself is used.
    for (int s = 0; s < static_cast<int>(plan.steps.size()); ++s)
      for (int id : plan.steps[s].args) last_use_[storage_of(plan, id)] = s;
    for (int id : plan.outputs) last_use_[storage_of(plan, id)] = static_cast<int>(plan.steps.size());
  }

  void run() {
    for (int s = 0; s < static_cast<int>(plan_.steps.size()); ++s) {
      const auto& step = plan_.steps[s];
      for (int id : step.args) {
        if (!is_unplaced_intermediate(id)) continue;
        int donor = step.elementwise ? in_place_donor(s, id) : -1;
        if (donor >= 0) {
          take_slot(id, slot_of_[donor]);
        } else {
          take_slot(id, free_slot(bytes_of(id)));
        }
      }
      for (int id : step.args) {
        int root = storage_of(plan_, id);
        if (plan_.tensors[root].kind == Info::Intermediate && last_use_[root] == s && slot_of_[root] >= 0 &&
            std::find(free_.begin(), free_.end(), slot_of_[root]) == free_.end() &&
            !slot_taken_this_step(s, slot_of_[root]))
          free_.push_back(slot_of_[root]);
      }
    }
    plan_.slot_offsets.clear();
    plan_.slot_bytes.clear();
    plan_.arena_bytes = 0;
    for (const Bytes& size : slot_size_) {
      if (plan_.is_symbolic()) {
        plan_.slot_bytes.push_back(size.expr);  // offsets follow at each size (GraphExecutor)
        continue;
      }
      plan_.slot_offsets.push_back(plan_.arena_bytes);
      plan_.arena_bytes += size.expr.constant();
    }
    for (size_t id = 0; id < plan_.tensors.size(); ++id)
      if (plan_.tensors[id].kind == Info::Intermediate && plan_.tensors[id].alias_of < 0)
        plan_.tensors[id].index = slot_of_[id];
  }

 private:
  const runtime::SymbolicShape& shape_of(int id) const {
    return plan_.is_symbolic() ? plan_.symbolic_shapes.at(id) : static_shapes_.at(id);
  }

  Bytes bytes_of(int id) const {
    const Info& t = plan_.tensors[id];
    ShapeExpr n = t.dtype.element_bytes();
    for (const ShapeExpr& d : shape_of(id)) n = folded(ShapeExpr::Op::Mul, n, d);
    n = folded(ShapeExpr::Op::Mul, folded(ShapeExpr::Op::FloorDiv, folded(ShapeExpr::Op::Add, n, 63), 64), 64);
    return {n, n.evaluate(hints_)};
  }

  bool is_unplaced_intermediate(int id) const {
    const Info& t = plan_.tensors[id];
    return t.kind == Info::Intermediate && t.alias_of < 0 && slot_of_[id] < 0;
  }

  // An input of step s with the output's shape and dtype, in a slot of its own, read for the
  // last time here: the output can be written over it.
  int in_place_donor(int s, int out) const {
    const Info& o = plan_.tensors[out];
    for (int id : plan_.steps[s].args) {
      if (id == out) break;  // inputs come before outputs
      int root = storage_of(plan_, id);
      const Info& t = plan_.tensors[root];
      if (root != id || t.kind != Info::Intermediate || slot_of_[root] < 0 || last_use_[root] != s) continue;
      if (shape_of(root) == shape_of(out) && t.dtype == o.dtype && !slot_taken_this_step(s, slot_of_[root]))
        return root;
    }
    return -1;
  }

  // True if a tensor of step s that lives past it (an output written in place) holds `slot`.
  bool slot_taken_this_step(int s, int slot) const {
    for (int id : plan_.steps[s].args) {
      bool own_storage = id == storage_of(plan_, id) && plan_.tensors[id].kind == Info::Intermediate;
      if (own_storage && slot_of_[id] == slot && last_use_[id] > s) return true;
    }
    return false;
  }

  // The smallest free slot that fits, else the largest free one (grown), else a new one.
  int free_slot(const Bytes& need) {
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (best == free_.end()) {
        best = it;
        continue;
      }
      int64_t size = slot_size_[*it].hint, best_size = slot_size_[*best].hint;
      bool fits = size >= need.hint, best_fits = best_size >= need.hint;
      if ((fits && (!best_fits || size < best_size)) || (!fits && !best_fits && size > best_size)) best = it;
    }
    if (best == free_.end()) {
      slot_size_.push_back(need);
      slot_terms_.push_back({need.expr});
      return static_cast<int>(slot_size_.size()) - 1;
    }
    int slot = *best;
    free_.erase(best);
    grow(slot, need);
    return slot;
  }

  // The slot's size: the largest of the distinct sizes of the tensors it holds.
  void grow(int slot, const Bytes& need) {
    std::vector<ShapeExpr>& terms = slot_terms_[slot];
    if (std::find(terms.begin(), terms.end(), need.expr) == terms.end()) terms.push_back(need.expr);
    slot_size_[slot] = {max_of(terms, 0, terms.size()), std::max(slot_size_[slot].hint, need.hint)};
  }

  void take_slot(int id, int slot) {
    slot_of_[id] = slot;
    grow(slot, bytes_of(id));
  }

  runtime::GraphPlan& plan_;
  const std::map<std::string, int64_t> hints_;
  std::vector<runtime::SymbolicShape> static_shapes_;  // a static plan's shapes as expressions
  std::vector<int> last_use_, slot_of_;
  std::vector<Bytes> slot_size_;
  std::vector<std::vector<ShapeExpr>> slot_terms_;  // each slot's distinct sizes
  std::vector<int> free_;
};

}  // namespace

void plan_memory(runtime::GraphPlan& plan) { Planner(plan).run(); }

}  // namespace tessera::driver
