// Translation of lowered tensor IR into LLVM IR. One CodeGenLLVM fills one llvm::Module with the
// kernels it is given; optimization, JIT and object emission are llvm_module.cc's business.
// Internal to targets/llvm.
//
// Register vs memory types: bool is i1 in registers and i8 in memory; float16 is `half` in memory
// and `float` in registers (converted on load and store), so all float16 arithmetic happens in
// float32. Index arithmetic is int64.
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <unordered_map>
#include <vector>

#include "targets/llvm/llvm_intrinsics.h"
#include "targets/llvm/target_machine.h"
#include "tensor_ir/ir.h"

namespace tessera::targets::llvm_backend {

using runtime::DataType;
using namespace tensor_ir;

class CodeGenLLVM {
 public:
  CodeGenLLVM(llvm::Module& module, const ResolvedTarget& target);

  // Emits each kernel as an exported `int32_t name(void* const* args, int32_t num_args)` that
  // calls an internal `name_impl` taking one noalias, 64-byte aligned pointer per buffer.
  // Throws tessera::Error on invalid or duplicate names and on IR that cannot be compiled.
  void generate(const std::vector<LoweredFunc>& funcs);

 private:
  // Everything that belongs to the function being emitted; swapped out while a parallel loop's
  // body is emitted into its own function.
  struct FunctionState {
    llvm::Function* function = nullptr;
    std::unordered_map<const VarNode*, llvm::Value*> vars;
    std::unordered_map<const BufferNode*, llvm::Value*> buffers;
    std::vector<llvm::Value*> heap_buffers;  // live heap allocations, freed on an early return
    int64_t stack_bytes = 0;
  };

  // An index expression is modulus * k + remainder for some integer k (modulus 0: a constant).
  struct ModRem {
    int64_t modulus, remainder;
  };

  // --- codegen_llvm.cc: types, kernels, expressions, control flow ---------------------------
  llvm::Type* value_type(DataType t);
  llvm::Type* memory_type(DataType t);  // of one element
  void emit_kernel(const LoweredFunc& f, llvm::Function* wrapper);
  llvm::Function* create_function(const std::string& name, llvm::Type* ret, const std::vector<llvm::Type*>& params,
                                  llvm::GlobalValue::LinkageTypes linkage);
  // Marks the parameter as a 64-byte aligned, non-overlapping buffer of `buffer`'s size.
  void set_buffer_attributes(llvm::Function* f, unsigned arg, const BufferNode* buffer);
  void start_function(llvm::Function* f);

  llvm::Value* emit(const Expr& e);
  void emit(const Stmt& s);
  template <typename T>
  llvm::Value* emit_expr(const T* op);  // nodes that cannot appear after lowering
  llvm::Value* emit_expr(const IntImm* op);
  llvm::Value* emit_expr(const FloatImm* op);
  llvm::Value* emit_expr(const VarNode* op);
  llvm::Value* emit_expr(const Add* op);
  llvm::Value* emit_expr(const Sub* op);
  llvm::Value* emit_expr(const Mul* op);
  llvm::Value* emit_expr(const Div* op);
  llvm::Value* emit_expr(const Mod* op);
  llvm::Value* emit_expr(const FloorDiv* op);
  llvm::Value* emit_expr(const FloorMod* op);
  llvm::Value* emit_expr(const Min* op);
  llvm::Value* emit_expr(const Max* op);
  llvm::Value* emit_expr(const EQ* op);
  llvm::Value* emit_expr(const NE* op);
  llvm::Value* emit_expr(const LT* op);
  llvm::Value* emit_expr(const LE* op);
  llvm::Value* emit_expr(const GT* op);
  llvm::Value* emit_expr(const GE* op);
  llvm::Value* emit_expr(const And* op);
  llvm::Value* emit_expr(const Or* op);
  llvm::Value* emit_expr(const Not* op);
  llvm::Value* emit_expr(const Select* op);
  llvm::Value* emit_expr(const Cast* op);
  llvm::Value* emit_expr(const Call* op);
  llvm::Value* emit_reinterpret(llvm::Value* v, DataType from, DataType to);
  llvm::Value* emit_prefetch(const Call* op);
  llvm::Value* emit_expr(const Load* op);
  llvm::Value* emit_expr(const Ramp* op);
  llvm::Value* emit_expr(const Broadcast* op);
  llvm::Value* emit_expr(const Let* op);
  llvm::Value* compare(NodeKind kind, const Expr& a, const Expr& b);
  // Emits `e` with loads restricted to the lanes of `lanes` (see load_mask_).
  llvm::Value* emit_masked(const Expr& e, llvm::Value* lanes);
  // Control flow evaluating only the side `condition` picks, joined by a phi.
  llvm::Value* emit_if_else(llvm::Value* condition, const std::function<llvm::Value*()>& then_value,
                            const std::function<llvm::Value*()>& else_value);
  llvm::Value* convert(llvm::Value* v, DataType from, DataType to);

