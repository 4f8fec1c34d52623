// The calling convention of compiled kernels and a checked way to call them.
//
// A kernel is `int32_t name(void* const* args, int32_t num_args)`: args[i] is the first element of
// the i-th buffer, in the order the kernel was built with; shapes are known from the signature.
// A kernel compiled for symbolic shapes takes one more argument after its buffers: a pointer to
// the values of its dimension variables (int64_t, in the signature's order). Buffers are 64-byte
// aligned and do not overlap. It returns 0 on success.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "runtime/shape_expr.h"

extern "C" typedef int32_t (*TesseraKernelFn)(void* const* args, int32_t num_args);

namespace tessera::runtime {

// An exported module does not link against the runtime: each runtime function its kernels call
// is reached through a pointer variable (`hook`) the module defines and the loader sets after
// dlopen, so a program that links the runtime statically needs no exported symbols (-rdynamic).
struct RuntimeHook {
  const char* function;
  const char* hook;
};
inline constexpr RuntimeHook kRuntimeHooks[] = {{"tessera_parallel_launch", "tessera_hook_parallel_launch"},
                                                {"tessera_num_threads", "tessera_hook_num_threads"}};

struct BufferSpec {
  std::string name;
  SymbolicShape shape;
  DataType dtype;
};

// The values of `vars` (in that order) for arguments `args` given arrays of `shapes`; throws,
// beginning with `where`, naming the argument and dimension that do not fit.
std::vector<int64_t> shape_var_values(const std::vector<BufferSpec>& args, const std::vector<std::string>& vars,
                                      const std::vector<std::vector<int64_t>>& shapes, const std::string& where);

struct KernelSignature {
  std::string name;
  std::vector<BufferSpec> args;
  // The dimension variables of the arguments' shapes, in the order the kernel takes their values;
  // empty for a kernel of static shapes.
  std::vector<std::string> shape_vars = {};

  // How many pointers a call passes: the buffers, and the variables' values if there are any.
  int32_t num_call_args() const { return static_cast<int32_t>(args.size() + (shape_vars.empty() ? 0 : 1)); }
  // The variables' values for arrays of `shapes` (one per argument), in the kernel's order.
  std::vector<int64_t> shape_var_values(const std::vector<std::vector<int64_t>>& shapes) const {
    return runtime::shape_var_values(args, shape_vars, shapes, "kernel '" + name + "'");
  }
};

class Kernel {
 public:
  Kernel() = default;
  // `owner` keeps the code `fn` points into alive (a JIT session, a loaded library).
  // The first kernel made sets the process's malloc policy for kernels (kernel.cc).
  Kernel(KernelSignature signature, TesseraKernelFn fn, std::shared_ptr<const void> owner);

  const KernelSignature& signature() const { return signature_; }
  const std::string& name() const { return signature_.name; }
  TesseraKernelFn function() const { return fn_; }

  // Checks count, shape, dtype and alignment of every argument, then runs the kernel.
  void operator()(const std::vector<NDArray>& args) const;
  // Throws unless `a` fits argument `index` (dtype, 64-byte alignment, and its shape if static).
  void check_argument(size_t index, const NDArray& a) const;
  // Runs without checks; `data` must hold signature().num_call_args() pointers.
  void call_unchecked(void* const* data) const;

 private:
  KernelSignature signature_;
  TesseraKernelFn fn_ = nullptr;
  std::shared_ptr<const void> owner_;
};

}  // namespace tessera::runtime
