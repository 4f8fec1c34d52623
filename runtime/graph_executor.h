// Runs a compiled graph: resolves every kernel once, allocates the memory arena and the
// outputs once, then each run() calls the steps in order. Inputs are used in place when they
// are 64-byte aligned and copied into aligned buffers otherwise.
// On a device (a module of device programs, built for opencl or cuda), everything but the
// graph's inputs and outputs stays there: the constants are uploaded once, the intermediates
// live in one device buffer per slot of the memory plan, outputs are device arrays, and inputs
// given in host memory are copied to the device.
// A plan of symbolic sizes (GraphPlan::shape_vars) runs at any sizes its inputs give: at each new
// size the executor evaluates the tensors' shapes and the arena's slots, grows the arena if
// needed, allocates the outputs, and hands each kernel its dimension variables' values.
// Such a plan may have specialized plans beside it (specialize()): static plans of the same model
// at hot sizes, which serve the calls of exactly their sizes, as a dispatch on the inputs' shapes.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/device_program.h"
#include "runtime/graph_plan.h"
#include "runtime/kernel.h"
#include "runtime/module.h"

namespace tessera::runtime {

class GraphExecutor {
 public:
  GraphExecutor(std::shared_ptr<const Module> kernels, GraphPlan plan, Device device = Device::cpu());

  size_t num_inputs() const { return plan_.inputs.size(); }
  size_t num_outputs() const { return plan_.outputs.size(); }
  const GraphPlan::TensorInfo& input_info(size_t i) const { return plan_.tensors.at(plan_.inputs.at(i)); }
  // At the sizes of the last run (of the specialized plan that served it, if one did).
  const GraphPlan::TensorInfo& output_info(size_t i) const;
  // The index of the input called `name`; throws listing the inputs if there is none.
  size_t input_index(const std::string& name) const;

  // Throws unless `value` has input i's shape and dtype (the message names the input; a symbolic
  // dimension takes any size here, and run() checks the sizes of all inputs together).
  void check_input(size_t i, const NDArray& value) const;
  // check_input, then keeps a reference (a copy if `value` is not 64-byte aligned).
  void set_input(size_t i, const NDArray& value);
  void run();
  // run(), writing output i into into[i] where that is given and fits: a host array of the
  // output's dtype and shape at this run's sizes, 64-byte aligned, that no input shares (a place
  // the caller keeps, such as a step's row of a stacked result). Other outputs go to buffers of
  // the executor's own. output(i) and take_output(i) give where each one went.
  void run_into(const std::vector<NDArray>& into);
  // Runs once, timing each step: milliseconds per step, in plan order.
  std::vector<double> run_profiled();
  // The executor's own output buffer: valid until the next run().
  const NDArray& output(size_t i) const;
  // The output buffer itself, handed to the caller: the next run() writes a new one (callers that
  // return each run's outputs as new arrays take them instead of copying them).
  NDArray take_output(size_t i);
  // set_input for each, run, and the outputs.
  std::vector<NDArray> run(const std::vector<NDArray>& inputs);
  // set_input for each, run_into(outputs), and each output handed over to the caller in host
  // memory (take_output, or a copy from a device) as outputs[i]: for callers that keep every
  // run's outputs (a program's runner), which then neither copy them nor see the next run
  // overwrite them.
  void run_handing_over(const std::vector<NDArray>& inputs, std::vector<NDArray>& outputs);

  const GraphPlan& plan() const { return plan_; }
  // The plan the last run followed: plan(), or the specialized plan that served its sizes.
  const GraphPlan& plan_run() const { return ran_ ? ran_->plan_ : plan_; }

  // Serves the calls whose inputs have the static shapes of `plan` with it (its kernels are in
  // this executor's module): a build of hot sizes beside this plan of symbolic sizes. Throws unless
  // this plan is symbolic and `plan` takes and gives what this one does at its sizes.
  void specialize(GraphPlan plan);
  // The sizes of the specialized plan that serves inputs of `shapes` ("N = 1, L = 128"), in the
  // order of the plan's variables; "" when none does.
  std::string specialized_sizes(const std::vector<std::vector<int64_t>>& shapes) const;
  // The dimension variables' values of each specialized plan, in the order they were given.
  std::vector<std::map<std::string, int64_t>> hot_sizes() const;
  // Where the kernels run and the outputs live.
  Device device() const { return device_; }
  const Module& kernels() const { return *module_; }
  // For callers that share the executor between threads: set_input, run and output make one call
  // only while this is held (the executor itself takes no lock).
  std::mutex& call_mutex() const { return call_mutex_; }

 private:
  bool on_device() const { return device_.type != DeviceType::CPU; }
  void resolve_cpu_kernels();
  void resolve_device_programs();
  void* data_of(int tensor) const;
  NDArray array_of(int tensor) const;  // on a device
  void check_inputs_set() const;
  // set_input for each of `inputs`, which must be one per input.
  void set_inputs(const std::vector<NDArray>& inputs);
  // The output buffers of a run: the caller's that fit (run_into), a new one for each taken.
  void prepare_outputs(const std::vector<NDArray>& into);
  // A symbolic plan at the sizes of the inputs set: the shapes, arena and outputs for them.
  void bind_sizes();
  // Throws unless every tensor fits its storage at the sizes bound (`at` names them): a plan read
  // from a file is checked at each size as a static one is when it is read.
  void check_sizes(const std::string& at) const;
  // `wait`: on a device, return when the step is done (CPU steps always are).
  void run_step(size_t step, std::vector<void*>& args, bool wait) const;

  std::shared_ptr<const Module> module_;
  GraphPlan plan_;
  Device device_;
  std::vector<Kernel> step_kernels_;  // resolved once; empty for copies
  std::vector<std::shared_ptr<const DeviceProgram>> step_programs_;  // the same on a device
  NDArray arena_;
  std::vector<NDArray> slots_, constants_;  // on a device: the arena's slots, the uploaded constants
  std::vector<NDArray> inputs_, input_copies_, outputs_;
  std::vector<bool> output_taken_;  // by take_output, or the caller's: run() allocates it anew
  // A symbolic plan's input shapes bound last (empty: none yet), and each step's kernel's (or
  // device program's) values of its dimension variables in its order (empty for a static one).
  std::vector<std::vector<int64_t>> bound_shapes_;
  std::vector<std::vector<int64_t>> step_vars_;
  mutable std::mutex call_mutex_;

  struct Specialized {
    std::unique_ptr<GraphExecutor> executor;
    std::map<std::string, int64_t> values;  // the dimension variables' values it serves
  };
  std::vector<Specialized> specialized_;
  GraphExecutor* ran_ = nullptr;  // the specialized executor that ran last; null: this one
  // The specialized executor for the inputs set, its inputs set to them; null: none.
  GraphExecutor* specialized_for_inputs();
};

}  // namespace tessera::runtime
