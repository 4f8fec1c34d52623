#include "runtime/graph_plan.h"

#include "runtime/error.h"

namespace tessera::runtime {

std::vector<SymbolicShape> input_shapes(const GraphPlan& plan) {
  std::vector<SymbolicShape> shapes;
  for (int id : plan.inputs) shapes.push_back(plan.symbolic_shapes.at(id));
  return shapes;
}

void check_input_shapes(const GraphPlan& plan, const std::vector<std::vector<int64_t>>& shapes) {
  if (!plan.is_symbolic()) return;
  if (shapes.size() != plan.inputs.size()) fail("graph plan: ", shapes.size(), " inputs for ", plan.inputs.size());
  std::vector<std::string> names;
  for (int id : plan.inputs) names.push_back("'" + plan.tensors.at(id).name + "'");
  bind_shape_vars(input_shapes(plan), shapes, names, "input");
}

bool takes_shapes(const GraphPlan& plan, const std::vector<std::vector<int64_t>>& shapes) {
  return !plan.is_symbolic() || takes_shapes(input_shapes(plan), shapes);
}

bool takes_shapes(const std::vector<SymbolicShape>& expected, const std::vector<std::vector<int64_t>>& shapes) {
  if (shapes.size() != expected.size()) return false;
  try {
    bind_shape_vars(expected, shapes, std::vector<std::string>(expected.size()), "input");
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::map<std::string, int64_t> hot_sizes_of(const GraphPlan& plan, const GraphPlan& hot) {
  if (!plan.is_symbolic()) fail("graph plan: a plan of static sizes takes no specialized plans");
  if (hot.is_symbolic()) fail("graph plan: a specialized plan has symbolic sizes");
  if (hot.inputs.size() != plan.inputs.size() || hot.outputs.size() != plan.outputs.size())
    fail("graph plan: a specialized plan has ", hot.inputs.size(), " inputs and ", hot.outputs.size(),
         " outputs, the model ", plan.inputs.size(), " and ", plan.outputs.size());
  auto same_tensor = [&](const char* what, size_t i, int id, int model_id) {
    const auto& t = hot.tensors.at(id);
    const auto& m = plan.tensors.at(model_id);
    if (t.name != m.name || t.dtype != m.dtype)
      fail("graph plan: a specialized plan's ", what, " ", i, " is '", t.name, "' ", t.dtype.str(),
           ", the model's is '", m.name, "' ", m.dtype.str());
  };
  std::vector<SymbolicShape> expected;
  std::vector<std::vector<int64_t>> got;
  std::vector<std::string> names;
  for (size_t i = 0; i < hot.inputs.size(); ++i) {
    same_tensor("input", i, hot.inputs[i], plan.inputs[i]);
    expected.push_back(plan.symbolic_shapes.at(plan.inputs[i]));
    got.push_back(hot.tensors.at(hot.inputs[i]).shape);
    names.push_back("'" + plan.tensors.at(plan.inputs[i]).name + "'");
  }
  const std::map<std::string, int64_t> values =
      bind_shape_vars(expected, got, names, "graph plan: a specialized plan's input");
  for (const std::string& v : plan.shape_vars)
    if (!values.count(v)) fail("graph plan: a specialized plan's inputs give the dimension variable ", v, " no value");
  for (size_t i = 0; i < hot.outputs.size(); ++i) {
    same_tensor("output", i, hot.outputs[i], plan.outputs[i]);
    const auto& t = hot.tensors.at(hot.outputs[i]);
    std::vector<int64_t> want;
    for (const ShapeExpr& d : plan.symbolic_shapes.at(plan.outputs[i])) want.push_back(d.evaluate(values));
    if (t.shape != want)
      fail("graph plan: the plan specialized for ", sizes_str(plan, values), " gives output '", t.name, "' of shape ",
           shape_str(t.shape), ", the model ", shape_str(want));
  }
  return values;
}

std::string sizes_str(const GraphPlan& plan, const std::map<std::string, int64_t>& values) {
  std::string s;
  for (const std::string& v : plan.shape_vars) s += (s.empty() ? "" : ", ") + v + " = " + std::to_string(values.at(v));
  return s;
}

}  // namespace tessera::runtime
