#include "driver/row_count_versions.h"

#include <algorithm>

#include "driver/kernel_versions.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/bind_sizes.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/size_hint.h"
#include "tensor_ir/substitute.h"

namespace tessera::driver {

using namespace tensor_ir;

const std::vector<RowCountClass>& row_count_classes() {
  static const std::vector<RowCountClass> classes = {
      {0, 1, "fewer than 2 rows"}, {2, 4, "2 to 7 rows"}, {8, 64, "8 to 127 rows"}, {128, 256, "128 rows or more"}};
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
    hints[v.name()] = first ? hint : 1;
    first = false;
  }
  return hints;
}

LoweredFunc choose_by_row_count(const std::vector<LoweredFunc>& versions, size_t main, const Expr& rows) {
  const LoweredFunc& served = versions.at(main);
  LoweredFunc out;
  const LoweredFunc* above = nullptr;  // the version of the class above
  for (size_t c = versions.size(); c-- > 0;) {
    const LoweredFunc& v = versions[c].body.defined() ? versions[c] : served;
    if (&v == above) continue;
    const LoweredFunc own = with_arguments_of(v, served);
    const int64_t bound = above ? row_count_classes()[c + 1].least : 0;
    out = above ? choose_by_condition(own, out, rows < make_const(rows.type(), static_cast<double>(bound))) : own;
    above = &v;
  }
  return out;
}

}  // namespace tessera::driver
