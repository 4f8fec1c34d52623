#include "runtime/graph_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "runtime/device_api.h"
#include "runtime/error.h"
#include "runtime/shape_size.h"
#include "runtime/thread_pool.h"

namespace tessera::runtime {

GraphExecutor::GraphExecutor(std::shared_ptr<const Module> kernels, GraphPlan plan, Device device)
    : module_(std::move(kernels)), plan_(std::move(plan)), device_(device) {
  inputs_.resize(plan_.inputs.size());
  input_copies_.resize(plan_.inputs.size());
  step_vars_.resize(plan_.steps.size());
  if (plan_.is_symbolic() && plan_.symbolic_shapes.size() != plan_.tensors.size())
    fail("graph plan: ", plan_.symbolic_shapes.size(), " symbolic shapes for ", plan_.tensors.size(), " tensors");
  if (!plan_.is_symbolic())  // a symbolic plan's outputs are allocated for each size
    for (int id : plan_.outputs) {
      const auto& t = plan_.tensors.at(id);
      outputs_.push_back(NDArray::empty(t.shape, t.dtype, device_));
    }
  output_taken_.assign(plan_.outputs.size(), false);
  for (const auto& step : plan_.steps)
    if (step.kernel.empty() && step.args.size() != 2) fail("graph plan: a copy step needs 2 tensors");
  if (on_device()) {
    resolve_device_programs();
  } else {
    if (!plan_.is_symbolic()) arena_ = NDArray::empty({plan_.arena_bytes}, DataType::UInt(8));
    resolve_cpu_kernels();
  }
}

namespace {

// A symbolic plan's arguments are checked at each size (bind_sizes), by their values.
void check_step_argument(const GraphPlan& plan, const std::string& kernel, size_t a, int id, const BufferSpec& spec) {
  const auto& t = plan.tensors.at(id);
  if ((!plan.is_symbolic() && !equals(spec.shape, t.shape)) || t.dtype != spec.dtype)
    fail("graph plan: kernel ", kernel, " argument ", a, " is ", spec.dtype.str(), symbolic_shape_str(spec.shape),
         ", the tensor '", t.name, "' is ", t.dtype.str(), shape_str(t.shape));
}

}  // namespace

void GraphExecutor::resolve_cpu_kernels() {
  for (const auto& step : plan_.steps) {
    if (step.kernel.empty()) {
      step_kernels_.emplace_back();
      continue;
    }
    Kernel k = module_->get_kernel(step.kernel);
    if (k.signature().args.size() != step.args.size())
      fail("graph plan: kernel ", step.kernel, " takes ", k.signature().args.size(), " arguments, the step gives ",
           step.args.size());
    for (size_t a = 0; a < step.args.size(); ++a)
      check_step_argument(plan_, step.kernel, a, step.args[a], k.signature().args[a]);
    step_kernels_.push_back(k);
  }
}

void GraphExecutor::resolve_device_programs() {
  for (const auto& step : plan_.steps) {
    if (step.kernel.empty()) {
      step_programs_.emplace_back();
      continue;
    }
    auto program = module_->device_program(step.kernel);
    const auto& args = program->spec().args;
    if (args.size() != step.args.size())
      fail("graph plan: device program ", step.kernel, " takes ", args.size(), " arguments, the step gives ",
           step.args.size());
    for (size_t a = 0; a < step.args.size(); ++a) check_step_argument(plan_, step.kernel, a, step.args[a], args[a]);
    step_programs_.push_back(std::move(program));
  }
  for (const NDArray& c : plan_.constants) constants_.push_back(c.copy_to(device_));
  if (plan_.is_symbolic()) return;  // slots come with each size
  // Each slot as large as the largest tensor it holds (a device buffer is no address to offset).
  std::vector<size_t> slot_bytes(plan_.slot_offsets.size(), 1);
  for (const auto& t : plan_.tensors)
    if (t.kind == GraphPlan::TensorInfo::Intermediate && t.alias_of < 0 && t.index >= 0)
      slot_bytes.at(t.index) = std::max(slot_bytes.at(t.index), checked_nbytes(t.shape, t.dtype, t.name));
  for (size_t bytes : slot_bytes) slots_.push_back(NDArray::empty({static_cast<int64_t>(bytes)}, DataType::UInt(8), device_));
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
  if (plan_.is_symbolic()) {
    const SymbolicShape& want = plan_.symbolic_shapes.at(plan_.inputs.at(i));
    bool fits = value.shape().size() == want.size();
    for (size_t d = 0; fits && d < want.size(); ++d)
      fits = !want[d].is_constant() || want[d].constant() == value.shape()[d];
    if (!fits) fail("input '", info.name, "': expected shape ", symbolic_shape_str(want), ", got ", value.shape_str());
  } else if (value.shape() != info.shape) {
    fail("input '", info.name, "': expected shape ", shape_str(info.shape), ", got ", value.shape_str());
  }
  if (!(value.device() == device_) && value.device().type != DeviceType::CPU)
    fail("input '", info.name, "': the array is on ", value.device().str(), "; the graph runs on ", device_.str());
}

void GraphExecutor::set_input(size_t i, const NDArray& value) {
  check_input(i, value);
  const auto& info = input_info(i);
  if (value.device() == device_ && value.is_aligned()) {
    inputs_[i] = value;
    return;
  }
  if (!input_copies_[i].defined() || input_copies_[i].shape() != value.shape())
    input_copies_[i] = NDArray::empty(value.shape(), info.dtype, device_);
  if (on_device())
    input_copies_[i].copy_from(value);
  else
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

NDArray GraphExecutor::array_of(int id) const {
  const auto& view = plan_.tensors.at(id);
  while (plan_.tensors.at(id).alias_of >= 0) id = plan_.tensors[id].alias_of;
  const auto& t = plan_.tensors.at(id);
  NDArray storage;
  switch (t.kind) {
    case GraphPlan::TensorInfo::Input:
      storage = inputs_.at(t.index);
      break;
    case GraphPlan::TensorInfo::Output:
      storage = outputs_.at(t.index);
      break;
    case GraphPlan::TensorInfo::Constant:
      storage = constants_.at(t.index);
      break;
    case GraphPlan::TensorInfo::Intermediate:
      storage = slots_.at(t.index);
      break;
  }
  return storage.view_as(view.shape, view.dtype);
}

const GraphPlan::TensorInfo& GraphExecutor::output_info(size_t i) const {
  if (i >= plan_.outputs.size())
    fail("output index ", i, " out of range (the model has ", plan_.outputs.size(), " outputs)");
  return plan_run().tensors.at(plan_run().outputs[i]);
}

const NDArray& GraphExecutor::output(size_t i) const {
  if (ran_) return ran_->output(i);
  if (i >= plan_.outputs.size())
    fail("output index ", i, " out of range (the model has ", plan_.outputs.size(), " outputs)");
  if (outputs_.empty()) fail("output '", output_info(i).name, "' has no value yet: the model has not run at any size");
  return outputs_[i];
}

NDArray GraphExecutor::take_output(size_t i) {
  if (ran_) return ran_->take_output(i);
  NDArray out = output(i);
  output_taken_[i] = true;
  return out;
}

void GraphExecutor::prepare_outputs(const std::vector<NDArray>& into) {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const auto& t = plan_.tensors[plan_.outputs[i]];
    if (i < into.size() && into[i].defined() && !on_device() && into[i].device() == device_ && into[i].is_aligned() &&
        into[i].dtype() == t.dtype && into[i].shape() == t.shape) {
      outputs_[i] = into[i];
      output_taken_[i] = true;
    } else if (output_taken_[i]) {
      outputs_[i] = NDArray::uninitialized(t.shape, t.dtype, device_);  // the run writes it whole
      output_taken_[i] = false;
    }
  }
}

void GraphExecutor::check_inputs_set() const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!inputs_[i].defined() || (inputs_[i].device_data() == nullptr && inputs_[i].numel() > 0))
      fail("input '", input_info(i).name, "' is not set");
}

