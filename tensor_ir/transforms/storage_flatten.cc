#include "tensor_ir/transforms/storage_flatten.h"

#include "runtime/error.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"

namespace tessera::tensor_ir {

namespace {

struct Layout {
  Buffer buffer;
  std::vector<Expr> origin;  // index of the buffer's first element in each dimension
  std::vector<int64_t> strides;
};

class Flattener : public IRMutator {
 public:
  explicit Flattener(const FlattenOptions& options) : options_(options) {
    for (const auto& [tensor, buffer] : options.args) {
      Layout l{buffer, {}, {}};
      int64_t stride = 1;
      l.strides.resize(tensor.ndim());
      for (size_t d = tensor.ndim(); d-- > 0;) {
        l.strides[d] = stride;
        stride *= tensor->dim(d);
        l.origin.insert(l.origin.begin(), make_zero(kIndexType));
      }
      layouts_[tensor.get()] = l;
    }
  }
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const Realize* op) override {
    if (layouts_.count(op->tensor.get())) return mutate(op->body);  // an argument: already stored
    Layout l;
    const size_t n = op->bounds.size();
    l.strides.resize(n);
    auto align_it = options_.storage_align.find(op->tensor.get());
    int64_t stride = 1;
    std::vector<Expr> shape;
    for (size_t d = n; d-- > 0;) {
      if (align_it != options_.storage_align.end()) {
        auto [factor, offset] = align_it->second[d];
        if (factor > 0)
          while (stride % factor != offset) ++stride;
      }
      l.strides[d] = stride;
      const int64_t* extent = as_const_int(op->bounds[d].extent);
      if (!extent) fail("internal error: realize of ", op->tensor.name(), " has a non-constant extent");
      stride *= *extent;
    }
    for (const auto& r : op->bounds) {
      l.origin.push_back(r.min);
      shape.push_back(r.extent);
    }
    // The padded size covers the last element: origin + sum((extent - 1) * stride) + 1.
    int64_t size = 1;
    for (size_t d = 0; d < n; ++d) size += (*as_const_int(op->bounds[d].extent) - 1) * l.strides[d];
    if (n == 0) size = 1;
    for (const auto& r : op->bounds)
      if (is_zero(r.extent)) size = 0;
    auto scope = options_.scopes.find(op->tensor.get());
    l.buffer = BufferNode::make(op->tensor.name(), op->tensor.dtype(), {Expr(size)},
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
    for (size_t d = 0; d < indices.size(); ++d) index = index + (mutate(indices[d]) - l.origin[d]) * Expr(l.strides[d]);
    return index;
  }

  const FlattenOptions& options_;
  std::unordered_map<const Object*, Layout> layouts_;
};

}  // namespace

Stmt storage_flatten(const Stmt& s, const FlattenOptions& options) { return Flattener(options).mutate(s); }

}  // namespace tessera::tensor_ir
