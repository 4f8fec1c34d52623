// Operator fusion by pattern kind on the post-dominator tree, as TVM's FuseOps does:
//  phase 0: a convolution/matmul (OutEWiseFusable) absorbs the elementwise ops up to its
//           post-dominator when every op on the way is elementwise or broadcast; an
//           elementwise/broadcast op joins its post-dominator when every op in between is
//           injective (so diamonds such as x -> {a, b} -> add fuse whole);
//  phase 1: injective ops join their post-dominator over injective paths, or a matrix product
//           that packs their result as its right operand, or that reads it as its left operand
//           where they only move elements.
// Reductions take injective producers that way; each group has one output (the post-dominator
// it fused into) and becomes a primitive function (attrs primitive=1) called from main.
#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/match.h"
#include "relay_ir/transforms/passes.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/transform_shape.h"

namespace tessera::relay_ir {

namespace {

constexpr size_t kMaxGroupSize = 256;

OpPattern combine(OpPattern a, OpPattern b) { return std::max(a, b); }

struct GraphNode {
  Expr expr;
  OpPattern pattern = OpPattern::Opaque;                // calls of ops; everything else is opaque
  std::vector<std::pair<size_t, OpPattern>> consumers;  // (node, edge pattern)
  bool is_output = false;
  // Post-dominator tree.
  GraphNode* pdom = nullptr;
  int depth = 0;
  OpPattern pdom_pattern = OpPattern::Elemwise;  // combined pattern of the paths to pdom
  // Union-find group.
  GraphNode* group = nullptr;
  OpPattern group_pattern = OpPattern::Opaque;
  size_t group_size = 1;
  GraphNode* root() {
    GraphNode* g = this;
    while (g->group != g) g = g->group;
    for (GraphNode* n = this; n->group != g;) {  // path compression
      GraphNode* next = n->group;
      n->group = g;
      n = next;
    }
    return g;
  }
};

class Partitioner {
 public:
  explicit Partitioner(const Expr& body) {
    std::vector<Expr> order = post_order(body);
    nodes_.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      index_[order[i].get()] = i;
      GraphNode& n = nodes_[i];
      n.expr = order[i];
      n.group = &n;
      const auto* call = order[i].as<CallNode>();
      if (call && call->op_def() && call->checked_type.as<TensorTypeNode>()) n.pattern = call->op_def()->pattern;
      n.group_pattern = n.pattern;
    }
    nodes_[index_.at(body.get())].is_output = true;
    for (size_t i = 0; i < order.size(); ++i) add_edges(i);
    build_post_dominators();
  }

  void run() {
    for (int phase = 0; phase < 2; ++phase)
      for (size_t i = 0; i < nodes_.size(); ++i) try_fuse(nodes_[i], phase);
  }

  // Group roots (outputs) with the members of each, in topological order.
  std::unordered_map<const GraphNode*, std::vector<GraphNode*>> groups() {
    std::unordered_map<const GraphNode*, std::vector<GraphNode*>> out;
    for (auto& n : nodes_)
      if (n.pattern != OpPattern::Opaque || n.root() != &n) out[n.root()].push_back(&n);
    return out;
  }

  GraphNode& node(const Expr& e) { return nodes_[index_.at(e.get())]; }

 private:
  void add_edges(size_t i) {
    const auto* call = nodes_[i].expr.as<CallNode>();
    if (!call) {
      for (const auto& c : children(nodes_[i].expr))
        nodes_[index_.at(c.get())].consumers.push_back({i, OpPattern::Opaque});
      return;
    }
    const auto* out = call->checked_type.as<TensorTypeNode>();
    for (const auto& a : call->args) {
      OpPattern p = nodes_[i].pattern;
      // A broadcasting op reads an operand of the output's own shape elementwise (conv -> add of
      // a bias: the conv edge is elementwise, the bias edge broadcast).
      const auto* in = a->checked_type.as<TensorTypeNode>();
      if (p == OpPattern::Broadcast && in && out && in->shape == out->shape) p = OpPattern::Elemwise;
      nodes_[index_.at(a.get())].consumers.push_back({i, p});
    }
    if (call->op.as<FunctionNode>()) nodes_[index_.at(call->op.get())].consumers.push_back({i, OpPattern::Opaque});
  }

