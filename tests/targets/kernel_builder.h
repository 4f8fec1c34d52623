// Shorthands for writing lowered kernels by hand in the targets tests, compiling them for the
// host and moving data in and out of NDArrays.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "targets/llvm/build_llvm.h"
#include "tensor_ir/op.h"

namespace tessera::targets::testing {

using namespace tensor_ir;
using runtime::DataType;
using runtime::NDArray;

inline Buffer make_buffer(const std::string& name, DataType dtype, const std::vector<int64_t>& shape,
                          MemoryScope scope = MemoryScope::Global) {
  std::vector<Expr> dims;
  for (int64_t d : shape) dims.push_back(Expr(d));
  return BufferNode::make(name, dtype, dims, scope);
}

inline Expr load(const Buffer& b, Expr index) { return Load::make(b, std::move(index)); }
inline Stmt store(const Buffer& b, Expr value, Expr index) {
  return Store::make(b, std::move(value), std::move(index));
}
inline Expr ramp(Expr base, int64_t lanes, Expr stride = 1) {
  return Ramp::make(std::move(base), std::move(stride), lanes);
}
inline Expr f32(double v) { return FloatImm::make(runtime::kFloat32, v); }
inline Stmt loop(const Var& v, Expr extent, Stmt body, ForKind kind = ForKind::Serial) {
  return For::make(v, 0, std::move(extent), kind, std::move(body));
}

inline runtime::Kernel compile(const LoweredFunc& f, const std::string& target = "llvm") {
  return build_llvm({f}, Target::parse(target))->get_kernel(f.name);
}

template <typename T>
NDArray array(const std::vector<int64_t>& shape, DataType dtype, const std::vector<T>& values) {
  NDArray a = NDArray::empty(shape, dtype);
  if (values.size() != static_cast<size_t>(a.numel()) || sizeof(T) != static_cast<size_t>(dtype.element_bytes()))
    throw std::runtime_error("test array: values do not match shape or dtype");
  std::memcpy(a.data(), values.data(), a.nbytes());
  return a;
}

template <typename T>
std::vector<T> values(const NDArray& a) {
  std::vector<T> v(static_cast<size_t>(a.numel()));
  std::memcpy(v.data(), a.data(), a.nbytes());
  return v;
}

}  // namespace tessera::targets::testing
