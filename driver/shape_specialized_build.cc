#include "driver/shape_specialized_build.h"

#include <algorithm>

#include "driver/constant_pool.h"
#include "runtime/error.h"

namespace tessera::driver {

BuildResult kept(BuildResult r) {
  r.optimized = relay_ir::Module();
  return r;
}

ShapeSpecializedBuild::ShapeSpecializedBuild(std::vector<runtime::BufferSpec> inputs, Specialize specialize,
                                             targets::Target target, BuildOptions options, Symbolic symbolic)
    : inputs_(std::move(inputs)),
      specialize_(std::move(specialize)),
      symbolic_module_(std::move(symbolic)),
      target_(std::move(target)),
      options_(options) {
  validate(options_);
  if (!options_.constants) options_.constants = std::make_shared<ConstantPool>();
  for (const runtime::BufferSpec& in : inputs_)
    for (const runtime::ShapeExpr& d : in.shape) d.collect_vars(vars_);
}

std::map<std::string, int64_t> ShapeSpecializedBuild::bind(const std::vector<std::vector<int64_t>>& shapes) const {
  if (shapes.size() != inputs_.size()) fail("the model takes ", inputs_.size(), " inputs, got ", shapes.size());
  std::vector<runtime::SymbolicShape> declared;
  std::vector<std::string> names;
  for (const runtime::BufferSpec& in : inputs_) {
    declared.push_back(in.shape);
    names.push_back("input '" + in.name + "'");
  }
  return runtime::bind_shape_vars(declared, shapes, names, "model:");
}

std::shared_ptr<const BuildResult> ShapeSpecializedBuild::get(const std::vector<std::vector<int64_t>>& shapes) {
  const std::map<std::string, int64_t> values = bind(shapes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (symbolic_module_ && !symbolic_tried_) {
      symbolic_tried_ = true;
      BuildOptions o = options_;
      o.size_hints = values;  // tiles chosen for the sizes of the first call
      try {
        symbolic_ = std::make_shared<const BuildResult>(kept(build(symbolic_module_(), target_, o)));
      } catch (const Error& e) {
        symbolic_reason_ = e.what();
      }
    }
    if (symbolic_) return symbolic_;
  }
  return specialized_at(shapes, values);
}

std::shared_ptr<const BuildResult> ShapeSpecializedBuild::symbolic() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return symbolic_;
}

std::string ShapeSpecializedBuild::symbolic_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return symbolic_reason_;
}

std::shared_ptr<const BuildResult> ShapeSpecializedBuild::specialized(const std::vector<std::vector<int64_t>>& shapes) {
  return specialized_at(shapes, bind(shapes));
}

std::shared_ptr<const BuildResult> ShapeSpecializedBuild::specialized_at(
    const std::vector<std::vector<int64_t>>& shapes, const std::map<std::string, int64_t>& values) {
  std::vector<int64_t> key;
  for (const std::string& v : vars_) key.push_back(values.at(v));
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = builds_.find(key);
  if (it != builds_.end()) {
    it->second.last_use = ++uses_;
    return it->second.build;
  }
  std::map<std::string, std::vector<int64_t>> at;
  for (size_t i = 0; i < inputs_.size(); ++i) at[inputs_[i].name] = shapes[i];
  std::string sizes;
  for (const std::string& v : vars_) sizes += (sizes.empty() ? "" : ", ") + v + " = " + std::to_string(values.at(v));
  std::shared_ptr<const BuildResult> result;
  try {
    result = std::make_shared<const BuildResult>(kept(build(specialize_(at), target_, options_)));
  } catch (const Error& e) {
    fail("the model at ", sizes, ": ", e.what());
  }
  if (builds_.size() >= kMaxKept)
    builds_.erase(std::min_element(builds_.begin(), builds_.end(),
                                   [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; }));
  builds_[key] = {result, ++uses_};
  order_.push_back(key);
  return result;
}

std::vector<std::map<std::string, int64_t>> ShapeSpecializedBuild::built() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::map<std::string, int64_t>> out;
  for (const auto& key : order_) {
    std::map<std::string, int64_t> values;
    for (size_t i = 0; i < vars_.size(); ++i) values[vars_[i]] = key[i];
    out.push_back(std::move(values));
  }
  return out;
}

}  // namespace tessera::driver
