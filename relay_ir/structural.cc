#include "relay_ir/structural.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "relay_ir/functor.h"

namespace tessera::relay_ir {

namespace {

// Compares two graphs by building the one node-to-node correspondence their structure forces
// (root to root, argument i to argument i, parameter to parameter) and checking it is
// consistent both ways, so sharing must match too. Pairs wait on an explicit stack: graph
// depth never becomes call depth.
class Equal {
 public:
  explicit Equal(bool map_free_vars) : map_free_vars_(map_free_vars) {}

  void expect(const Expr& a, const Expr& b) { pending_.emplace_back(a.get(), b.get()); }

  bool run() {
    while (!pending_.empty()) {
      auto [a, b] = pending_.back();
      pending_.pop_back();
      if (!visit(a, b)) return false;
    }
    return true;
  }

 private:
  bool visit(const ExprNode* a, const ExprNode* b) {
    if (!a || !b) return a == b;
    if (auto it = map_.find(a); it != map_.end()) return it->second == b;
    if (reverse_.count(b) || a->kind != b->kind) return false;
    if (const auto* va = a->as<VarNode>()) {
      // Parameters are mapped where their function is met, so this is a free variable.
      if (map_free_vars_ ? !type_equal(va->type_annotation, b->as<VarNode>()->type_annotation) : a != b) return false;
    } else if (!fields_equal(a, b)) {
      return false;
    }
    return bind(a, b);
  }

  bool bind(const ExprNode* a, const ExprNode* b) {
    auto [it, fresh] = map_.emplace(a, b);
    if (!fresh) return it->second == b;
    return reverse_.emplace(b, a).second;
  }

  // Compares what a node holds besides its inputs and queues its input pairs.
  bool fields_equal(const ExprNode* a, const ExprNode* b) {
    if (const auto* ca = a->as<ConstantNode>()) {
      const auto& x = ca->data;
      const auto& y = b->as<ConstantNode>()->data;
      return x.dtype() == y.dtype() && x.shape() == y.shape() && std::memcmp(x.data(), y.data(), x.nbytes()) == 0;
    }
    if (const auto* oa = a->as<OpNode>()) return oa->def == b->as<OpNode>()->def;
    if (const auto* ca = a->as<CallNode>()) {
      const auto* cb = b->as<CallNode>();
      if (ca->attrs != cb->attrs || !queue(ca->args, cb->args)) return false;
      pending_.emplace_back(ca->op.get(), cb->op.get());
      return true;
    }
    if (const auto* ta = a->as<TupleNode>()) return queue(ta->elements, b->as<TupleNode>()->elements);
    if (const auto* ga = a->as<TupleGetItemNode>()) {
      const auto* gb = b->as<TupleGetItemNode>();
      pending_.emplace_back(ga->tuple.get(), gb->tuple.get());
      return ga->index == gb->index;
    }
    const auto* fa = a->as<FunctionNode>();
    const auto* fb = b->as<FunctionNode>();
    if (fa->attrs != fb->attrs || fa->params.size() != fb->params.size()) return false;
    for (size_t i = 0; i < fa->params.size(); ++i) {
      const VarNode* pa = fa->params[i].get();
      const VarNode* pb = fb->params[i].get();
      if (!type_equal(pa->type_annotation, pb->type_annotation) || !bind(pa, pb)) return false;
    }
    pending_.emplace_back(fa->body.get(), fb->body.get());
    return true;
  }

  bool queue(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = a.size(); i-- > 0;) pending_.emplace_back(a[i].get(), b[i].get());
    return true;
  }

  bool map_free_vars_;
  std::vector<std::pair<const ExprNode*, const ExprNode*>> pending_;
  std::unordered_map<const ExprNode*, const ExprNode*> map_, reverse_;
};

// Hashes a graph as the sequence of its nodes in post order, each node with its own fields and
// the positions of its inputs in that sequence. Post order follows the structure alone, so
// equal graphs give equal sequences (sharing included) whatever their addresses.
class Hasher {
 public:
  uint64_t value = 0x9e3779b97f4a7c15ull;

  void mix(uint64_t x) {
    value = (value ^ (x + 0x9e3779b97f4a7c15ull + (value << 6) + (value >> 2))) * 0x100000001b3ull;
  }

