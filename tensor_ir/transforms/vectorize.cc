#include "tensor_ir/transforms/vectorize.h"

#include <functional>
#include <optional>
#include <utility>

#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/structural.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {

// Thrown inside the vectorizer when a construct has no vector form; the loop stays scalar.
struct CannotVectorize {};

Expr widen(const Expr& e, int lanes) {
  if (e.type().lanes == lanes) return e;
  if (e.type().is_scalar()) return Broadcast::make(e, lanes);
  throw CannotVectorize{};
}

class Vectorizer : public IRMutator {
 public:
  Vectorizer(const Var& var, Expr ramp) { vars_[var.get()] = ramp; }
  using IRMutator::mutate;

 protected:
  Expr mutate_(const VarNode* op) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? Expr(op) : it->second;
  }

  template <typename T>
  Expr binary(const T* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    int lanes = std::max<int>(a.type().lanes, b.type().lanes);
    return T::make(widen(a, lanes), widen(b, lanes));
  }
#define TESSERA_BINARY(T) \
  Expr mutate_(const T* op) override { return binary(op); }
  TESSERA_BINARY(Add)
  TESSERA_BINARY(Sub) TESSERA_BINARY(Mul) TESSERA_BINARY(Div) TESSERA_BINARY(Mod) TESSERA_BINARY(FloorDiv)
      TESSERA_BINARY(FloorMod) TESSERA_BINARY(Min) TESSERA_BINARY(Max) TESSERA_BINARY(EQ) TESSERA_BINARY(NE)
          TESSERA_BINARY(LT) TESSERA_BINARY(LE) TESSERA_BINARY(GT) TESSERA_BINARY(GE) TESSERA_BINARY(And)
              TESSERA_BINARY(Or)
#undef TESSERA_BINARY

                  Expr mutate_(const Select* op) override {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    int lanes = std::max<int>({c.type().lanes, t.type().lanes, f.type().lanes});
    if (lanes == 1) return Select::make(c, t, f);
    return Select::make(c.type().is_scalar() ? c : widen(c, lanes), widen(t, lanes), widen(f, lanes));
  }

  Expr mutate_(const Cast* op) override {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? Expr(op) : Cast::make(op->type.with_lanes(v.type().lanes), v);
  }

  Expr mutate_(const Call* op) override {
    std::vector<Expr> args;
    int lanes = 1;
    for (const auto& a : op->args) {
      args.push_back(mutate(a));
      lanes = std::max<int>(lanes, args.back().type().lanes);
    }
    if (lanes == 1) return IRMutator::mutate_(op);
    for (auto& a : args) a = widen(a, lanes);
    return Call::make(op->type.with_lanes(lanes), op->op, args);
  }

  Expr mutate_(const Let* op) override {
    Expr value = mutate(op->value);
    if (value.type().is_scalar()) return Let::make(op->var, value, mutate(op->body));
    Var v(op->var.name(), value.type());
    vars_[op->var.get()] = v;
    return Let::make(v, value, mutate(op->body));
  }

  Expr mutate_(const Ramp*) override { throw CannotVectorize{}; }
  Expr mutate_(const Broadcast*) override { throw CannotVectorize{}; }

  Stmt mutate_(const Store* op) override {
    Expr value = mutate(op->value), index = mutate(op->index);
    // A scalar index with a vector value would store every lane to one place.
    if (index.type().is_scalar() && value.type().is_vector()) throw CannotVectorize{};
    int lanes = index.type().lanes;
    return Store::make(op->buffer, widen(value, lanes), index);
  }

  Stmt mutate_(const LetStmt* op) override {
    Expr value = mutate(op->value);
    if (value.type().is_scalar()) return LetStmt::make(op->var, value, mutate(op->body));
    Var v(op->var.name(), value.type());
    vars_[op->var.get()] = v;
    return LetStmt::make(v, value, mutate(op->body));
  }

  // A condition that differs across the lanes guards a store only (the tail of a row of symbolic
  // length): the store then writes, and its value reads, the lanes where it holds. Guards nested
  // around it (a tile's last row and last column) become one condition.
  Stmt mutate_(const IfThenElse* op) override {
    Expr c = mutate(op->condition);
    if (c.type().is_scalar())
      return IfThenElse::make(c, mutate(op->then_case), op->else_case ? mutate(op->else_case) : Stmt());
    if (op->else_case) throw CannotVectorize{};
    Stmt body = mutate(op->then_case);
    while (const auto* inner = body.as<IfThenElse>()) {
      if (inner->else_case) throw CannotVectorize{};
      c = logical_and(c, widen(inner->condition, c.type().lanes));
      body = inner->then_case;
    }
    const auto* store = body.as<Store>();
    if (!store || store->index.type().lanes != c.type().lanes) throw CannotVectorize{};
    return IfThenElse::make(c, body);
  }

  Stmt mutate_(const For* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    if (min.type().is_vector() || extent.type().is_vector()) throw CannotVectorize{};
    // An inner loop keeps running as a loop, over vector bodies.
    ForKind kind = op->for_kind == ForKind::Parallel ? ForKind::Serial : op->for_kind;
    return For::make(op->var, min, extent, kind, mutate(op->body), op->pragmas);
  }

  Stmt mutate_(const Allocate*) override { throw CannotVectorize{}; }

 private:
  VarMap vars_;
};