  static GraphNode* common_ancestor(GraphNode* a, GraphNode* b, OpPattern& pattern) {
    while (a != b) {
      if (!a || !b) return nullptr;
      if (a->depth < b->depth) {
        pattern = combine(pattern, b->pdom_pattern);
        b = b->pdom;
      } else if (b->depth < a->depth) {
        pattern = combine(pattern, a->pdom_pattern);
        a = a->pdom;
      } else {
        pattern = combine(combine(pattern, a->pdom_pattern), b->pdom_pattern);
        a = a->pdom;
        b = b->pdom;
      }
    }
    return a;
  }

  // Consumers come after their producers, so walking backwards every consumer is placed first.
  void build_post_dominators() {
    for (size_t i = nodes_.size(); i-- > 0;) {
      GraphNode& n = nodes_[i];
      if (n.is_output || n.consumers.empty()) continue;  // no post-dominator: a root
      OpPattern pattern = OpPattern::Elemwise;
      GraphNode* parent = &nodes_[n.consumers[0].first];
      pattern = combine(pattern, n.consumers[0].second);
      for (size_t k = 1; k < n.consumers.size() && parent; ++k) {
        parent = common_ancestor(parent, &nodes_[n.consumers[k].first], pattern);
        pattern = combine(pattern, n.consumers[k].second);
      }
      n.pdom = parent;
      n.pdom_pattern = pattern;
      n.depth = parent ? parent->depth + 1 : 0;
    }
  }

  // True if `ok(from, to)` holds for every edge on a path from `src` to `sink`.
  bool every_edge(GraphNode* src, GraphNode* sink, const std::function<bool(GraphNode*, GraphNode*)>& ok) {
    std::unordered_set<GraphNode*> visited;
    std::vector<GraphNode*> stack{src};
    while (!stack.empty()) {
      GraphNode* n = stack.back();
      stack.pop_back();
      for (const auto& [c, edge] : n->consumers) {
        GraphNode* next = &nodes_[c];
        if (!ok(n, next)) return false;
        if (next != sink && visited.insert(next).second) stack.push_back(next);
      }
    }
    return true;
  }

  // True if every node on a path from `src` to `sink` (sink included, src not) satisfies
  // `ok(group pattern, is_sink)`.
  bool check_path(GraphNode* src, GraphNode* sink, const std::function<bool(OpPattern, bool)>& ok) {
    return every_edge(src, sink, [&](GraphNode*, GraphNode* to) { return ok(to->root()->group_pattern, to == sink); });
  }

  // Merges src and every node between it and sink into sink's group.
  void commit(GraphNode* src, GraphNode* sink) {
    GraphNode* target = sink->root();
    std::unordered_set<GraphNode*> visited;
    std::vector<GraphNode*> stack{src};
    merge(src, target);
    while (!stack.empty()) {
      GraphNode* n = stack.back();
      stack.pop_back();
      for (const auto& [c, edge] : n->consumers) {
        GraphNode* next = &nodes_[c];
        if (next == sink || !visited.insert(next).second) continue;
        merge(next, target);
        stack.push_back(next);
      }
    }
  }

  void merge(GraphNode* n, GraphNode* target) {
    GraphNode* r = n->root();
    if (r == target) return;
    r->group = target;
    target->group_pattern = combine(target->group_pattern, r->group_pattern);
    target->group_size += r->group_size;
  }

  size_t size_after(GraphNode* src, GraphNode* sink) {
    std::unordered_set<GraphNode*> roots{src->root(), sink->root()};
    size_t total = 0;
    for (GraphNode* r : roots) total += r->group_size;
    return total;
  }

