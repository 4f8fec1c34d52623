// A model whose inputs have symbolic dimensions (an exported dynamic batch or sequence length).
// First it is built once for every size: imported with its dimensions as variables (graph-IR
// symbolic types), its kernels compiled with their sizes as arguments and its memory planned as
// expressions of them, the tiles chosen for the sizes of the first call (size hints). Where the
// model needs a dimension as a constant (an operator not written for symbolic sizes), it is built
// once per combination of the dimensions' values instead, and symbolic_reason() says why: a call
// at a new size imports the model at those shapes, which checks every relation between them (a
// reshape's product, a broadcast), builds it like any static model and keeps the result for the
// next call of that size. Those builds share their constants (driver/constant_pool.h), and the
// least recently used is dropped past kMaxKept sizes.
// A call whose sizes meet the model's declared relations but not those the build for every size
// added (dimensions the import took as one, or as multiples: tensor_ir/dimension_must_equal.h,
// such as [N, L] + [N, M] at M = 1, a broadcast) is built for its sizes likewise.
// Hot sizes (specialize_sizes) are built now, each as a static model, and serve the calls of
// their sizes however the others are built: the static code where the sizes are known in
// advance, the build for every size for the rest (as TVM's Relax dispatches specialized kernels).
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

  // The module with its dimensions as variables (the importer's `symbolic`); it throws naming the
  // operator that needs a constant.
  using Symbolic = std::function<relay_ir::Module()>;

  // `inputs`: the model's inputs in run order, their symbolic shapes as declared. Without
  // `symbolic`, every size is built on its own.
  ShapeSpecializedBuild(std::vector<runtime::BufferSpec> inputs, Specialize specialize, targets::Target target,
                        BuildOptions options, Symbolic symbolic = nullptr);

  const std::vector<runtime::BufferSpec>& inputs() const { return inputs_; }
  // The dimension variables, in order of first appearance in the inputs.
  const std::vector<std::string>& vars() const { return vars_; }
  const targets::Target& target() const { return target_; }

  // The build that runs inputs of `shapes` (one per input, in order): the one for every size when
  // there is one (built on the first call), else the one for these sizes, built on first use.
  // Throws naming the input and dimension that do not fit the declared shapes (a constant
  // dimension, or a variable that two inputs give different values).
  std::shared_ptr<const BuildResult> get(const std::vector<std::vector<int64_t>>& shapes);
  // Builds the model at each of `sizes` (a value for every variable) now, as static models that
  // calls at those sizes run (never dropped). Throws naming a missing or unknown variable, or the
  // size whose build fails.
  void specialize_sizes(const std::vector<std::map<std::string, int64_t>>& sizes);
  // The inputs' shapes at the variables' `values` (throws naming a variable without one).
  std::vector<std::vector<int64_t>> shapes_at(const std::map<std::string, int64_t>& values) const;
  // "N = 1, L = 128" in the order of vars() (a variable without a value by its name alone).
  std::string sizes_str(const std::map<std::string, int64_t>& values) const;
  // The sizes specialize_sizes built, in order.
  std::vector<std::map<std::string, int64_t>> hot_sizes() const;
  // Which build get() runs inputs of `shapes` with, without building one: "specialized for N = 1,
  // L = 128", "the build for every size", "built for N = 2, L = 7 on its first run", or "not
  // built yet: ..." (throws as get() does for shapes that do not fit).
  std::string served_by(const std::vector<std::vector<int64_t>>& shapes) const;
  // The build of these sizes alone (static shapes: for export), built on first use.
  std::shared_ptr<const BuildResult> specialized(const std::vector<std::vector<int64_t>>& shapes);
  // The build for every size, if the first call made one.
  std::shared_ptr<const BuildResult> symbolic() const;
  // The build for every size, made now if no call has tried it yet (its tiles chosen at the
  // options' size hints, else the default): what an export needs where the model cannot run here
  // (a GPU's). Null when the model is built per size (symbolic_reason() says why).
  std::shared_ptr<const BuildResult> symbolic_now();
  // Why there is no build for every size ("" while none was tried, or when there is one).
  std::string symbolic_reason() const;
  // The variables' values of each build of one size so far (kept or dropped since), in the order
  // they were built.
  std::vector<std::map<std::string, int64_t>> built() const;

 private:
  // The input shapes of `plan` (the build for every size), each dimension that the model declares
  // a variable of its own and the build another variable (two it took as one) or an expression of
  // others (a mask's S as P + L) back to its own; a multiple (H_div2*2) stays.
  std::vector<runtime::SymbolicShape> without_merges(const runtime::GraphPlan& plan) const;
  std::vector<runtime::BufferSpec> inputs_;
  std::vector<std::string> vars_;
  std::vector<std::vector<int64_t>> taken_shapes_;  // the shapes the build for every size last took
  Specialize specialize_;
  Symbolic symbolic_module_;
  targets::Target target_;
  BuildOptions options_;
  mutable std::mutex mutex_;  // one build at a time; calls of built sizes wait for it too
  struct Kept {
    std::shared_ptr<const BuildResult> build;
    uint64_t last_use = 0;
    bool hot = false;  // from specialize_sizes: never dropped, and chosen before the build for every size
  };
  std::map<std::vector<int64_t>, Kept> builds_;  // by the vars' values
  uint64_t uses_ = 0;
  std::vector<std::vector<int64_t>> order_;
  // Builds the build for every size once, its hints the options' and then `hints`. mutex_ held.
  void try_symbolic(const std::map<std::string, int64_t>& hints);
  bool symbolic_tried_ = false;
  std::shared_ptr<const BuildResult> symbolic_;
  std::string symbolic_reason_;

  // The declared shapes bound to `shapes`: the variables' values (throws naming what does not fit).
  std::map<std::string, int64_t> bind(const std::vector<std::vector<int64_t>>& shapes) const;
  // The variables' values in vars() order: the key of a build of one size.
  std::vector<int64_t> key_of(const std::map<std::string, int64_t>& values) const;
  std::map<std::string, int64_t> values_of(const std::vector<int64_t>& key) const;
  // specialized() for shapes already bound to `values`; a hot build is kept for good.
  std::shared_ptr<const BuildResult> specialized_at(const std::vector<std::vector<int64_t>>& shapes,
                                                    const std::map<std::string, int64_t>& values, bool hot = false);
};

}  // namespace tessera::driver
