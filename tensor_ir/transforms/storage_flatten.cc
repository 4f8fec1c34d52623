#include "tensor_ir/transforms/storage_flatten.h"

#include <algorithm>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {

namespace {

struct Layout {
  Buffer buffer;
  std::vector<Expr> origin;  // index of the buffer's first element in each dimension
  std::vector<Expr> strides;
};

// Dense row-major strides of `extents`: constants where the extents are, else expressions of
// their symbolic dimensions.
std::vector<Expr> row_major_strides(const std::vector<Expr>& extents) {
  std::vector<Expr> strides(extents.size());
  Expr stride = make_const(kIndexType, 1);
  for (size_t d = extents.size(); d-- > 0;) {
    strides[d] = stride;
    stride = arith::simplify(stride * extents[d]);
  }
  return strides;
}

class Flattener : public IRMutator {
 public:
  explicit Flattener(const FlattenOptions& options) : options_(options) {
    for (const auto& [tensor, buffer] : options.args) {
      Layout l{buffer, std::vector<Expr>(tensor.ndim(), make_zero(kIndexType)), row_major_strides(tensor->shape)};
      layouts_[tensor.get()] = l;
    }
  }
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const Realize* op) override {
    if (layouts_.count(op->tensor.get())) return mutate(op->body);  // an argument: already stored
    Layout l;
    std::vector<Expr> extents;
    for (const auto& r : op->bounds) {
      l.origin.push_back(r.min);
      extents.push_back(r.extent);
    }
    auto align_it = options_.storage_align.find(op->tensor.get());
    const bool aligned = align_it != options_.storage_align.end() &&
                         std::any_of(align_it->second.begin(), align_it->second.end(),
                                     [](const auto& factor_offset) { return factor_offset.first > 0; });
    Expr size;
    if (!aligned) {
      l.strides = row_major_strides(extents);
      size = make_const(kIndexType, 1);
      for (const Expr& e : extents) size = arith::simplify(size * e);
    } else {
      std::tie(l.strides, size) = aligned_layout(op->tensor, extents, align_it->second);
    }
    auto scope = options_.scopes.find(op->tensor.get());
    l.buffer = BufferNode::make(op->tensor.name(), op->tensor.dtype(), {size},
                                scope == options_.scopes.end() ? MemoryScope::Local : scope->second);
    layouts_[op->tensor.get()] = l;
    Stmt body = mutate(op->body);
    layouts_.erase(op->tensor.get());
    return Allocate::make(l.buffer, body);
  }

  Stmt mutate_(const ProducerStore* op) override {
    const Layout& l = layout(op->tensor);
    return Store::make(l.buffer, mutate(op->value), flat_index(l, op->indices));
  }

  Expr mutate_(const ProducerLoad* op) override {
    const Layout& l = layout(op->tensor);
    return Load::make(l.buffer, flat_index(l, op->indices));
  }

 private:
  const Layout& layout(const Tensor& t) {
    auto it = layouts_.find(t.get());
    if (it == layouts_.end())
      fail("tensor ", t.name(),
           " is used but is neither an argument of the function nor computed in it (pass it in the argument list)");
    return it->second;
  }

  Expr flat_index(const Layout& l, const std::vector<Expr>& indices) {
    Expr index = make_zero(kIndexType);
    for (size_t d = 0; d < indices.size(); ++d) index = index + (mutate(indices[d]) - l.origin[d]) * l.strides[d];
    return index;
  }

  // Strides padded so that stride % factor == offset where storage_align asks, and the size that
  // covers the last element: sum((extent - 1) * stride) + 1. Padding needs constant extents.
  static std::pair<std::vector<Expr>, Expr> aligned_layout(const Tensor& tensor, const std::vector<Expr>& extents,
                                                           const std::vector<std::pair<int64_t, int64_t>>& align) {
    const size_t n = extents.size();
    std::vector<int64_t> strides(n);
    int64_t stride = 1, size = 1;
    for (size_t d = n; d-- > 0;) {
      const int64_t* extent = as_const_int(extents[d]);
      if (!extent)
        fail("storage_align of ", tensor.name(), ": its buffer's dimension ", d, " has the symbolic extent ",
             to_string(extents[d]), " (padding strides needs constant ones)");
      auto [factor, offset] = align[d];
      if (factor > 0)
        while (stride % factor != offset) ++stride;
      strides[d] = stride;
      stride *= *extent;
      size += (*extent - 1) * strides[d];
    }
    for (const Expr& e : extents)
      if (is_zero(e)) size = 0;
    std::vector<Expr> exprs;
    for (int64_t s : strides) exprs.push_back(make_const(kIndexType, s));
    return {exprs, Expr(size)};
  }

  const FlattenOptions& options_;
  std::unordered_map<const Object*, Layout> layouts_;
};

}  // namespace

Stmt storage_flatten(const Stmt& s, const FlattenOptions& options) { return Flattener(options).mutate(s); }

}  // namespace tessera::tensor_ir
