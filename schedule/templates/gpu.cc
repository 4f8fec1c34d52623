#include "schedule/templates/gpu.h"

#include <algorithm>
#include <map>

#include "runtime/error.h"
#include "schedule/templates/cpu.h"
#include "tensor_ir/op.h"

namespace tessera::schedule {

namespace {

using tensor_ir::ComputeOp;
using tensor_ir::IterKind;

int64_t extent(const tensor_ir::IterVar& iv) { return *tensor_ir::as_const_int(iv->dom.extent); }

int64_t product(const std::vector<tensor_ir::IterVar>& axes) {
  int64_t n = 1;
  for (const auto& iv : axes) n *= extent(iv);
  return n;
}

int64_t longest_extent(const std::vector<tensor_ir::IterVar>& axes) {
  int64_t n = 0;
  for (const auto& iv : axes) n = std::max(n, extent(iv));
  return n;
}

// A reduction is shared by a block's threads when one of its loops is long and there are too few
// outputs to keep a GPU busy with a thread each.
constexpr int64_t kSharedReductionMinLength = 64;
constexpr int64_t kSharedReductionMaxOutputs = 8192;
constexpr int64_t kThreadsPerBlock = 256;

class GpuScheduler {
 public:
  GpuScheduler(Schedule& s, const GpuParams& gpu) : s_(s), gpu_(gpu) {}

  void run() {
    for (const Tensor& out : s_.outputs()) inline_injective_producers(s_, out);
    // Outputs first, then the reductions left at the root, from the last stage to the first: a
    // reduction may then compute inside its consumer's thread.
    const auto& stages = s_.stages();
    std::vector<Stage*> order;
    for (const auto& st : stages)
      if (st->is_output()) order.push_back(st.get());
    for (auto it = stages.rbegin(); it != stages.rend(); ++it)
      if (!(*it)->is_output()) order.push_back(it->get());
    for (Stage* st : order) schedule_stage(*st);
  }

 private:
  void schedule_stage(Stage& st) {
    const auto* c = st.op().as<ComputeOp>();
    if (!c || st.attach_kind() != AttachKind::Root || st.has_loop_schedule()) return;
    const int64_t outputs = product(c->axis), longest = longest_extent(c->reduce_axis());
    if (longest >= kSharedReductionMinLength && (outputs <= kSharedReductionMaxOutputs || c->axis.empty())) {
      share_reduction(st.op());
      return;
    }
    if (!c->reduce_axis().empty() && compute_in_consumer(st)) return;
    if (c->axis.empty()) {  // a scalar: lowering runs one that reduces nothing on a thread of its own
      if (!c->reduce_axis().empty()) share_reduction(st.op());
      return;
    }
    thread_per_element(st, outputs);
  }

  // Fuses the stage's data-parallel loops (which come first) into one.
  static Loop fuse_data_loops(Stage& st) {
    Loop fused;
    for (const Loop& l : std::vector<Loop>(st.leaf_loops()))
      if (l->kind == IterKind::DataPar) fused = fused ? st.fuse(fused, l) : l;
    return fused;
  }

  void thread_per_element(Stage& st, int64_t elements) {
    const int64_t threads = std::min({kThreadsPerBlock, gpu_.max_threads_per_block, std::max<int64_t>(elements, 1)});
    auto [block, thread] = st.split(fuse_data_loops(st), threads);
    st.bind(block, "blockIdx.x");
    st.bind(thread, "threadIdx.x");
    thread_loop_[&st] = thread;
  }

  // A block per output element; rfactor gives each thread a strided share of the longest
  // reduction loop (the others run in each thread), and the threads combine their partials.
  void share_reduction(const Tensor& t) {
    Stage& st = s_[t];
    const auto& axes = st.op().as<ComputeOp>()->reduce_axis();
    const int64_t length = longest_extent(axes);
    const auto longest = std::find_if(axes.begin(), axes.end(), [&](const auto& iv) { return extent(iv) == length; });
    int64_t threads = gpu_.warp_size > 1 ? gpu_.warp_size : 32;
    while (threads * 4 < length && threads * 2 <= std::min(kThreadsPerBlock, gpu_.max_threads_per_block)) threads *= 2;
    Tensor partials = s_.rfactor(t, st.split(st.loop(*longest), threads).second);
    Stage& combined = s_[t];
    if (Loop block = fuse_data_loops(combined)) combined.bind(block, "blockIdx.x");
    const Loop thread = combined.loop(combined.op().as<ComputeOp>()->reduce_axis()[0]);
    combined.bind(thread, "threadIdx.x");
    s_[partials].compute_at(combined, thread);
  }

  // A reduction whose one consumer is a stage of its own shape with a thread per element: each
  // thread computes the element it reads (one element, where the consumer reads at its own index).
  bool compute_in_consumer(Stage& st) {
    const std::vector<Stage*> consumers = computed_consumers(st);
    if (consumers.size() != 1) return false;
    auto it = thread_loop_.find(consumers[0]);
    if (it == thread_loop_.end() || consumers[0]->op()->dims() != st.op()->dims()) return false;
    st.compute_at(*consumers[0], it->second);
    return true;
  }

  // The stages that read `st`, where a reader inlined into others stands for those.
  std::vector<Stage*> computed_consumers(const Stage& st) const {
    std::vector<Stage*> found;
    for (Stage* c : s_.consumers(st)) {
      if (c->attach_kind() != AttachKind::Inline) {
        if (std::find(found.begin(), found.end(), c) == found.end()) found.push_back(c);
        continue;
      }
      for (Stage* r : computed_consumers(*c))
        if (std::find(found.begin(), found.end(), r) == found.end()) found.push_back(r);
    }
    return found;
  }

  Schedule& s_;
  const GpuParams& gpu_;
  std::map<const Stage*, Loop> thread_loop_;  // the thread loop of each stage with a thread per element
};

}  // namespace

std::unique_ptr<Schedule> default_gpu_schedule(const std::vector<Tensor>& outputs, const HardwareParams& hardware) {
  if (!hardware.is_gpu()) fail("default_gpu_schedule: the hardware is not a GPU's (build for opencl or cuda)");
  auto s = std::make_unique<Schedule>(outputs, hardware);
  GpuScheduler(*s, hardware.gpu).run();
  return s;
}

}  // namespace tessera::schedule
