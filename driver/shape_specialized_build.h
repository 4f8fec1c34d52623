// A model whose inputs have symbolic dimensions (an exported dynamic batch or sequence length),
// built once per combination of the dimensions' values: a call at a new size imports the model at
// those shapes, which checks every relation between them (a reshape's product, a broadcast),
// builds it like any static model and keeps the result for the next call of that size. The code
// is the static build's; a new size costs one build (the graph IR's symbolic types, which would
// compile one kernel set for all sizes, are not there yet). The builds share their constants
// (driver/constant_pool.h), and the least recently used is dropped past kMaxKept sizes.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/build.h"
#include "runtime/kernel.h"

namespace tessera::driver {

// `r` without its optimized graph, which holds the constants a second time (those of the plan are
// shared): what a cache of builds keeps.
BuildResult kept(BuildResult r);

class ShapeSpecializedBuild {
 public:
  static constexpr size_t kMaxKept = 32;

  // The module at concrete input shapes (input name -> shape).
  using Specialize = std::function<relay_ir::Module(const std::map<std::string, std::vector<int64_t>>& shapes)>;

  // `inputs`: the model's inputs in run order, their symbolic shapes as declared.
  ShapeSpecializedBuild(std::vector<runtime::BufferSpec> inputs, Specialize specialize, targets::Target target,
                        BuildOptions options);

  const std::vector<runtime::BufferSpec>& inputs() const { return inputs_; }
  // The dimension variables, in order of first appearance in the inputs.
  const std::vector<std::string>& vars() const { return vars_; }
  const targets::Target& target() const { return target_; }

  // The build for inputs of `shapes` (one per input, in order), built on first use; throws naming
  // the input and dimension that do not fit the declared shapes (a constant dimension, or a
  // variable that two inputs give different values).
  std::shared_ptr<const BuildResult> get(const std::vector<std::vector<int64_t>>& shapes);
  // The variables' values of each build so far (kept or dropped since), in the order they were built.
  std::vector<std::map<std::string, int64_t>> built() const;

 private:
  std::vector<runtime::BufferSpec> inputs_;
  std::vector<std::string> vars_;
  Specialize specialize_;
  targets::Target target_;
  BuildOptions options_;
  mutable std::mutex mutex_;  // one build at a time; calls of built sizes wait for it too
  struct Kept {
    std::shared_ptr<const BuildResult> build;
    uint64_t last_use = 0;
  };
  std::map<std::vector<int64_t>, Kept> builds_;  // by the vars' values
  uint64_t uses_ = 0;
  std::vector<std::vector<int64_t>> order_;
};

}  // namespace tessera::driver
