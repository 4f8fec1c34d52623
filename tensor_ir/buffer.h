// A flat memory region after lowering: a kernel argument or a local allocation. Loads and
// stores address it by element index; like variables, buffers are compared by identity.
#pragma once
#include <string>
#include <vector>

#include "tensor_ir/expr.h"

namespace tessera::tensor_ir {

// Where a buffer lives. On CPUs, Local is the kernel's own (stack or heap) memory and Shared is
// not used. On devices: Global is device memory, Shared is the memory of one thread block (CUDA's
// __shared__, OpenCL's __local), Local is one thread's (registers, private arrays).
enum class MemoryScope : uint8_t { Global, Shared, Local };
const char* memory_scope_name(MemoryScope scope);
// "global", "shared" or "local"; throws tessera::Error naming `name` otherwise.
MemoryScope parse_memory_scope(const std::string& name);

struct BufferNode : Object {
  TESSERA_NODE(Buffer)
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;  // logical shape, for signatures; accesses are flat
  MemoryScope scope;
  TESSERA_FIELDS(name, dtype, shape, scope)
  static Ref<BufferNode> make(std::string name, DataType dtype, std::vector<Expr> shape, MemoryScope scope);
  BufferNode(std::string n, DataType t, std::vector<Expr> s, MemoryScope sc)
      : Object(kKind), name(std::move(n)), dtype(t), shape(std::move(s)), scope(sc) {}
  // Number of elements, which must be a constant.
  int64_t num_elements() const;
  // Number of elements: a constant, or an expression of the shape's symbolic dimensions.
  Expr element_count() const;
};

class Buffer : public Ref<BufferNode> {
 public:
  using Ref<BufferNode>::Ref;
  Buffer() = default;
  Buffer(const Ref<BufferNode>& r) : Ref<BufferNode>(r) {}  // NOLINT
  const std::string& name() const { return get()->name; }
  DataType dtype() const { return get()->dtype; }
};

// After lowering: a load of `buffer` at flat element `index` (a Ramp for a vector load).
struct Load : ExprNode {
  TESSERA_NODE(Load)
  Buffer buffer;
  Expr index;
  TESSERA_FIELDS(buffer, index)
  static Expr make(Buffer buffer, Expr index);
  Load(DataType t, Buffer b, Expr i) : ExprNode(kKind, t), buffer(std::move(b)), index(std::move(i)) {}
};

}  // namespace tessera::tensor_ir