void GraphExecutor::check_sizes(const std::string& at) const {
  auto bytes = [&](int id) {
    return checked_nbytes(plan_.tensors[id].shape, plan_.tensors[id].dtype, plan_.tensors[id].name);
  };
  for (size_t id = 0; id < plan_.tensors.size(); ++id) {
    const auto& t = plan_.tensors[id];
    const size_t need = bytes(static_cast<int>(id));
    if (t.alias_of >= 0 && need > bytes(t.alias_of))
      fail("graph plan: at ", at, ", the view '", t.name, "' is larger than the tensor it views");
    if (t.alias_of < 0 && t.kind == GraphPlan::TensorInfo::Intermediate &&
        need > static_cast<size_t>(plan_.arena_bytes - plan_.slot_offsets.at(t.index)))
      fail("graph plan: at ", at, ", the tensor '", t.name, "' does not fit in the arena");
    if (t.alias_of < 0 && t.kind == GraphPlan::TensorInfo::Intermediate &&
        t.index + 1 < static_cast<int>(plan_.slot_offsets.size()) &&
        need > static_cast<size_t>(plan_.slot_offsets[t.index + 1] - plan_.slot_offsets[t.index]))
      fail("graph plan: at ", at, ", the tensor '", t.name, "' does not fit in its arena slot");
  }
  for (const auto& step : plan_.steps)
    if (step.kernel.empty() && bytes(step.args[0]) != bytes(step.args[1]))
      fail("graph plan: at ", at, ", a copy between tensors of different sizes");
}

