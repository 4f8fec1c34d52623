#include "relay_ir/transforms/infer_type.h"

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "runtime/error.h"
#include "tensor_ir/dimension_must_equal.h"

namespace tessera::relay_ir {

namespace {

std::string call_name(const CallNode* c) {
  std::string name = c->op_def() ? c->op_def()->name : "function call";
  return c->origin.empty() ? name : name + " (node '" + c->origin + "')";
}

Type type_of_call(const CallNode* c) {
  std::vector<Type> args;
  for (const auto& a : c->args) args.push_back(a->checked_type);
  if (const OpDef* def = c->op_def()) {
    try {
      return def->infer_type(args, c->attrs);
    } catch (const tensor_ir::DimensionRequirement& e) {
      throw e.in(call_name(c));
    } catch (const Error& e) {
      std::string types;
      for (const auto& t : args) types += (types.empty() ? "" : ", ") + to_string(t);
      fail(call_name(c), ": ", e.what(), " (argument types: ", types, ")");
    }
  }
  const auto* f = c->op.as<FunctionNode>();
  for (size_t i = 0; i < args.size(); ++i)
    if (!type_equal(args[i], f->params[i]->checked_type))
      fail("function call: argument ", i, " is ", to_string(args[i]), ", the parameter is ",
           to_string(f->params[i]->checked_type));
  return f->body->checked_type;
}

}  // namespace

Type infer_type(const Expr& root) {
  for (const Expr& e : post_order(root)) {
    if (e->checked_type) continue;  // nodes are immutable: a type once inferred stays right
    Type t;
    if (const auto* v = e.as<VarNode>()) {
      if (!v->type_annotation) fail("parameter %", v->name, " has no type");
      t = v->type_annotation;
    } else if (const auto* c = e.as<ConstantNode>()) {
      t = tensor_type(c->data.shape(), c->data.dtype());
    } else if (e.as<OpNode>()) {
      continue;  // an op by itself has no value type
    } else if (const auto* c = e.as<CallNode>()) {
      t = type_of_call(c);
    } else if (const auto* tu = e.as<TupleNode>()) {
      std::vector<Type> elements;
      for (const auto& x : tu->elements) elements.push_back(x->checked_type);
      t = tuple_type(elements);
    } else if (const auto* g = e.as<TupleGetItemNode>()) {
      const auto* tt = g->tuple->checked_type.as<TupleTypeNode>();
      if (!tt) fail("projection .", g->index, " of a non-tuple value of type ", to_string(g->tuple->checked_type));
      if (g->index >= static_cast<int64_t>(tt->elements.size()))
        fail("projection .", g->index, " of a tuple with ", tt->elements.size(), " elements");
      t = tt->elements[g->index];
    } else if (const auto* f = e.as<FunctionNode>()) {
      std::vector<Type> params;
      for (const auto& p : f->params) params.push_back(p->checked_type);
      t = func_type(params, f->body->checked_type);
    }
    e->checked_type = t;
  }
  return root->checked_type;
}

Module infer_type(const Module& m) {
  for (const auto& [name, f] : m.functions()) infer_type(Expr(f));
  return m;
}

}  // namespace tessera::relay_ir
