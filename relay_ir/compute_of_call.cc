#include "relay_ir/compute_of_call.h"

#include <unordered_map>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "runtime/element.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::relay_ir {

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

// A one-element constant inside a fused function (FuseOps makes them literals).
tensor_ir::Tensor literal(const ConstantNode* c) {
  if (c->data.numel() != 1)
    fail("internal error: a constant of ", c->data.numel(), " elements inside a fused function");
  std::vector<tensor_ir::Expr> shape;
  for (int i = 0; i < c->data.ndim(); ++i) shape.push_back(tensor_ir::Expr(c->data.shape()[i]));
  const tensor_ir::Expr value = tensor_ir::make_const(c->data.dtype(), runtime::element_as_double(c->data, 0));
  return tensor_ir::compute(
      shape, [value](const std::vector<tensor_ir::Var>&) { return value; }, "literal", "literal");
}

// Each op's compute applied to its inputs' tensors; the anchor is the op of highest pattern.
std::vector<tensor_ir::Tensor> compose(const FunctionNode* f, const std::vector<tensor_ir::Tensor>& inputs,
                                       const schedule::HardwareParams& hardware, tensor_ir::Tensor* anchor) {
  std::unordered_map<const ExprNode*, tensor_ir::Tensor> value;
  for (size_t i = 0; i < f->params.size(); ++i) value[f->params[i].get()] = inputs[i];
  OpPattern best = OpPattern::Elemwise;
  for (const CallNode* c : member_calls(f)) {
    const OpDef* def = c->op_def();
    if (!def || !def->compute) fail(def ? def->name : "nested function", ": cannot be fused (no compute definition)");
    std::vector<tensor_ir::Tensor> args;
    for (const auto& a : c->args)
      args.push_back(a.as<ConstantNode>() ? literal(a.as<ConstantNode>()) : value.at(a.get()));
    auto outs = def->compute(args, with_registers(c->attrs, hardware), c->checked_type);
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

std::string call_description(const CallNode* call) {
  if (call->op_def()) return call->op_def()->name;
  std::string name = "fused";
  for (const CallNode* c : member_calls(call->op.as<FunctionNode>())) name += "_" + c->op_def()->name;
  return name;
}

std::string call_origin(const CallNode* call) {
  std::string name = call_description(call);
  std::string origin = call->origin;
  if (const auto* f = call->op.as<FunctionNode>()) {
    if (const auto* inner = f->body.as<CallNode>()) origin = inner->origin;
  }
  return origin.empty() ? name : name + " (node '" + origin + "')";
}

Attrs with_registers(const Attrs& attrs, const schedule::HardwareParams& hardware) {
  // A layout packed ahead of time (AlterOpLayout) names the registers it was packed for: the
  // kernel reading it must be sized the same.
  if (attrs.has("vector_bytes") && attrs.get_int("vector_bytes") > 0) return attrs;
  return set_registers(attrs, hardware.registers);
}

Attrs set_registers(Attrs attrs, const tensor_ir::ops::Registers& regs) {
  attrs.set("vector_bytes", regs.vector_bytes);
  attrs.set("vector_registers", regs.count);
  return attrs;
}

tensor_ir::ops::Registers registers_of(const Attrs& attrs, const std::string& op) {
  tensor_ir::ops::Registers r;
  if (attrs.has("vector_bytes") && attrs.has("vector_registers"))
    r = {attrs.get_int("vector_bytes"), attrs.get_int("vector_registers")};
  if (r.vector_bytes <= 0 || r.count <= 0)
    fail(op, ": the target's vector registers are not known (compute_of_call gives them from the target's hardware)");
  return r;
}

CallCompute compute_of_call(const CallNode* call, const schedule::HardwareParams& hardware) {
  const OpDef* def = call->op_def();
  const auto* fn = call->op.as<FunctionNode>();
  if (def && !def->compute) fail(call_origin(call), ": the operator has no compute definition yet");
  try {
    CallCompute c;
    c.hardware = hardware;
    for (size_t i = 0; i < call->args.size(); ++i) {
      const auto& t = as_tensor(call->args[i]->checked_type, "argument " + std::to_string(i));
      c.inputs.push_back(tensor_ir::placeholder(t.shape.dims(), t.dtype, "p" + std::to_string(i)));
    }
    c.outputs = fn ? compose(fn, c.inputs, hardware, &c.anchor)
                   : def->compute(c.inputs, with_registers(call->attrs, hardware), call->checked_type);
    auto expected = flatten(call->checked_type);
    if (c.outputs.size() != expected.size())
      fail("internal error: compute made ", c.outputs.size(), " outputs, the type has ", expected.size());
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      Shape shape(c.outputs[i]->shape);
      if (shape != expected[i]->shape || c.outputs[i].dtype() != expected[i]->dtype)
        fail("internal error: compute output ", i, " is ", c.outputs[i].dtype().str(), shape.str(),
             ", the type relation says ", to_string(Type(expected[i])));
    }
    return c;
  } catch (const tensor_ir::ops::WeightPackedForAnotherForm& e) {
    throw tensor_ir::ops::WeightPackedForAnotherForm(call_origin(call) + ": " + e.what());
  } catch (const Error& e) {
    fail(call_origin(call), ": ", e.what());
  }
}

std::vector<const CallNode*> member_calls(const FunctionNode* f) {
  std::vector<const CallNode*> calls;
  for (const Expr& e : post_order(f->body))
    if (const auto* c = e.as<CallNode>()) calls.push_back(c);
  return calls;
}

}  // namespace tessera::relay_ir