void GraphExecutor::bind_sizes() {
  // Every run comes here: the sizes of the last run are the usual case, checked without allocating.
  bool same = bound_shapes_.size() == inputs_.size();
  for (size_t i = 0; same && i < inputs_.size(); ++i) same = inputs_[i].shape() == bound_shapes_[i];
  if (same) return;
  bound_shapes_.clear();  // unbound until every size-dependent part is updated (an error may come first)
  std::vector<std::vector<int64_t>> got;
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    got.push_back(inputs_[i].shape());
    names.push_back("'" + input_info(i).name + "'");
  }
  const std::map<std::string, int64_t> values = bind_shape_vars(input_shapes(plan_), got, names, "input");
  std::string at;  // "N = 3, L = 16", for errors
  for (const std::string& v : plan_.shape_vars) {
    auto it = values.find(v);
    if (it == values.end()) fail("graph plan: no input's shape gives the dimension variable ", v, " a value");
    at += (at.empty() ? "" : ", ") + v + " = " + std::to_string(it->second);
  }
  for (const GraphPlan::NonEmpty& n : plan_.nonempty)
    if (n.dim.evaluate(values) < 1 && n.reads.evaluate(values) > 0)
      fail(n.what, ": ", n.dim.str(), " is ", n.dim.evaluate(values), " at ", at);
  for (size_t id = 0; id < plan_.tensors.size(); ++id) {
    auto& t = plan_.tensors[id];
    t.shape.clear();
    for (const ShapeExpr& d : plan_.symbolic_shapes[id]) {
      t.shape.push_back(d.evaluate(values));
      if (t.shape.back() < 0)
        fail("the tensor '", t.name, "' of shape ", symbolic_shape_str(plan_.symbolic_shapes[id]),
             " has a negative dimension at ", at);
    }
  }
  plan_.slot_offsets.clear();
  plan_.arena_bytes = 0;
  for (size_t slot = 0; slot < plan_.slot_bytes.size(); ++slot) {
    const int64_t bytes = plan_.slot_bytes[slot].evaluate(values);
    plan_.slot_offsets.push_back(plan_.arena_bytes);
    plan_.arena_bytes += bytes;
    if (on_device() && (slot >= slots_.size() || slots_[slot].numel() < bytes)) {
      slots_.resize(std::max(slots_.size(), slot + 1));
      slots_[slot] = NDArray::empty({std::max<int64_t>(bytes, 1)}, DataType::UInt(8), device_);
    }
  }
  check_sizes(at);
  if (!on_device() && (!arena_.defined() || arena_.numel() < plan_.arena_bytes))
    arena_ = NDArray::empty({std::max<int64_t>(plan_.arena_bytes, 1)}, DataType::UInt(8));
  outputs_.clear();
  for (int id : plan_.outputs)  // each run writes them whole
    outputs_.push_back(NDArray::uninitialized(plan_.tensors[id].shape, plan_.tensors[id].dtype, device_));
  output_taken_.assign(outputs_.size(), false);
  // Each kernel's arguments at these sizes, and the values of its variables in its order.
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    const auto& step = plan_.steps[s];
    if (step.kernel.empty()) continue;
    const std::vector<BufferSpec>& args =
        on_device() ? step_programs_[s]->spec().args : step_kernels_[s].signature().args;
    for (size_t a = 0; a < args.size(); ++a) {
      const auto& t = plan_.tensors[step.args[a]];
      bool same = args[a].shape.size() == t.shape.size();
      for (size_t d = 0; same && d < t.shape.size(); ++d) same = args[a].shape[d].evaluate(values) == t.shape[d];
      if (!same)
        fail("graph plan: at ", at, ", kernel ", step.kernel, " argument ", a, " ", symbolic_shape_str(args[a].shape),
             " differs from the tensor '", t.name, "' ", shape_str(t.shape));
    }
    step_vars_[s].clear();
    for (const std::string& v :
         on_device() ? step_programs_[s]->spec().shape_vars : step_kernels_[s].signature().shape_vars)
      step_vars_[s].push_back(values.at(v));
  }
  bound_shapes_ = std::move(got);
}