  // FNV-1a: std::hash of a string may differ between standard libraries.
  void bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t word;
      std::memcpy(&word, p + i, 8);
      h = (h ^ word) * 0x100000001b3ull;
    }
    for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    mix(n);
    mix(h);
  }
  void str(const std::string& s) { bytes(s.data(), s.size()); }
  void real(double d) {
    if (d == 0) d = 0;  // -0.0 == 0.0 in Attrs' comparison, so they must hash alike
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof d);
    mix(bits);
  }
  void dtype(const DataType& t) { mix((uint64_t(t.code) << 32) | (uint64_t(t.bits) << 16) | t.lanes); }

  void type(const Type& t) {
    if (!t) return mix(0);
    mix(static_cast<uint64_t>(t->kind) + 1);
    if (const auto* tt = t.as<TensorTypeNode>()) {
      dtype(tt->dtype);
      mix(tt->shape.size());
      // A symbolic dimension mixes a marker only: dims_equal may prove differently written
      // expressions equal, and equal types must hash alike.
      for (size_t i = 0; i < tt->shape.size(); ++i)
        mix(tt->shape.is_static(i) ? static_cast<uint64_t>(tt->shape[i]) : 0x5e5ab01cULL);
    } else if (const auto* tu = t.as<TupleTypeNode>()) {
      mix(tu->elements.size());
      for (const Type& e : tu->elements) type(e);
    } else {
      const auto* f = t.as<FuncTypeNode>();
      mix(f->params.size());
      for (const Type& p : f->params) type(p);
      type(f->ret);
    }
  }

  void attrs(const Attrs& a) {
    mix(a.items().size());
    for (const auto& [name, v] : a.items()) {
      str(name);
      mix(v.index());
      if (const auto* i = std::get_if<int64_t>(&v)) mix(static_cast<uint64_t>(*i));
      else if (const auto* d = std::get_if<double>(&v)) real(*d);
      else if (const auto* s = std::get_if<std::string>(&v)) str(*s);
      else if (const auto* is = std::get_if<std::vector<int64_t>>(&v)) bytes(is->data(), is->size() * sizeof(int64_t));
      else if (const auto* dims = std::get_if<Shape>(&v)) mix(dims->size());  // equal dims may print differently
      else
        for (double x : std::get<std::vector<double>>(v)) real(x);
    }
  }

  void expr(const Expr& root) {
    std::unordered_map<const ExprNode*, uint64_t> position;
    auto input = [&](const Expr& e) { mix(position.at(e.get())); };
    for (const Expr& e : post_order(root)) {
      position.emplace(e.get(), position.size());
      mix(static_cast<uint64_t>(e->kind) + 1);
      if (const auto* v = e.as<VarNode>()) {
        type(v->type_annotation);  // not the name: parameters match up to renaming
      } else if (const auto* k = e.as<ConstantNode>()) {
        dtype(k->data.dtype());
        mix(k->data.ndim());
        for (int64_t d : k->data.shape()) mix(static_cast<uint64_t>(d));
        bytes(k->data.data(), k->data.nbytes());
      } else if (const auto* o = e.as<OpNode>()) {
        str(o->name());
      } else if (const auto* c = e.as<CallNode>()) {
        if (const auto* op = c->op.as<OpNode>()) str(op->name());
        else input(c->op);
        attrs(c->attrs);
        mix(c->args.size());
        for (const Expr& a : c->args) input(a);
      } else if (const auto* t = e.as<TupleNode>()) {
        mix(t->elements.size());
        for (const Expr& x : t->elements) input(x);
      } else if (const auto* g = e.as<TupleGetItemNode>()) {
        input(g->tuple);
        mix(static_cast<uint64_t>(g->index));
      } else if (const auto* f = e.as<FunctionNode>()) {
        attrs(f->attrs);
        mix(f->params.size());
        for (const Var& p : f->params) input(p);
        input(f->body);
      }
    }
  }
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b, bool map_free_vars) {
  Equal eq(map_free_vars);
  eq.expect(a, b);
  return eq.run();
}

bool structural_equal(const Module& a, const Module& b, bool map_free_vars) {
  if (a.functions().size() != b.functions().size()) return false;
  // One correspondence for the whole module: nodes shared between functions stay shared.
  Equal eq(map_free_vars);
  for (const auto& [name, f] : a.functions()) {
    if (!b.has(name)) return false;
    eq.expect(f, b.get(name));
  }
  return eq.run();
}

bool structural_equal(const Type& a, const Type& b) { return type_equal(a, b); }

uint64_t structural_hash(const Expr& e) {
  Hasher h;
  if (e) h.expr(e);
  return h.value;
}

uint64_t structural_hash(const Module& m) {
  // By name, as equality pairs functions by name whatever their order.
  std::vector<const std::pair<std::string, Function>*> sorted;
  for (const auto& item : m.functions()) sorted.push_back(&item);
  std::sort(sorted.begin(), sorted.end(), [](const auto* x, const auto* y) { return x->first < y->first; });
  Hasher h;
  for (const auto* item : sorted) {
    h.str(item->first);
    h.mix(structural_hash(item->second));
  }
  return h.value;
}

uint64_t structural_hash(const Type& t) {
  Hasher h;
  h.type(t);
  return h.value;
}

}  // namespace tessera::relay_ir
