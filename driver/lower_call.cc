#include "driver/lower_call.h"

#include "relay_ir/op.h"
#include "runtime/error.h"
#include "schedule/lower.h"
#include "schedule/templates/cpu.h"

namespace tessera::driver {

using namespace relay_ir;

namespace {

std::vector<const TensorTypeNode*> flatten(const Type& t) {
  if (const auto* tt = t.as<TensorTypeNode>()) return {tt};
  std::vector<const TensorTypeNode*> out;
  for (const auto& e : t.as<TupleTypeNode>()->elements) {
    auto sub = flatten(e);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::string describe(const CallNode* call) {
  std::string name = call->op_def() ? call->op_def()->name : "fused function";
  return call->origin.empty() ? name : name + " (node '" + call->origin + "')";
}

}  // namespace

std::string kernel_key(const CallNode* call) {
  std::string key = call->op_def()->name + "(";
  for (const auto& a : call->args) key += to_string(a->checked_type) + ",";
  key += ")";
  for (const auto& [k, v] : call->attrs.items()) key += k + "=" + attr_to_string(v) + ";";
  return key;
}

LoweredCall lower_call(const CallNode* call, const std::string& kernel_name) {
  const OpDef* def = call->op_def();
  if (!def) fail("internal error: lower_call on a call of a function");
  if (!def->compute) fail(describe(call), ": the operator has no compute definition yet");
  try {
    std::vector<tensor_ir::Tensor> inputs;
    for (size_t i = 0; i < call->args.size(); ++i) {
      const auto& t = as_tensor(call->args[i]->checked_type, "argument " + std::to_string(i));
      std::vector<tensor_ir::Expr> shape;
      for (int64_t d : t.shape) shape.push_back(tensor_ir::Expr(d));
      inputs.push_back(tensor_ir::placeholder(shape, t.dtype, "p" + std::to_string(i)));
    }
    std::vector<tensor_ir::Tensor> outputs = def->compute(inputs, call->attrs, call->checked_type);
    auto expected = flatten(call->checked_type);
    if (outputs.size() != expected.size())
      fail("internal error: compute made ", outputs.size(), " outputs, the type has ", expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::vector<int64_t> shape;
      for (size_t d = 0; d < outputs[i].ndim(); ++d) shape.push_back(outputs[i]->dim(d));
      if (shape != expected[i]->shape || outputs[i].dtype() != expected[i]->dtype)
        fail("internal error: compute output ", i, " is ", outputs[i].dtype().str(), runtime::shape_str(shape),
             ", the type relation says ", to_string(Type(expected[i])));
    }
    auto schedule = schedule::default_cpu_schedule(outputs);
    std::vector<tensor_ir::Tensor> args = inputs;
    args.insert(args.end(), outputs.begin(), outputs.end());
    return {schedule::lower(*schedule, args, kernel_name), outputs.size()};
  } catch (const Error& e) {
    fail(describe(call), ": ", e.what());
  }
}

}  // namespace tessera::driver
