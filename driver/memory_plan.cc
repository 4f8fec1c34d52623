#include "driver/memory_plan.h"

#include <algorithm>

namespace tessera::driver {

namespace {
int64_t bytes_of(const runtime::GraphPlan::TensorInfo& t) {
  int64_t n = t.dtype.element_bytes();
  for (int64_t d : t.shape) n *= d;
  return (n + 63) / 64 * 64;  // every slot starts 64-byte aligned
}
}  // namespace

void plan_memory(runtime::GraphPlan& plan) {
  using Info = runtime::GraphPlan::TensorInfo;
  const int n = static_cast<int>(plan.tensors.size());
  std::vector<int> last_use(n, -1);
  for (int s = 0; s < static_cast<int>(plan.steps.size()); ++s)
    for (int id : plan.steps[s].args) last_use[id] = s;
  std::vector<int64_t> slot_size;
  std::vector<int> free_slots;
  std::vector<bool> assigned(n, false);
  for (int s = 0; s < static_cast<int>(plan.steps.size()); ++s) {
    // Tensors first written here take the smallest free slot that fits, else the largest free
    // one (grown), else a new one.
    for (int id : plan.steps[s].args) {
      Info& t = plan.tensors[id];
      if (t.kind != Info::Intermediate || assigned[id]) continue;
      assigned[id] = true;
      int64_t need = bytes_of(t);
      auto best = free_slots.end();
      for (auto it = free_slots.begin(); it != free_slots.end(); ++it) {
        bool fits = slot_size[*it] >= need;
        if (best == free_slots.end()) { best = it; continue; }
        bool best_fits = slot_size[*best] >= need;
        if ((fits && (!best_fits || slot_size[*it] < slot_size[*best])) || (!fits && !best_fits && slot_size[*it] > slot_size[*best])) best = it;
      }
      if (best != free_slots.end()) {
        t.index = *best;
        slot_size[*best] = std::max(slot_size[*best], need);
        free_slots.erase(best);
      } else {
        t.index = static_cast<int>(slot_size.size());
        slot_size.push_back(need);
      }
    }
    // Slots of tensors read for the last time here are free for the next step.
    for (int id : plan.steps[s].args) {
      Info& t = plan.tensors[id];
      if (t.kind == Info::Intermediate && last_use[id] == s && std::find(free_slots.begin(), free_slots.end(), t.index) == free_slots.end())
        free_slots.push_back(t.index);
    }
  }
  plan.slot_offsets.clear();
  plan.arena_bytes = 0;
  for (int64_t size : slot_size) {
    plan.slot_offsets.push_back(plan.arena_bytes);
    plan.arena_bytes += size;
  }
}

}  // namespace tessera::driver
