#include "relay_ir/transforms/gradient.h"

#include <unordered_map>
#include <unordered_set>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/ops/grad_util.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

namespace {

bool differentiable(const Type& t) {
  if (const auto* tt = t.as<TensorTypeNode>()) return tt->dtype.is_float();
  if (const auto* tu = t.as<TupleTypeNode>()) {
    for (const auto& e : tu->elements)
      if (differentiable(e)) return true;
  }
  return false;
}

std::string describe(const CallNode* c) {
  std::string name = c->op_def() ? c->op_def()->name : "function call";
  return c->origin.empty() ? name : name + " (node '" + c->origin + "')";
}

class ReverseMode {
 public:
  ReverseMode(const Function& f, const std::vector<Var>& wrt) : f_(f) {
    std::unordered_set<const ExprNode*> targets;
    for (const auto& v : wrt) targets.insert(v.get());
    // A node needs a cotangent only if some wrt parameter flows into it.
    for (const Expr& e : post_order(f->body)) {
      bool needs = targets.count(e.get()) > 0;
      for (const auto& c : children(e)) needs |= needs_.count(c.get()) > 0;
      if (needs && differentiable(e->checked_type)) needs_.insert(e.get());
    }
  }

  // Seeds the cotangent of an output.
  void seed(const Expr& output, const Expr& cotangent) { accumulate(output, cotangent); }

  void run() {
    auto order = post_order(f_->body);
    for (auto it = order.rbegin(); it != order.rend(); ++it) propagate(*it);
  }

  Expr gradient_of(const Var& v) {
    auto it = adjoint_.find(v.get());
    return it != adjoint_.end() ? it->second : zeros_like(v->checked_type);
  }

 private:
  // Cotangents of tuple values are kept per element; a tensor's is one expression.
  void accumulate(const Expr& node, const Expr& g) {
    if (!g || !needs_.count(node.get())) return;
    infer_type(g);
    if (node->checked_type.as<TupleTypeNode>()) {
      const auto* tu = g.as<TupleNode>();
      if (!tu) fail("internal error: the cotangent of a tuple is not a tuple");
      for (size_t i = 0; i < tu->elements.size(); ++i) accumulate_element(node, i, tu->elements[i]);
      return;
    }
    if (!type_equal(g->checked_type, node->checked_type))
      fail("internal error: a cotangent of type ", to_string(g->checked_type), " for a value of type ",
           to_string(node->checked_type));
    auto it = adjoint_.find(node.get());
    if (it == adjoint_.end()) adjoint_[node.get()] = g;
    else it->second = add(it->second, g);
  }

  void accumulate_element(const Expr& tuple, size_t i, const Expr& g) {
    if (!g) return;
    auto& elements = tuple_adjoint_[tuple.get()];
    size_t n = tuple->checked_type.as<TupleTypeNode>()->elements.size();
    elements.resize(n);
    elements[i] = elements[i] ? add(elements[i], g) : g;
  }

  // The cotangent of a node as one expression (a Tuple, zeros for unused elements, for tuples).
  Expr cotangent(const Expr& node) {
    if (const auto* tt = node->checked_type.as<TupleTypeNode>()) {
      auto it = tuple_adjoint_.find(node.get());
      if (it == tuple_adjoint_.end()) return Expr();
      std::vector<Expr> elements;
      for (size_t i = 0; i < tt->elements.size(); ++i) {
        Expr g = i < it->second.size() ? it->second[i] : Expr();
        elements.push_back(g ? g
                             : (tt->elements[i].as<TensorTypeNode>() && differentiable(tt->elements[i])
                                    ? zeros_like(tt->elements[i])
                                    : Expr()));
      }
      return tuple(elements);
    }
    auto it = adjoint_.find(node.get());
    return it == adjoint_.end() ? Expr() : it->second;
  }

  void propagate(const Expr& e) {
    if (!needs_.count(e.get())) return;
    Expr g = cotangent(e);
    if (!g) return;
    // Accumulated sums are new nodes, and gradient builders read their types. (A tuple's
    // elements are typed where they accumulate; an integer element has no cotangent at all.)
    if (!g.as<TupleNode>()) infer_type(g);
    if (const auto* c = e.as<CallNode>()) {
      const OpDef* def = c->op_def();
      if (!def) fail("gradient: calls of functions cannot be differentiated (differentiate before fusing)");
      if (!def->gradient)
        fail("gradient: operator ", describe(c), " has no gradient, and it is on a differentiated path");
      std::vector<Expr> grads;
      try {
        grads = def->gradient(e, g);
      } catch (const Error& err) {
        fail("gradient of ", describe(c), ": ", err.what());
      }
      if (grads.size() != c->args.size())
        fail("internal error: the gradient of ", def->name, " has ", grads.size(), " results");
      for (size_t i = 0; i < grads.size(); ++i) accumulate(c->args[i], grads[i]);
    } else if (const auto* t = e.as<TupleNode>()) {
      const auto* gt = g.as<TupleNode>();
      for (size_t i = 0; i < t->elements.size(); ++i) accumulate(t->elements[i], gt->elements[i]);
    } else if (const auto* get = e.as<TupleGetItemNode>()) {
      if (needs_.count(get->tuple.get())) accumulate_element(get->tuple, static_cast<size_t>(get->index), g);
    }
  }

  Function f_;
  std::unordered_set<const ExprNode*> needs_;
  std::unordered_map<const ExprNode*, Expr> adjoint_;
  std::unordered_map<const ExprNode*, std::vector<Expr>> tuple_adjoint_;
};

}  // namespace

Module gradient(const Module& m, const std::vector<std::string>& wrt, bool cotangent_inputs) {
  Function f = m.main();
  infer_type(Expr(f));
  std::vector<Var> targets;
  for (const auto& name : wrt) {
    const Var* found = nullptr;
    for (const auto& p : f->params)
      if (p->name == name) found = &p;
    if (!found) {
      std::string names;
      for (const auto& p : f->params) names += (names.empty() ? "" : ", ") + p->name;
      fail("gradient: the function has no parameter '", name, "' (its parameters: ", names, ")");
    }
    if (!differentiable((*found)->checked_type))
      fail("gradient: parameter '", name, "' is ", to_string((*found)->checked_type), ", which is not differentiable");
    targets.push_back(*found);
  }
  std::vector<Expr> outputs;
  if (const auto* t = f->body.as<TupleNode>()) outputs = t->elements;
  else outputs.push_back(f->body);

  ReverseMode rm(f, targets);
  std::vector<Var> params = f->params;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!differentiable(outputs[i]->checked_type)) continue;
    Expr seed;
    if (cotangent_inputs) {
      Var d("d_" + std::to_string(i), outputs[i]->checked_type);
      params.push_back(d);
      seed = d;
      if (const auto* tt = outputs[i]->checked_type.as<TupleTypeNode>()) {  // cotangents are kept per element
        std::vector<Expr> elements;
        for (size_t k = 0; k < tt->elements.size(); ++k) elements.push_back(tuple_get(d, static_cast<int64_t>(k)));
        seed = tuple(elements);
      }
    } else {
      if (!outputs[i]->checked_type.as<TensorTypeNode>())
        fail("gradient: output ", i, " is a tuple; give cotangents explicitly");
      seed = ones_like(outputs[i]->checked_type);
    }
    rm.seed(outputs[i], seed);
  }
  rm.run();
  std::vector<Expr> results = outputs;
  for (const auto& v : targets) results.push_back(rm.gradient_of(v));
  Module out(function(params, tuple(results)));
  return infer_type(out);
}

}  // namespace tessera::relay_ir
