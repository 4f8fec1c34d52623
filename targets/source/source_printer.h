// The C-family source printer: every expression and statement that lowering leaves, printed as C
// with full parentheses, and the hooks in which its dialects (c, opencl, cuda) differ: type names,
// literals, math functions, memory access of bool and float16, thread indices, barriers and
// allocations. Internal to targets/source; source_dialects.h is the interface.
#pragma once
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tensor_ir/ir.h"
#include "tensor_ir/transforms/split_host_device.h"

namespace tessera::targets::source {

using runtime::DataType;
using namespace tensor_ir;

class SourcePrinter {
 public:
  virtual ~SourcePrinter() = default;
  std::string text() const { return os_.str(); }

 protected:
  explicit SourcePrinter(std::string dialect) : dialect_(std::move(dialect)) {}

  // --- the dialect ---------------------------------------------------------------------------
  // The type of a value in registers (float16 values are float: arithmetic happens in float32,
  // as in the LLVM backend).
  virtual std::string type_name(DataType t) const = 0;
  // The type of one element in memory.
  virtual std::string memory_type(DataType t) const { return type_name(t); }
  // `name[index]` read as a register value, and the statement that writes `value` there.
  virtual std::string load(const Buffer& b, const std::string& index);
  virtual std::string store(const Buffer& b, const std::string& index, const std::string& value);
  // The math library's function `name` (C's double name: "exp", "fmod") for `t` ("expf" or "exp").
  virtual std::string float_function(const std::string& name, DataType t) const = 0;
  virtual std::string int64_literal(int64_t v) const = 0;
  // Declares and binds the thread index of `op` before its body.
  virtual void print_thread_index(const ThreadExtent* op);
  virtual std::string barrier() const;
  // warp_shuffle_down(value, offset) of a `type` value; only cuda has warps to shuffle in.
  virtual std::string warp_shuffle_down(const std::string& value, const std::string& offset, DataType type) const;
  // `value`'s bits read as `to`, a type of the same width (a union in C).
  virtual std::string reinterpret(const std::string& value, DataType from, DataType to) const;
  // A loop marked parallel; devices refuse it (its iterations belong on threads).
  virtual void print_parallel_for(const For* op);
  // Declares a buffer local to a kernel (shared ones are declared by the dialect at the kernel's
  // top, since OpenCL allows __local only there).
  virtual void print_local_allocate(const Allocate* op);
  // The prefix of `inline` helper functions ("static inline", "__device__ inline").
  virtual std::string helper_qualifier() const = 0;

  // --- device dialects ----------------------------------------------------------------------
  // `type* restrict name` with the dialect's address space and restrict spelling.
  virtual std::string pointer_parameter(const Buffer& b, bool is_const) = 0;
  virtual std::string shared_declaration(const Buffer& b) = 0;
  // The kernel's parameters (its buffers), shared buffers and body; the dialect prints what
  // comes before the parameter list.
  void print_device_kernel(const DeviceKernel& k);

  // --- shared by every dialect ---------------------------------------------------------------
  // Floor division and modulo of int32/int64 and the sigmoid, as helper functions.
  void print_helpers();
  std::string expr(const Expr& e);
  void stmt(const Stmt& s);
  void start_kernel(const std::string& kernel);
  // A unique C identifier for a variable or buffer of this kernel.
  std::string name_of(const Object* node, const std::string& hint);
  std::string buffer_name(const Buffer& b) { return name_of(b.get(), b.name()); }
  // Whether a variable or buffer is bound where the printer is (a parallel loop's body captures
  // those); stmt() keeps the set as it enters and leaves their statements.
  bool in_scope(const Object* node) const { return in_scope_.count(node) > 0; }
  void scoped(const Object* node, const Stmt& body);
  // A kernel's parameter (a buffer or a dimension variable), in scope throughout.
  void add_parameter(const Object* node) { in_scope_.insert(node); }
  // The buffers `body` stores to (others are passed as const).
  static std::unordered_set<const BufferNode*> written_buffers(const Stmt& body);
  [[noreturn]] void unsupported(const std::string& what) const;
  std::ostream& line();

  std::string dialect_, kernel_;
  std::ostringstream os_;
  int indent_ = 0;

 private:
  std::string binary(const char* op, const Expr& a, const Expr& b);
  std::string call(const Call* op);
  std::string literal(const Expr& e);
  std::string cast(DataType to, const Expr& value);
  static std::string one(DataType t);
  void print_for(const For* op);
  // A store of several lanes, under a condition per lane where `condition` is defined.
  void vector_store(const Store* st, const Expr& condition);

  std::string lane_;  // the lane variable while a vector store's lanes are printed
  std::unordered_map<const Object*, std::string> names_;
  std::unordered_set<const Object*> in_scope_;
  std::unordered_set<std::string> taken_;
};

}  // namespace tessera::targets::source
