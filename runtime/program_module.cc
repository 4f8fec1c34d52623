#include "runtime/program_module.h"

namespace tessera::runtime {

ProgramModule::ProgramModule(std::shared_ptr<const ProgramPlan> plan,
                             std::vector<std::shared_ptr<GraphExecutor>> stages)
    : stages_(std::move(stages)),
      runner_(std::move(plan),
              [this](const ProgramStep& step, const std::vector<NDArray>& in, std::vector<NDArray>& out) {
                stages_.at(step.stage)->run_handing_over(in, out);
              }) {}

std::vector<ProgramValue> ProgramModule::run(const std::vector<ProgramValue>& inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  return runner_.run(inputs);
}

}  // namespace tessera::runtime
