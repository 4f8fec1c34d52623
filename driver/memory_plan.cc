#include "driver/memory_plan.h"

#include <algorithm>

namespace tessera::driver {

namespace {

using Info = runtime::GraphPlan::TensorInfo;

int64_t bytes_of(const Info& t) {
  int64_t n = t.dtype.element_bytes();
  for (int64_t d : t.shape) n *= d;
  return (n + 63) / 64 * 64;  // every slot starts 64-byte aligned
}

// The tensor whose storage `id` uses (itself unless it is a view).
int storage_of(const runtime::GraphPlan& plan, int id) {
  while (plan.tensors[id].alias_of >= 0) id = plan.tensors[id].alias_of;
  return id;
}

class Planner {
 public:
  explicit Planner(runtime::GraphPlan& plan)
      : plan_(plan), last_use_(plan.tensors.size(), -1), slot_of_(plan.tensors.size(), -1) {
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
          take_slot(id, free_slot(bytes_of(plan_.tensors[id])));
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
    plan_.arena_bytes = 0;
    for (int64_t size : slot_size_) {
      plan_.slot_offsets.push_back(plan_.arena_bytes);
      plan_.arena_bytes += size;
    }
    for (size_t id = 0; id < plan_.tensors.size(); ++id)
      if (plan_.tensors[id].kind == Info::Intermediate && plan_.tensors[id].alias_of < 0)
        plan_.tensors[id].index = slot_of_[id];
  }

 private:
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
      if (t.shape == o.shape && t.dtype == o.dtype && !slot_taken_this_step(s, slot_of_[root])) return root;
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
  int free_slot(int64_t need) {
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (best == free_.end()) {
        best = it;
        continue;
      }
      bool fits = slot_size_[*it] >= need, best_fits = slot_size_[*best] >= need;
      if ((fits && (!best_fits || slot_size_[*it] < slot_size_[*best])) ||
          (!fits && !best_fits && slot_size_[*it] > slot_size_[*best]))
        best = it;
    }
    if (best == free_.end()) {
      slot_size_.push_back(need);
      return static_cast<int>(slot_size_.size()) - 1;
    }
    int slot = *best;
    free_.erase(best);
    slot_size_[slot] = std::max(slot_size_[slot], need);
    return slot;
  }

  void take_slot(int id, int slot) {
    slot_of_[id] = slot;
    slot_size_[slot] = std::max(slot_size_[slot], bytes_of(plan_.tensors[id]));
  }

  runtime::GraphPlan& plan_;
  std::vector<int> last_use_, slot_of_;
  std::vector<int64_t> slot_size_;
  std::vector<int> free_;
};

}  // namespace

void plan_memory(runtime::GraphPlan& plan) { Planner(plan).run(); }

}  // namespace tessera::driver
