#include "runtime/graph_executor.h"

#include <chrono>
#include <cstring>

#include "runtime/error.h"
#include "runtime/thread_pool.h"

namespace tessera::runtime {

GraphExecutor::GraphExecutor(std::shared_ptr<const Module> kernels, GraphPlan plan)
    : module_(std::move(kernels)), plan_(std::move(plan)) {
  arena_ = NDArray::empty({plan_.arena_bytes}, DataType::UInt(8));
  inputs_.resize(plan_.inputs.size());
  input_copies_.resize(plan_.inputs.size());
  for (int id : plan_.outputs) {
    const auto& t = plan_.tensors.at(id);
    outputs_.push_back(NDArray::empty(t.shape, t.dtype));
  }
  for (const auto& step : plan_.steps) {
    if (step.kernel.empty()) {
      if (step.args.size() != 2) fail("graph plan: a copy step needs 2 tensors");
      step_kernels_.emplace_back();
      continue;
    }
    Kernel k = module_->get_kernel(step.kernel);
    if (k.signature().args.size() != step.args.size())
      fail("graph plan: kernel ", step.kernel, " takes ", k.signature().args.size(), " arguments, the step gives ",
           step.args.size());
    for (size_t a = 0; a < step.args.size(); ++a) {
      const auto& t = plan_.tensors.at(step.args[a]);
      const auto& spec = k.signature().args[a];
      if (t.shape != spec.shape || t.dtype != spec.dtype)
        fail("graph plan: kernel ", step.kernel, " argument ", a, " is ", spec.dtype.str(), shape_str(spec.shape),
             ", the tensor '", t.name, "' is ", t.dtype.str(), shape_str(t.shape));
    }
    step_kernels_.push_back(k);
  }
}

size_t GraphExecutor::input_index(const std::string& name) const {
  std::string names;
  for (size_t i = 0; i < plan_.inputs.size(); ++i) {
    if (input_info(i).name == name) return i;
    names += (names.empty() ? "" : ", ") + input_info(i).name;
  }
  fail("the model has no input '", name, "' (its inputs are: ", names, ")");
}

void GraphExecutor::check_input(size_t i, const NDArray& value) const {
  if (i >= inputs_.size()) fail("input index ", i, " out of range (the model has ", inputs_.size(), " inputs)");
  const auto& info = input_info(i);
  if (value.dtype() != info.dtype)
    fail("input '", info.name, "': expected dtype ", info.dtype.str(), ", got ", value.dtype().str());
  if (value.shape() != info.shape)
    fail("input '", info.name, "': expected shape ", shape_str(info.shape), ", got ", value.shape_str());
  if (value.device().type != DeviceType::CPU)
    fail("input '", info.name, "': the array is on ", value.device().str(), "; the graph runs on the CPU");
}

void GraphExecutor::set_input(size_t i, const NDArray& value) {
  check_input(i, value);
  const auto& info = input_info(i);
  if (value.is_aligned()) {
    inputs_[i] = value;
    return;
  }
  if (!input_copies_[i].defined() || input_copies_[i].numel() != value.numel())
    input_copies_[i] = NDArray::empty(info.shape, info.dtype);
  parallel_copy(input_copies_[i].data(), value.data(), value.nbytes());
  inputs_[i] = input_copies_[i];
}

void* GraphExecutor::data_of(int id) const {
  while (plan_.tensors.at(id).alias_of >= 0) id = plan_.tensors[id].alias_of;
  const auto& t = plan_.tensors.at(id);
  switch (t.kind) {
    case GraphPlan::TensorInfo::Input:
      return inputs_.at(t.index).data();
    case GraphPlan::TensorInfo::Output:
      return outputs_.at(t.index).data();
    case GraphPlan::TensorInfo::Constant:
      return plan_.constants.at(t.index).data();
    case GraphPlan::TensorInfo::Intermediate:
      return static_cast<char*>(arena_.data()) + plan_.slot_offsets.at(t.index);
  }
  return nullptr;
}

void GraphExecutor::check_inputs_set() const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!inputs_[i].defined() || (inputs_[i].data() == nullptr && inputs_[i].numel() > 0))
      fail("input '", input_info(i).name, "' is not set");
}

void GraphExecutor::run_step(size_t s, std::vector<void*>& args) const {
  const auto& step = plan_.steps[s];
  args.clear();
  for (int id : step.args) args.push_back(data_of(id));
  if (step.kernel.empty()) {
    const auto& t = plan_.tensors.at(step.args[0]);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::memmove(args[1], args[0], static_cast<size_t>(n) * t.dtype.element_bytes());
  } else {
    step_kernels_[s].call_unchecked(args.data());
  }
}

void GraphExecutor::run() {
  check_inputs_set();
  std::vector<void*> args;
  for (size_t s = 0; s < plan_.steps.size(); ++s) run_step(s, args);
}

std::vector<double> GraphExecutor::run_profiled() {
  check_inputs_set();
  std::vector<void*> args;
  std::vector<double> ms;
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    auto start = std::chrono::steady_clock::now();
    run_step(s, args);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return ms;
}

std::vector<NDArray> GraphExecutor::run(const std::vector<NDArray>& inputs) {
  if (inputs.size() != inputs_.size()) fail("the model takes ", inputs_.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) set_input(i, inputs[i]);
  run();
  return outputs_;
}

}  // namespace tessera::runtime
