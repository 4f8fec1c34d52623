#include "driver/lower_call.h"

#include <unordered_map>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/printer.h"
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
  std::string name = kernel_description(call);
  std::string origin = call->origin;
  if (const auto* f = call->op.as<FunctionNode>()) {
    if (const auto* inner = f->body.as<CallNode>()) origin = inner->origin;
  }
  return origin.empty() ? name : name + " (node '" + origin + "')";
}

// The calls of ops inside a primitive function, producers first.
std::vector<const CallNode*> member_calls(const FunctionNode* f) {
  std::vector<const CallNode*> calls;
  for (const Expr& e : post_order(f->body))
    if (const auto* c = e.as<CallNode>()) calls.push_back(c);
  return calls;
}

// Builds the compute of a primitive function: each op's compute applied to its inputs' tensors.
// Returns the output tensors and the tensor of the anchor op (the one with the highest pattern).
std::vector<tensor_ir::Tensor> compose(const FunctionNode* f, const std::vector<tensor_ir::Tensor>& inputs,
                                       tensor_ir::Tensor* anchor) {
  std::unordered_map<const ExprNode*, tensor_ir::Tensor> value;
  for (size_t i = 0; i < f->params.size(); ++i) value[f->params[i].get()] = inputs[i];
  OpPattern best = OpPattern::Elemwise;
  for (const CallNode* c : member_calls(f)) {
    const OpDef* def = c->op_def();
    if (!def || !def->compute) fail(def ? def->name : "nested function", ": cannot be fused (no compute definition)");
    std::vector<tensor_ir::Tensor> args;
    for (const auto& a : c->args) args.push_back(value.at(a.get()));
    auto outs = def->compute(args, c->attrs, c->checked_type);
    if (outs.size() != 1) fail(def->name, ": operators with several outputs cannot be fused");
    value[c] = outs[0];
    if (!anchor->defined() || def->pattern > best) {
      best = def->pattern;
      *anchor = outs[0];
    }
  }
  return {value.at(f->body.get())};
}

}  // namespace

std::string kernel_description(const CallNode* call) {
  if (call->op_def()) return call->op_def()->name;
  std::string name = "fused";
  for (const CallNode* c : member_calls(call->op.as<FunctionNode>())) name += "_" + c->op_def()->name;
  return name;
}

std::string kernel_key(const CallNode* call) {
  if (const auto* f = call->op.as<FunctionNode>()) {
    PrintOptions o;
    o.show_origins = false;  // where a layer came from does not change its kernel
    return to_text(Expr(f), o);  // includes every type and attribute
  }
  std::string key = call->op_def()->name + "(";
  for (const auto& a : call->args) key += to_string(a->checked_type) + ",";
  key += ")";
  for (const auto& [k, v] : call->attrs.items()) key += k + "=" + attr_to_string(v) + ";";
  return key;
}

LoweredCall lower_call(const CallNode* call, const std::string& kernel_name) {
  const OpDef* def = call->op_def();
  const auto* fn = call->op.as<FunctionNode>();
  if (def && !def->compute) fail(describe(call), ": the operator has no compute definition yet");
  try {
    std::vector<tensor_ir::Tensor> inputs;
    for (size_t i = 0; i < call->args.size(); ++i) {
      const auto& t = as_tensor(call->args[i]->checked_type, "argument " + std::to_string(i));
      std::vector<tensor_ir::Expr> shape;
      for (int64_t d : t.shape) shape.push_back(tensor_ir::Expr(d));
      inputs.push_back(tensor_ir::placeholder(shape, t.dtype, "p" + std::to_string(i)));
    }
    tensor_ir::Tensor anchor;
    std::vector<tensor_ir::Tensor> outputs = fn ? compose(fn, inputs, &anchor) : def->compute(inputs, call->attrs, call->checked_type);
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
    auto schedule = schedule::default_cpu_schedule(outputs, anchor);
    std::vector<tensor_ir::Tensor> args = inputs;
    args.insert(args.end(), outputs.begin(), outputs.end());
    return {schedule::lower(*schedule, args, kernel_name), outputs.size()};
  } catch (const Error& e) {
    fail(describe(call), ": ", e.what());
  }
}

}  // namespace tessera::driver
