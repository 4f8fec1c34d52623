#include "relay_ir/dot.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/transforms/infer_type.h"

namespace tessera::relay_ir {

namespace {

// Quotes and backslashes escaped, newlines as Graphviz's \n.
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

class DotWriter {
 public:
  std::string run(const Function& main) {
    os_ << "digraph tessera {\n  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n";
    int group = 0;
    // Nodes inside fused functions are drawn in their group's cluster, not here.
    std::unordered_set<const ExprNode*> inner;
    for (const Expr& e : post_order(main->body))
      if (const auto* f = e.as<FunctionNode>())
        for (const Expr& x : post_order(Expr(f))) inner.insert(x.get());
    for (const Expr& e : post_order(main->body)) {
      if (inner.count(e.get()) || e.as<OpNode>()) continue;
      if (const auto* v = e.as<VarNode>()) {
        node(e, "input " + v->name + "\n" + to_string(v->checked_type), "shape=ellipse");
      } else if (e.as<ConstantNode>()) {
        node(e, "constant\n" + to_string(e->checked_type), "shape=note, fontsize=10");
      } else if (const auto* c = e.as<CallNode>()) {
        if (const auto* f = c->op.as<FunctionNode>()) {
          fused_call(e, c, f, group++);
          continue;
        }
        node(e, c->op_def()->name + "\n" + to_string(e->checked_type), "");
        for (const auto& a : c->args) edge(a, e);
      } else {
        node(e, e.as<TupleNode>() ? "tuple" : "get " + std::to_string(e.as<TupleGetItemNode>()->index), "shape=point");
        for (const auto& ch : children(e)) edge(ch, e);
      }
    }
    node_id(main->body);
    os_ << "  output [shape=ellipse];\n  " << node_id(main->body) << " -> output;\n}\n";
    return os_.str();
  }

 private:
  std::string node_id(const Expr& e) {
    auto it = ids_.find(e.get());
    if (it != ids_.end()) return it->second;
    std::string id = "n" + std::to_string(ids_.size());
    ids_[e.get()] = id;
    return id;
  }
  void node(const Expr& e, const std::string& label, const std::string& style) {
    os_ << "  " << node_id(e) << " [label=\"" << escape(label) << "\"" << (style.empty() ? "" : ", " + style) << "];\n";
  }
  void edge(const Expr& from, const Expr& to) { os_ << "  " << node_id(from) << " -> " << node_id(to) << ";\n"; }

  // A fused group: its ops inside a cluster; its parameters wired to the call's arguments.
  void fused_call(const Expr& call_expr, const CallNode* c, const FunctionNode* f, int group) {
    os_ << "  subgraph cluster_" << group << " {\n    style=filled; color=lightgrey; label=\"kernel " << group
        << "\";\n";
    std::unordered_map<const ExprNode*, Expr> outer;  // parameter -> argument
    for (size_t i = 0; i < f->params.size(); ++i) outer[f->params[i].get()] = c->args[i];
    for (const Expr& e : post_order(f->body)) {
      const auto* inner = e.as<CallNode>();
      if (!inner) continue;
      os_ << "  ";
      node(e, inner->op_def()->name + "\n" + to_string(e->checked_type), "");
    }
    os_ << "  }\n";
    for (const Expr& e : post_order(f->body)) {
      const auto* inner = e.as<CallNode>();
      if (!inner) continue;
      for (const auto& a : inner->args) edge(outer.count(a.get()) ? outer.at(a.get()) : a, e);
    }
    ids_[call_expr.get()] = node_id(f->body);  // the group's output stands for the call
  }

  std::ostringstream os_;
  std::unordered_map<const ExprNode*, std::string> ids_;
};

}  // namespace

std::string to_dot(const Module& m) {
  infer_type(Expr(m.main()));
  return DotWriter().run(m.main());
}

}  // namespace tessera::relay_ir
