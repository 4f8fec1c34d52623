#include "tensor_ir/ops/nn_util.h"

#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir::ops::nn_detail {

std::vector<Expr> dims_per_image(const Tensor& data) {
  std::vector<Expr> ds = data->shape;
  if (!as_const_int(ds.at(0))) ds[0] = Expr(1);
  return ds;
}

std::vector<Expr> with_batch_of(const Tensor& data, std::vector<Expr> shape) {
  shape.at(0) = data->shape.at(0);
  return shape;
}

std::vector<int64_t> const_dims(const std::vector<Expr>& shape) {
  std::vector<int64_t> dims;
  for (const Expr& d : shape) {
    const int64_t* v = as_const_int(d);
    if (!v) fail("the shape ", shape_str(shape), " has a symbolic size where a constant one is needed");
    dims.push_back(*v);
  }
  return dims;
}

std::vector<std::string> nc_axis_names(size_t rank) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d) names.push_back(d == 0 ? "n" : d == 1 ? "c" : "d" + std::to_string(d - 2));
  return names;
}

Tensor keepdims_reduce(const Tensor& x, const std::vector<int64_t>& axes, ReduceKind kind, const std::string& name,
                       const std::string& tag,
                       const std::function<Expr(const std::vector<Expr>&, const std::vector<Var>&)>& f) {
  std::vector<Expr> shape = x->shape;  // symbolic extents allowed
  std::vector<IterVar> r;
  for (int64_t a : axes) {
    r.push_back(reduce_axis(Range(Expr(0), shape[a]), "r" + std::to_string(a)));
    shape[a] = Expr(1);
  }
  return compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx = as_exprs(v);
        for (size_t i = 0; i < axes.size(); ++i) idx[axes[i]] = r[i];
        return Reduce::make(kind, f(idx, v), r, const_true());
      },
      name, tag);
}

std::vector<Expr> keepdims_index(const std::vector<Var>& v, const std::vector<int64_t>& axes) {
  std::vector<Expr> idx = as_exprs(v);
  for (int64_t a : axes) idx[a] = Expr(0);
  return idx;
}

}  // namespace tessera::tensor_ir::ops::nn_detail

namespace tessera::tensor_ir::ops {

DataType packed_weight_dtype(DataType t) { return nn_detail::accumulation_type(t); }

}  // namespace tessera::tensor_ir::ops
