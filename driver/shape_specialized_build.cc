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
  std::shared_ptr<const BuildResult> every_size;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto hot = builds_.find(key_of(values));
    if (hot != builds_.end() && hot->second.hot) return hot->second.build;
    try_symbolic(values);  // tiles chosen for the first call's sizes, unless given
    if (symbolic_ && shapes == taken_shapes_) return symbolic_;
    every_size = symbolic_;
  }
  if (!every_size) return specialized_at(shapes, values);
  if (runtime::takes_shapes(every_size->plan, shapes)) {
    std::lock_guard<std::mutex> lock(mutex_);
    taken_shapes_ = shapes;
    return every_size;
  }
  // Sizes that only the dimensions its import took as one keep from the build for every size (a
  // broadcast of M = 1 against L): built for them, where they are valid; where not, that build's
  // error. Any other relation (a constant, a multiple) is its run's error.
  if (!runtime::takes_shapes(without_merges(every_size->plan), shapes)) return every_size;
  try {
    return specialized_at(shapes, values);
  } catch (const Error&) {
    runtime::check_input_shapes(every_size->plan, shapes);
    throw;
  }
}

std::vector<runtime::SymbolicShape> ShapeSpecializedBuild::without_merges(const runtime::GraphPlan& plan) const {
  std::vector<runtime::SymbolicShape> shapes = runtime::input_shapes(plan);
  for (size_t i = 0; i < inputs_.size() && i < shapes.size(); ++i)
    for (size_t d = 0; d < shapes[i].size() && d < inputs_[i].shape.size(); ++d)
      if (const auto multiple = runtime::scaled_var(shapes[i][d]);
          inputs_[i].shape[d].var_name() && !shapes[i][d].is_constant() && !(multiple && multiple->second > 1))
        shapes[i][d] = inputs_[i].shape[d];
  return shapes;
}

void ShapeSpecializedBuild::try_symbolic(const std::map<std::string, int64_t>& hints) {
  if (!symbolic_module_ || symbolic_tried_) return;
  symbolic_tried_ = true;
  BuildOptions o = options_;
  o.size_hints.insert(hints.begin(), hints.end());
  try {
    symbolic_ = std::make_shared<const BuildResult>(kept(build(symbolic_module_(), target_, o)));
  } catch (const Error& e) {
    symbolic_reason_ = e.what();
  }
}

std::shared_ptr<const BuildResult> ShapeSpecializedBuild::symbolic_now() {
  std::lock_guard<std::mutex> lock(mutex_);
  try_symbolic({});
  return symbolic_;
}

void ShapeSpecializedBuild::specialize_sizes(const std::vector<std::map<std::string, int64_t>>& sizes) {
  for (const std::map<std::string, int64_t>& values : sizes) {
    for (const auto& [var, value] : values)
      if (std::find(vars_.begin(), vars_.end(), var) == vars_.end())
        fail("specialize: the model has no dimension '", var, "' (its dimensions are: ", sizes_str({}), ")");
    for (const std::string& v : vars_)
      if (!values.count(v)) fail("specialize: ", sizes_str(values), " gives no value for the dimension ", v);
    const std::vector<std::vector<int64_t>> shapes = shapes_at(values);
    specialized_at(shapes, bind(shapes), /*hot=*/true);
  }
}

std::vector<std::vector<int64_t>> ShapeSpecializedBuild::shapes_at(const std::map<std::string, int64_t>& values) const {
  std::vector<std::vector<int64_t>> shapes;
  for (const runtime::BufferSpec& in : inputs_) {
    std::vector<int64_t> shape;
    for (const runtime::ShapeExpr& d : in.shape) shape.push_back(d.evaluate(values));
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

std::vector<std::map<std::string, int64_t>> ShapeSpecializedBuild::hot_sizes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::map<std::string, int64_t>> out;
  for (const auto& key : order_) {
    auto it = builds_.find(key);
    if (it != builds_.end() && it->second.hot) out.push_back(values_of(key));
  }
  return out;
}

std::string ShapeSpecializedBuild::served_by(const std::vector<std::vector<int64_t>>& shapes) const {
  const std::map<std::string, int64_t> values = bind(shapes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = builds_.find(key_of(values));
  if (it != builds_.end() && it->second.hot) return "specialized for " + sizes_str(values);
  if (symbolic_ && runtime::takes_shapes(symbolic_->plan, shapes)) return "the build for every size";
  if (it != builds_.end()) return "built for " + sizes_str(values) + " on its first run";
  if (!symbolic_tried_ && symbolic_module_) return "not built yet: the first run builds the model for every size";
  return "not built yet: the first run at " + sizes_str(values) + " builds the model for these sizes";
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

std::vector<int64_t> ShapeSpecializedBuild::key_of(const std::map<std::string, int64_t>& values) const {
  std::vector<int64_t> key;
  for (const std::string& v : vars_) key.push_back(values.at(v));
  return key;
}

std::map<std::string, int64_t> ShapeSpecializedBuild::values_of(const std::vector<int64_t>& key) const {
  std::map<std::string, int64_t> values;
  for (size_t i = 0; i < vars_.size(); ++i) values[vars_[i]] = key[i];
  return values;
}

std::string ShapeSpecializedBuild::sizes_str(const std::map<std::string, int64_t>& values) const {
  std::string s;
  for (const std::string& v : vars_) {
    s += (s.empty() ? "" : ", ") + v;
    if (values.count(v)) s += " = " + std::to_string(values.at(v));
  }
  return s;
}

std::shared_ptr<const BuildResult> ShapeSpecializedBuild::specialized_at(
    const std::vector<std::vector<int64_t>>& shapes, const std::map<std::string, int64_t>& values, bool hot) {
  const std::vector<int64_t> key = key_of(values);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = builds_.find(key);
  if (it != builds_.end()) {
    it->second.last_use = ++uses_;
    it->second.hot |= hot;
    return it->second.build;
  }
  std::map<std::string, std::vector<int64_t>> at;
  for (size_t i = 0; i < inputs_.size(); ++i) at[inputs_[i].name] = shapes[i];
  std::shared_ptr<const BuildResult> result;
  try {
    result = std::make_shared<const BuildResult>(kept(build(specialize_(at), target_, options_)));
  } catch (const Error& e) {
    fail("the model at ", sizes_str(values), ": ", e.what());
  }
  std::vector<decltype(builds_)::iterator> droppable;
  for (auto b = builds_.begin(); b != builds_.end(); ++b)
    if (!b->second.hot) droppable.push_back(b);
  if (droppable.size() >= kMaxKept)
    builds_.erase(*std::min_element(droppable.begin(), droppable.end(), [](const auto& a, const auto& b) {
      return a->second.last_use < b->second.last_use;
    }));
  builds_[key] = {result, ++uses_, hot};
  order_.push_back(key);
  return result;
}

std::vector<std::map<std::string, int64_t>> ShapeSpecializedBuild::built() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::map<std::string, int64_t>> out;
  for (const auto& key : order_) out.push_back(values_of(key));
  return out;
}

}  // namespace tessera::driver
