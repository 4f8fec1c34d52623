#include "relay_ir/ops/type_relations.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace tessera::relay_ir {

Type same_as_input(const std::vector<Type>& args, const Attrs&) {
  as_tensor(args.at(0), "input");
  return args[0];
}

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      fail("shapes ", runtime::shape_str(a), " and ", runtime::shape_str(b), " do not broadcast (dimension ", i, ": ", x, " vs ", y, ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Type broadcast_binary(const std::vector<Type>& args, const Attrs&) {
  const auto& a = as_tensor(args.at(0), "left operand");
  const auto& b = as_tensor(args.at(1), "right operand");
  if (a.dtype != b.dtype) fail("operand dtypes differ: ", a.dtype.str(), " vs ", b.dtype.str());
  return tensor_type(broadcast_shapes(a.shape, b.shape), a.dtype);
}

}  // namespace tessera::relay_ir