  template <typename T>
  void emit_stmt(const T* op);  // nodes that cannot appear after lowering
  void emit_stmt(const LetStmt* op);
  void emit_stmt(const ThreadExtent* op);
  void emit_stmt(const For* op);
  void emit_stmt(const IfThenElse* op);
  void emit_stmt(const Store* op);
  // A vector store under a condition per lane (vectorize.cc): only those lanes written and read.
  void emit_predicated_store(const IfThenElse* op);
  void emit_stmt(const Allocate* op);
  // aligned_alloc of `bytes` for `buffer`, returning from the kernel with kStatusOutOfMemory on failure.
  llvm::Value* heap_allocate(const BufferNode* buffer, llvm::Value* bytes);
  void emit_stmt(const Block* op);
  void emit_stmt(const Evaluate* op);
  // A loop over [begin, end) binding `var`; `loop_md` are llvm.loop hints for its back edge.
  void emit_serial_loop(const Var& var, llvm::Value* begin, llvm::Value* end, const Stmt& body,
                        llvm::MDNode* loop_md = nullptr);
  llvm::MDNode* loop_hint(const char* name);
  // Returns `status` from the current function (freeing its heap buffers) if it is nonzero.
  void return_if_failed(llvm::Value* status);
  llvm::AllocaInst* entry_alloca(llvm::Type* type, llvm::Value* count, const std::string& name);
  // A declaration of a C function (see external_symbols.h).
  llvm::FunctionCallee external_function(const char* name, llvm::FunctionType* type);
  // Binds `var` until unbind() restores the binding bind() returned (null: none).
  llvm::Value* bind(const Var& var, llvm::Value* value);
  void unbind(const Var& var, llvm::Value* previous);

  // --- llvm_memory.cc: loads, stores, local buffers, alignment -------------------------------
  llvm::Value* buffer_pointer(const BufferNode* buffer);
  llvm::Value* allocation_bytes(const BufferNode* buffer);
  llvm::Value* to_memory(llvm::Value* v, DataType t);
  llvm::Value* from_memory(llvm::Value* v, DataType t);
  llvm::Value* index_to_i64(llvm::Value* index, DataType t);
  // The address of element `index` (a vector of addresses for a vector index) of `buffer`.
  llvm::Value* element_address(const BufferNode* buffer, const Expr& index, bool masked);
  llvm::Value* load_scalar(const BufferNode* buffer, const Expr& index);  // behind a branch under a mask
  llvm::Value* load_strided(const BufferNode* buffer, const Expr& base, unsigned stride, llvm::FixedVectorType* vec,
                            llvm::Value* mask);
  // llvm.masked.load of `vec` at `addr`, zero where `mask` is off, always of a power-of-two width.
  llvm::Value* masked_load(llvm::FixedVectorType* vec, llvm::Value* addr, llvm::Align align, llvm::Value* mask);
  // `v` widened to a power-of-two number of lanes, those past its own taken from `past`.
  llvm::Value* widened(llvm::Value* v, llvm::Value* past);
  // A mask of `lanes` lanes, all off.
  llvm::Value* lanes_off(unsigned lanes);
  // llvm.masked.store of `value` at `addr` where `mask` is on, of a power-of-two width likewise.
  void masked_store(llvm::Value* value, llvm::Value* addr, llvm::Align align, llvm::Value* mask);
  // load_mask_ for a value of `lanes` lanes; null when every load may run.
  llvm::Value* load_mask(unsigned lanes);
  // The largest alignment (bytes, at most 64) of element `index` of a 64-byte aligned buffer.
  llvm::Align alignment_of(const Expr& index, DataType element);
  ModRem mod_rem(const Expr& e);

  // --- llvm_parallel.cc: outlining parallel loops ------------------------------------------
  void emit_parallel_for(const For* op);

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  ResolvedTarget target_;
  IntrinsicOptions intrinsic_options_;
  llvm::IRBuilder<> builder_;
  std::string kernel_name_;  // for messages and names of outlined functions
  FunctionState state_;
  // What is known about let-bound index variables, for alignment (var identity is global).
  std::unordered_map<const VarNode*, ModRem> index_facts_;
  // While a branch of a vector Select is emitted, the lanes (<N x i1>) that select it: loads run
  // only there, since the others may be out of bounds (padding). Null: all lanes. Only
  // expressions set it, so it is null wherever a statement (or an outlined function) starts.
  llvm::Value* load_mask_ = nullptr;
};

}  // namespace tessera::targets::llvm_backend