  void try_fuse(GraphNode& n, int phase) {
    GraphNode* g = n.root();
    if (g->group_pattern == OpPattern::Opaque || !n.pdom) return;
    GraphNode* sink = n.pdom;
    if (sink->root() == g || sink->pattern == OpPattern::Opaque) return;
    if (size_after(&n, sink) > kMaxGroupSize) return;
    OpPattern kind = g->group_pattern;
    if (kind == OpPattern::OutEWiseFusable) {
      if (phase != 0 || n.pdom_pattern != OpPattern::Elemwise) return;
      if (check_path(&n, sink, [](OpPattern k, bool) { return k <= OpPattern::Broadcast; })) commit(&n, sink);
    } else if (kind <= OpPattern::Broadcast) {
      if (!(n.pdom_pattern <= OpPattern::Injective || n.pdom_pattern == OpPattern::CommReduce)) return;
      auto ok = [](OpPattern k, bool is_sink) {
        if (!is_sink) return k <= OpPattern::Injective;  // parallel branches may be injective
        return k <= OpPattern::CommReduce || k == OpPattern::OutEWiseFusable;
      };
      if (check_path(&n, sink, ok)) commit(&n, sink);
    } else if (kind == OpPattern::Injective) {
      if (phase != 1) return;
      const bool into_product = packs_right_operand_from(&n, sink) || reads_left_operand_from(&n, sink);
      auto ok = [&](OpPattern k, bool is_sink) {
        return k <= OpPattern::Injective || (is_sink && into_product && k == OpPattern::OutEWiseFusable);
      };
      if (check_path(&n, sink, ok)) commit(&n, sink);
    }
  }

  // Whether `sink` is a matrix product (matmul, gemm, attention) whose only operand `src` reaches
  // is operand `i` (0: left, 1: right; attention's 1 and 2: keys and values).
  bool reaches_only_operand(GraphNode* src, GraphNode* sink, size_t i) {
    const CallNode* call = call_of(sink->expr, "matmul");
    if (!call) call = call_of(sink->expr, "gemm");
    if (!call) call = call_of(sink->expr, "attention");
    if (!call || i >= call->args.size()) return false;
    std::unordered_set<const GraphNode*> others;
    for (size_t j = 0; j < call->args.size(); ++j)
      if (j != i) others.insert(&node(call->args[j]));
    const GraphNode* operand = &node(call->args[i]);
    return every_edge(src, sink, [&](GraphNode* from, GraphNode* to) {
      return to != sink || (from == operand && !others.count(from));
    });
  }

  // The right operand, the one the product's template packs into panels at run time: the data
  // movement making it (attention's slices and transposes of keys and values) is inlined into the
  // packing, one pass instead of a copy and then the packing. Attention packs its keys and values.
  bool packs_right_operand_from(GraphNode* src, GraphNode* sink) {
    return reaches_only_operand(src, sink, 1) ||
           (call_of(sink->expr, "attention") && reaches_only_operand(src, sink, 2));
  }

  // The left operand, where `src`'s group only moves elements, in rows whose length is a multiple
  // of kMovedRowAlignment: the product's tiles read each element of the left operand by a
  // broadcast from wherever it is, so a transpose, slice or reshape making it (the merge of
  // attention's heads, the queries' slice) costs no copy. The alignment keeps the moved index
  // affine in the reduction's unrolled steps ((ko*4 + ki) // 64 is ko // 16), computed once per
  // step, not once per element. Of symbolic shapes, only movement that keeps each row of the
  // operand within a row of its source: a row of a symbolic L merged into the reduction (heads
  // merged across a symbolic sequence) strides by L, arithmetic redone at every multiply-add.
  bool reads_left_operand_from(GraphNode* src, GraphNode* sink) {
    if (!reaches_only_operand(src, sink, 0)) return false;
    const GraphNode* group = src->root();
    for (GraphNode& member : nodes_) {
      if (member.root() != group) continue;
      const auto* c = member.expr.as<CallNode>();
      if (!c || !c->op_def() || !kMovingOps.count(c->op_def()->name)) return false;
      if (!aligned_rows(member.expr)) return false;
      for (const Expr& a : c->args)
        if (!aligned_rows(a)) return false;
      if (!is_static(member.expr) && !keeps_rows_within_source_rows(member.expr)) return false;
    }
    return true;
  }

