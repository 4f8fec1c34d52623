#include "driver/row_count_versions.h"

#include <algorithm>
#include <unordered_map>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/bind_sizes.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/size_hint.h"
#include "tensor_ir/substitute.h"

namespace tessera::driver {

using namespace tensor_ir;

namespace {

// The many-row version's hint for the row count's variables where the given hints give few rows.
constexpr int64_t kManyRowsHint = 64;

// A version's body reading and writing another's arguments.
class RebindArguments : public IRMutator {
 public:
  explicit RebindArguments(std::unordered_map<const BufferNode*, Buffer> to) : to_(std::move(to)) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const Load* op) override { return Load::make(rebound(op->buffer), mutate(op->index)); }
  Stmt mutate_(const Store* op) override {
    return Store::make(rebound(op->buffer), mutate(op->value), mutate(op->index));
  }

 private:
  Buffer rebound(const Buffer& b) const {
    auto it = to_.find(b.get());
    return it == to_.end() ? b : it->second;
  }
  std::unordered_map<const BufferNode*, Buffer> to_;
};

}  // namespace

const std::vector<RowCountClass>& row_count_classes() {
  static const std::vector<RowCountClass> classes = {
      {0, 1, "fewer than 2 rows"}, {2, 4, "2 to 7 rows"}, {8, 0, "8 rows or more"}};
  return classes;
}

size_t row_count_class(int64_t rows) {
  const auto& classes = row_count_classes();
  size_t c = 0;
  while (c + 1 < classes.size() && rows >= classes[c + 1].least) ++c;
  return c;
}

Expr product_rows(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : topological_order(outputs))
    if (const auto* c = t.as<ComputeOp>(); c && c->tag == "conv_epilogue") return Expr();
  for (const Tensor& t : topological_order(outputs)) {
    const auto* c = t.as<ComputeOp>();
    if (!c || c->tag != "matmul" || c->reduce_axis().empty()) continue;
    for (size_t d = 0; d < c->axis.size(); ++d)
      if (c->axis[d].name() == "i") return as_const_int(t->shape[d]) ? Expr() : t->shape[d];
  }
  return Expr();
}

std::map<std::string, int64_t> hints_for_class(const std::vector<Tensor>& outputs, const Expr& rows, size_t c) {
  std::map<std::string, int64_t> hints;
  for (const Var& v : size_vars(outputs)) hints[v.name()] = size_hint(v.name());
  const int64_t hint = row_count_classes().at(c).hint;
  bool first = true;
  for (const Var& v : vars_of(rows)) {
    int64_t& h = hints[v.name()];
    h = hint == 0 ? std::max(h, kManyRowsHint) : first ? hint : 1;
    first = false;
  }
  return hints;
}

LoweredFunc choose_by_row_count(const std::vector<LoweredFunc>& versions, size_t main, const Expr& rows) {
  const LoweredFunc& served = versions.at(main);
  LoweredFunc out = served;
  const LoweredFunc* above = nullptr;  // the version of the class above
  for (size_t c = versions.size(); c-- > 0;) {
    const LoweredFunc& v = versions[c].body.defined() ? versions[c] : served;
    if (&v == above) continue;
    if (v.args.size() != served.args.size())
      fail("internal error: the versions of kernel ", served.name, " for row counts take ", v.args.size(), " and ",
           served.args.size(), " arguments");
    std::unordered_map<const BufferNode*, Buffer> to;
    for (size_t i = 0; i < v.args.size(); ++i) to[v.args[i].get()] = served.args[i];
    Stmt own = &v == &served ? v.body : RebindArguments(std::move(to)).mutate(v.body);
    if (above) {
      const int64_t bound = row_count_classes()[c + 1].least;
      own =
          IfThenElse::make(arith::simplify(rows < make_const(rows.type(), static_cast<double>(bound))), own, out.body);
    }
    out.body = own;
    above = &v;
    for (const Var& x : v.shape_vars)
      if (std::none_of(out.shape_vars.begin(), out.shape_vars.end(), [&](const Var& y) { return y.same_as(x); }))
        out.shape_vars.push_back(x);
  }
  return out;
}

}  // namespace tessera::driver