void GraphExecutor::run_step(size_t s, std::vector<void*>& args, bool wait) const {
  const auto& step = plan_.steps[s];
  if (on_device()) {
    std::vector<NDArray> arrays;
    for (int id : step.args) arrays.push_back(array_of(id));
    if (step.kernel.empty())
      arrays[1].copy_from(arrays[0]);
    else (*step_programs_[s])(arrays, /*wait=*/false, step_vars_[s]);
    if (wait) DeviceAPI::get(device_).synchronize();
    return;
  }
  args.clear();
  for (int id : step.args) args.push_back(data_of(id));
  if (!step_vars_[s].empty()) args.push_back(const_cast<int64_t*>(step_vars_[s].data()));
  if (step.kernel.empty()) {
    const auto& t = plan_.tensors.at(step.args[0]);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::memmove(args[1], args[0], static_cast<size_t>(n) * t.dtype.element_bytes());
  } else {
    step_kernels_[s].call_unchecked(args.data());
  }
}

void GraphExecutor::specialize(GraphPlan plan) {
  std::map<std::string, int64_t> values = hot_sizes_of(plan_, plan);
  for (const Specialized& s : specialized_)
    if (s.values == values) fail("graph plan: two specialized plans for ", sizes_str(plan_, values));
  specialized_.push_back({std::make_unique<GraphExecutor>(module_, std::move(plan), device_), std::move(values)});
}

namespace {

bool takes_shapes(const GraphExecutor& ex, const std::vector<std::vector<int64_t>>& shapes) {
  for (size_t i = 0; i < shapes.size(); ++i)
    if (ex.input_info(i).shape != shapes[i]) return false;
  return shapes.size() == ex.num_inputs();
}

}  // namespace

std::string GraphExecutor::specialized_sizes(const std::vector<std::vector<int64_t>>& shapes) const {
  for (const Specialized& s : specialized_)
    if (takes_shapes(*s.executor, shapes)) return sizes_str(plan_, s.values);
  return "";
}

std::vector<std::map<std::string, int64_t>> GraphExecutor::hot_sizes() const {
  std::vector<std::map<std::string, int64_t>> sizes;
  for (const Specialized& s : specialized_) sizes.push_back(s.values);
  return sizes;
}

GraphExecutor* GraphExecutor::specialized_for_inputs() {
  ran_ = nullptr;
  if (specialized_.empty()) return nullptr;
  std::vector<std::vector<int64_t>> shapes;
  for (const NDArray& in : inputs_) shapes.push_back(in.shape());
  for (const Specialized& s : specialized_) {
    if (!takes_shapes(*s.executor, shapes)) continue;
    for (size_t i = 0; i < inputs_.size(); ++i) s.executor->set_input(i, inputs_[i]);
    return ran_ = s.executor.get();
  }
  return nullptr;
}

void GraphExecutor::run() { run_into({}); }

void GraphExecutor::run_into(const std::vector<NDArray>& into) {
  check_inputs_set();
  if (GraphExecutor* specialized = specialized_for_inputs()) return specialized->run_into(into);
  if (plan_.is_symbolic()) bind_sizes();
  prepare_outputs(into);
  std::vector<void*> args;
  // On a device the steps queue in order; the run waits once, for the last.
  for (size_t s = 0; s < plan_.steps.size(); ++s) run_step(s, args, /*wait=*/false);
  if (on_device()) DeviceAPI::get(device_).synchronize();
}

std::vector<double> GraphExecutor::run_profiled() {
  check_inputs_set();
  if (GraphExecutor* specialized = specialized_for_inputs()) return specialized->run_profiled();
  if (plan_.is_symbolic()) bind_sizes();
  prepare_outputs({});
  std::vector<void*> args;
  std::vector<double> ms;
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    auto start = std::chrono::steady_clock::now();
    run_step(s, args, /*wait=*/true);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return ms;
}

void GraphExecutor::set_inputs(const std::vector<NDArray>& inputs) {
  if (inputs.size() != inputs_.size()) fail("the model takes ", inputs_.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) set_input(i, inputs[i]);
}

std::vector<NDArray> GraphExecutor::run(const std::vector<NDArray>& inputs) {
  set_inputs(inputs);
  run();
  return ran_ ? ran_->outputs_ : outputs_;
}

void GraphExecutor::run_handing_over(const std::vector<NDArray>& inputs, std::vector<NDArray>& outputs) {
  set_inputs(inputs);
  outputs.resize(num_outputs());
  run_into(outputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!on_device()) {
      outputs[i] = take_output(i);
    } else if (outputs[i].defined() && outputs[i].shape() == output(i).shape() &&
               outputs[i].dtype() == output(i).dtype() && outputs[i].device().type == DeviceType::CPU) {
      outputs[i].copy_from(output(i));
    } else {
      outputs[i] = output(i).copy_to(Device::cpu());
    }
  }
}

}  // namespace tessera::runtime