  static constexpr int64_t kMovedRowAlignment = 16;
  inline static const std::unordered_set<std::string> kMovingOps = {"reshape", "transpose", "slice", "squeeze",
                                                                    "expand_dims"};
  static const TensorTypeNode* tensor_type_of(const Expr& e) { return e->checked_type.as<TensorTypeNode>(); }
  static bool is_static(const Expr& e) {
    const TensorTypeNode* t = tensor_type_of(e);
    return t && t->shape.is_static();
  }
  static const int64_t* row_length(const Expr& e) {
    const TensorTypeNode* t = tensor_type_of(e);
    if (!t || t->shape.size() == 0) return nullptr;
    return tensor_ir::as_const_int(t->shape.dim(t->shape.size() - 1));
  }
  static bool aligned_rows(const Expr& e) {
    const int64_t* row = row_length(e);
    return row && *row % kMovedRowAlignment == 0;
  }
  // Whether each row of `c`'s result is a run of one row of its operand: a transpose that keeps the
  // last axis last, a slice, a reshape that splits rows (not one that merges them).
  static bool keeps_rows_within_source_rows(const Expr& e) {
    const auto& c = *e.as<CallNode>();
    const std::string& op = c.op_def()->name;
    if (op == "slice") return true;
    if (op == "transpose") {
      const int64_t rank = static_cast<int64_t>(tensor_type_of(c.args[0])->shape.size());
      return tensor_ir::ops::transpose_perm(c.attrs.get_ints("perm"), rank).back() == rank - 1;
    }
    const int64_t *in = row_length(c.args[0]), *out = row_length(e);
    return in && out && *in % *out == 0;
  }

  std::vector<GraphNode> nodes_;
  std::unordered_map<const ExprNode*, size_t> index_;
};

// A constant of one float32 or float64 element (GELU's 1/sqrt(2), a scale) becomes a literal in
// the kernel rather than a parameter: a value loaded through a parameter and broadcast stays in a
// vector register across the kernel's loops, where the product templates need every register for
// accumulators (one more spilled an accumulator in the inner loop of a matmul's GELU epilogue),
// while a literal is rematerialized from the constant pool. The kernel's key, its text, prints
// the value exactly, so kernels of different constants stay apart.
bool becomes_literal(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  if (!c || c->data.numel() != 1) return false;
  const DataType t = c->data.dtype();
  return t.code == runtime::TypeCode::Float && (t.bits == 32 || t.bits == 64);
}

// Replaces each multi-op group by a call of a primitive function over its external inputs.
class GroupOutliner : public ExprMutator {
 public:
  explicit GroupOutliner(Partitioner& p) : partition_(p), groups_(p.groups()) {}

 protected:
  Expr rewrite(const Expr& original, const Expr& node) override {
    const auto* call = original.as<CallNode>();
    if (!call || !call->op_def()) return node;
    GraphNode& gn = partition_.node(original);
    if (gn.root() != &gn) return node;  // an inner member: used only inside its group
    auto group = groups_.find(&gn);     // an opaque op alone is in no group
    if (group == groups_.end() || group->second.size() < 2) return node;
    const auto& members = group->second;
    std::unordered_set<const ExprNode*> inside;
    for (const GraphNode* m : members) inside.insert(m->expr.get());
    std::vector<Var> params;
    std::vector<Expr> args;
    std::unordered_map<const ExprNode*, Expr> local;
    for (const GraphNode* m : members) {
      const auto* mc = m->expr.as<CallNode>();
      std::vector<Expr> margs;
      for (const auto& a : mc->args) {
        if (inside.count(a.get())) {
          margs.push_back(local.at(a.get()));
          continue;
        }
        auto it = local.find(a.get());
        if (it == local.end() && becomes_literal(a)) {
          // A node of its own: the build plan skips every node inside a function.
          it = local.emplace(a.get(), constant(a.as<ConstantNode>()->data)).first;
        } else if (it == local.end()) {
          Var p("p" + std::to_string(params.size()), a->checked_type);
          params.push_back(p);
          args.push_back(rewritten(a));
          it = local.emplace(a.get(), Expr(p)).first;
        }
        margs.push_back(it->second);
      }
      auto* copy = new CallNode(mc->op, margs, mc->attrs);
      copy->origin = mc->origin;
      local[m->expr.get()] = Expr(copy);
    }
    Function fn = function(params, local.at(original.get()), Attrs{{"primitive", int64_t(1)}});
    Expr result = call_function(fn, args);
    infer_type(result);
    return result;
  }

 private:
  Partitioner& partition_;
  std::unordered_map<const GraphNode*, std::vector<GraphNode*>> groups_;
};

Function fuse(const Function& f) {
  infer_type(Expr(f));
  Partitioner p(f->body);
  p.run();
  Expr body = GroupOutliner(p).mutate(f->body);
  if (body.same_as(f->body)) return f;
  return function(f->params, body, f->attrs);
}

}  // namespace

Pass fuse_ops_pass() {
  return function_pass("FuseOps", 1, [](const Function& f, PassContext&) { return Expr(fuse(f)); });
}

}  // namespace tessera::relay_ir
