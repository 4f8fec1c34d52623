#include "driver/program_executor.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "driver/constant_pool.h"
#include "driver/shape_specialized_build.h"
#include "runtime/element.h"
#include "runtime/error.h"
#include "runtime/program_builtins.h"

namespace tessera::driver {

using runtime::NDArray;

namespace {

std::string signature_of(const std::vector<NDArray>& inputs, const std::vector<bool>& bound) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    s += (i ? ", " : "") + inputs[i].dtype().str() + inputs[i].shape_str();
    if (i < bound.size() && bound[i] && inputs[i].numel() <= 8) {
      s += " =";
      for (int64_t e = 0; e < inputs[i].numel(); ++e) {
        std::ostringstream v;
        v << runtime::element_as_double(inputs[i], e);
        s += " " + v.str();
      }
    } else if (i < bound.size() && bound[i]) {
      s += " = (" + std::to_string(inputs[i].numel()) + " values)";
    }
  }
  return s;
}

// The cache key of a stage's inputs: their dtypes and shapes, and the bytes of the bound ones.
std::string key_of(const std::vector<NDArray>& inputs, const std::vector<bool>& bound) {
  std::string key;
  for (size_t i = 0; i < inputs.size(); ++i) {
    key += inputs[i].dtype().str() + inputs[i].shape_str();
    if (i < bound.size() && bound[i]) {
      key += "=";
      key.append(static_cast<const char*>(inputs[i].data()), inputs[i].nbytes());
    }
    key += ";";
  }
  return key;
}

}  // namespace

ProgramExecutor::ProgramExecutor(relay_ir::Program program, targets::Target target, BuildOptions options)
    : program_(std::move(program)),
      target_(std::move(target)),
      options_(options),
      runner_(program_.plan, [this](const runtime::ProgramStep& step, const std::vector<NDArray>& in,
                                    std::vector<NDArray>& out) { run_stage(step, in, out); }),
      stages_(program_.stages.size()) {
  validate(options_);
  if (!options_.jit) fail("a program of stages is built while it runs: build it with jit on");
  if (!options_.constants) options_.constants = std::make_shared<ConstantPool>();
}

std::vector<runtime::ProgramValue> ProgramExecutor::run(const std::vector<runtime::ProgramValue>& inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!every_size_tried_) try_every_size(inputs);
  if (every_size_runner_) {
    try {
      return every_size_runner_->run(inputs);
    } catch (const runtime::ValueNotASize&) {  // built at its value below instead
    }
  }
  return runner_.run(inputs);
}

void ProgramExecutor::try_every_size(const std::vector<runtime::ProgramValue>& inputs) {
  every_size_tried_ = true;
  BuildOptions o = options_;
  const runtime::ProgramPlan& plan = *program_.plan;
  for (size_t i = 0; i < plan.input_types.size() && i < inputs.size(); ++i) {
    const runtime::SymbolicShape& declared = plan.input_types[i].tensor.shape;
    if (!inputs[i].is_tensor() || inputs[i].tensor.ndim() != declared.size()) continue;
    for (size_t d = 0; d < declared.size(); ++d)
      if (const std::string* var = declared[d].var_name()) o.size_hints.emplace(*var, inputs[i].tensor.shape()[d]);
  }
  try {
    every_size_ = std::make_shared<const ProgramBuild>(build_for_every_size(program_, target_, o));
  } catch (const Error& e) {
    every_size_reason_ = e.what();
    return;
  }
  every_size_runner_ = std::make_unique<runtime::ProgramRunner>(
      every_size_->plan,
      [this](const runtime::ProgramStep& step, const std::vector<NDArray>& in, std::vector<NDArray>& out) {
        every_size_->stages.at(step.stage)->executor->run_handing_over(in, out);
      });
}

std::shared_ptr<const ProgramBuild> ProgramExecutor::every_size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return every_size_;
}

std::string ProgramExecutor::every_size_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return every_size_reason_;
}

void ProgramExecutor::run_stage(const runtime::ProgramStep& step, const std::vector<NDArray>& in,
                                std::vector<NDArray>& out) {
  StageCache& cache = stages_.at(step.stage);
  cache.origin = step.origin;
  if (cache.bound.empty()) cache.bound.assign(in.size(), false);
  auto it = cache.builds.find(key_of(in, cache.bound));
  if (it == cache.builds.end()) {
    StageBuild b;
    try {
      relay_ir::StageSpecialization spec = program_.stages.at(step.stage)->specialize(in, cache.bound);
      for (size_t i = 0; i < in.size(); ++i) cache.bound[i] = cache.bound[i] || spec.bound.at(i);
      b.signature = signature_of(in, cache.bound);
      b.result = std::make_shared<const BuildResult>(kept(build(spec.module, target_, options_)));
    } catch (const Error& e) {
      fail(step.origin, " at inputs ", signature_of(in, cache.bound), ": ", e.what());
    }
    if (cache.builds.size() >= kMaxBuildsPerStage)
      cache.builds.erase(std::min_element(cache.builds.begin(), cache.builds.end(), [](const auto& x, const auto& y) {
        return x.second.last_use < y.second.last_use;
      }));
    it = cache.builds.emplace(key_of(in, cache.bound), std::move(b)).first;
  }
  it->second.last_use = ++uses_;
  std::vector<NDArray> args;
  for (size_t i = 0; i < in.size(); ++i)
    if (!cache.bound[i]) args.push_back(in[i]);
  it->second.result->executor->run_handing_over(args, out);
}

std::vector<std::pair<std::string, std::vector<std::string>>> ProgramExecutor::builds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  if (every_size_) {
    std::vector<std::string> origins(every_size_->stages.size());
    std::function<void(const runtime::ProgramPlan&)> collect = [&](const runtime::ProgramPlan& p) {
      for (const runtime::ProgramStep& step : p.steps) {
        if (step.kind == runtime::ProgramStep::Kind::Stage) origins.at(step.stage) = step.origin;
        for (const auto& body : step.bodies) collect(*body);
      }
    };
    collect(*every_size_->plan);
    for (const std::string& origin : origins) out.push_back({origin, {"every size"}});
  }
  for (const StageCache& cache : stages_) {
    if (cache.builds.empty()) continue;
    std::vector<std::string> signatures;
    for (const auto& [key, b] : cache.builds) signatures.push_back(b.signature);
    out.emplace_back(cache.origin, std::move(signatures));
  }
  return out;
}

}  // namespace tessera::driver