// `a op b` for the reductions a vectorized loop may accumulate (Add, Max, Min).
Expr combine(NodeKind op, const Expr& a, const Expr& b) {
  if (op == NodeKind::Add) return Add::make(a, b);
  return op == NodeKind::Max ? Max::make(a, b) : Min::make(a, b);
}

// The lanes' values combined in halves: lane k with lane k + lanes/2, and so on down to one, the
// order a vector reduction takes (`lane(k)`: lane k's value; `stride`: the distance between the
// lanes combined so far).
Expr halving_tree(NodeKind op, const std::function<Expr(int64_t)>& lane, int64_t lanes, int64_t k = 0,
                  int64_t stride = 1) {
  if (stride == lanes) return lane(k);
  return combine(op, halving_tree(op, lane, lanes, k, 2 * stride),
                 halving_tree(op, lane, lanes, k + stride, 2 * stride));
}

// The operands of an Add, Max or Min (the reductions a vectorized loop may accumulate); none for
// any other node.
std::optional<std::pair<Expr, Expr>> reduction_operands(const Expr& e) {
  if (const auto* x = e.as<Add>()) return std::make_pair(x->a, x->b);
  if (const auto* x = e.as<Max>()) return std::make_pair(x->a, x->b);
  if (const auto* x = e.as<Min>()) return std::make_pair(x->a, x->b);
  return std::nullopt;
}

// Whether `e` loads from `buffer`.
bool loads_from(const Expr& e, const Buffer& buffer) {
  struct Finder : IRVisitor {
    const Buffer& buffer;
    bool found = false;
    explicit Finder(const Buffer& b) : buffer(b) {}
    void visit_(const Load* op) override {
      found = found || op->buffer.same_as(buffer);
      IRVisitor::visit_(op);
    }
  } finder(buffer);
  finder.visit(e);
  return finder.found;
}

// The most lanes a reduction tree spells out (each lane a copy of the reduced expression).
constexpr int64_t kMaxTreeLanes = 64;

// A vectorized loop whose body accumulates into one element, `acc = acc op f(i)` (the combining
// step of vector partial results, rfactor's), as a tree of depth log2(lanes) over f(min), ...,
// f(min + lanes - 1) instead of a chain: vectorizing a reduction loop reassociates it, in this one
// fixed order. Undefined where the loop is no such reduction over a power-of-two extent.
Stmt tree_reduction(const For* loop, int64_t lanes) {
  const auto* st = loop->body.as<Store>();
  if (!st || lanes > kMaxTreeLanes || (lanes & (lanes - 1)) != 0 || !st->value.type().is_scalar() ||
      uses_var(st->index, loop->var.get()))
    return Stmt();
  const auto operands = reduction_operands(st->value);
  if (!operands) return Stmt();
  const auto& [accumulated, term] = *operands;
  const auto* acc = accumulated.as<Load>();
  // The term must not read what the loop accumulates (each lane would see the value before the loop).
  if (!acc || !acc->buffer.same_as(st->buffer) || !structural_equal(acc->index, st->index) ||
      loads_from(term, st->buffer))
    return Stmt();
  const NodeKind op = st->value->kind;
  auto lane = [&](int64_t k) { return substitute(term, loop->var, loop->min + make_const(loop->min.type(), k)); };
  return Store::make(st->buffer, combine(op, accumulated, halving_tree(op, lane, lanes)), st->index);
}

class LoopVectorizer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const For* op) override {
    Stmt body = mutate(op->body);
    if (op->for_kind != ForKind::Vectorized) {
      return body.same_as(op->body) ? Stmt(op)
                                    : For::make(op->var, op->min, op->extent, op->for_kind, body, op->pragmas);
    }
    const int64_t* lanes = as_const_int(op->extent);
    if (lanes && *lanes > 1 && *lanes <= 1024 && op->min.type().is_scalar()) {
      if (Stmt tree = tree_reduction(op, *lanes); tree.defined()) return tree;
      try {
        Expr ramp = Ramp::make(op->min, make_one(op->min.type()), *lanes);
        return Vectorizer(op->var, ramp).mutate(body);
      } catch (const CannotVectorize&) {
      }
    }
    return For::make(op->var, op->min, op->extent, ForKind::Serial, body, op->pragmas);
  }
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) { return LoopVectorizer().mutate(s); }

}  // namespace tessera::tensor_ir
