#include "relay_ir/functor.h"

#include <unordered_set>

#include "runtime/error.h"

namespace tessera::relay_ir {

std::vector<Expr> children(const Expr& e) {
  if (const auto* c = e.as<CallNode>()) {
    std::vector<Expr> out;
    if (c->op.as<FunctionNode>()) out.push_back(c->op);
    out.insert(out.end(), c->args.begin(), c->args.end());
    return out;
  }
  if (const auto* t = e.as<TupleNode>()) return t->elements;
  if (const auto* g = e.as<TupleGetItemNode>()) return {g->tuple};
  if (const auto* f = e.as<FunctionNode>()) {
    std::vector<Expr> out(f->params.begin(), f->params.end());
    out.push_back(f->body);
    return out;
  }
  return {};
}

std::vector<Expr> post_order(const Expr& root) { return post_order(root, children); }

std::vector<Expr> post_order(const Expr& root, const std::function<std::vector<Expr>(const Expr&)>& inputs_of) {
  std::vector<Expr> order;
  std::unordered_set<const ExprNode*> done;
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    stack.pop_back();
    if (done.count(e.get())) continue;
    if (expanded) {
      done.insert(e.get());
      order.push_back(e);
      continue;
    }
    stack.push_back({e, true});
    auto kids = inputs_of(e);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it)
      if (!done.count(it->get())) stack.push_back({*it, false});
  }
  return order;
}

const Expr& ExprMutator::rewritten(const Expr& original) const {
  auto it = memo_.find(original.get());
  if (it == memo_.end()) fail("internal error: rewritten() asked for a node not yet visited");
  return it->second;
}

Expr ExprMutator::with_children(const Expr& e, const std::vector<Expr>& kids) {
  if (const auto* c = e.as<CallNode>()) {
    size_t k = 0;
    Expr callee = c->op.as<FunctionNode>() ? kids[k++] : c->op;
    std::vector<Expr> args(kids.begin() + k, kids.end());
    auto* node = new CallNode(callee, std::move(args), c->attrs);
    node->origin = c->origin;
    return Expr(node);
  }
  if (e.as<TupleNode>()) return tuple(kids);
  if (const auto* g = e.as<TupleGetItemNode>()) return tuple_get(kids[0], g->index);
  if (const auto* f = e.as<FunctionNode>()) {
    std::vector<Var> params;
    for (size_t i = 0; i + 1 < kids.size(); ++i) {
      const auto* v = kids[i].as<VarNode>();
      if (!v) fail("internal error: a function parameter was rewritten into a non-variable");
      params.push_back(Var(v));
    }
    return function(params, kids.back(), f->attrs);
  }
  return e;
}

Expr ExprMutator::mutate(const Expr& root) {
  for (const Expr& e : post_order(root)) {
    if (memo_.count(e.get())) continue;
    auto kids = children(e);
    bool changed = false;
    std::vector<Expr> new_kids;
    new_kids.reserve(kids.size());
    for (const auto& k : kids) {
      new_kids.push_back(memo_.at(k.get()));
      changed |= !new_kids.back().same_as(k);
    }
    Expr node = changed ? with_children(e, new_kids) : e;
    memo_[e.get()] = rewrite(e, node);
  }
  return memo_.at(root.get());
}

}  // namespace tessera::relay_ir

namespace tessera::relay_ir {

namespace {
class ParamReplacer : public ExprMutator {
 public:
  explicit ParamReplacer(std::unordered_map<const ExprNode*, Expr> map) : map_(std::move(map)) {}

 protected:
  Expr rewrite(const Expr& original, const Expr& node) override {
    auto it = map_.find(original.get());
    return it == map_.end() ? node : it->second;
  }

 private:
  std::unordered_map<const ExprNode*, Expr> map_;
};
}  // namespace

Expr apply_function(const Function& f, const std::vector<Expr>& args) {
  if (args.size() != f->params.size())
    fail("apply: the function takes ", f->params.size(), " arguments, got ", args.size());
  std::unordered_map<const ExprNode*, Expr> map;
  for (size_t i = 0; i < args.size(); ++i) map[f->params[i].get()] = args[i];
  return ParamReplacer(std::move(map)).mutate(f->body);
}

}  // namespace tessera::relay_ir
